"""The pipeline's steps as plain functions: the DAG's tasks only call these.

    plan_day -> score_chunk (one per chunk) -> publish_day -> aggregate_day -> report_day

Every step is idempotent: a retried or rerun step overwrites what it wrote before, and the
judge cache makes rescoring unchanged rows free.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import os
import sys
import time
import uuid
from collections.abc import Iterator, Sequence
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from ragas_ops.config import BudgetPool, Settings
from ragas_ops.contract.inputs import TIMESTAMP, repair_utf8
from ragas_ops.contract.layout import Lake, run_folder_name
from ragas_ops.contract.outputs import output_schema
from ragas_ops.judge.base import Judge, Usage
from ragas_ops.judge.factory import build_judge
from ragas_ops.metrics import build_metrics
from ragas_ops.pipeline.plan import Chunk, DayPlan, check_shrink, chunk_to_dict
from ragas_ops.sampling import ROW_ID_COLUMN
from ragas_ops.scoring.run import MismatchMessage, RowCountMismatch, score_into, scorer_for
from ragas_ops.scoring.scorer import Scorer, package_version
from ragas_ops.storage import conform, remove_leftovers
from ragas_ops.tables.format import DayTables, day_tables

log = logging.getLogger(__name__)

READ_BATCH_ROWS = 1024


def judge_share(settings: Settings, pool: BudgetPool = "nightly") -> Settings:
    """Settings for one of the scoring tasks that may run at once (the slots of both pools).

    The task keeps the account's rpm and tpm and a static share of 1/(slots of both pools)
    (`judge.static_share`, applied in one place: `limits.shared_budget.static_rates`). Under a
    shared budget (`judge.shared_budget = local` or `redis`) the tasks take every request from
    the account's buckets (nightly first, see docs/shared-budget.md) and the static share is
    only what a task falls back to; with `none` it is what each task uses, so that together
    they stay within the account.
    """
    share = dataclasses.replace(settings)
    slots = settings.pipeline.pool_slots + settings.pipeline.backfill_pool_slots
    judge = settings.judge
    share.judge = dataclasses.replace(
        judge, budget_pool=pool, static_share=judge.static_share / slots
    )
    return share


# -- score_chunk ---------------------------------------------------------------------------------


def read_slices(lake: Lake, chunk: Chunk) -> Iterator[pa.Table]:
    """The chunk's rows, a batch at a time, reading only the row groups each slice needs.

    Every table has the day's schema (`chunk.schema`, from the plan; missing columns null),
    and text that is not valid UTF-8 is repaired for `validate_row` to flag (`repair_utf8`).
    """
    filesystem = lake.raw.filesystem
    schema = chunk.schema or _chunk_schema(lake, chunk)
    for piece in chunk.slices:
        with filesystem.open_input_file(piece.path) as handle:
            parquet = pq.ParquetFile(handle)
            groups, first_row = _row_groups_for(parquet.metadata, piece.start, piece.rows)
            position = first_row
            end = piece.start + piece.rows
            for batch in parquet.iter_batches(batch_size=READ_BATCH_ROWS, row_groups=groups):
                lo, hi = max(piece.start, position), min(end, position + batch.num_rows)
                if hi > lo:
                    piece_rows = pa.Table.from_batches([batch.slice(lo - position, hi - lo)])
                    yield repair_utf8(conform(piece_rows, schema))
                position += batch.num_rows
                if position >= end:
                    break


def _chunk_schema(lake: Lake, chunk: Chunk) -> pa.Schema:
    """The union of the chunk's files (a chunk planned before plans carried the schema)."""
    schemas = []
    for path in dict.fromkeys(piece.path for piece in chunk.slices):
        with lake.raw.filesystem.open_input_file(path) as handle:
            schemas.append(pq.ParquetFile(handle).schema_arrow)
    return pa.unify_schemas(schemas, promote_options="permissive")


