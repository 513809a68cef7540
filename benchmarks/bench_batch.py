"""Batch mode against sync mode: the same rows, the same test judge server, OpenAI's list prices.

Prints, for docs/benchmarks.md, for each mode: chat requests (sync) and batch requests, rounds of
batches, prompt and completion tokens, and cost in USD priced as gpt-4o-mini (batch requests
at the Batch API's half price), then the ratio batch / sync. A third run shows what a batch
that fails 10% of its requests costs when those are retried in sync mode.

The scores of both modes are compared row by row: they must be the same (the judge answers
the same requests).

Usage: python benchmarks/bench_batch.py [--rows N]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from ragas_ops_testing.judge_process import server_stats, test_judge_process

from ragas_ops.config import Settings, apply_mapping
from ragas_ops.contract.layout import Lake
from ragas_ops.pipeline.batch_chunk import Waiting, advance
from ragas_ops.pipeline.plan import plan_day
from ragas_ops.pipeline.publish import publish_day
from ragas_ops.pipeline.score import run_score_chunk
from ragas_ops.samples import sample_interactions

DAY = "2026-11-28"
METRICS = ("faithfulness", "answer_relevance", "context_relevance")
ENVIRON = {"OPENAI_API_KEY": "benchmark"}


def settings_for(base_url: str, root: Path, mode: str, **judge: Any) -> Settings:
    settings = Settings()
    settings.judge.endpoint.base_url = base_url
    settings.judge.endpoint.model = (
        "gpt-4o-mini"  # priced as gpt-4o-mini: the test server echoes it
    )
    settings.judge.endpoint.embedding_model = "text-embedding-3-small"
    settings.judge.cache.path = None
    settings.judge.limits.rpm = None
    settings.judge.limits.tpm = None
    settings.judge.batch.mode = mode  # type: ignore[assignment]
    apply_mapping(settings, {"judge": judge}, source="settings_for")  # by their config keys
    settings.pipeline.raw_uri = str(root / "raw")
    settings.pipeline.warehouse_uri = str(root / f"warehouse-{mode}")
    return settings


def score(settings: Settings) -> tuple[pa.Table, float, int]:
    """Score the day chunk by chunk as the DAG's tasks would; returns the table, the seconds
    it took and the rounds of batches."""
    lake = Lake(settings.pipeline)
    day_plan = plan_day(lake, DAY, settings)
    started = time.monotonic()
    rounds = 0
    for chunk in day_plan.chunks:
        if settings.judge.batch.mode == "sync":
            run_score_chunk(lake, DAY, "bench", chunk=chunk, settings=settings)
            continue
        while True:
            progress = asyncio.run(
                advance(lake, DAY, "bench", chunk=chunk, settings=settings, environ=ENVIRON)
            )
            if not isinstance(progress, Waiting):
                rounds = max(rounds, progress["rounds"])
                break
            time.sleep(0.05)
    seconds = time.monotonic() - started
    publish_day(
        lake,
        DAY,
        "bench",
        planned_rows=day_plan.rows,
        chunk_count=len(day_plan.chunks),
        settings=settings,
    )
    return pq.read_table(lake.scored(DAY).path), seconds, rounds


def report(
    label: str, table: pa.Table, seconds: float, rounds: int, stats: dict[str, Any]
) -> float:
    cost = sum(value or 0.0 for value in table.column("cost_usd").to_pylist())
    prompt = sum(table.column("prompt_tokens").to_pylist())
    completion = sum(table.column("completion_tokens").to_pylist())
    batches = stats.get("batches", {})
    print(
        f"{label:<28}{stats['requests_by_endpoint'].get('chat', 0):>9}"
        f"{batches.get('requests_answered', 0):>10}{batches.get('created', 0):>9}{rounds:>8}"
        f"{prompt:>11,}{completion:>11,}{cost:>11.4f}{seconds:>8.1f}"
    )
    return cost


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=400)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "raw" / f"dt={DAY}").mkdir(parents=True)
        pq.write_table(
            sample_interactions(args.rows, seed=21, day=DAY),
            root / "raw" / f"dt={DAY}" / "part-0.parquet",
        )
        print(f"{args.rows} rows, chunks of 2,000 rows, three metrics, priced as gpt-4o-mini")
        print(
            f"{'mode':<28}{'chat req':>9}{'batch req':>10}{'batches':>9}{'rounds':>8}"
            f"{'prompt tok':>11}{'compl tok':>11}{'cost USD':>11}{'wall s':>8}"
        )
        with test_judge_process("--batch-seconds", "0.1") as url:
            sync_table, seconds, _ = score(settings_for(url, root, "sync"))
            sync_cost = report("sync", sync_table, seconds, 0, server_stats(url))
        with test_judge_process("--batch-seconds", "0.1") as url:
            batch_table, seconds, rounds = score(settings_for(url, root, "batch"))
            batch_cost = report("batch", batch_table, seconds, rounds, server_stats(url))
        with test_judge_process("--batch-seconds", "0.1", "--batch-failure-rate", "0.1") as url:
            failed = settings_for(url, root, "batch")
            failed.pipeline.warehouse_uri = str(root / "warehouse-failing")
            failing_table, seconds, rounds = score(failed)
            failing_cost = report(
                "batch, 10% failed -> sync", failing_table, seconds, rounds, server_stats(url)
            )
        print(f"\nbatch / sync cost: {batch_cost / sync_cost:.1%}")
        print(f"batch with 10% of requests retried in sync / sync: {failing_cost / sync_cost:.1%}")
        same = all(
            batch_table.column(f"{m}_score").to_pylist()
            == sync_table.column(f"{m}_score").to_pylist()
            for m in METRICS
        )
        print(f"scores identical in both modes: {same}")


if __name__ == "__main__":
    main()
