"""Logs as they are: JSON Lines and CSV files read into the contract's shape.

Most applications log one JSON object a line (or a CSV file), not Parquet. Such a file is read
whole with pyarrow's own readers (`pyarrow.json`, `pyarrow.csv`; a `.gz` one is decompressed
on the way) and brought to the shape the rest of ragas-ops reads, so that a JSON or CSV day is
planned, checked and scored exactly as a Parquet one:

- a nested object becomes columns named by their dotted path (`{"request": {"query": ...}}`
  is the column `request.query`), which the column mapping and `pipeline.segments` name;
- the contexts, when they are objects (`[{"text": ..., "score": ...}]`), become the list of
  their `columns.context_text` field; in a CSV file the contexts cell holds a JSON array (of
  strings or of such objects);
- the columns `columns.id` and `columns.timestamp` name (`request.id`, `meta.ts`) are
  renamed `id` and `timestamp`;
- the `timestamp` column, when it holds ISO 8601 text (an offset or `Z`; none is UTC) or
  numbers since the epoch (in `columns.epoch_unit`), becomes a UTC timestamp;
- every other column is carried through as the reader typed it.

A file that cannot be read so (a line that is not JSON, a column whose type changes from line
to line, a timestamp that is not one) is a ContractError naming the file's problem; its day's
plan rejects it by name, as it rejects a broken Parquet file.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ragas_ops.contract.inputs import (
    TIMESTAMP,
    ColumnMapping,
    ContractError,
    with_contract_names,
)

if TYPE_CHECKING:  # pyarrow stays out of imports that DAG parsing makes
    import pyarrow as pa
    import pyarrow.fs as pafs

JSON_SUFFIXES = (".jsonl", ".ndjson", ".jsonl.gz", ".ndjson.gz")
CSV_SUFFIXES = (".csv", ".csv.gz")
TEXT_LOG_SUFFIXES = JSON_SUFFIXES + CSV_SUFFIXES
"""File names read as JSON Lines or CSV, in any case."""

_JSON_BLOCK_BYTES = 16 << 20
"""pyarrow.json infers each column's type from the first block it reads: a large block lets
a key that first appears far into a file be found (a key absent from a line is null)."""


def is_text_log(path: str) -> bool:
    """Whether `path` names a JSON Lines or CSV log (by its suffix, in any case)."""
    return path.lower().endswith(TEXT_LOG_SUFFIXES)


def read_text_log(filesystem: pafs.FileSystem, path: str, mapping: ColumnMapping) -> pa.Table:
    """The whole JSON Lines or CSV file at `path`, in the contract's shape (see the module).
    A file that cannot be read so is a ContractError saying why; an outage is an OSError."""
    import pyarrow as pa

    is_json = path.lower().endswith(JSON_SUFFIXES)
    with filesystem.open_input_stream(path, compression="detect") as stream:
        data = bytes(stream.read())
    try:
        table = _read_json(data) if is_json else _read_csv(data, mapping)
    except (pa.ArrowInvalid, pa.ArrowTypeError) as error:
        kind = "JSON Lines" if is_json else "CSV"
        raise ContractError(f"not a readable {kind} log: {error}") from None
    return shaped_log(table, mapping)


def _read_json(data: bytes) -> pa.Table:
    import pyarrow as pa
    import pyarrow.json as pajson

    if not data.strip():
        return pa.table({})
    block = min(max(len(data), 1 << 20), _JSON_BLOCK_BYTES)
    return pajson.read_json(
        pa.BufferReader(data), read_options=pajson.ReadOptions(block_size=block)
    )


def _read_csv(data: bytes, mapping: ColumnMapping) -> pa.Table:
    import pyarrow as pa
    import pyarrow.csv as pacsv

    if not data.strip():
        return pa.table({})
    # The contract's texts stay text whatever they look like: a question "42" is no number.
    text = {name: pa.string() for name in (mapping.question, mapping.answer, mapping.contexts)}
    return pacsv.read_csv(
        pa.BufferReader(data), convert_options=pacsv.ConvertOptions(column_types=text)
    )


def shaped_log(table: pa.Table, mapping: ColumnMapping) -> pa.Table:
    """`table` (as pyarrow's JSON or CSV reader gives it) with nested objects flattened into
    dotted names, the id and time under the contract's names (`with_contract_names`), the
    contexts as a list of strings and the timestamp as a UTC timestamp."""
    table = with_contract_names(_flattened(table), mapping)
    if mapping.contexts in table.column_names:
        index = table.column_names.index(mapping.contexts)
        table = table.set_column(
            index, mapping.contexts, _context_texts(table.column(index), mapping)
        )
    if TIMESTAMP in table.column_names:
        index = table.column_names.index(TIMESTAMP)
        table = table.set_column(index, TIMESTAMP, _timestamps(table.column(index), mapping))
    return table


def _flattened(table: pa.Table) -> pa.Table:
    import pyarrow as pa

    while any(pa.types.is_struct(column.type) for column in table.columns):
        table = table.flatten()
    return table


def _context_texts(column: pa.ChunkedArray, mapping: ColumnMapping) -> pa.ChunkedArray:
    """The contexts as list<string>: as they are, the `context_text` field of a list of
    objects, or parsed from the JSON array text of a CSV cell."""
    import pyarrow as pa

    value_type = column.type
    if pa.types.is_string(value_type) or pa.types.is_large_string(value_type):
        parsed = [_parsed_contexts(text, mapping) for text in column.to_pylist()]
        return pa.chunked_array([pa.array(parsed, pa.list_(pa.string()))])
    is_list = pa.types.is_list(value_type) or pa.types.is_large_list(value_type)
    if is_list and pa.types.is_struct(value_type.value_type):
        fields = [item.name for item in value_type.value_type]
        if mapping.context_text not in fields:
            raise ContractError(
                f"the contexts (column {mapping.contexts!r}) are objects with the fields "
                f"{fields}, none of them {mapping.context_text!r}: name the one holding the "
                "text with columns.context_text"
            )
        return pa.chunked_array(
            [_struct_field_lists(chunk, mapping.context_text) for chunk in column.chunks],
            pa.list_(value_type.value_type.field(mapping.context_text).type),
        )
    return column


def _struct_field_lists(lists: pa.Array, name: str) -> pa.Array:
    """A list<struct> array as the list of one field of its structs (nulls kept)."""
    import pyarrow as pa

    lists = lists.cast(pa.list_(lists.type.value_type))  # large lists: 32-bit offsets
    values = lists.values.field(name)
    return pa.ListArray.from_arrays(lists.offsets, values, mask=lists.is_null())


def _parsed_contexts(text: str | None, mapping: ColumnMapping) -> list[Any] | None:
    """A CSV cell's contexts: a JSON array of strings or of objects with the text field. A
    cell that is not one is kept as its text in a list of one, for `validate_row` to report
    as not a list."""
    if text is None:
        return None
    try:
        items = json.loads(text)
    except json.JSONDecodeError:
        raise ContractError(
            f"the contexts column {mapping.contexts!r} holds {_shown(text)}, not a JSON array "
            'of strings (a CSV cell such as ["first context", "second"])'
        ) from None
    if not isinstance(items, list):
        raise ContractError(
            f"the contexts column {mapping.contexts!r} holds {_shown(text)}, not a JSON array"
        )
    texts = []
    for entry in items:
        item = entry
        if isinstance(entry, dict):
            if mapping.context_text not in entry:
                raise ContractError(
                    f"a context object in column {mapping.contexts!r} has the fields "
                    f"{sorted(entry)}, none of them {mapping.context_text!r}: name the one "
                    "holding the text with columns.context_text"
                )
            item = entry[mapping.context_text]
        if not isinstance(item, str):
            raise ContractError(
                f"the contexts column {mapping.contexts!r} holds {_shown(text)}: a context is "
                f"{type(item).__name__}, not a string"
            )
        texts.append(item)
    return texts


def _shown(text: str, limit: int = 60) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "...")


_EPOCH_TYPES = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}


def _timestamps(column: pa.ChunkedArray, mapping: ColumnMapping) -> pa.ChunkedArray:
    """The timestamp column as timestamp[us, UTC]: ISO 8601 text (no offset: UTC) or numbers
    since the epoch in `columns.epoch_unit`; a value that is neither names itself."""
    import pyarrow as pa
    import pyarrow.compute as pc

    utc = pa.timestamp("us", tz="UTC")
    value_type = column.type
    if pa.types.is_timestamp(value_type):
        if value_type.tz is None:  # the CSV reader's timestamps without an offset
            return pc.assume_timezone(column, "UTC").cast(utc)
        return column.cast(utc)
    if pa.types.is_null(value_type):
        return column.cast(utc)
    if pa.types.is_integer(value_type) or pa.types.is_floating(value_type):
        per_second = _EPOCH_TYPES[mapping.epoch_unit]
        micros = pc.multiply(column.cast(pa.float64()), 1_000_000 / per_second)
        return pc.round(micros).cast(pa.int64()).cast(utc)
    if pa.types.is_string(value_type) or pa.types.is_large_string(value_type):
        try:
            return column.cast(utc)
        except pa.ArrowInvalid:  # some without an offset, or not ISO 8601 at all
            return pa.chunked_array([pa.array(_iso_times(column.to_pylist()), utc)])
    raise ContractError(
        f"column {TIMESTAMP!r} is {value_type}: the contract reads ISO 8601 text or numbers "
        "since the epoch"
    )


def _iso_times(values: list[str | None]) -> list[datetime | None]:
    times: list[datetime | None] = []
    for line, value in enumerate(values, start=1):
        if value is None:
            times.append(None)
            continue
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            raise ContractError(
                f"column {TIMESTAMP!r} of row {line} holds {_shown(value)}, not an ISO 8601 "
                "time (such as 2026-11-21T10:00:00Z)"
            ) from None
        times.append(moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment)
    return times