def _row_groups_for(metadata: Any, start: int, rows: int) -> tuple[list[int], int]:
    groups: list[int] = []
    first_row = position = 0
    for index in range(metadata.num_row_groups):
        size = metadata.row_group(index).num_rows
        if position + size > start and position < start + rows:
            if not groups:
                first_row = position
            groups.append(index)
        position += size
    return groups, first_row


def chunk_settings(
    settings: Settings, chunk_rows: int, day_rows: int, pool: BudgetPool = "nightly"
) -> Settings:
    """Settings for one chunk's scoring task in `pool`: its share of the judge's rate limits
    (see `judge_share`) and of the run's budget, in proportion to its rows."""
    share = judge_share(settings, pool)
    fraction = chunk_rows / day_rows if day_rows else 1.0
    budget_usd, budget_tokens = settings.judge.budget_usd, settings.judge.budget_tokens
    share.judge = dataclasses.replace(
        share.judge,
        budget_usd=None if budget_usd is None else budget_usd * fraction,
        budget_tokens=None if budget_tokens is None else max(1, int(budget_tokens * fraction)),
    )
    return share


def chunk_scorer(settings: Settings, judge: Judge) -> Scorer:
    """The scorer of the pipeline's chunks, in sync and in batch mode."""
    quiet_libraries()
    return scorer_for(settings, judge)


def chunk_tables(lake: Lake, chunk: Chunk, settings: Settings) -> Iterator[pa.Table]:
    """The chunk's rows in tables of `batch_rows` rows."""
    return _rebatched(read_slices(lake, chunk), settings.batch_rows)


def chunk_output_schema(lake: Lake, chunk: Chunk, scorer: Scorer) -> pa.Schema:
    """The schema of the chunk's scored file: the day's columns and the scorer's."""
    return output_schema(chunk.schema or _chunk_schema(lake, chunk), scorer.metrics)


def chunk_mismatch(chunk: Chunk) -> MismatchMessage:
    """How a chunk's `RowCountMismatch` is worded."""
    return lambda planned, scored: f"chunk {chunk.index}: {planned} rows planned, {scored} scored"


def chunk_result(
    chunk: Chunk, scorer: Scorer, judge: Judge, started: float, **extra: Any
) -> dict[str, Any]:
    """What the manifest records of a scored chunk; also logged, as one INFO line. Cache hits
    are the judge's `cache_hit` events, as `ragas-ops score` counts them (its spend totals
    hold only what was sent)."""
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
        f"+ {usage['embedding_requests']:,} embeddings, {usage['cache_hits']:,} cache hits; "
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
    await score_into(
        scorer,
        chunk_tables(lake, chunk, settings),
        lake.chunk_file(day, run_id, chunk.index),
        chunk_output_schema(lake, chunk, scorer),
        expected_rows=chunk.rows,
        mismatch=chunk_mismatch(chunk),
    )
    return chunk_result(chunk, scorer, judge, started, mode="sync", attempt=new_attempt_id())


def _rebatched(tables: Iterator[pa.Table], rows: int) -> Iterator[pa.Table]:
    """Tables of `rows` rows (the last may be smaller), whatever the sizes read."""
    pending: list[pa.Table] = []
    count = 0
    for table in tables:
        pending.append(table)
        count += table.num_rows
        while count >= rows:
            merged = pa.concat_tables(pending, promote_options="default")
            yield merged.slice(0, rows)
            rest = merged.slice(rows)
            pending, count = ([rest] if rest.num_rows else []), rest.num_rows
    if count:
        yield pa.concat_tables(pending, promote_options="default")


# -- publish_day ---------------------------------------------------------------------------------


