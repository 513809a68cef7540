"""The shadow judge in the pipeline: a chunk's sample scored by the candidate judge in the
task that scored the chunk, the day's candidate rows published apart from the published
scores (`candidate_scored/`), and the day's comparison (`judge_comparison/`).

Why in the chunk's task and not a mapped step of its own: the sample is a few percent of a
chunk, so a task of its own would be mostly Airflow's per-task overhead, and it would queue
for the pool behind the day's chunks; in the chunk's task it holds the slot the chunk already
holds (one task, one judge at a time: the pool still counts what calls a judge), reads rows
already planned, and a retry of the task scores it again from the cache. The candidate never
fails the chunk: the published scores do not wait on it, and its failure is recorded (the
manifest's `candidate.status`, the report, the quality page). Its part of a chunk's task is
cut at `judge.candidate_max_seconds`: a failing candidate's retries lengthen the task by at
most that.

The day's candidate rows are keyed as its scored table is, by chunk: one result per chunk
index, the last one, so that the same chunk reported twice (a cleared task, a rerun) is
merged once; each publish replaces the day's `candidate_scored` whole, and a publish whose
candidate scored nothing removes the earlier run's (its comparison would describe scores
this run replaced).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from ragas_ops.config import Settings
from ragas_ops.contract.layout import Lake
from ragas_ops.judge.base import Judge
from ragas_ops.judge.factory import build_judge
from ragas_ops.pipeline.chunks import chunk_output_schema, chunk_tables
from ragas_ops.pipeline.plan import Chunk
from ragas_ops.pipeline.publish import new_publish_id
from ragas_ops.scoring.run import score_into, scorer_for
from ragas_ops.scoring.shadow import CandidatePick, candidate_settings, candidate_share
from ragas_ops.secrets import redact
from ragas_ops.storage import ParquetOutput, conform, copy_into_place
from ragas_ops.tables.format import day_tables, read_parquet

log = logging.getLogger(__name__)


async def score_candidate_chunk(
    lake: Lake,
    day: str,
    run_id: str,
    *,
    chunk: Chunk,
    settings: Settings,
    environ: Mapping[str, str] | None = None,
    judge: Judge | None = None,
) -> dict[str, Any] | None:
    """Score the chunk's candidate sample into its staging file; what the manifest records
    of it (None: no shadow judge). `settings` are the chunk's (its endpoint resolved)."""
    if not settings.judge.candidate.enabled:
        return None
    started = time.monotonic()
    share = candidate_share(settings)
    pick = CandidatePick()
    # A few percent of the chunk: held in memory, so the row count is known before scoring.
    chosen = list(pick.of(chunk_tables(lake, chunk, settings), share))
    limit = settings.judge.candidate.max_seconds
    try:
        shadow = candidate_settings(settings)
        judge = judge or build_judge(shadow, environ, s3=lake.s3)
        scorer = scorer_for(shadow, judge)
        scoring = score_into(
            scorer,
            chosen,
            lake.candidate_chunk_file(day, run_id, chunk.index),
            chunk_output_schema(lake, chunk, scorer),
            expected_rows=pick.chosen,
        )
        await asyncio.wait_for(scoring, timeout=limit)
    except Exception as error:  # the published scores do not wait on the shadow judge
        if isinstance(error, TimeoutError):
            error = TimeoutError(
                f"not done within judge.candidate_max_seconds ({limit:g} s): its sample of "
                "the chunk is left out"
            )
        # The judge's own messages name the record's settings (judge.base_url...).
        message = redact(f"the shadow judge ([judge.candidate]): {type(error).__name__}: {error}")
        log.warning(
            "chunk %d: the shadow judge failed, its rows are left out: %s", chunk.index, message
        )
        return {"rows": 0, "chosen": pick.chosen, "without_id": pick.without_id, "error": message}
    usage = dataclasses.replace(judge.usage_total(), cache_hits=judge.events["cache_hit"])
    result = {
        "rows": scorer.summary.rows,
        "chosen": pick.chosen,
        "without_id": pick.without_id,
        "share": share,
        "judge": judge.description,
        "statuses": {metric: dict(counts) for metric, counts in scorer.summary.statuses.items()},
        "usage": dataclasses.asdict(usage),
        "seconds": round(time.monotonic() - started, 3),
    }
    log.info(
        "chunk %d: the shadow judge %s scored %d of %d rows (%s without an id), cost %s",
        chunk.index,
        judge.description,
        scorer.summary.rows,
        pick.rows,
        pick.without_id,
        usage.cost_usd,
    )
    return result


