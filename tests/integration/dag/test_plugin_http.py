"""The "RAG quality" plugin inside a real Airflow api-server, over real HTTP on 127.0.0.1.

The api-server runs in a process of its own (uvicorn, Airflow's app factory) with the
project's plugins/ folder, SQLite metadata and the simple auth manager with one user; tokens
come from its own /auth/token endpoint, as the UI and the API clients get them.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from ragas_ops_testing.judge_process import free_port

from ragas_ops.config import Settings
from ragas_ops.quality.view import tables_at
from ragas_ops.storage import locate
from tests.integration.dag.test_plugin_quality_view import LAST, local_warehouse  # noqa: F401 (a fixture)

PROJECT = Path(__file__).resolve().parents[3]
PASSWORD = "a-test-password"  # a throwaway user of a test server


@dataclass(frozen=True)
class ApiServer:
    url: str
    port: int
    token: str


@pytest.fixture(scope="module")
def api_server(
    local_warehouse: tuple[Settings, Path],  # noqa: F811
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[ApiServer]:
    _, warehouse = local_warehouse
    home = tmp_path_factory.mktemp("airflow")
    (home / "passwords.json").write_text(json.dumps({"admin": PASSWORD}))
    (warehouse.parent / "secret.txt").write_text("not for the browser")
    env = {
        **os.environ,
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__DAGS_FOLDER": str(PROJECT / "dags"),
        "AIRFLOW__CORE__PLUGINS_FOLDER": str(PROJECT / "plugins"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__AUTH_MANAGER": (
            "airflow.api_fastapi.auth.managers.simple.simple_auth_manager.SimpleAuthManager"
        ),
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": "admin:admin",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(home / "passwords.json"),
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "False",
        "AIRFLOW__API_AUTH__JWT_SECRET": "test-jwt-secret-0123456789abcdef",
        "AIRFLOW__LOGGING__LOGGING_LEVEL": "WARNING",
        "RAGAS_OPS_PIPELINE_WAREHOUSE_URI": str(warehouse),
        "RAGAS_OPS_PIPELINE_SEGMENTS": "app,model_version",
    }
    subprocess.run(
        [sys.executable, "-m", "airflow", "db", "migrate"],
        check=True,
        capture_output=True,
        env=env,
        timeout=300,
    )
    port = free_port()
    log = (home / "api-server.log").open("wb")
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "uvicorn",
            "airflow.api_fastapi.main:app",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_until_up(url, server, home / "api-server.log")
        answer = httpx.post(
            f"{url}/auth/token", json={"username": "admin", "password": PASSWORD}, timeout=30
        )
        assert answer.status_code == 201, answer.text
        yield ApiServer(url, port, answer.json()["access_token"])
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()


def _wait_until_up(url: str, server: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if server.poll() is not None:
            pytest.fail(f"the api-server exited:\n{log.read_text()[-3000:]}")
        try:
            if httpx.get(f"{url}/api/v2/monitor/health", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    pytest.fail(f"the api-server did not start:\n{log.read_text()[-3000:]}")


def raw_get(server: ApiServer, path: str, token: str | None = None) -> tuple[int, bytes]:
    """GET `path` exactly as written (no client-side normalisation of `..` or `%2F`)."""
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    connection.request("GET", path, headers=headers)
    response = connection.getresponse()
    body = response.read()
    connection.close()
    return response.status, body


def test_a_logged_in_user_sees_the_page(api_server: ApiServer) -> None:
    answer = httpx.get(
        f"{api_server.url}/rag-quality/",
        headers={"Authorization": f"Bearer {api_server.token}"},
        timeout=30,
    )

    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/html")
    assert "frame-ancestors 'self'" in answer.headers["content-security-policy"]
    assert "RAG quality" in answer.text
    assert f"Regression on {LAST}" in answer.text
    assert f"/rag-quality/reports/dt={LAST}/report.html" in answer.text
    assert "worst examples" in answer.text


def test_the_browser_session_cookie_is_enough(api_server: ApiServer) -> None:
    """What the UI's frame sends: Airflow's `_token` cookie, no header."""
    answer = httpx.get(
        f"{api_server.url}/rag-quality/?day={LAST}",
        cookies={"_token": api_server.token},
        timeout=30,
    )

    assert answer.status_code == 200
    assert "RAG quality" in answer.text


def test_a_day_report_is_served_sandboxed(api_server: ApiServer) -> None:
    answer = httpx.get(
        f"{api_server.url}/rag-quality/reports/dt={LAST}/report.html",
        headers={"Authorization": f"Bearer {api_server.token}"},
        timeout=30,
    )

    assert answer.status_code == 200
    assert "<html" in answer.text.lower()
    assert "sandbox" in answer.headers["content-security-policy"]


@pytest.mark.parametrize(
    "path",
    ["/rag-quality/", f"/rag-quality/reports/dt={LAST}/report.html", "/rag-quality/?day=x"],
)
def test_a_user_who_is_not_logged_in_sees_nothing(api_server: ApiServer, path: str) -> None:
    status, body = raw_get(api_server, path)
    forged_status, forged_body = raw_get(api_server, path, token="not-a-jwt")

    assert status == 401
    assert forged_status in (401, 403)
    for text in (body, forged_body):
        assert b"RAG quality" not in text
        assert b"<html" not in text.lower()


@pytest.mark.parametrize(
    "path",
    [
        "/rag-quality/reports/../../secret.txt",
        "/rag-quality/reports/..%2F..%2Fsecret.txt",
        "/rag-quality/reports/%2e%2e/%2e%2e/secret.txt",
        f"/rag-quality/reports/dt={LAST}/..%2F..%2F..%2Fsecret.txt",
        f"/rag-quality/reports/dt={LAST}/report.html%00../../secret.txt",
        "/rag-quality/reports/..%5C..%5Csecret.txt",
        "/rag-quality/reports/%2Fetc%2Fpasswd",
        "/rag-quality/reports/dt=..%2F..%2F/report.html",
        "/rag-quality/?day=..%2F..%2Fsecret.txt",
    ],
)
def test_a_path_traversal_is_refused(api_server: ApiServer, path: str) -> None:
    status, body = raw_get(api_server, path, token=api_server.token)
    anonymous_status, _ = raw_get(api_server, path)

    assert status in (400, 422), (status, body[:200])
    assert b"not for the browser" not in body
    assert b"root:" not in body
    assert anonymous_status == 401, "authentication comes first"


def test_the_view_is_in_airflow_s_navigation(api_server: ApiServer) -> None:
    answer = httpx.get(
        f"{api_server.url}/api/v2/plugins",
        headers={"Authorization": f"Bearer {api_server.token}"},
        timeout=30,
    )

    assert answer.status_code == 200
    (plugin,) = [p for p in answer.json()["plugins"] if p["name"] == "ragas_ops"]
    (view,) = plugin["external_views"]
    assert view["href"] == "/rag-quality/"
    assert view["destination"] == "nav"
    assert plugin["fastapi_apps"][0]["url_prefix"] == "/rag-quality"


def _label_form(server: ApiServer, day: str) -> tuple[httpx.Response, str, str]:
    """The labelling page as the browser gets it (Airflow's `_token` cookie): the answer, the
    form's CSRF token and the CSRF cookie."""
    answer = httpx.get(
        f"{server.url}/rag-quality/label?day={day}", cookies={"_token": server.token}, timeout=30
    )
    assert answer.status_code == 200, answer.text
    token = re.search(r"name='csrf' value='([^']+)'", answer.text)
    row = re.search(r"name='row_id' value='([^']+)'", answer.text)
    assert token is not None
    assert row is not None
    return answer, token.group(1), row.group(1)


def test_the_labelling_page_is_blind_and_saves_as_the_logged_in_user(
    api_server: ApiServer,
    local_warehouse: tuple[Settings, Path],  # noqa: F811
) -> None:
    settings, warehouse = local_warehouse
    day = LAST
    page, csrf, row_id = _label_form(api_server, day)
    assert "form-action 'self'" in page.headers["content-security-policy"]
    assert page.cookies.get("ragas_ops_csrf") == csrf
    assert "20 row(s) left" in page.text  # labels.per_day of the day's 24 rows
    assert "Every claim of the answer supported" not in page.text
    assert "Is every claim of the answer supported by the contexts?" in page.text
    for hidden in ("_score", "evidence", "verdict", "statements"):
        assert hidden not in page.text  # blind: no judge output on the page
    assert "data-key='1'" in page.text  # the shortcuts: 1-9 for the levels, S, K
    assert "data-key='k'" in page.text
    nonce = re.search(r"script-src 'nonce-([^']+)'", page.headers["content-security-policy"])
    assert nonce is not None
    assert page.text.count("<script") == 1
    assert f"<script nonce='{nonce.group(1)}'>" in page.text

    cookies = {"_token": api_server.token, "ragas_ops_csrf": csrf}
    form = {"csrf": csrf, "day": day, "row_id": row_id, "after": "0", "m_faithfulness": "0.5"}
    form["m_context_relevance"] = "1"
    saved = httpx.post(
        f"{api_server.url}/rag-quality/label", data=form, cookies=cookies, timeout=30
    )
    assert saved.status_code == 303, saved.text
    assert saved.headers["location"] == f"/rag-quality/label?day={day}&after=0&saved=2"

    tables = tables_at(locate(str(warehouse)), settings)
    labels = [row for table in tables.read_labels([day]) for row in table.to_pylist()]
    assert sorted((row["metric"], row["label"]) for row in labels) == [
        ("context_relevance", 1.0),
        ("faithfulness", 0.5),
    ]
    assert {(row["row_id"], row["labeller"], row["page_version"]) for row in labels} == {
        (row_id, "admin", "page/1")
    }
    # the row still lacks answer relevance, so it is shown again, with that metric alone
    again, _, next_row = _label_form(api_server, day)
    assert next_row == row_id
    assert "m_faithfulness" not in again.text
    assert "m_answer_relevance" in again.text
    # a duplicate is refused with its reason, and nothing is written
    repeated = httpx.post(
        f"{api_server.url}/rag-quality/label", data=form, cookies=cookies, timeout=30
    )
    assert repeated.status_code == 400
    assert "a duplicate" in repeated.text
    assert sum(table.num_rows for table in tables.read_labels([day])) == 2


@pytest.mark.parametrize("attack", ["no_cookie", "wrong_token", "other_site"])
def test_a_forged_labelling_form_is_refused(api_server: ApiServer, attack: str) -> None:
    _, csrf, row_id = _label_form(api_server, LAST)
    cookies = {"_token": api_server.token, "ragas_ops_csrf": csrf}
    headers = {}
    form = {"csrf": csrf, "day": LAST, "row_id": row_id, "m_answer_relevance": "1"}
    if attack == "no_cookie":
        del cookies["ragas_ops_csrf"]
    elif attack == "wrong_token":
        form["csrf"] = "x" * 43
    else:
        headers["Origin"] = "https://evil.example"
    answer = httpx.post(
        f"{api_server.url}/rag-quality/label",
        data=form,
        cookies=cookies,
        headers=headers,
        timeout=30,
    )
    assert answer.status_code == 403


def test_a_user_who_is_not_logged_in_cannot_label(api_server: ApiServer) -> None:
    status, body = raw_get(api_server, f"/rag-quality/label?day={LAST}")
    assert status == 401
    assert b"<form" not in body
    answer = httpx.post(f"{api_server.url}/rag-quality/label", data={"day": LAST}, timeout=30)
    assert answer.status_code == 401


def test_eight_simultaneous_saves_of_one_row_store_one_label(
    api_server: ApiServer,
    local_warehouse: tuple[Settings, Path],  # noqa: F811
) -> None:
    """A double click or a browser's retry, eight times at once: one label (issue 49)."""
    from concurrent.futures import ThreadPoolExecutor

    settings, warehouse = local_warehouse
    page, csrf, row_id = _label_form(api_server, LAST)
    metric = re.search(r"name='m_([a-z_]+)'", page.text)
    assert metric is not None
    cookies = {"_token": api_server.token, "ragas_ops_csrf": csrf}
    form = {"csrf": csrf, "day": LAST, "row_id": row_id, f"m_{metric.group(1)}": "1"}

    def post(_: int) -> int:
        url = f"{api_server.url}/rag-quality/label"
        return httpx.post(url, data=form, cookies=cookies, timeout=60).status_code

    with ThreadPoolExecutor(8) as pool:
        codes = sorted(pool.map(post, range(8)))

    assert codes == [303] + [400] * 7, codes
    tables = tables_at(locate(str(warehouse)), settings)
    mine = [
        row
        for table in tables.read_labels([LAST])
        for row in table.to_pylist()
        if (row["row_id"], row["metric"]) == (row_id, metric.group(1))
    ]
    assert len(mine) == 1


@pytest.mark.parametrize(
    "body",
    [b"day=2026-11-27&row_id=\xff\xfe", b"day=2026-11-27&row_id=%FF%FE", b"a=1&" * 200],
)
def test_a_form_that_is_not_utf8_text_is_a_400_never_a_500(
    api_server: ApiServer, body: bytes
) -> None:
    _, csrf, _ = _label_form(api_server, LAST)
    answer = httpx.post(
        f"{api_server.url}/rag-quality/label",
        content=body + f"&csrf={csrf}".encode(),
        headers={"Content-Type": "application/x-www-form-urlencoded"},
        cookies={"_token": api_server.token, "ragas_ops_csrf": csrf},
        timeout=30,
    )
    assert answer.status_code == 400, answer.text