def publish_day(
    lake: Lake,
    day: str,
    run_id: str,
    *,
    planned_rows: int,
    chunk_count: int,
    settings: Settings,
    allow_shrink: bool = False,
) -> dict[str, Any]:
    """Merge the run's chunk files into the day's scored table and publish it in one step.

    Checks that every planned chunk is there, that rows in = rows out and that the day does
    not shrink without `allow_shrink` (`plan.check_shrink`) before anything is published. The
    warehouse's table format publishes it whole (`tables.format.DayTables.publish_scored`:
    a Parquet file copied into place, or one Iceberg commit) and keeps the version this run's
    aggregate and report read. Then the day's leftovers of crashed runs are deleted (see
    `remove_day_leftovers`).
    """
    files = [lake.chunk_file(day, run_id, index) for index in range(chunk_count)]
    missing = [file.uri for file in files if not file.exists()]
    if missing:
        raise RowCountMismatch(f"{len(missing)} chunk file(s) missing, e.g. {missing[0]}")
    parquet = [pq.ParquetFile(file.path, filesystem=file.filesystem) for file in files]
    written = sum(p.metadata.num_rows for p in parquet)
    if written != planned_rows:
        raise RowCountMismatch(f"{planned_rows} rows planned for {day}, {written} scored")
    check_shrink(lake, day, written, settings, allow_shrink=allow_shrink)
    publish_id = new_publish_id()
    schema = _published_schema(parquet, settings)
    where = day_tables(lake, settings).publish_scored(day, run_id, parquet, schema, publish_id)
    for file in files:
        file.filesystem.delete_file(file.path)
    lake.batch_work(day).delete_tree()  # batch mode's record: its answers are in the table now
    return {
        "rows": written,
        **where,
        "publish_id": publish_id,
        "table_format": settings.warehouse.table_format,
        "published_at": _now(),
        "removed_leftovers": remove_day_leftovers(lake, day, run_id, settings),
    }


class Superseded(RuntimeError):
    """Another run published the day after this one: its aggregate and report own the day."""


def new_attempt_id() -> str:
    """The id of one scoring of a chunk (a task's try), in its result: the day's spend counts
    each attempt once however many manifests list it (see `day_spend`)."""
    return uuid.uuid4().hex


def new_publish_id() -> str:
    """A publish's id: sortable by time, unique."""
    return f"{datetime.now(UTC):%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:8]}"


def check_current(
    lake: Lake,
    day: str,
    published: dict[str, Any],
    run_id: str | None,
    settings: Settings,
) -> None:
    """Raise `Superseded` when the day's table is no longer the one `published` describes
    (and delete the run's staging folder, `run_id`'s: nothing will read it any more)."""
    tables = day_tables(lake, settings)
    current = tables.published_version(day)
    if current != published["publish_id"]:
        if run_id is not None:
            lake.staging(day, run_id).delete_tree()
        raise Superseded(
            f"{tables.scored_uri(day)} is now publish {current}, not this run's "
            f"{published['publish_id']}: a later run of {day} published it, and its own "
            "aggregate and report describe it"
        )


def remove_day_leftovers(lake: Lake, day: str, run_id: str, settings: Settings) -> list[str]:
    """Delete what crashed runs of the day left: staging files in the day's partition folders
    (written by earlier versions beside the table) and the staging folders of other runs not
    touched for `pipeline.stale_staging_hours`. Returns their URIs."""
    removed = [
        path
        for target in (lake.scored(day), lake.daily_metrics(day))
        for path in remove_leftovers(target)
    ]
    root, mine = lake.staging_day(day), lake.staging(day, run_id).path
    if not root.exists():
        return removed
    hours = settings.pipeline.stale_staging_hours
    if hours < 0:
        raise ValueError(f"pipeline.stale_staging_hours must be at least 0, got {hours!r}")
    cutoff = time.time() - hours * 3600
    for entry in root.filesystem.get_file_info(pafs.FileSelector(root.path)):
        if entry.type != pafs.FileType.Directory or entry.path == mine:
            continue
        newest = _newest_mtime(root.filesystem, entry.path)
        if newest is None or newest <= cutoff:
            root.filesystem.delete_dir(entry.path)
            removed.append(entry.path)
    return removed


