"""The RAG quality dashboard in a real Apache Superset 6.1.0, over the demo's warehouse in both
table formats.

The module builds two demo lakes (`ragas-ops demo`, 7 days of 20 rows, the last day worse, the
local judge), one kept as Parquet and one as Iceberg. It makes one fresh Superset home on
SQLite (`superset db upgrade`, the admin, `init`, as `make dashboard` does) and keeps its
metadata database as it is before any import; then, per format, it puts that fresh metadata
back, writes the DuckDB views over the warehouse, imports the bundle with `superset
import-dashboards`, starts `superset run` on 127.0.0.1 and asks the REST API, logged in as the
admin, for the data of every chart of the dashboard (GET /api/v1/chart/<id>/data/: the chart's
saved query). Every chart must return rows; the regression verdicts must name the demo's bad
last day, on which the faithfulness mean must be the lowest.

Superset lives in `.venv-superset` (`make superset-venv`; `SUPERSET_VENV` names another);
without it the test is skipped, saying so. Marked `superset`: `make integration` leaves it out
(about 9 minutes on a loaded 2-core machine: the two demo lakes and Superset's own set-up are
CPU), `make dashboard-test` builds the venv and runs it.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from ragas_ops_testing.local_airflow.demo import demo_days
from ragas_ops_testing.local_airflow.processes import free_port, stop_group
from ragas_ops_testing.local_superset import (
    ADMIN,
    LOG_FILE,
    PASSWORD_FILE,
    SECRET_KEY_FILE,
    SupersetHome,
    demo_settings,
    import_dashboard,
    initialise,
    running_group,
    start,
)

from ragas_ops.contract.layout import Lake
from ragas_ops.quality.bi_database import write_bi_database
from ragas_ops.quality.superset import DASHBOARD_SLUG, bundle_files

pytestmark = [pytest.mark.slow, pytest.mark.superset]

PROJECT = Path(__file__).resolve().parents[3]
SUPERSET_VENV = Path(os.environ.get("SUPERSET_VENV", PROJECT / ".venv-superset"))
DAYS, ROWS = 7, 20  # as the doc examples: the last day a regression
DEMO_COMMAND = [sys.executable, "-m", "ragas_ops.cli", "demo"]
CHARTS = sum(1 for path in bundle_files() if path.parts[0] == "charts")


@dataclass(frozen=True)
class Lakes:
    parquet: Path
    iceberg: Path


def superset_venv() -> Path:
    """The Superset venv; a skip, saying why, when it is not there (`make dashboard-test`
    builds it first and runs this module; the build needs the package index)."""
    if not (SUPERSET_VENV / "bin" / "superset").exists():
        pytest.skip(
            f"no Superset venv at {SUPERSET_VENV}: `make superset-venv` builds it (Superset "
            "6.1.0 and DuckDB from PyPI); `make dashboard-test` builds it and runs this test"
        )
    return SUPERSET_VENV


def clean_environment() -> dict[str, str]:
    environment = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("AIRFLOW", "RAGAS_OPS_", "OPENAI_"))
    }
    environment["PYTHONPATH"] = f"{PROJECT}:{PROJECT / 'testkit'}"
    return environment


@pytest.fixture(scope="module")
def lakes(tmp_path_factory: pytest.TempPathFactory) -> Lakes:
    """Two demo lakes built side by side: one Parquet, one Iceberg."""
    superset_venv()  # skip before minutes of building lakes for nothing
    root = tmp_path_factory.mktemp("dashboard-lakes")
    running = {}
    for table_format in ("parquet", "iceberg"):
        folder = root / table_format
        folder.mkdir()
        environment = {**clean_environment(), "RAGAS_OPS_WAREHOUSE_TABLE_FORMAT": table_format}
        running[table_format] = subprocess.Popen(
            [*DEMO_COMMAND, "--days", str(DAYS), "--rows", str(ROWS)],
            cwd=folder,
            env=environment,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
    for table_format, process in running.items():
        output, _ = process.communicate(timeout=600)
        assert process.returncode == 0, f"{table_format} demo: {output[-3000:]}"
        assert "verdict REGRESSION" in output, output[-3000:]
    return Lakes(root / "parquet" / "demo", root / "iceberg" / "demo")


class SupersetApi:
    """The admin's calls to Superset's REST API (127.0.0.1: no proxy)."""

    def __init__(self, url: str, password: str) -> None:
        self.url = url
        self.opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        login = {"username": ADMIN, "password": password, "provider": "db", "refresh": False}
        self.token = str(self.call("/api/v1/security/login", login)["access_token"])

    def call(self, path: str, body: Any = None) -> Any:
        headers = {"Content-Type": "application/json"} if body is not None else {}
        if hasattr(self, "token"):
            headers["Authorization"] = f"Bearer {self.token}"
        data = None if body is None else json.dumps(body).encode()
        call = urllib.request.Request(f"{self.url}{path}", data=data, headers=headers)
        try:
            with self.opener.open(call, timeout=120) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as error:
            raise AssertionError(f"{path}: {error.code} {error.read()[:800]!r}") from None


@pytest.fixture(scope="module")
def fresh_superset(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SupersetHome]:
    """A Superset home after `db upgrade`, the admin and `init`, before any import; its
    metadata database kept aside as `superset.db.fresh`."""
    home = SupersetHome(tmp_path_factory.mktemp("superset"), superset_venv().resolve())
    initialise(home)
    shutil.copyfile(home.path("superset.db"), home.path("superset.db.fresh"))
    yield home
    group = running_group(home.home)
    if group:
        stop_group(group)


def charts_data(superset: SupersetHome, lake: Path) -> dict[str, dict[str, Any]]:
    """Import the bundle over `lake`'s warehouse into fresh metadata, serve it, and return
    every chart's data by chart name."""
    shutil.copyfile(superset.path("superset.db.fresh"), superset.path("superset.db"))
    settings = demo_settings(lake, {})
    database = superset.path(f"ragas_ops_bi_{settings.warehouse.table_format}.duckdb")
    written = write_bi_database(database, Lake(settings.pipeline), settings)
    assert written["days"] == DAYS
    import_dashboard(superset, database)
    url = start(superset, free_port(), timeout=180)
    try:
        api = SupersetApi(url, superset.path(PASSWORD_FILE).read_text().strip())
        charts = api.call(f"/api/v1/dashboard/{DASHBOARD_SLUG}/charts")["result"]
        found = {}
        for chart in charts:
            [result] = api.call(f"/api/v1/chart/{chart['id']}/data/")["result"]
            found[chart["slice_name"]] = result
        return found
    finally:
        group = running_group(superset.home)
        if group:
            stop_group(group)