def publish_candidate(
    lake: Lake, day: str, run_id: str, chunk_results: Sequence[Mapping[str, Any]]
) -> dict[str, Any] | None:
    """Merge the chunks' candidate files into `candidate_scored/dt=D/` whole (None: no chunk
    ran a shadow judge). A chunk whose file is missing or holds other than the rows it says it
    scored is left out and named in `failed_chunks`, as one whose shadow judge failed: the
    published day never waits on the shadow judge, and no partial chunk is kept. One result
    per chunk index (the last): a chunk reported twice is merged once. `status` says `ok`,
    `partial` (some chunks failed) or `failed` (no candidate row: the day's earlier candidate
    rows and comparison are removed, so that none describes scores this run replaced)."""
    by_index = {
        int(result["index"]): result["candidate"]
        for result in chunk_results
        if result.get("candidate")
    }
    shadows = sorted(by_index.items())
    if not shadows:
        return None
    failed = [
        {"chunk": index, "error": shadow["error"]} for index, shadow in shadows if "error" in shadow
    ]
    parquet = []
    for index, shadow in shadows:
        if "error" in shadow:
            continue
        file = lake.candidate_chunk_file(day, run_id, index)
        problem = _candidate_file_problem(file, shadow["rows"])
        if problem is None:
            parquet.append(pq.ParquetFile(file.path, filesystem=file.filesystem))
        else:
            failed.append({"chunk": index, "error": problem})
    target = lake.day_file("candidate_scored", day)
    written = _merge_into(parquet, target, lake, day, run_id) if parquet else 0
    for index, _ in shadows:
        file = lake.candidate_chunk_file(day, run_id, index)
        if file.exists():
            file.filesystem.delete_file(file.path)
    kept = [shadow for _, shadow in shadows if "usage" in shadow]
    if not parquet:
        for stale in (target, lake.day_file("judge_comparison", day)):
            if stale.exists():
                stale.filesystem.delete_file(stale.path)
    failed.sort(key=lambda entry: entry["chunk"])
    status = "failed" if not parquet else "partial" if failed else "ok"
    if failed:
        log.warning(
            "the shadow judge failed on %d of %d chunk(s) of %s, e.g. chunk %d: %s",
            len(failed),
            len(shadows),
            day,
            failed[0]["chunk"],
            failed[0]["error"],
        )
    return {
        "status": status,
        "chunks": len(shadows),
        "table": target.uri if parquet else None,
        "rows": written,
        "judges": sorted({shadow["judge"] for shadow in kept}),
        "without_id": sum(shadow["without_id"] for _, shadow in shadows),
        "requests": sum(shadow["usage"]["requests"] for shadow in kept),
        "cost_usd": _total_cost(kept),
        "failed_chunks": failed,
        "publish_id": new_publish_id(),
    }


def _candidate_file_problem(file: Any, rows: int) -> str | None:
    """Why a chunk's candidate file cannot be published (None: it can)."""
    if not file.exists():
        return f"{file.uri} is missing"
    found = pq.ParquetFile(file.path, filesystem=file.filesystem).metadata.num_rows
    return None if found == rows else f"{file.uri}: {found} rows, the chunk scored {rows}"


def _merge_into(
    parquet: Sequence[pq.ParquetFile], target: Any, lake: Lake, day: str, run_id: str
) -> int:
    """The files merged into `target`, replaced whole; the rows written."""
    schema = pa.unify_schemas([p.schema_arrow for p in parquet], promote_options="permissive")
    snapshot = lake.scratch(day, run_id, "candidate_scored.parquet")
    output = ParquetOutput(snapshot, schema)
    written = 0
    try:
        for opened in parquet:
            for batch in opened.iter_batches():
                output.write(conform(pa.Table.from_batches([batch]), schema))
                written += batch.num_rows
    except BaseException:
        output.abort()
        raise
    output.commit()
    copy_into_place(snapshot, target, lake.scratch(day, run_id, "candidate_scored.parquet"))
    return written


def _total_cost(shadows: Sequence[Mapping[str, Any]]) -> float | None:
    costs = [shadow["usage"]["cost_usd"] for shadow in shadows]
    return None if None in costs else float(sum(costs))