def _newest_mtime(filesystem: pafs.FileSystem, folder: str) -> float | None:
    stamps = [
        entry.mtime.timestamp()
        for entry in filesystem.get_file_info(pafs.FileSelector(folder, recursive=True))
        if entry.type == pafs.FileType.File and entry.mtime is not None
    ]
    return max(stamps) if stamps else None


def _published_schema(parquet: Sequence[pq.ParquetFile], settings: Settings) -> pa.Schema:
    if parquet:
        return pa.unify_schemas([p.schema_arrow for p in parquet], promote_options="permissive")
    # A day with no traffic still gets a (empty) table, with the contract's columns.
    contract = pa.schema(
        [
            (settings.columns.question, pa.string()),
            (settings.columns.contexts, pa.list_(pa.string())),
            (settings.columns.answer, pa.string()),
            *((segment, pa.string()) for segment in settings.pipeline.segments),
        ]
    )
    return output_schema(contract, build_metrics(settings.metrics.names))


# -- aggregate_day and report_day -------------------------------------------------------------

REPORT_DAYS = 30


class RunProblem(RuntimeError):
    """The day was published and reported, but the run must fail (see `on_regression`,
    `on_bad_input`): someone has to look."""


def aggregate_day(
    lake: Lake,
    day: str,
    settings: Settings,
    published: dict[str, Any] | None = None,
    run_id: str | None = None,
) -> dict[str, Any]:
    """Write the day's daily metrics; returns the regression verdict against the baseline.

    With `published` (what this run's `publish_day` returned) it reads the table this run
    published, and raises `Superseded` instead of writing when another run has published the
    day since; without, it reads the day's published table.
    """
    from ragas_ops.quality.aggregate import TOKEN_COLUMNS, daily_metrics

    metrics, segments = settings.metrics.names, settings.pipeline.segments
    wanted = [
        *segments,
        *(f"{metric}_{suffix}" for metric in metrics for suffix in ("score", "status", "version")),
        *TOKEN_COLUMNS,
        "cost_usd",
        "judge",
        "embedding_model",
    ]
    tables = day_tables(lake, settings)
    # not the evidence: half the bytes
    scored = tables.read_scored(day, published, run_id, columns=wanted)
    table = daily_metrics(day, scored, metrics, segments)
    version = tables.published_version(day) if published is None else published["publish_id"]
    table = with_spend(table, day_spend(lake, day, version))
    if published is not None:
        check_current(lake, day, published, run_id, settings)
    publish_id = None if published is None else published["publish_id"]
    target = tables.write_daily_metrics(day, table, publish_id, run_id)
    regression = _regression(lake, day, settings, table)
    return {"daily_metrics": target, "regression": regression.to_dict()}