def day_of(milliseconds: float) -> str:
    import datetime

    return datetime.datetime.fromtimestamp(milliseconds / 1000, tz=datetime.UTC).date().isoformat()


@pytest.mark.timeout(1500)
@pytest.mark.parametrize("table_format", ["parquet", "iceberg"])
def test_every_chart_of_the_dashboard_returns_the_warehouse_rows(
    lakes: Lakes, fresh_superset: SupersetHome, table_format: str
) -> None:
    charts = charts_data(fresh_superset, getattr(lakes, table_format))

    assert len(charts) == CHARTS == 8, sorted(charts)
    for name, result in charts.items():
        assert result["status"] == "success", (name, result)
        assert result["rowcount"] > 0, (name, result.get("query"))
    days = demo_days(DAYS)
    bad_day = days[-1]
    verdicts = {day_of(row["dt"]): row["verdict"] for row in charts["Regression verdicts"]["data"]}
    assert verdicts[bad_day] == "regression", verdicts
    assert set(verdicts) == set(days)
    faithfulness = {
        day_of(row["dt"]): row["mean"]
        for row in charts["Faithfulness: daily mean and 95% CI"]["data"]
    }
    assert set(faithfulness) == set(days)
    assert min(faithfulness, key=lambda day: faithfulness[day]) == bad_day, faithfulness
    for row in charts["Faithfulness: daily mean and 95% CI"]["data"]:
        assert row["95% CI low"] <= row["mean"] <= row["95% CI high"], row
    worst = charts["Worst examples, with their evidence"]["data"]
    assert [row["score"] for row in worst] == sorted(row["score"] for row in worst)
    assert all(json.loads(row["evidence"]) for row in worst)
    failures = charts["Failures by status"]["data"]
    assert all(row["status"] and row["rows"] > 0 for row in failures), failures

    password = fresh_superset.path(PASSWORD_FILE).read_text().strip()
    for secret in (PASSWORD_FILE, SECRET_KEY_FILE):
        assert fresh_superset.path(secret).stat().st_mode & 0o077 == 0, secret
    with contextlib.suppress(FileNotFoundError):
        assert password not in fresh_superset.path(LOG_FILE).read_text(errors="replace")
