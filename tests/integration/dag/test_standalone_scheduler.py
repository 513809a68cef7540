"""`ragas-ops airflow up` under a real scheduler: the recipe of docs/airflow-local.md, end to end.

`up` starts Airflow's two api-servers, scheduler (LocalExecutor, SQLite), dag-processor and
triggerer, with the test judge over HTTP on 127.0.0.1 and a demo lake of five days. The DAG is
unpaused on creation, so the scheduler scores yesterday by itself; the test adds a manual run
(through the REST API, as the UI's trigger button does) and a three-day `airflow backfill
create` (typed after `source env.sh`, as the docs say), waits for all five runs, and checks
what they wrote. Beside the project's DAGs, a second DAG bundle holds two consumers of the
nightly DAG's Assets: docs/bi.md's per-day extract (`PartitionedAssetTimetable` on
`ragas_ops_daily_metrics_by_day`), which must run once per day scored with that day as its
`partition_key`, and a plain `schedule=[Asset("ragas_ops_daily_metrics")]` DAG, which must
still run. Everything `up` started is stopped (its process group) even when the test fails.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pyarrow.csv as pa_csv
import pyarrow.parquet as pq
import pytest
from ragas_ops_testing.judge_process import server_stats
from ragas_ops_testing.judge_server import JudgeServer
from ragas_ops_testing.local_airflow.demo import demo_days
from ragas_ops_testing.local_airflow.standalone import (
    ENV_FILE,
    LOG_FILE,
    PASSWORDS_FILE,
    SIGNING_KEY_FILE,
    STATE_FILE,
    TEST_JUDGE_BUDGET,
    AirflowApi,
    admin_password,
    running_groups,
)

from tests.integration.e2e.test_graceful_stop import asked, mid_run, wait_for
from tests.support import TEST_KEY

PROJECT = Path(__file__).resolve().parents[3]
DAG_ID = "ragas_ops_nightly"
DAYS = 5
ROWS = 12
UP_TIMEOUT = 200  # seconds: `up` waits at most this long for a healthy Airflow and the DAG
RUNS_TIMEOUT = 240  # seconds for the five runs, and again for their consumers' runs
EXTRACT_DAG_ID = "ragas_ops_daily_extract"  # docs/bi.md's partition-aware consumer
PLAIN_DAG_ID = "ragas_ops_plain_consumer"
PLAIN_CONSUMER = f"""
from airflow.sdk import Asset, dag, task


@dag(dag_id={PLAIN_DAG_ID!r}, schedule=[Asset("ragas_ops_daily_metrics")], catchup=False)
def plain_consumer():
    @task
    def days_written(triggering_asset_events=None):
        return sorted(
            event.extra["day"]
            for events in triggering_asset_events.values()
            for event in events
        )

    days_written()


plain_consumer()
"""


@dataclass
class Running:
    home: Path
    output: str
    environment: dict[str, str]
    api: AirflowApi
    state: dict[str, Any]


def clean_environment() -> dict[str, str]:
    """This process's environment without Airflow's, ragas-ops's or OpenAI's settings (other
    test modules point Airflow at homes of their own), the project importable."""
    environment = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("AIRFLOW", "RAGAS_OPS_", "OPENAI_"))
    }
    environment["PYTHONPATH"] = f"{PROJECT}:{PROJECT / 'testkit'}"  # the library, the test kit
    return environment


def ragas_ops(*arguments: str, environment: dict[str, str], timeout: float) -> Any:
    return subprocess.run(
        [sys.executable, "-m", "ragas_ops.cli", *arguments],
        env=environment,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def extract_consumer_from_docs() -> str:
    """docs/bi.md's example consumer DAG, as a reader would copy it."""
    text = (PROJECT / "docs" / "bi.md").read_text()
    blocks = re.findall(r"^```python\n(.*?)^```", text, flags=re.MULTILINE | re.DOTALL)
    [block] = [block for block in blocks if f"def {EXTRACT_DAG_ID}()" in block]
    return str(block)


