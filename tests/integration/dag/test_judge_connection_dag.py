"""The judge's endpoint and key from an Airflow connection (`judge.conn_id`), given as
`AIRFLOW_CONN_RAGAS_OPS_JUDGE`: the nightly DAG run for real (`dag.test()`), in sync mode and in
batch mode (the trigger reads the connection too), against a test judge that refuses any other
key. Neither OPENAI_API_KEY nor RAGAS_OPS_JUDGE_BASE_URL is set: only the connection says where
the judge is and with which key; the key is in no log."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from ragas_ops_testing.judge_server import JudgeServer

from ragas_ops.samples import sample_interactions
from tests.integration.dag import test_pipeline_dag as dag_tests
from tests.integration.dag.test_pipeline_dag import DAY, run_dag, state, warehouse, write_logs

airflow_database = dag_tests.airflow_database
lake = dag_tests.lake

CONNECTION_KEY = "sk-" + "from-the-connection-0123456789"


@pytest.fixture
def judge_by_connection(
    lake: Path, start_judge_server: Callable[..., JudgeServer], monkeypatch: pytest.MonkeyPatch
) -> JudgeServer:
    server = start_judge_server(api_key=CONNECTION_KEY, batch_seconds=0.2)
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.delenv("RAGAS_OPS_JUDGE_BASE_URL")
    connection = {"conn_type": "openai", "host": server.base_url, "password": CONNECTION_KEY}
    monkeypatch.setenv("AIRFLOW_CONN_RAGAS_OPS_JUDGE", json.dumps(connection))
    write_logs(lake, DAY, sample_interactions(30, seed=21, day=DAY))
    return server


@pytest.mark.parametrize("mode", ["sync", "batch"])
def test_the_judge_is_reached_with_the_endpoint_and_key_of_its_connection(
    mode: str,
    lake: Path,
    judge_by_connection: JudgeServer,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    run = run_dag(judge_mode=mode)

    assert state(run) == "success"
    stats = judge_by_connection.stats()
    assert stats["auth_failures"] == 0
    answered = stats["requests"] if mode == "sync" else stats["batches"]["requests_answered"]
    assert answered > 0
    scored = pq.read_table(warehouse(lake, "scored", f"dt={DAY}", "scored.parquet"))
    assert scored.num_rows == 30
    statuses = set(scored.column("faithfulness_status").to_pylist())
    # the sample holds rows that break the input contract; no row failed on the judge
    assert "ok" in statuses
    assert statuses <= {"ok", "invalid_input", "not_applicable"}
    captured = capsys.readouterr()
    logs = captured.out + captured.err + caplog.text
    assert CONNECTION_KEY not in logs


def test_without_the_connection_the_tasks_read_the_key_from_the_environment(
    lake: Path, judge_server: JudgeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AIRFLOW_CONN_RAGAS_OPS_JUDGE", raising=False)
    write_logs(lake, DAY, sample_interactions(10, seed=22, day=DAY))

    assert state(run_dag()) == "success"
    assert judge_server.stats()["requests"] > 0
