"""The score_chunk stage: one chunk's rows scored into its staging file (sync mode; batch mode
shares these helpers, see `pipeline.batch_chunk`), and what the manifest records of it."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import sys
import time
import uuid
from collections.abc import Callable
from typing import Any

from ragas_ops.config import Settings
from ragas_ops.contract.layout import Lake
from ragas_ops.judge.base import Judge
from ragas_ops.judge.factory import build_judge
from ragas_ops.pipeline.chunks import chunk_output_schema, chunk_tables
from ragas_ops.pipeline.plan import Chunk
from ragas_ops.scoring.run import MismatchMessage, score_into, scorer_for
from ragas_ops.scoring.scorer import Scorer
from ragas_ops.scoring.stop import GracefulStop

log = logging.getLogger(__name__)


def chunk_scorer(settings: Settings, judge: Judge) -> Scorer:
    """The scorer of the pipeline's chunks, in sync and in batch mode."""
    quiet_libraries()
    return scorer_for(settings, judge)


def chunk_mismatch(chunk: Chunk) -> MismatchMessage:
    """How a chunk's `RowCountMismatch` is worded."""
    return lambda planned, scored: f"chunk {chunk.index}: {planned} rows planned, {scored} scored"


def chunk_result(
    chunk: Chunk, scorer: Scorer, judge: Judge, started: float, **extra: Any
) -> dict[str, Any]:
    """What the manifest records of a scored chunk; also logged, as one INFO line. Cache hits
    are the judge's `cache_hit` events (chat answers, as each row's `judge_cache_hits`
    counts them); the vectors the embeddings cache gave are its `embedding_cache_hit` events,
    which the line says beside them."""
    usage = dataclasses.replace(judge.usage_total(), cache_hits=judge.events["cache_hit"])
    result = {
        "index": chunk.index,
        "rows": scorer.summary.rows,
        "statuses": {metric: dict(counts) for metric, counts in scorer.summary.statuses.items()},
        "usage": dataclasses.asdict(usage),
        "events": dict(judge.events),
        "judge": judge.description,
        "seconds": round(time.monotonic() - started, 3),
        # A judge without a rate limiter (the local one) never waits for one.
        "rate_limit_wait_seconds": round(float(getattr(judge, "rate_limit_wait_seconds", 0.0)), 3),
        # with no rpm/tpm set: the limits the provider stated, or the defaults kept
        "rate_limits": getattr(judge, "limits_note", None),
        # what the provider said that the report tells (a limit far below the configured)
        "provider_notes": list(getattr(judge, "provider_notes", ())),
        **extra,
    }
    log.info("%s", chunk_summary(result))
    return result


def chunk_summary(result: dict[str, Any]) -> str:
    """A chunk's result as the one line its task logs: rows, statuses per metric, requests,
    tokens, cost and the time spent waiting for the rate limit."""
    usage = result["usage"]
    statuses = "; ".join(
        f"{metric} " + ", ".join(f"{status} {count:,}" for status, count in sorted(counts.items()))
        for metric, counts in result["statuses"].items()
    )
    cost = "unknown" if usage["cost_usd"] is None else f"${usage['cost_usd']:.4f}"
    return (
        f"chunk {result['index']} scored: {result['rows']:,} rows in {result['seconds']:.1f} s "
        f"({result['judge']}); {statuses or 'no metric'}; requests {usage['requests']:,} chat "
        f"+ {usage['embedding_requests']:,} embeddings, {usage['cache_hits']:,} cache hits "
        f"+ {result['events'].get('embedding_cache_hit', 0):,} embeddings from the cache; "
        f"tokens {usage['prompt_tokens']:,} prompt + {usage['completion_tokens']:,} completion "
        f"+ {usage['embedding_tokens']:,} embedding; cost {cost}; waited "
        f"{result['rate_limit_wait_seconds']:.1f} s for the rate limit"
    )


HTTP_LOGGERS = ("httpx", "httpx2", "httpcore", "httpcore2", "openai")
"""Loggers that write a line per HTTP request at INFO: ~90 lines per chunk."""


def quiet_libraries() -> None:
    """Keep a scoring task's log about the task: HTTP clients' request lines at WARNING and
    no model-loading progress bars (written to stderr, which Airflow logs at error level),
    unless debug logging is on (`-v`) or a level was set for them on purpose."""
    if logging.getLogger().isEnabledFor(logging.DEBUG):
        return
    for name in HTTP_LOGGERS:
        logger = logging.getLogger(name)
        if logger.level == logging.NOTSET:
            logger.setLevel(logging.WARNING)
    # Read by huggingface_hub, and by transformers when it is first imported.
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    transformers = sys.modules.get("transformers")
    if transformers is not None:  # imported before: its progress bars are already on
        transformers.utils.logging.disable_progress_bar()


def new_attempt_id() -> str:
    """The id of one scoring of a chunk (a task's try), in its result: the day's spend counts
    each attempt once however many manifests list it (see `day_spend`)."""
    return uuid.uuid4().hex


async def score_chunk(
    lake: Lake,
    day: str,
    run_id: str,
    *,
    chunk: Chunk,
    settings: Settings,
    judge: Judge | None = None,
) -> dict[str, Any]:
    """Score one chunk into its staging file (sync mode); returns what the manifest records."""
    started = time.monotonic()
    quiet_libraries()
    judge = judge or build_judge(settings, s3=lake.s3)
    scorer = chunk_scorer(settings, judge)
    await score_chunk_into(lake, day, run_id, chunk=chunk, settings=settings, scorer=scorer)
    return chunk_result(chunk, scorer, judge, started, mode="sync", attempt=new_attempt_id())


async def score_chunk_into(
    lake: Lake,
    day: str,
    run_id: str,
    *,
    chunk: Chunk,
    settings: Settings,
    scorer: Scorer,
    complete: Callable[[], bool] | None = None,
) -> bool:
    """The chunk's rows through `scorer` into its staging file, as they come (sync chunks and
    batch passes alike); False when `complete` says the pass is not final (see `score_into`)."""
    return await score_into(
        scorer,
        chunk_tables(lake, chunk, settings),
        lake.chunk_file(day, run_id, chunk.index),
        chunk_output_schema(lake, chunk, scorer),
        expected_rows=chunk.rows,
        mismatch=chunk_mismatch(chunk),
        complete=complete,
    )


def run_score_chunk(*args: Any, stop: GracefulStop | None = None, **kwargs: Any) -> dict[str, Any]:
    """`score_chunk` from synchronous code (an Airflow task); `stop.request()` (the task's
    `on_kill`) stops it gracefully (`ScoringStopped`, see `scoring.stop`)."""
    stop = stop or GracefulStop()
    return asyncio.run(stop.run(score_chunk(*args, **kwargs)))
