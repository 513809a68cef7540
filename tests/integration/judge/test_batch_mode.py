"""Batch mode over HTTP against the project's judge server (Files and Batch API endpoints).

Each test scores a small day chunk by chunk through `batch_chunk.advance`, the function the
Airflow operator calls on every (re)start, and checks that every row comes out exactly once
with a defined status, whatever the batches did: answered, partly failed, expired, failed
whole, interrupted by a crash, or stopped by the budget.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from ragas_ops_testing.judge_server import JudgeServer

from ragas_ops.config import Settings
from ragas_ops.contract.layout import Lake
from ragas_ops.judge.batch import BatchRequest, Unanswered
from ragas_ops.judge.limits.budget import Spend
from ragas_ops.judge.openai.batch_client import BatchClient, batch_files
from ragas_ops.pipeline import batch_chunk
from ragas_ops.pipeline.batch_chunk import Waiting, advance
from ragas_ops.pipeline.plan import Chunk, plan_day
from ragas_ops.pipeline.publish import publish_day
from ragas_ops.pipeline.score import run_score_chunk
from ragas_ops.pipeline.share import chunk_settings
from ragas_ops.pricing import Price
from ragas_ops.samples import sample_interactions
from tests.support import TEST_KEY, settings_for

DAY = "2026-11-28"
ROWS = 30
ENVIRON = {"OPENAI_API_KEY": TEST_KEY}
TEST_PRICE = Price(input_per_million=1.0, output_per_million=4.0)
SCORED_OR_DEFINED = {"ok", "not_applicable", "invalid_input"}  # the sample has bad rows


def batch_settings(server: JudgeServer, tmp_path: Path, **judge: Any) -> Settings:
    settings = settings_for(server, tmp_path, mode="batch", **judge)
    settings.pipeline.raw_uri = str(tmp_path / "raw")
    settings.pipeline.warehouse_uri = str(tmp_path / "warehouse")
    settings.pipeline.chunk_rows = 20
    settings.prices["test-judge"] = TEST_PRICE
    settings.prices["test-embedding"] = TEST_PRICE
    return settings


def write_day(settings: Settings, rows: int = ROWS) -> pa.Table:
    table = sample_interactions(rows, seed=3, day=DAY)
    folder = Path(settings.pipeline.raw_uri) / f"dt={DAY}"
    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, folder / "part-0.parquet")
    return table


def drive(lake: Lake, chunk: Chunk, settings: Settings, run_id: str = "run-1") -> dict[str, Any]:
    """Call `advance` as the operator and its trigger would, until the chunk is scored."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        progress = asyncio.run(
            advance(lake, DAY, run_id, chunk=chunk, settings=settings, environ=ENVIRON)
        )
        if not isinstance(progress, Waiting):
            return progress
        time.sleep(0.05)
    raise AssertionError("the batches never finished")


def score_day(settings: Settings, run_id: str = "run-1") -> tuple[pa.Table, list[dict[str, Any]]]:
    lake = Lake(settings.pipeline)
    day_plan = plan_day(lake, DAY, settings)
    results = [
        drive(lake, chunk, chunk_settings(settings, chunk.rows, day_plan.rows), run_id)
        for chunk in day_plan.chunks
    ]
    publish_day(
        lake,
        DAY,
        run_id,
        planned_rows=day_plan.rows,
        chunk_count=len(day_plan.chunks),
        settings=settings,
    )
    return pq.read_table(lake.scored(DAY).path), results


def statuses(table: pa.Table, metric: str) -> set[str]:
    return set(table.column(f"{metric}_status").to_pylist())


def all_statuses(table: pa.Table) -> set[str]:
    return {
        status
        for metric in ("faithfulness", "answer_relevance", "context_relevance")
        for status in statuses(table, metric)
    }


# -- batch files ------------------------------------------------------------------------------


def request(number: int, size: int = 10, model: str = "m") -> BatchRequest:
    return BatchRequest(
        f"id-{number}", {"model": model, "messages": [{"content": "x" * size}]}, Spend()
    )


def test_requests_are_cut_into_files_within_the_request_and_byte_limits() -> None:
    requests = [request(i) for i in range(7)]
    by_count = batch_files(requests, max_requests=3, max_bytes=10_000)
    assert [len(ids) for ids in by_count.custom_ids] == [3, 3, 1]
    line_bytes = len(by_count.files[0].splitlines()[0]) + 1
    by_size = batch_files(requests, max_requests=100, max_bytes=2 * line_bytes)
    assert [len(ids) for ids in by_size.custom_ids] == [2, 2, 2, 1]
    assert all(len(content) <= 2 * line_bytes for content in by_size.files)
    flattened = [custom_id for ids in by_size.custom_ids for custom_id in ids]
    assert flattened == [f"id-{i}" for i in range(7)], "every request once, in order"


