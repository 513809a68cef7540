"""The publish stage: the run's chunk files merged into the day's scored table and published
whole, in one step, after rows in = rows out."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from ragas_ops.config import Settings
from ragas_ops.contract.layout import Lake
from ragas_ops.contract.outputs import output_schema
from ragas_ops.pipeline.lake_safety import remove_day_leftovers
from ragas_ops.pipeline.manifest import now_utc
from ragas_ops.pipeline.plan import check_shrink
from ragas_ops.scoring.run import RowCountMismatch, configured_metrics
from ragas_ops.tables.format import day_tables


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
        "published_at": now_utc(),
        "removed_leftovers": remove_day_leftovers(lake, day, run_id, settings),
    }


def new_publish_id() -> str:
    """A publish's id: sortable by time, unique."""
    return f"{datetime.now(UTC):%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:8]}"


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
    return output_schema(contract, configured_metrics(settings))