def consumers_bundle(folder: Path, extracts: Path) -> dict[str, str]:
    """A DAG bundle of the two consumers beside the project's, and what they need."""
    folder.mkdir()
    (folder / f"{EXTRACT_DAG_ID}.py").write_text(extract_consumer_from_docs())
    (folder / f"{PLAIN_DAG_ID}.py").write_text(PLAIN_CONSUMER)
    local = "airflow.dag_processing.bundles.local.LocalDagBundle"
    bundles = [
        {"name": "dags-folder", "classpath": local, "kwargs": {}},  # the project's dags/
        {"name": "consumers", "classpath": local, "kwargs": {"path": str(folder)}},
    ]
    return {
        "AIRFLOW__DAG_PROCESSOR__DAG_BUNDLE_CONFIG_LIST": json.dumps(bundles),
        # a paused consumer is not queued by an asset event: the consumers start unpaused
        "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False",
        "DAILY_EXTRACT_DIR": str(extracts),
    }


def log_tail(home: Path) -> str:
    log = home / LOG_FILE
    return log.read_text(errors="replace")[-6000:] if log.exists() else "(no log)"


@pytest.fixture
def airflow(tmp_path: Path) -> Iterator[Running]:
    environment = {
        **clean_environment(),
        **consumers_bundle(tmp_path / "consumers", tmp_path / "extracts"),
    }
    with airflow_up(tmp_path / "airflow", environment, "test", DAYS, ROWS) as running:
        yield running


@contextlib.contextmanager
def airflow_up(
    home: Path, environment: dict[str, str], judge: str, days: int, rows: int
) -> Iterator[Running]:
    """`ragas-ops airflow up` in `home`; everything it started is stopped on the way out."""
    try:
        up = ragas_ops(
            *("airflow", "up", "--home", str(home), "--port", "0", "--judge", judge),
            *("--days", str(days), "--rows", str(rows), "--timeout", str(UP_TIMEOUT)),
            environment=environment,
            timeout=UP_TIMEOUT + 60,
        )
        assert up.returncode == 0, f"{up.stdout}\n{up.stderr}\n{log_tail(home)}"
        state = json.loads((home / STATE_FILE).read_text())
        yield Running(
            home, up.stdout, environment, AirflowApi(state["url"], admin_password(home)), state
        )
    finally:
        with contextlib.suppress(subprocess.TimeoutExpired):
            ragas_ops("airflow", "down", "--home", str(home), environment=environment, timeout=60)
        for group in running_groups(home):  # whatever `down` could not stop
            with contextlib.suppress(ProcessLookupError):
                os.killpg(group, signal.SIGKILL)


def runs_when_done(api: AirflowApi, count: int, dag_id: str = DAG_ID) -> list[dict[str, Any]]:
    """The DAG's runs, once there are `count` and none is queued or running (bounded)."""
    deadline = time.monotonic() + RUNS_TIMEOUT
    runs: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        runs = api.call(f"dags/{dag_id}/dagRuns")["dag_runs"]
        if len(runs) >= count and all(run["state"] in ("success", "failed") for run in runs):
            return runs
        time.sleep(2)
    states = [(run["dag_run_id"], run["state"]) for run in runs]
    raise AssertionError(f"{dag_id}: runs not done after {RUNS_TIMEOUT} s: {states}")


def task_states(api: AirflowApi, run_id: str) -> dict[str, list[str]]:
    instances = api.call(f"dags/{DAG_ID}/dagRuns/{run_id}/taskInstances")["task_instances"]
    states: dict[str, list[str]] = {}
    for instance in instances:
        states.setdefault(instance["task_id"], []).append(str(instance["state"]))
    return states


