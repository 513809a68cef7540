"""A scoring task asked to stop (issue 41): SIGTERM to `airflow dags test` while the nightly
DAG's scoring task is mid-chunk against a slow test judge. Airflow's task runner calls the
operator's `on_kill`: the task sends nothing more, lets the answers in flight land in the cache,
removes its chunk file and fails saying what it kept; the process is gone within 10 s, and the
next run of the day pays for no request that was answered before the stop."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from ragas_ops_testing.judge_server import JudgeServer

from ragas_ops.samples import sample_interactions
from tests.integration.dag import test_pipeline_dag as dag_tests
from tests.integration.dag.test_pipeline_dag import DAG_ID, DAY, write_logs
from tests.integration.e2e.test_graceful_stop import asked, mid_run, wait_for

airflow_database = dag_tests.airflow_database
lake = dag_tests.lake


def dags_test() -> list[str]:
    return [sys.executable, "-m", "airflow", "dags", "test", DAG_ID, "-c", json.dumps({"day": DAY})]


def test_sigterm_to_a_scoring_task_stops_it_gracefully_and_the_rerun_pays_only_the_rest(
    lake: Path, start_judge_server: Callable[..., JudgeServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    server = start_judge_server(latency_ms=1500, request_log=True)
    monkeypatch.setenv("RAGAS_OPS_JUDGE_BASE_URL", server.base_url)
    monkeypatch.setenv("RAGAS_OPS_PIPELINE_CHUNK_ROWS", "100")  # one chunk: the run ends with it
    write_logs(lake, DAY, sample_interactions(40, seed=13, day=DAY))
    environ = {**os.environ, "AIRFLOW__CORE__UNIT_TEST_MODE": "False"}
    log_path = lake / "dags-test.log"
    with log_path.open("w") as log_file:
        process = subprocess.Popen(
            dags_test(), env=environ, stdout=log_file, stderr=subprocess.STDOUT, text=True
        )
    try:
        wait_for(lambda: mid_run(server.stats()), 120)
        stopped_at = time.time()
        process.send_signal(signal.SIGTERM)
        # the task ends; `dags test` then waits for its retry (up_for_retry), so stop it there
        wait_for(lambda: "end task task_id=score_chunk" in log_path.read_text(), 10)
        took = time.time() - stopped_at
    finally:
        process.kill()
        process.wait(timeout=30)
    output = log_path.read_text()
    first = server.requests()

    assert took < 10
    assert "stopped on request: the judge was asked nothing more" in output
    assert "landed in the cache" in output
    assert "new_state=up_for_retry" in output  # Airflow retries it: the retry pays the rest
    assert not [path for path in lake.rglob("*") if path.name.endswith(".tmp")]
    assert not list((lake / "warehouse").rglob("chunk-*.parquet"))
    assert not [e for e in first if e["started_at"] > stopped_at + 0.5]
    answered_before = [e for e in first if e["status"] == 200 and e["ended_at"] <= stopped_at]
    assert answered_before

    server.update(latency_ms=0)
    server.reset_stats()
    rerun = subprocess.run(
        dags_test(), env=environ, capture_output=True, text=True, timeout=300, check=False
    )
    assert rerun.returncode == 0, rerun.stdout[-3000:] + rerun.stderr[-3000:]
    again = set(asked(server.requests()))
    assert again
    assert [request for request in asked(answered_before) if request in again] == []