def test_a_request_larger_than_a_file_is_set_aside_not_sent() -> None:
    files = batch_files([request(1), request(2, size=5000)], max_requests=10, max_bytes=1000)
    assert files.too_large == ["id-2"]
    assert files.custom_ids == [["id-1"]]


def test_a_batch_file_holds_one_model() -> None:
    with pytest.raises(ValueError, match="one model"):
        batch_files([request(1, model="a"), request(2, model="b")], 10, 10_000)


# -- end to end over HTTP --------------------------------------------------------------------


@pytest.mark.parametrize("model", ["test-judge", "gpt-5-mini"])
def test_batch_mode_scores_every_row_once_through_chained_batches_at_half_the_price(
    start_judge_server: Any, tmp_path: Path, model: str
) -> None:
    """Also on a reasoning model, whose batch lines are fitted as its sync requests are."""
    server = start_judge_server(batch_seconds=0.05)
    settings = batch_settings(server, tmp_path / "batch", model=model)
    settings.prices[model] = TEST_PRICE
    logs = write_day(settings)

    scored, results = score_day(settings)

    assert scored.column("id").to_pylist() == logs.column("id").to_pylist()
    assert all_statuses(scored) <= SCORED_OR_DEFINED
    stats = server.stats()
    assert stats["requests_by_endpoint"]["chat"] == 0, "no chat request outside the batches"
    assert stats["refused_by_param"] == {}, "every batch line fits the model"
    assert stats["batches"]["completed"] == stats["batches"]["created"] >= 4
    assert all(result["rounds"] == 2 for result in results), "statements, then verdicts"
    batch_cost = sum(scored.column("cost_usd").to_pylist())
    tiers = zip(
        scored.column("judge_requests").to_pylist(),
        scored.column("judge_service_tier").to_pylist(),
        strict=True,
    )
    assert {tier for requests, tier in tiers if requests} == {"batch"}

    # The same rows in sync mode, with a cache of their own, cost twice as much.
    sync_settings = settings_for(server, tmp_path / "sync", model=model)
    sync_settings.prices[model] = TEST_PRICE
    sync_settings.prices["test-embedding"] = TEST_PRICE
    sync_settings.pipeline.warehouse_uri = str(tmp_path / "sync-warehouse")
    sync_settings.pipeline.raw_uri = settings.pipeline.raw_uri
    sync_settings.pipeline.chunk_rows = 20
    lake = Lake(sync_settings.pipeline)
    day_plan = plan_day(lake, DAY, sync_settings)
    for chunk in day_plan.chunks:
        run_score_chunk(lake, DAY, "sync", chunk=chunk, settings=sync_settings)
    publish_day(
        lake, DAY, "sync", planned_rows=ROWS, chunk_count=len(day_plan.chunks), settings=settings
    )
    synced = pq.read_table(lake.scored(DAY).path)
    sync_cost = sum(synced.column("cost_usd").to_pylist())
    assert batch_cost <= 0.52 * sync_cost
    assert set(synced.column("judge_service_tier").to_pylist()) <= {"default", None}
    for metric in ("faithfulness", "answer_relevance", "context_relevance"):
        scores = scored.column(f"{metric}_score").to_pylist()
        assert scores == synced.column(f"{metric}_score").to_pylist(), metric


def test_rounds_larger_than_the_file_limits_are_split_into_several_batches(
    start_judge_server: Any, tmp_path: Path
) -> None:
    server = start_judge_server(batch_seconds=0.05)
    settings = batch_settings(server, tmp_path, batch_max_requests=7)
    logs = write_day(settings)

    scored, results = score_day(settings)

    assert scored.column("id").to_pylist() == logs.column("id").to_pylist()
    assert all_statuses(scored) <= SCORED_OR_DEFINED
    assert server.stats()["batches"]["created"] > 2 * sum(result["rounds"] for result in results)


@pytest.mark.parametrize("on_unanswered", ["sync", "status"])
def test_requests_a_batch_failed_are_retried_in_sync_mode_or_carried_with_a_status(
    start_judge_server: Any, tmp_path: Path, on_unanswered: str
) -> None:
    server = start_judge_server(batch_seconds=0.05, batch_failure_rate=0.3, seed=7)
    settings = batch_settings(server, tmp_path, on_batch_unanswered=on_unanswered)
    logs = write_day(settings)

    scored, _ = score_day(settings)

    assert scored.column("id").to_pylist() == logs.column("id").to_pylist()
    stats = server.stats()
    failed = stats["batches"]["requests_failed"]
    assert failed > 0
    if on_unanswered == "sync":
        assert all_statuses(scored) <= SCORED_OR_DEFINED
        assert stats["requests_by_endpoint"]["chat"] == failed, "each failed request sent once"
    else:
        assert "judge_unavailable" in all_statuses(scored)
        assert stats["requests_by_endpoint"]["chat"] == 0
        reasons = [
            reason
            for reason in scored.column("context_relevance_reason").to_pylist()
            if reason and "not answered" in reason
        ]
        assert reasons
        assert all("HTTP 500" in reason for reason in reasons)
    requests = sum(scored.column("judge_requests").to_pylist())
    answered = stats["batches"]["requests_answered"] + stats["requests_by_endpoint"]["chat"]
    assert requests == answered, "every request paid for is accounted for once, in a row"