def days_seen_by_plain_consumer(api: AirflowApi, expected: set[str]) -> set[str]:
    """The days named by the events of the plain consumer's successful runs (its task returns
    them), once they are all `expected` (bounded: the last runs may still be queued)."""
    deadline = time.monotonic() + RUNS_TIMEOUT
    seen: set[str] = set()
    while time.monotonic() < deadline and seen != expected:
        seen = set()
        for run in api.call(f"dags/{PLAIN_DAG_ID}/dagRuns")["dag_runs"]:
            if run["state"] == "success":
                entry = f"dags/{PLAIN_DAG_ID}/dagRuns/{run['dag_run_id']}/taskInstances"
                seen.update(api.call(f"{entry}/days_written/xcomEntries/return_value")["value"])
        time.sleep(2)
    return seen


def day_scored(run: dict[str, Any]) -> str:
    return str((run.get("conf") or {}).get("day") or run["logical_date"][:10])


def test_the_dag_is_paused_on_creation_as_the_setting_says_else_as_airflow_says(
    tmp_path: Path,
) -> None:
    probe = f"""
import json, os
from airflow.dag_processing.dagbag import DagBag
seen = []
for value in (None, "false", "true"):
    os.environ.pop("RAGAS_OPS_PIPELINE_IS_PAUSED_UPON_CREATION", None)
    if value:
        os.environ["RAGAS_OPS_PIPELINE_IS_PAUSED_UPON_CREATION"] = value
    bag = DagBag({str(PROJECT / "dags")!r})
    seen.append(bag.dags[{DAG_ID!r}].is_paused_upon_creation)
print(json.dumps(seen))
"""
    environment = {
        **clean_environment(),
        "AIRFLOW_HOME": str(tmp_path),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
    }
    finished = subprocess.run(
        [sys.executable, "-c", probe],
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert finished.returncode == 0, finished.stderr[-3000:]
    assert json.loads(finished.stdout.strip().splitlines()[-1]) == [None, False, True]


@pytest.mark.slow
@pytest.mark.timeout(UP_TIMEOUT + 2 * RUNS_TIMEOUT + 120)
def test_up_runs_the_dag_on_schedule_manually_and_as_a_backfill(airflow: Running) -> None:
    days = demo_days(DAYS)  # oldest first; the last is yesterday
    assert f"Airflow is ready: {airflow.state['url']}" in airflow.output
    assert f"login: admin, password in {airflow.home / PASSWORDS_FILE}" in airflow.output
    password = admin_password(airflow.home)
    assert password not in airflow.output, "no password off a terminal"
    assert airflow.api.call(f"dags/{DAG_ID}")["is_paused"] is False

    airflow.api.call(
        f"dags/{DAG_ID}/dagRuns",
        method="POST",
        body={"logical_date": None, "conf": {"day": days[0]}},
    )
    # `airflow` as the docs type it: env.sh puts the venv that ran `up` on PATH (it was not:
    # "airflow: command not found" after `make airflow`, whose venv is not activated)
    venv = str(Path(sys.executable).parent)
    without_venv = {
        **airflow.environment,
        "PATH": ":".join(p for p in airflow.environment["PATH"].split(":") if p != venv),
    }
    backfill = subprocess.run(
        [
            "bash",
            "-c",
            f'source "{airflow.home / ENV_FILE}" && airflow '
            f"backfill create --dag-id {DAG_ID} --from-date {days[1]} --to-date {days[3]}",
        ],
        env=without_venv,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert backfill.returncode == 0, backfill.stdout + backfill.stderr
    assert "InsecureKeyLengthWarning" not in backfill.stderr

    runs = runs_when_done(airflow.api, count=DAYS)

    by_type = sorted((run["run_type"], day_scored(run), run["state"]) for run in runs)
    assert by_type == [
        ("backfill", days[1], "success"),
        ("backfill", days[2], "success"),
        ("backfill", days[3], "success"),
        ("manual", days[0], "success"),
        ("scheduled", days[4], "success"),
    ], log_tail(airflow.home)
    for run in runs:
        tasks = task_states(airflow.api, run["dag_run_id"])
        pooled = "score_backfill_chunk" if run["run_type"] == "backfill" else "score_chunk"
        assert tasks[pooled] == ["success"], (run["run_type"], tasks)
    warehouse = airflow.home / "lake" / "warehouse"
    for day in days:
        scored = pq.read_table(warehouse / "scored" / f"dt={day}" / "scored.parquet")
        assert scored.num_rows == ROWS
        assert "ok" in scored.column("faithfulness_status").to_pylist()
        for criterion in ("cites_source", "completeness"):  # the demo's, from its config file
            assert "ok" in scored.column(f"{criterion}_status").to_pylist(), criterion
        assert (warehouse / "daily_metrics" / f"dt={day}" / "daily_metrics.parquet").exists()
        assert (warehouse / "reports" / f"dt={day}" / "report.html").exists()
    for written in (airflow.home / LOG_FILE, airflow.home / ENV_FILE):
        assert password not in written.read_text(errors="replace"), written
    # a 64-byte JWT key, from a file env.sh names but does not hold (Airflow's default of 24
    # bytes made PyJWT warn ten times a start)
    key = (airflow.home / SIGNING_KEY_FILE).read_text().strip()
    assert len(key) == 64
    assert (airflow.home / SIGNING_KEY_FILE).stat().st_mode & 0o077 == 0
    assert key not in (airflow.home / ENV_FILE).read_text()
    assert "InsecureKeyLengthWarning" not in (airflow.home / LOG_FILE).read_text(errors="replace")
    # the backfill that scores the whole sample, printed with the lake's own days
    assert f"lake days: {days[0]} to {days[-1]}" in airflow.output
    assert f"--from-date {days[0]} --to-date {days[-1]} --reprocess-behavior completed" in (
        airflow.output
    )
    # docs/bi.md's partition-aware consumer: one run per day scored (the manual run's, the
    # backfill's three, the nightly's), each with that day as its partition key
    extract_runs = runs_when_done(airflow.api, count=DAYS, dag_id=EXTRACT_DAG_ID)
    keyed = sorted((run["partition_key"], run["state"]) for run in extract_runs)
    assert keyed == [(day, "success") for day in days], keyed
    extracts = airflow.home.parent / "extracts"
    for day in days:
        extract = pa_csv.read_csv(extracts / f"dt={day}" / "daily_metrics.csv")
        metrics = pq.read_table(warehouse / "daily_metrics" / f"dt={day}" / "daily_metrics.parquet")
        assert extract.num_rows == metrics.num_rows > 0
        assert extract.column("metric").to_pylist() == metrics.column("metric").to_pylist()
    # the plain consumer still runs, and its events name every day
    assert days_seen_by_plain_consumer(airflow.api, set(days)) == set(days)
    stats = server_stats(airflow.state["test_judge_url"])
    assert stats["requests_by_endpoint"]["chat"] > 0, "scored by the test judge, over HTTP"
    assert stats["rate_limited"] == 0


def supervisor_terminated_at(home: Path) -> float:
    """When Airflow's task supervisor, told by the API server that the task should no longer
    run (HTTP 409 to its heartbeat), sent it SIGTERM: the time of its log line."""
    said = "Server indicated the task shouldn't be running anymore"
    [line] = [
        line
        for line in (home / LOG_FILE).read_text().splitlines()
        if said in line and "[supervisor]" in line
    ]
    stamp = line.split("|", 1)[1].split()[0]
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def process_ended(pid: int) -> bool:
    """Gone, or a zombie its supervisor has not reaped yet."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return True
    return "\nState:\tZ" in status


@pytest.mark.slow
@pytest.mark.timeout(UP_TIMEOUT + 2 * RUNS_TIMEOUT + 120)
def test_a_scoring_task_set_to_failed_stops_gracefully_and_its_clear_pays_only_the_rest(
    tmp_path: Path, start_judge_server: Callable[..., JudgeServer]
) -> None:
    """Issue 41 under the real scheduler: the REST API (as the UI's "mark failed") sets a running
    score_chunk to failed; the task's supervisor learns it at its next heartbeat (HTTP 409),
    SIGTERMs the task, whose `on_kill` stops sending and lets the answers in flight land in the
    cache. Then a clear of the task (as the UI's "clear") runs it again."""
    server = start_judge_server(latency_ms=1200, request_log=True)
    environment = {
        **clean_environment(),
        "OPENAI_API_KEY": TEST_KEY,
        "RAGAS_OPS_JUDGE_BASE_URL": server.base_url,
        "RAGAS_OPS_JUDGE_MODEL": "test-judge",
        "RAGAS_OPS_JUDGE_EMBEDDING_MODEL": "test-embedding",
        **TEST_JUDGE_BUDGET,
    }
    with airflow_up(tmp_path / "airflow", environment, "openai", 1, 40) as airflow:
        wait_for(lambda: mid_run(server.stats()), RUNS_TIMEOUT)  # the scheduled run, mid-chunk
        [run] = airflow.api.call(f"dags/{DAG_ID}/dagRuns")["dag_runs"]
        instance = f"dags/{DAG_ID}/dagRuns/{run['dag_run_id']}/taskInstances/score_chunk/0"
        pid = airflow.api.call(instance)["pid"]
        assert pid
        assert not process_ended(pid)
        stopped_at = time.time()
        airflow.api.call(instance, method="PATCH", body={"new_state": "failed"})
        wait_for(lambda: process_ended(pid), 30)
        took = time.time() - stopped_at
        first = server.requests()
        lake = airflow.home / "lake"
        left = [
            p for p in lake.rglob("*") if p.name.endswith(".tmp") or p.name.startswith("chunk-")
        ]

        # the run fails (downstream upstream_failed); a clear before that raced the scheduler's
        # own update of those rows and stopped it (StaleDataError, Airflow 3.3.2 on SQLite)
        [failed] = runs_when_done(airflow.api, count=1)
        server.update(latency_ms=0)
        cleared_at = time.time()
        airflow.api.call(
            f"dags/{DAG_ID}/clearTaskInstances",
            method="POST",
            body={
                "dry_run": False,
                "dag_run_id": run["dag_run_id"],
                "task_ids": ["score_chunk"],
                "include_downstream": True,
                "only_failed": False,
            },
        )
        [rerun] = runs_when_done(airflow.api, count=1)
        rerun_tasks = task_states(airflow.api, rerun["dag_run_id"])
        task_log = "\n".join(
            path.read_text(errors="replace")
            for path in (airflow.home / "logs").rglob("*")
            if "task_id=score_chunk" in str(path) and path.is_file()
        )

    assert took < 10, took
    assert left == []
    assert "stopped on request: the judge was asked nothing more" in task_log
    # the supervisor SIGTERMs the task at its next heartbeat after the PATCH: from then on, the
    # judge is asked nothing more, and every answer it gave (those in flight too) is kept
    sigterm_at = supervisor_terminated_at(airflow.home)
    assert stopped_at < sigterm_at < stopped_at + took
    assert not [e for e in first if e["started_at"] > sigterm_at + 0.5]
    answered_before = [e for e in first if e["status"] == 200]
    assert [e for e in answered_before if e["ended_at"] <= stopped_at]
    assert failed["state"] == "failed"
    assert rerun["state"] == "success", rerun_tasks
    assert rerun_tasks["score_chunk"] == ["success"]
    again = set(asked([e for e in server.requests() if e["started_at"] >= cleared_at]))
    assert again, "the rerun scored the rest over HTTP"
    assert [request for request in asked(answered_before) if request in again] == []
    day = demo_days(1)[0]
    scored = pq.read_table(lake / "warehouse" / "scored" / f"dt={day}" / "scored.parquet")
    assert scored.num_rows == 40
