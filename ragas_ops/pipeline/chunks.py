"""Reading a planned chunk's rows from the log lake: only the row groups each slice needs, in
the day's schema, rebatched to the scorer's batch size."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from ragas_ops.config import Settings
from ragas_ops.contract.inputs import ColumnMapping, repair_utf8, with_contract_names
from ragas_ops.contract.layout import Lake
from ragas_ops.contract.logs import DEFAULT_READ_LIMITS, ReadLimits, is_text_log
from ragas_ops.contract.outputs import output_schema
from ragas_ops.pipeline.plan import Chunk
from ragas_ops.scoring.scorer import Scorer
from ragas_ops.storage import in_day_schema, read_text_log_or_fail

READ_BATCH_ROWS = 1024


def read_slices(
    lake: Lake, chunk: Chunk, columns: ColumnMapping, limits: ReadLimits = DEFAULT_READ_LIMITS
) -> Iterator[pa.Table]:
    """The chunk's rows, a batch at a time, reading only the row groups each slice needs (a
    JSON Lines or CSV log, which has none, is read whole, in the shape `columns` gives it).

    Every table has the day's schema (`chunk.schema`, from the plan; missing columns null),
    and text that is not valid UTF-8 is repaired for `validate_row` to flag (`repair_utf8`);
    the id and time are under the contract's names, and a file without ids gets derived ones
    (`contract.row_ids`).
    """
    filesystem = lake.raw.filesystem
    schema = chunk.schema or chunk_schema(lake, chunk)
    for piece in chunk.slices:
        if is_text_log(piece.path):
            log_rows = read_text_log_or_fail(filesystem, piece.path, columns, limits)
            for start in range(piece.start, piece.start + piece.rows, READ_BATCH_ROWS):
                rows = min(READ_BATCH_ROWS, piece.start + piece.rows - start)
                yield repair_utf8(
                    in_day_schema(log_rows.slice(start, rows), schema, piece.path, start, columns)
                )
            continue
        with filesystem.open_input_file(piece.path) as handle:
            parquet = pq.ParquetFile(handle)
            groups, first_row = _row_groups_for(parquet.metadata, piece.start, piece.rows)
            position = first_row
            end = piece.start + piece.rows
            for batch in parquet.iter_batches(batch_size=READ_BATCH_ROWS, row_groups=groups):
                lo, hi = max(piece.start, position), min(end, position + batch.num_rows)
                if hi > lo:
                    piece_rows = with_contract_names(
                        pa.Table.from_batches([batch.slice(lo - position, hi - lo)]), columns
                    )
                    yield repair_utf8(in_day_schema(piece_rows, schema, piece.path, lo, columns))
                position += batch.num_rows
                if position >= end:
                    break


def chunk_schema(lake: Lake, chunk: Chunk) -> pa.Schema:
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


def chunk_tables(lake: Lake, chunk: Chunk, settings: Settings) -> Iterator[pa.Table]:
    """The chunk's rows in tables of `batch_rows` rows."""
    rows = read_slices(lake, chunk, settings.columns, settings.pipeline.read_limits())
    return _rebatched(rows, settings.batch_rows)


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


def chunk_output_schema(lake: Lake, chunk: Chunk, scorer: Scorer) -> pa.Schema:
    """The schema of the chunk's scored file: the day's columns and the scorer's."""
    return output_schema(chunk.schema or chunk_schema(lake, chunk), scorer.metrics)
