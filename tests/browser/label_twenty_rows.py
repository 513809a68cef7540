"""Label rows of a day on the labelling page, in a real headless Chromium, as a person would:
log in on Airflow's own login page, open Browse > RAG quality's labelling page, and label
`--rows` rows one at a time with the page's keyboard shortcuts (1-9 for the levels, S to save),
taking screenshots.

Not a test of the suite (it needs a running Airflow and a browser): the issue's browser check,
run by hand against the test kit's local Airflow (`ragas-ops airflow up`, `make airflow`).
Playwright drives the system's Chromium (`apt-get install -y chromium`); it lives in a venv of
its own (`python -m venv .venv-browser && .venv-browser/bin/pip install playwright`), since
nothing else needs it and no browser is downloaded.

Usage: .venv-browser/bin/python tests/browser/label_twenty_rows.py --url http://127.0.0.1:8080
  --password-file .airflow/simple_auth_manager_passwords.json.generated --shots shots/
  [--rows 20] [--day YYYY-MM-DD] [--chromium /usr/bin/chromium]
"""

from __future__ import annotations

import argparse
import json
import re
import time
from pathlib import Path

from playwright.sync_api import Page, sync_playwright

CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-sync"]
# the person's choice for each metric, by the row's position: a spread of all three levels
CHOICES = ("3", "2", "3", "1", "3", "3", "2", "3")


def log_in(page: Page, url: str, user: str, password: str) -> None:
    page.goto(f"{url}/auth/login")
    page.locator("input[name='username'], input#username, input[type='text']").first.fill(user)
    page.locator("input[type='password']").first.fill(password)
    page.locator(
        "button[type='submit'], button:has-text('Sign'), button:has-text('Log')"
    ).first.click()
    page.wait_for_url(re.compile(r"^(?!.*auth/login).*$"), timeout=60_000)


def label_one(page: Page, index: int) -> str:
    """Choose a level for every metric shown with its shortcut key, then save (S)."""
    row = page.locator("input[name='row_id']").get_attribute("value") or ""
    fieldsets = page.locator("fieldset").count()
    for metric in range(fieldsets):
        level = int(CHOICES[(index + metric) % len(CHOICES)])
        key = str(metric * 3 + level)  # 1/2/3, 4/5/6, 7/8/9
        page.keyboard.press(key)
    checked = page.locator("input[type='radio']:checked").count()
    if checked != fieldsets:
        raise SystemExit(f"row {row}: the shortcuts checked {checked} of {fieldsets} metrics")
    with page.expect_navigation():
        page.keyboard.press("s")
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--password-file", type=Path, required=True)
    parser.add_argument("--user", default="admin")
    parser.add_argument("--shots", type=Path, required=True)
    parser.add_argument("--rows", type=int, default=20)
    parser.add_argument("--day")
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    parser.add_argument(
        "--quality-day",
        help="then screenshot the quality page and the report of this day (after the aggregate)",
    )
    args = parser.parse_args()
    password = json.loads(args.password_file.read_text())[args.user]
    args.shots.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=args.chromium, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 1100})
        started = time.monotonic()
        log_in(page, args.url, args.user, password)
        print(f"logged in as {args.user} ({time.monotonic() - started:.1f} s)")
        label_url = f"{args.url}/rag-quality/label" + (f"?day={args.day}" if args.day else "")
        page.goto(label_url)
        if args.rows:
            page.screenshot(path=str(args.shots / "w43-label-page.png"), full_page=True)
        labelled = []
        for index in range(args.rows):
            if page.locator("input[name='row_id']").count() == 0:
                print(f"the queue ran out after {index} row(s)")
                break
            labelled.append(label_one(page, index))
            if index == 0:
                page.screenshot(path=str(args.shots / "w43-label-saved.png"), full_page=True)
        if args.rows:
            page.screenshot(path=str(args.shots / "w43-label-done.png"), full_page=True)
        print(f"labelled {len(labelled)} row(s) ({time.monotonic() - started:.1f} s): {labelled}")
        if args.quality_day:
            day = args.quality_day
            page.goto(f"{args.url}/rag-quality/?day={day}")
            page.locator("section.calibration").screenshot(
                path=str(args.shots / "w43-quality-page-peoples-scale.png")
            )
            page.screenshot(path=str(args.shots / "w43-quality-page.png"), full_page=True)
            page.goto(f"{args.url}/rag-quality/reports/dt={day}/report.html")
            page.locator("section.calibration").screenshot(
                path=str(args.shots / "w43-report-peoples-scale.png")
            )
        browser.close()


if __name__ == "__main__":
    main()