def compare_day(
    lake: Lake, day: str, settings: Settings, scored: pa.Table, run_id: str | None = None
) -> str | None:
    """Write the day's `judge_comparison` from its candidate rows and `scored` (the rows the
    run published: `candidate_columns` of them); None when the day has no candidate rows."""
    from ragas_ops.quality.judge_comparison import day_comparison

    candidate = read_candidate(lake, day, settings.metrics.names)
    if candidate is None:
        return None
    table = day_comparison(day, scored, candidate, settings.metrics.names)
    target = lake.day_file("judge_comparison", day)
    staging = None if run_id is None else lake.scratch(day, run_id, target.name)
    output = ParquetOutput(target, table.schema, staging=staging)
    output.write(table)
    output.commit()
    return target.uri


def candidate_columns(metrics: Sequence[str]) -> list[str]:
    """What the comparison reads of a scored table: the id, the judge, each metric's score
    and status."""
    from ragas_ops.sampling import ROW_ID_COLUMN

    return [
        ROW_ID_COLUMN,
        "judge",
        *(f"{metric}_{part}" for metric in metrics for part in ("score", "status")),
    ]


def read_candidate(lake: Lake, day: str, metrics: Sequence[str]) -> pa.Table | None:
    """The day's candidate rows (only what the comparison reads), or None."""
    location = lake.day_file("candidate_scored", day)
    if not location.exists():
        return None
    return read_parquet(location, candidate_columns(metrics))


def candidate_rows(
    lake: Lake, days: Sequence[str], metrics: Sequence[str]
) -> dict[tuple[str, str], dict[str, Any]]:
    """The shadow judge's row of each (day, row id) of `days` (those with candidate rows):
    what `labels.candidate` pairs with the people's labels."""
    from ragas_ops.sampling import ROW_ID_COLUMN, row_id_text

    found: dict[tuple[str, str], dict[str, Any]] = {}
    for day in days:
        table = read_candidate(lake, day, metrics)
        for row in [] if table is None else table.to_pylist():
            row_id = row_id_text(row.get(ROW_ID_COLUMN))
            if row_id is not None:
                found.setdefault((day, row_id), row)  # a repeated id: its first row
    return found


def read_comparison(lake: Lake, day: str) -> pa.Table | None:
    """The day's `judge_comparison`, or None."""
    location = lake.day_file("judge_comparison", day)
    return read_parquet(location) if location.exists() else None


def with_candidate(
    result: dict[str, Any],
    lake: Lake,
    day: str,
    run_id: str,
    *,
    chunk: Chunk,
    settings: Settings,
    environ: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A scored chunk's result, with its candidate sample scored (from synchronous code: an
    Airflow task, after the chunk's sync scoring or its last batch pass)."""
    import asyncio

    if settings.judge.candidate.enabled:
        result["candidate"] = asyncio.run(
            score_candidate_chunk(
                lake, day, run_id, chunk=chunk, settings=settings, environ=environ
            )
        )
    return result


def compare_days(lake: Lake, days: Sequence[str], settings: Settings) -> tuple[pa.Table, list[str]]:
    """`compare-judges` over days of the warehouse: each day's comparison, then the range's
    (every day's pairs together, labelled `first to last`), from the candidate rows the
    pipeline kept (no judge is called); and the days that have none."""
    from ragas_ops.quality.judge_comparison import Pairs, compare_judges, paired_scores

    metrics = settings.metrics.names
    tables = day_tables(lake, settings)
    together = {metric: Pairs() for metric in metrics}
    found, missing = [], []
    for day in days:
        candidate = read_candidate(lake, day, metrics)
        if candidate is None:
            missing.append(day)
            continue
        scored = tables.read_scored(day, columns=candidate_columns(metrics))
        pairs = paired_scores(scored, candidate, metrics)
        for metric in metrics:
            together[metric].extend(pairs[metric])
        found.append(compare_judges(day, pairs, metrics))
    if len(found) > 1:
        found.append(compare_judges(f"{days[0]} to {days[-1]}", together, metrics))
    if not found:
        from ragas_ops.quality.judge_comparison import JUDGE_COMPARISON_SCHEMA

        return JUDGE_COMPARISON_SCHEMA.empty_table(), missing
    return pa.concat_tables(found), missing