def test_an_expired_batch_leaves_its_unanswered_rows_with_a_status(
    start_judge_server: Any, tmp_path: Path
) -> None:
    server = start_judge_server(batch_seconds=0.05, batch_expire_after=0.5)
    settings = batch_settings(server, tmp_path, on_batch_unanswered="status")
    logs = write_day(settings)

    scored, _ = score_day(settings)

    assert scored.column("id").to_pylist() == logs.column("id").to_pylist()
    assert server.stats()["batches"]["expired"] > 0
    reasons = " ".join(filter(None, scored.column("faithfulness_reason").to_pylist()))
    assert "batch_expired" in reasons
    assert {"ok", "judge_unavailable"} <= all_statuses(scored)


def test_a_failed_batch_is_retried_in_sync_mode(start_judge_server: Any, tmp_path: Path) -> None:
    server = start_judge_server(batch_seconds=0.05, batch_fail=True)
    settings = batch_settings(server, tmp_path, on_batch_unanswered="sync")
    logs = write_day(settings)

    scored, _ = score_day(settings)

    assert scored.column("id").to_pylist() == logs.column("id").to_pylist()
    assert all_statuses(scored) <= SCORED_OR_DEFINED
    assert server.stats()["batches"]["failed"] == server.stats()["batches"]["created"]


