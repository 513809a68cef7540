"""Broken input is loud, not a quiet day (issue 40), over the real DAG (`dag.test()`): a raw
location with no day folder at all, a day whose every file was rejected, and a fourth night
without traffic (pipeline.max_quiet_days 3), each fail the
run after the day is published and reported, with the alarm in the manifest, the report's
headline (HTML and Markdown) and on the quality page."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragas_ops.config import settings_from_environment
from ragas_ops.quality.view import load_overview, render_page
from ragas_ops.storage import locate
from tests.integration.dag import test_pipeline_dag as dag_tests
from tests.integration.dag.test_pipeline_dag import DAY, manifest_of, run_dag, state, warehouse

airflow_database = dag_tests.airflow_database
lake = dag_tests.lake


def quality_page(root: Path) -> str:
    settings = settings_from_environment()
    overview = load_overview(locate(str(root / "warehouse")), settings, days=3, worst=0)
    return render_page(overview, "/rag-quality", days=3)


def headline(report: str, before: str) -> str:
    """The report up to `before` (the verdict's section, or the Markdown's verdict line)."""
    return report.split(before, 1)[0]


@pytest.mark.parametrize(
    ("files", "title", "said"),
    [
        ({}, "NO LOGS AT ALL", "holds no day folder (dt=YYYY-MM-DD) at all"),
        (
            {
                f"dt={DAY}/app.jsonl": "this is not JSON\n",
                f"dt={DAY}/export.csv": "question,answer\nq,a\n",
            },
            "EVERY INPUT FILE REJECTED",
            f"every input file of {DAY} was rejected (2), so no row was scored",
        ),
        (
            {"dt=2026-11-24/app.jsonl": ""},  # the writer's last day; none since
            "NO TRAFFIC FOR DAYS",
            f"no traffic for 4 days in a row up to {DAY}",
        ),
    ],
    ids=["no-day-folder-at-all", "every-file-rejected", "quiet-for-days"],
)
def test_broken_input_fails_the_run_and_heads_report_and_quality_page(
    lake: Path, files: dict[str, str], title: str, said: str
) -> None:
    for name, text in files.items():
        (lake / "raw" / name).parent.mkdir(parents=True, exist_ok=True)
        (lake / "raw" / name).write_text(text, encoding="utf-8")

    run = run_dag()

    assert state(run) == "failed", "someone has to look"
    alarm = manifest_of(lake, DAY)["input_alarm"]
    assert (alarm["title"], alarm["severity"]) == (title, "failure")
    assert said in alarm["message"]
    html = warehouse(lake, "reports", f"dt={DAY}", "report.html").read_text()
    assert title in headline(html, '<section class="verdict verdict-not_checked')
    assert said in headline(html, '<section class="verdict verdict-not_checked')
    markdown = warehouse(lake, "reports", f"dt={DAY}", "report.md").read_text()
    assert f"> **{title}**" in headline(markdown, "**Verdict:")
    page = quality_page(lake)
    assert "input-alarm" in page
    assert title in page
    assert said.split(" (", maxsplit=1)[0] in page
