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
plan rejects it by name, as it rejects a broken Parquet file. So is a file over its
`ReadLimits`: a line longer than `line_bytes` is found while the file streams in (nothing past
it is read), a CSV header with more than `columns` names before anything is parsed, a cell
longer than `cell_bytes` or a JSON array nested deeper than Python parses right after.
"""

from __future__ import annotations

import csv
import json
import re
from dataclasses import dataclass, field
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


_STREAM_BLOCK_BYTES = 1 << 20
MAX_JSON_DEPTH = 64
"""Deepest nesting of arrays and objects a JSON line (or a CSV contexts cell) may have: far
above any log's, and far below where parsers give out (pyarrow 26's JSON reader crashes the
process, a segmentation fault, on a line nested 10,000 deep; Python's raises RecursionError)."""
_JSON_TOKENS = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]')


@dataclass(frozen=True)
class ReadLimits:
    """Bounds an input file is held to before it is read whole (`pipeline.max_log_line_bytes`,
    `max_log_cell_bytes`, `max_input_columns`): a file over one is rejected naming it, and
    the rest of its day is scored."""

    line_bytes: int = field(default=16 << 20, metadata={"minimum": 1})
    cell_bytes: int = field(default=16 << 20, metadata={"minimum": 1})
    columns: int = field(default=1_000, metadata={"minimum": 1})


DEFAULT_READ_LIMITS = ReadLimits()


def is_text_log(path: str) -> bool:
    """Whether `path` names a JSON Lines or CSV log (by its suffix, in any case)."""
    return path.lower().endswith(TEXT_LOG_SUFFIXES)


def read_text_log(
    filesystem: pafs.FileSystem,
    path: str,
    mapping: ColumnMapping,
    limits: ReadLimits = DEFAULT_READ_LIMITS,
) -> pa.Table:
    """The whole JSON Lines or CSV file at `path`, in the contract's shape (see the module).
    A file that cannot be read so, or is over `limits`, is a ContractError saying why; an
    outage is an OSError."""
    import pyarrow as pa

    is_json = path.lower().endswith(JSON_SUFFIXES)
    with filesystem.open_input_stream(path, compression="detect") as stream:
        data = bounded_read(stream, limits.line_bytes)
    kind = "JSON Lines" if is_json else "CSV"
    if is_json:
        _check_depth(data)
    else:
        _check_header(data, limits.columns)
    try:
        table = _read_json(data) if is_json else _read_csv(data, mapping)
        del data
        _check_table(table, limits)
        return shaped_log(table, mapping)
    except (pa.ArrowInvalid, pa.ArrowTypeError) as error:
        raise ContractError(f"not a readable {kind} log: {error}") from None
    except RecursionError:  # a JSON cell nested thousands deep: Python's parser recurses
        raise ContractError(
            f"not a readable {kind} log: a JSON value is nested deeper than can be parsed"
        ) from None


def bounded_read(stream: Any, line_bytes: int) -> bytes:
    """The stream's bytes, read a block at a time and refused (a ContractError naming the
    line) as soon as one line is longer than `line_bytes`: a long line is never read whole."""
    data = bytearray()
    carry = line = 0  # bytes of the line in progress; lines ended so far
    while block := stream.read(_STREAM_BLOCK_BYTES):
        pieces = bytes(block).split(b"\n")
        lengths = [carry + len(pieces[0]), *(len(piece) for piece in pieces[1:])]
        longest = max(lengths)
        if longest > line_bytes:
            at = line + lengths.index(longest) + 1
            raise ContractError(
                f"line {at:,} is longer than {line_bytes:,} bytes (pipeline.max_log_line_bytes): "
                "refused before reading the file further"
            )
        carry = lengths[-1]
        line += len(pieces) - 1
        data += block
    return bytes(data)


def _check_depth(data: bytes) -> None:
    """Refuse JSON Lines nested deeper than MAX_JSON_DEPTH before a parser sees them. Only a
    line with that many opening brackets can be (counted in C): such a line is measured."""
    if data.count(b"[") + data.count(b"{") <= MAX_JSON_DEPTH:
        return
    for number, line in enumerate(data.split(b"\n"), 1):
        depth = json_depth(line)
        if depth > MAX_JSON_DEPTH:
            raise ContractError(
                f"line {number:,} nests JSON {depth:,} deep, more than {MAX_JSON_DEPTH}: "
                "refused before parsing"
            )


def json_depth(text: bytes) -> int:
    """How deep the arrays and objects of a JSON text nest (strings skipped), exact above
    MAX_JSON_DEPTH; below it, the count of its opening brackets (a bound, found in C)."""
    if text.count(b"[") + text.count(b"{") <= MAX_JSON_DEPTH:
        return text.count(b"[") + text.count(b"{")  # an upper bound, and within the limit
    depth = deepest = 0
    for token in _JSON_TOKENS.finditer(text):
        kind = token.group()
        if kind in (b"[", b"{"):
            depth += 1
            deepest = max(deepest, depth)
        elif kind in (b"]", b"}"):
            depth -= 1
    return deepest


def _check_header(data: bytes, columns: int) -> None:
    """Refuse a CSV file whose header names more than `columns` columns, before parsing."""
    header = data.split(b"\n", 1)[0].decode("utf-8", errors="replace")
    names = next(csv.reader([header]), [])
    if len(names) > columns:
        raise ContractError(
            f"the CSV header has {len(names):,} columns, more than {columns:,} "
            "(pipeline.max_input_columns)"
        )


def _check_table(table: pa.Table, limits: ReadLimits) -> None:
    """Refuse a table over `limits`: too many columns, or a text cell too long."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if table.num_columns > limits.columns:
        raise ContractError(
            f"the file has {table.num_columns:,} columns, more than {limits.columns:,} "
            "(pipeline.max_input_columns)"
        )
    for name, column in zip(table.column_names, table.columns, strict=True):
        if not (pa.types.is_string(column.type) or pa.types.is_large_string(column.type)):
            continue
        longest = pc.max(pc.binary_length(column)).as_py()
        if longest is not None and longest > limits.cell_bytes:
            raise ContractError(
                f"a cell of column {name!r} holds {longest:,} bytes, more than "
                f"{limits.cell_bytes:,} (pipeline.max_log_cell_bytes)"
            )


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
    depth = json_depth(text.encode())
    if depth > MAX_JSON_DEPTH:
        raise ContractError(
            f"the contexts column {mapping.contexts!r} holds JSON nested {depth:,} deep, more "
            f"than {MAX_JSON_DEPTH}: refused before parsing"
        )
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