def test_a_task_that_dies_after_creating_a_batch_re_attaches_to_it(
    start_judge_server: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The worst moment to crash: the batch exists, its id is not recorded yet."""
    server = start_judge_server(batch_seconds=0.05)
    settings = batch_settings(server, tmp_path)
    logs = write_day(settings)
    lake = Lake(settings.pipeline)
    chunk = plan_day(lake, DAY, settings).chunks[0]
    submit = BatchClient.submit

    async def submit_then_die(self: BatchClient, content: bytes, part_key: str) -> str:
        await submit(self, content, part_key)
        raise SystemExit("the worker died")

    monkeypatch.setattr(BatchClient, "submit", submit_then_die)
    with pytest.raises(SystemExit):
        asyncio.run(advance(lake, DAY, "run-1", chunk=chunk, settings=settings, environ=ENVIRON))
    assert server.stats()["batches"]["created"] == 1
    monkeypatch.setattr(BatchClient, "submit", submit)

    with caplog.at_level(logging.INFO, logger="ragas_ops.judge.openai.batch_client"):
        result = drive(lake, chunk, settings, run_id="run-2")
    assert "batch_testdouble00000001" in caplog.text
    assert "re-attaching" in caplog.text
    assert result["rows"] == chunk.rows
    scored = pq.read_table(lake.chunk_file(DAY, "run-2", chunk.index).path)
    assert scored.column("id").to_pylist() == logs.column("id").to_pylist()[: chunk.rows]
    assert server.stats()["batches"]["created"] == 2, "one batch per round, each paid once"


def test_a_rerun_re_attaches_to_the_batches_of_an_earlier_run(
    start_judge_server: Any, tmp_path: Path
) -> None:
    server = start_judge_server(batch_seconds=0.05)
    settings = batch_settings(server, tmp_path)
    write_day(settings)
    lake = Lake(settings.pipeline)
    chunk = plan_day(lake, DAY, settings).chunks[0]
    asyncio.run(advance(lake, DAY, "run-1", chunk=chunk, settings=settings, environ=ENVIRON))

    drive(lake, chunk, settings, run_id="run-2")

    assert server.stats()["batches"]["created"] == 2


def test_the_budget_stops_sending_and_the_rest_is_left_with_a_status(
    start_judge_server: Any, tmp_path: Path
) -> None:
    server = start_judge_server(batch_seconds=0.05)
    settings = batch_settings(server, tmp_path, budget_tokens=40_000)
    logs = write_day(settings)

    scored, _ = score_day(settings)

    assert scored.column("id").to_pylist() == logs.column("id").to_pylist()
    assert "budget_exhausted" in all_statuses(scored)
    assert "ok" in all_statuses(scored)
    reasons = " ".join(filter(None, scored.column("context_relevance_reason").to_pylist()))
    assert "budget" in reasons
    spent = sum(
        sum(scored.column(column).to_pylist())
        for column in ("prompt_tokens", "completion_tokens", "embedding_tokens")
    )
    # Each chunk has its share of the budget; what was sent is within it (estimates are
    # conservative: the test double's replies are shorter than a quarter of max_tokens).
    assert spent <= 40_000


def test_the_batch_record_is_removed_once_the_day_is_published(
    start_judge_server: Any, tmp_path: Path
) -> None:
    server = start_judge_server(batch_seconds=0.05)
    settings = batch_settings(server, tmp_path)
    write_day(settings)

    score_day(settings)

    assert not Lake(settings.pipeline).batch_work(DAY).exists()


def test_the_batch_record_round_trips_through_json() -> None:
    """What a restarted task reads is what the task before it wrote."""
    state = batch_chunk.BatchState(
        [
            batch_chunk.Round(
                1,
                parts=[batch_chunk.Part("k", ["a"], "batch_1")],
                not_sent={"b": Unanswered("over budget", over_budget=True)},
            ),
            batch_chunk.Round(2, kind="sync", collected=True),
        ]
    )
    again = batch_chunk.BatchState.from_dict(json.loads(json.dumps(dataclasses.asdict(state))))
    assert again == state


# -- the trigger --------------------------------------------------------------------------------


def first_event(trigger: Any) -> Any:
    async def run() -> Any:
        return await anext(trigger.run())

    return asyncio.run(run())


def test_the_trigger_fires_when_the_batches_are_finished_and_holds_no_secret(
    start_judge_server: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ragas_ops.airflow.triggers import BatchesFinishedTrigger

    server = start_judge_server(batch_seconds=0.3, api_key=TEST_KEY)
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    settings = batch_settings(server, tmp_path)
    write_day(settings)
    lake = Lake(settings.pipeline)
    chunk = plan_day(lake, DAY, settings).chunks[0]
    waiting = asyncio.run(
        advance(lake, DAY, "run-1", chunk=chunk, settings=settings, environ=ENVIRON)
    )
    assert isinstance(waiting, Waiting)
    trigger = BatchesFinishedTrigger(
        batch_ids=waiting.batch_ids,
        base_url=server.base_url,
        api_key_env="OPENAI_API_KEY",
        poll_seconds=0.05,
        deadline=time.time() + 60,
    )
    classpath, kwargs = trigger.serialize()
    assert classpath == "ragas_ops.airflow.triggers.BatchesFinishedTrigger"
    assert TEST_KEY not in json.dumps(kwargs), "Airflow stores trigger arguments in its database"

    event = first_event(type(trigger)(**kwargs))

    assert event.payload == {
        "state": "finished",
        "statuses": dict.fromkeys(waiting.batch_ids, "completed"),
    }


def test_the_trigger_reports_refused_credentials_without_the_key(
    start_judge_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ragas_ops.airflow.triggers import BatchesFinishedTrigger

    server = start_judge_server(api_key=TEST_KEY)
    wrong = TEST_KEY[::-1]
    monkeypatch.setenv("WRONG_KEY", wrong)
    trigger = BatchesFinishedTrigger(["batch_x"], server.base_url, "WRONG_KEY", 0.05, time.time())

    event = first_event(trigger)

    assert event.payload["state"] == "error"
    assert wrong not in event.payload["message"]
    assert wrong[:12] not in event.payload["message"]


def test_the_trigger_gives_up_at_its_deadline(start_judge_server: Any, tmp_path: Path) -> None:
    from ragas_ops.airflow.triggers import BatchesFinishedTrigger

    server = start_judge_server(batch_seconds=3600)
    settings = batch_settings(server, tmp_path)
    write_day(settings)
    lake = Lake(settings.pipeline)
    chunk = plan_day(lake, DAY, settings).chunks[0]
    waiting = asyncio.run(
        advance(lake, DAY, "run-1", chunk=chunk, settings=settings, environ=ENVIRON)
    )
    assert isinstance(waiting, Waiting)
    trigger = BatchesFinishedTrigger(
        waiting.batch_ids, server.base_url, "OPENAI_API_KEY", 0.05, time.time() + 0.2
    )

    event = first_event(trigger)

    assert event.payload["state"] == "timeout"


def test_a_money_budget_without_a_price_is_refused_before_anything_is_sent(
    start_judge_server: Any, tmp_path: Path
) -> None:
    from ragas_ops.judge.base import JudgeFatalError

    server = start_judge_server(batch_seconds=0.05)
    settings = batch_settings(server, tmp_path, budget_usd=1.0)
    del settings.prices["test-judge"]
    write_day(settings)
    lake = Lake(settings.pipeline)
    chunk = plan_day(lake, DAY, settings).chunks[0]

    with pytest.raises(JudgeFatalError, match="has no price"):
        asyncio.run(advance(lake, DAY, "run-1", chunk=chunk, settings=settings, environ=ENVIRON))
    assert server.stats()["batches"]["created"] == 0