def report_day(
    lake: Lake,
    day: str,
    run_id: str,
    settings: Settings,
    published: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Write the day's report, complete the manifest, and fail the run if configured to.

    With `published`, it reports the table this run published (or raises `Superseded`), and
    the run's staging folder is deleted at the end.
    """
    from ragas_ops.quality.report import build_report

    tables = day_tables(lake, settings)
    publish_id = None if published is None else published["publish_id"]
    if published is not None and tables.metrics_version(day) != publish_id:
        # A run that lost the race to publish wrote its daily metrics after this run's
        # aggregate: this run's (the published table's) are written again.
        aggregate_day(lake, day, settings, published, run_id)
    history = metrics_history(lake, day, REPORT_DAYS, settings=settings)
    regression = _regression(lake, day, settings, None)
    manifest = read_manifest(lake, day, run_id, publish_id)
    scored = tables.read_scored(day, published, run_id)
    manifest["repeated_ids"] = repeated_ids(scored, settings)
    manifest["dated_elsewhere"] = dated_elsewhere(scored, day)
    manifest["replaced"] = replaced_publish(lake, day, manifest)
    report = build_report(
        day,
        history,
        scored,
        regression,
        metrics=settings.metrics.names,
        manifest=manifest,
        rerun=rerun_change(tables, day, settings, published),
    )
    if published is not None:
        check_current(lake, day, published, run_id, settings)
    html, markdown = lake.report(day, "html"), lake.report(day, "md")
    html.write_text(report.html, staging=lake.scratch(day, run_id, html.name))
    markdown.write_text(report.markdown, staging=lake.scratch(day, run_id, markdown.name))
    manifest["regression"] = regression.to_dict()
    manifest["report"] = {"html": html.uri, "markdown": markdown.uri}
    write_manifest(lake, day, run_id, manifest, settings)
    if published is not None:
        lake.staging(day, run_id).delete_tree()  # the run is done: its table is in place
    problems = run_problems(manifest, regression.verdict.value, settings)
    if problems:
        raise RunProblem("; ".join(problems) + f" (report: {html.uri})")
    return manifest["report"]  # type: ignore[no-any-return]


def repeated_ids(table: pa.Table, settings: Settings) -> dict[str, int]:
    """Rows of the day that share an `id` with another row: the same interaction logged twice
    (a copied file, an overlapping export) or an id reused for other content. Which copy is
    right no reader can tell, so every row is scored and published as logged; this counts
    them for the manifest and the report. No `id` column: nothing to count."""
    import pyarrow.compute as pc

    counted = {"rows": 0, "ids": 0, "ids_with_different_content": 0}
    if ROW_ID_COLUMN not in table.column_names or table.num_rows == 0:
        return counted
    counts = table.group_by(ROW_ID_COLUMN).aggregate([(ROW_ID_COLUMN, "count")])
    repeated = counts.filter(
        pc.and_(pc.is_valid(counts[ROW_ID_COLUMN]), pc.greater(counts[f"{ROW_ID_COLUMN}_count"], 1))
    )
    if repeated.num_rows == 0:
        return counted
    mapping = settings.columns
    content = [mapping.question, mapping.contexts, mapping.answer]
    rows = table.filter(pc.is_in(table[ROW_ID_COLUMN], repeated[ROW_ID_COLUMN]))
    seen: dict[Any, set[str]] = {}
    for row in rows.select([ROW_ID_COLUMN, *content]).to_pylist():
        text = json.dumps([row[name] for name in content], default=str)
        seen.setdefault(row[ROW_ID_COLUMN], set()).add(text)
    counted["rows"] = rows.num_rows
    counted["ids"] = repeated.num_rows
    counted["ids_with_different_content"] = sum(len(texts) > 1 for texts in seen.values())
    return counted


def dated_elsewhere(table: pa.Table, day: str) -> dict[str, Any]:
    """Rows whose `timestamp` falls on another day (UTC) than the `dt=` folder they were
    logged in: published under the folder's day, as the lake's layout says, but counted (with
    the first and last such day) so that a misfiled export shows."""
    import pyarrow.compute as pc

    counted: dict[str, Any] = {"rows": 0, "first": None, "last": None}
    if TIMESTAMP not in table.column_names or not pa.types.is_timestamp(table[TIMESTAMP].type):
        return counted
    stamps = table[TIMESTAMP]
    if stamps.type.tz is not None:
        stamps = stamps.cast(pa.timestamp(stamps.type.unit, tz="UTC"))
    days = pc.strftime(stamps, format="%Y-%m-%d")
    elsewhere = pc.filter(days, pc.not_equal(days, day))
    if len(elsewhere):
        counted.update(
            rows=len(elsewhere),
            first=pc.min(elsewhere).as_py(),
            last=pc.max(elsewhere).as_py(),
        )
    return counted


def replaced_publish(lake: Lake, day: str, manifest: dict[str, Any]) -> dict[str, Any] | None:
    """What this run's publish replaced, from the manifest of the day's previous publish (in
    every table format: the Parquet layout keeps no earlier table, but every manifest stays):
    its run and rows, the input files added, removed or changed (by size), and the rows each
    metric scored `ok` before and after. None on the day's first publish."""
    current = manifest.get("published") or {}
    folder = lake.manifests(day)
    if not current.get("published_at") or not folder.exists():
        return None
    previous: dict[str, Any] | None = None
    for entry in folder.filesystem.get_file_info(pafs.FileSelector(folder.path)):
        if not entry.base_name.endswith(".json") or entry.base_name.startswith("."):
            continue
        other = json.loads(folder.child(entry.base_name).read_text())
        when = (other.get("published") or {}).get("published_at")
        if not when or when >= current["published_at"]:
            continue  # unpublished, this publish, or a later one
        if previous is None or when > previous["published"]["published_at"]:
            previous = other
    if previous is None:
        return None
    before = {file["path"]: file.get("bytes") for file in previous["plan"]["files"]}
    after = {file["path"]: file.get("bytes") for file in manifest["plan"]["files"]}

    def scored_ok(of: dict[str, Any]) -> dict[str, int]:
        statuses = (of.get("scoring") or {}).get("statuses") or {}
        return {metric: int(counts.get("ok", 0)) for metric, counts in statuses.items()}

    return {
        "run_id": previous.get("run_id"),
        "publish_id": previous["published"].get("publish_id"),
        "published_at": previous["published"]["published_at"],
        "rows_before": previous["published"].get("rows"),
        "rows_after": current.get("rows"),
        "files_added": sorted(set(after) - set(before)),
        "files_removed": sorted(set(before) - set(after)),
        "files_changed": sorted(
            path for path in after if path in before and before[path] != after[path]
        ),
        "ok_before": scored_ok(previous),
        "ok_after": scored_ok(manifest),
    }


def run_problems(manifest: dict[str, Any], verdict: str, settings: Settings) -> list[str]:
    """Why the run must fail, under the configured policies (empty: it must not)."""
    problems = []
    rejected = manifest["plan"]["rejected_files"]
    if rejected and settings.pipeline.on_bad_input == "fail":
        problems.append(
            f"{len(rejected)} input file(s) rejected, e.g. {rejected[0]['path']}: "
            f"{rejected[0]['reason']}"
        )
    if verdict == "regression" and settings.pipeline.on_regression == "fail":
        problems.append("a metric regressed against its baseline")
    return problems


def rerun_change(
    tables: DayTables, day: str, settings: Settings, published: dict[str, Any] | None
) -> Any:
    """What this publish of the day changed against the one before it (`quality.rerun.
    RerunChange`), or None: the day's first publish, or a format without earlier versions."""
    from ragas_ops.quality.rerun import rerun_change as compare

    metrics = settings.metrics.names
    columns = [f"{metric}_{suffix}" for metric in metrics for suffix in ("score", "status")]
    snapshot = None if published is None else published.get("snapshot_id")
    rerun = tables.rerun(day, columns, snapshot)
    return None if rerun is None else compare(day, rerun, metrics)


def _regression(lake: Lake, day: str, settings: Settings, today: pa.Table | None) -> Any:
    from ragas_ops.quality.aggregate import check_regression

    window = settings.pipeline.regression_window_days
    history = metrics_history(lake, day, window, today, settings=settings)
    return check_regression(
        history, day, window_days=window, threshold=settings.pipeline.regression_threshold
    )


def metrics_history(
    lake: Lake,
    day: str,
    days: int,
    today: pa.Table | None = None,
    *,
    settings: Settings,
) -> pa.Table:
    """The daily metrics of `day` and of the `days` days before it that have them."""
    tables = day_tables(lake, settings)
    found = tables.read_daily_metrics(days_before(day, days))
    if today is not None:
        found.append(today)
    else:
        found.extend(tables.read_daily_metrics([day]))
    if not found:
        from ragas_ops.quality.aggregate import DAILY_METRICS_SCHEMA

        return DAILY_METRICS_SCHEMA.empty_table()
    return pa.concat_tables(found, promote_options="permissive")


# -- manifest ------------------------------------------------------------------------------------


def write_manifest(
    lake: Lake,
    day: str,
    run_id: str,
    manifest: dict[str, Any],
    settings: Settings | None = None,
) -> str:
    """Write the manifest of a run's publish (rewritten only by the same run's report: another
    run, or another try of the publish, gets a file of its own); returns its URI. With
    `settings` naming the iceberg format, it is also the run's row of the `runs` table."""
    target = lake.manifest(day, run_id, _publish_id_of(manifest))
    text = json.dumps(manifest, indent=2, sort_keys=True, default=str)
    target.write_text(text, staging=lake.scratch(day, run_id, target.name))
    if settings is not None:
        day_tables(lake, settings).record_run(day, manifest)
    return target.uri


def _publish_id_of(manifest: dict[str, Any]) -> str:
    return str((manifest.get("published") or {}).get("publish_id") or "unpublished")


def read_manifest(
    lake: Lake, day: str, run_id: str, publish_id: str | None = None
) -> dict[str, Any]:
    """The manifest of the run's publish `publish_id`, else of the run's latest publish."""
    if publish_id is None:
        prefix = f"{run_folder_name(run_id)}."
        folder = lake.manifests(day)
        names = sorted(
            entry.base_name
            for entry in folder.filesystem.get_file_info(pafs.FileSelector(folder.path))
            if entry.base_name.startswith(prefix) and entry.base_name.endswith(".json")
        )
        if not names:
            raise FileNotFoundError(f"no manifest of run {run_id} under {folder.uri}")
        location = folder.child(names[-1])
    else:
        location = lake.manifest(day, run_id, publish_id)
    loaded: dict[str, Any] = json.loads(location.read_text())
    return loaded


def run_totals(chunk_results: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Rows by status per metric and the judge's spend, summed over a run's chunks."""
    statuses: dict[str, dict[str, int]] = {}
    usage = Usage()
    for result in chunk_results:
        for metric, counts in result["statuses"].items():
            into = statuses.setdefault(metric, {})
            for status, count in counts.items():
                into[status] = into.get(status, 0) + count
        usage.add(Usage(**result["usage"]))
    return {
        "rows_out": sum(result["rows"] for result in chunk_results),
        "statuses": statuses,
        "usage": dataclasses.asdict(usage),
        "judges": sorted({result["judge"] for result in chunk_results}),
        "modes": sorted({result.get("mode", "sync") for result in chunk_results}),
        "batches": [batch for result in chunk_results for batch in result.get("batches", [])],
        "scoring_seconds": round(sum(result["seconds"] for result in chunk_results), 3),
        "spend_by_attempt": {
            str(result.get("attempt", f"chunk-{result['index']}")): result["usage"]["cost_usd"]
            for result in chunk_results
        },
    }


SPEND_COLUMNS = ("run_spend_usd", "other_runs_spend_usd", "day_spend_usd", "day_runs")
"""What the daily metrics say the day's judge calls cost, from the runs' manifests (see
docs/lake-safety.md): the same on every row of a day."""


def day_spend(lake: Lake, day: str, publish_id: str | None) -> dict[str, Any]:
    """What the day's runs paid, from their manifests: the publishing run's (the manifest of
    `publish_id`), every run's together (each chunk attempt counted once, however many
    manifests list it), and the other runs' (the difference). A cost is None when a price was
    unknown, never a partial sum."""
    folder = lake.manifests(day)
    spent: dict[str, float | None] = {}
    runs: set[str] = set()
    this_run: float | None = 0.0
    this_attempts: set[str] = set()
    if folder.exists():
        for entry in folder.filesystem.get_file_info(pafs.FileSelector(folder.path)):
            if not entry.base_name.endswith(".json") or entry.base_name.startswith("."):
                continue
            manifest = json.loads(folder.child(entry.base_name).read_text())
            runs.add(str(manifest.get("run_id")))
            scoring = manifest.get("scoring") or {}
            by_attempt = scoring.get("spend_by_attempt") or {
                entry.base_name: (scoring.get("usage") or {}).get("cost_usd", 0.0)
            }
            spent.update(by_attempt)
            if (manifest.get("published") or {}).get("publish_id") == publish_id:
                this_run = (scoring.get("usage") or {}).get("cost_usd", 0.0)
                this_attempts = set(by_attempt)
    values = list(spent.values())
    total = None if None in values else float(sum(v for v in values if v is not None))
    # The other runs' own attempts: known when each of theirs is, whatever this run's is.
    other_values = [value for attempt, value in spent.items() if attempt not in this_attempts]
    others = None if None in other_values else float(sum(v for v in other_values if v is not None))
    return {
        "run_spend_usd": this_run,
        "other_runs_spend_usd": others,
        "day_spend_usd": total,
        "day_runs": len(runs),
    }


def with_spend(table: pa.Table, spend: dict[str, Any]) -> pa.Table:
    """The daily metrics with the day's spend columns (`SPEND_COLUMNS`)."""
    for name in SPEND_COLUMNS:
        kind = pa.int64() if name == "day_runs" else pa.float64()
        table = table.append_column(name, pa.array([spend[name]] * table.num_rows, kind))
    return table


def manifest_base(day: str, run_id: str, settings: Settings) -> dict[str, Any]:
    judge = settings.judge
    # The local judge answers both kinds of call with its one model; the OpenAI model names
    # in the settings then played no part and would mislead.
    local = None
    if judge.kind == "local":
        from ragas_ops.judge.local.judge import local_model_name

        local = f"local:{local_model_name(judge.local_model, judge.local_backend)}"
    return {
        "day": day,
        "run_id": run_id,
        "ragas_ops_version": package_version(),
        "metrics": list(settings.metrics.names),
        "judge_kind": judge.kind,
        "judge_model": local or judge.model,
        "embedding_model": local or judge.embedding_model,
        "created_at": _now(),
    }


def plan_result(day_plan: DayPlan, *, backfill: bool) -> dict[str, Any]:
    """What the plan task hands on through XCom: the day, the plan's summary (for the
    manifest), its chunks as plain dicts that carry the day and its rows (a chunk's share
    of the judge's budget), and whether the run is a backfill (which pool scores it)."""
    return {
        "day": day_plan.day,
        "summary": day_plan.summary(),
        "chunks": [
            {**chunk_to_dict(chunk), "day": day_plan.day, "day_rows": day_plan.rows}
            for chunk in day_plan.chunks
        ],
        "backfill": backfill,
    }


def run_manifest(
    day: str,
    run_id: str,
    settings: Settings,
    *,
    try_number: int | None,
    plan_summary: dict[str, Any],
    chunk_results: Sequence[dict[str, Any]],
    published: dict[str, Any],
) -> dict[str, Any]:
    """The manifest of a run's publish: what ran (`manifest_base`), the task's try, the
    plan, the scoring summed over the chunks (`run_totals`, chunks in index order whatever
    order they came in), what was published, and whether the day simply had no traffic
    (no rows and no rejected file), and why (no folder for the day, or an empty one)."""
    ordered = sorted(chunk_results, key=lambda result: result["index"])
    return {
        **manifest_base(day, run_id, settings),
        "try_number": try_number,
        "plan": plan_summary,
        "scoring": run_totals(ordered),
        "published": published,
        "no_traffic": plan_summary["rows"] == 0
        and not plan_summary["rejected_files"]
        and not plan_summary.get("ignored_files"),
        # no_day_folder or empty_day_folder (pipeline.plan), null on a day with traffic
        "no_traffic_reason": plan_summary.get("no_traffic_reason"),
    }


def days_before(day: str, count: int) -> list[str]:
    """The `count` days before `day`, oldest first."""
    anchor = date.fromisoformat(day)
    return [(anchor - timedelta(days=offset)).isoformat() for offset in range(count, 0, -1)]


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def run_score_chunk(*args: Any, **kwargs: Any) -> dict[str, Any]:
    """`score_chunk` from synchronous code (an Airflow task)."""
    return asyncio.run(score_chunk(*args, **kwargs))
