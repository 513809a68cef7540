"""The nightly DAG (`dag.test()`) against a reasoning model the test judge plays as strictly as
OpenAI: sync, flex and batch mode score every row with no refusal, the flex tier sends
`service_tier` and pays half; a run whose every request is refused the same way fails its
scoring task at once, without Airflow's retries."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from html import escape
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from ragas_ops_testing.judge_server import JudgeServer

from ragas_ops.config import settings_from_environment
from ragas_ops.pricing import DEFAULT_PRICES
from ragas_ops.quality.view import load_overview, render_page
from ragas_ops.samples import sample_interactions
from ragas_ops.storage import locate
from tests.integration.dag import test_pipeline_dag as dag_tests
from tests.integration.dag.test_pipeline_dag import (
    DAY,
    manifest_of,
    run_dag,
    state,
    warehouse,
    write_logs,
)
from tests.support import TEST_KEY

# The DAG tests' fixtures: Airflow's database, and a local lake scored by the judge server.
airflow_database = dag_tests.airflow_database
lake = dag_tests.lake
plan_log = dag_tests.plan_log

MODEL = "gpt-5-mini"
EMBEDDING_MODEL = "text-embedding-3-small"
METRICS = ("faithfulness", "answer_relevance", "context_relevance")
ROWS = 30


@pytest.fixture
def judge_server(start_judge_server: Callable[..., JudgeServer]) -> JudgeServer:
    return start_judge_server(
        request_log=True, batch_seconds=0.2, model_aliases={"acme-classic": "gpt-4o-mini"}
    )


@pytest.fixture(autouse=True)
def reasoning_model(monkeypatch: pytest.MonkeyPatch, lake: Path) -> None:
    monkeypatch.setenv("RAGAS_OPS_JUDGE_MODEL", MODEL)
    monkeypatch.setenv("RAGAS_OPS_JUDGE_EMBEDDING_MODEL", EMBEDDING_MODEL)
    monkeypatch.setenv("RAGAS_OPS_JUDGE_BATCH_POLL_SECONDS", "0.1")


def chat_bodies(server: JudgeServer) -> list[dict[str, Any]]:
    return [json.loads(entry["body"]) for entry in server.requests() if entry["endpoint"] == "chat"]


@pytest.mark.parametrize("mode", ["sync", "flex", "batch"])
def test_the_nightly_dag_scores_every_row_on_a_reasoning_model(
    lake: Path, judge_server: JudgeServer, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    if mode == "flex":
        monkeypatch.setenv("RAGAS_OPS_JUDGE_SERVICE_TIER", "flex")
    logs = sample_interactions(ROWS, seed=9, day=DAY)
    write_logs(lake, DAY, logs)

    run = run_dag(judge_mode="batch") if mode == "batch" else run_dag()

    assert state(run) == "success"
    scored = pq.read_table(warehouse(lake, "scored", f"dt={DAY}", "scored.parquet"))
    assert scored.column("id").to_pylist() == logs.column("id").to_pylist()
    for metric in METRICS:
        found = set(scored.column(f"{metric}_status").to_pylist())
        assert found <= {"ok", "not_applicable", "invalid_input"}, (metric, found)
    stats = judge_server.stats()
    assert stats["refused_by_param"] == {}
    if mode == "batch":
        assert stats["batches"]["requests_answered"] > 0
        assert stats["requests_by_endpoint"]["chat"] == 0
        return
    assert stats["reasoning_tokens"] > 0
    assert sum(scored.column("completion_tokens").to_pylist()) == stats["completion_tokens"]
    bodies = chat_bodies(judge_server)
    assert {body.get("reasoning_effort") for body in bodies} == {"minimal"}
    assert {body.get("service_tier") for body in bodies} == ({"flex"} if mode == "flex" else {None})
    price = DEFAULT_PRICES[MODEL]
    share = 0.5 if mode == "flex" else 1.0
    embedding = DEFAULT_PRICES[EMBEDDING_MODEL].cost(stats["embedding_tokens"], 0)
    chat = price.cost(stats["prompt_tokens"], stats["completion_tokens"])
    assert sum(scored.column("cost_usd").to_pylist()) == pytest.approx(chat * share + embedding)


def test_a_misconfigured_run_fails_its_scoring_task_without_retries(
    lake: Path,
    judge_server: JudgeServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Flex asked of a gateway's classic model: every request refused the same way."""
    monkeypatch.setenv("RAGAS_OPS_JUDGE_MODEL", "acme-classic")
    monkeypatch.setenv("RAGAS_OPS_JUDGE_SERVICE_TIER", "flex")
    monkeypatch.setenv("RAGAS_OPS_PIPELINE_TASK_RETRIES", "2")
    monkeypatch.setenv("RAGAS_OPS_PIPELINE_RETRY_DELAY_SECONDS", "0.1")
    write_logs(lake, DAY, sample_interactions(20, seed=7, day=DAY))

    run = run_dag()

    assert state(run) == "failed"
    (scoring,) = [ti for ti in run.get_task_instances() if ti.task_id == "score_chunk"]
    assert str(getattr(scoring.state, "value", scoring.state)) == "failed"
    assert scoring.try_number == 1, "a misconfiguration is not retried"
    assert judge_server.stats()["requests_by_endpoint"]["chat"] <= 10
    captured = capsys.readouterr()
    logs = captured.out + captured.err + caplog.text
    assert "every request was refused the same way" in logs
    assert "check judge.service_tier" in logs
    assert TEST_KEY not in logs


def test_a_model_shutting_down_in_20_days_is_in_the_plan_log_and_the_manifest(
    lake: Path, judge_server: JudgeServer, plan_log: list[logging.LogRecord]
) -> None:
    ends = (datetime.now(UTC) + timedelta(days=20)).date().isoformat()
    judge_server.update(shutdown_dates={MODEL: ends})
    write_logs(lake, DAY, sample_interactions(10, seed=9, day=DAY))

    assert state(run_dag()) == "success"

    said = f"judge model {MODEL} shuts down on {ends} (in 20 days)"
    [warning] = manifest_of(lake, DAY)["plan"]["model_warnings"]
    assert warning.startswith(said)
    assert "the price table's successor is gpt-6.1-terra" in warning
    logged = [record.getMessage() for record in plan_log if record.levelno == logging.WARNING]
    assert f"plan warning: {warning}" in logged
    assert judge_server.stats()["model_lookups"] == {MODEL: 1, EMBEDDING_MODEL: 1}
    report = warehouse(lake, "reports", f"dt={DAY}", "report.html").read_text()
    assert escape(warning) in report
    overview = load_overview(
        locate(str(warehouse(lake))), settings_from_environment(), days=3, worst=0
    )
    page = render_page(overview, "/rag-quality", days=3)
    assert "model-shutdown" in page
    assert escape(said) in page
