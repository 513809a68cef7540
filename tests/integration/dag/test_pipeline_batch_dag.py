"""The nightly DAG in batch mode, run for real by Airflow (`dag.test()`, which runs a deferred
task's trigger in line), against the judge server's Files and Batch API over HTTP."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest
from ragas_ops_testing.judge_server import JudgeServer

from ragas_ops.samples import sample_interactions
from tests.integration.dag import test_pipeline_dag as dag_tests
from tests.integration.dag.test_pipeline_dag import (
    DAY,
    manifest_of,
    run_dag,
    state,
    warehouse,
    write_logs,
)

# The DAG tests' fixtures: Airflow's database, and a local lake scored by the judge server.
airflow_database = dag_tests.airflow_database
lake = dag_tests.lake

METRICS = ("faithfulness", "answer_relevance", "context_relevance")


@pytest.fixture(autouse=True)
def quick_polls(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGAS_OPS_JUDGE_BATCH_POLL_SECONDS", "0.1")


def statuses(table: object, metric: str) -> set[str]:
    return set(table.column(f"{metric}_status").to_pylist())  # type: ignore[attr-defined]


def test_a_batch_mode_run_defers_resumes_and_publishes_every_row_once(
    lake: Path, judge_server: JudgeServer
) -> None:
    judge_server.update(batch_seconds=0.3, batch_failure_rate=0.2, seed=11)
    logs = sample_interactions(50, seed=5, day=DAY)
    write_logs(lake, DAY, logs)

    run = run_dag(judge_mode="batch")

    assert state(run) == "success"
    scored = pq.read_table(warehouse(lake, "scored", f"dt={DAY}", "scored.parquet"))
    assert scored.column("id").to_pylist() == logs.column("id").to_pylist()
    for metric in METRICS:
        assert statuses(scored, metric) <= {"ok", "not_applicable", "invalid_input"}, metric
    stats = judge_server.stats()
    chunks = manifest_of(lake, DAY)["plan"]["chunks"]
    assert stats["batches"]["created"] >= 2 * chunks, "statements, then verdicts, per chunk"
    failed = stats["batches"]["requests_failed"]
    assert failed > 0
    assert stats["requests_by_endpoint"]["chat"] == failed, "only what batches failed, in sync"
    manifest = manifest_of(lake, DAY)
    assert manifest["scoring"]["rows_out"] == 50
    assert manifest["scoring"]["modes"] == ["batch"]
    assert len(manifest["scoring"]["batches"]) == stats["batches"]["created"]
    assert manifest["scoring"]["usage"]["requests"] == (
        stats["batches"]["requests_answered"] + failed
    )
    assert not warehouse(lake, "_batches").exists() or not any(
        warehouse(lake, "_batches").rglob("*.json")
    )


def test_an_expired_batch_carries_its_unanswered_rows_with_a_status(
    lake: Path, judge_server: JudgeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAGAS_OPS_JUDGE_ON_BATCH_UNANSWERED", "status")
    judge_server.update(batch_seconds=0.2, batch_expire_after=0.6)
    logs = sample_interactions(30, seed=6, day=DAY)
    write_logs(lake, DAY, logs)

    run = run_dag(judge_mode="batch")

    assert state(run) == "success"
    scored = pq.read_table(warehouse(lake, "scored", f"dt={DAY}", "scored.parquet"))
    assert scored.column("id").to_pylist() == logs.column("id").to_pylist()
    found = set().union(*(statuses(scored, metric) for metric in METRICS))
    assert {"ok", "judge_unavailable"} <= found
    assert judge_server.stats()["requests_by_endpoint"]["chat"] == 0
    assert judge_server.stats()["batches"]["expired"] > 0


def test_a_run_that_gave_up_waiting_is_rerun_without_paying_twice(
    lake: Path, judge_server: JudgeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first run stops waiting before its batches finish (as a crashed or timed-out task
    would); the next run of the day re-attaches to them."""
    judge_server.update(batch_seconds=4.0)
    logs = sample_interactions(20, seed=7, day=DAY)
    write_logs(lake, DAY, logs)
    monkeypatch.setenv("RAGAS_OPS_JUDGE_BATCH_WAIT_SECONDS", "0.2")
    monkeypatch.setenv("RAGAS_OPS_PIPELINE_TASK_RETRIES", "0")  # the first run gives up at once

    assert state(run_dag(judge_mode="batch")) == "failed"
    assert judge_server.stats()["batches"]["created"] >= 1

    monkeypatch.setenv("RAGAS_OPS_JUDGE_BATCH_WAIT_SECONDS", "120")
    assert state(run_dag(judge_mode="batch")) == "success"

    scored = pq.read_table(warehouse(lake, "scored", f"dt={DAY}", "scored.parquet"))
    assert scored.column("id").to_pylist() == logs.column("id").to_pylist()
    # One chunk, two rounds (statements, then verdicts): two batches in all, whichever round
    # the first run was waiting for when it gave up.
    assert manifest_of(lake, DAY)["plan"]["chunks"] == 1
    assert judge_server.stats()["batches"]["created"] == 2, "nothing was submitted twice"
