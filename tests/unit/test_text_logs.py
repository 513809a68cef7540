"""JSON Lines and CSV logs read into the contract's shape (`contract.logs`)."""

from __future__ import annotations

import gzip
import json
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pytest

from ragas_ops.contract.inputs import ColumnMapping, ContractError
from ragas_ops.contract.logs import ReadLimits, bounded_read, read_text_log
from ragas_ops.storage import (
    StorageError,
    conform,
    listing,
    locate,
    read_footer,
    read_text_log_or_fail,
)


def read(path: Path, mapping: ColumnMapping | None = None) -> pa.Table:
    return read_text_log(pafs.LocalFileSystem(), str(path), mapping or ColumnMapping())


def jsonl(path: Path, *lines: Mapping[str, Any]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def test_nested_fields_are_columns_named_by_their_dotted_path(tmp_path: Path) -> None:
    line = {"q": {"text": "Why?"}, "contexts": ["c"], "answer": "a", "meta": {"app": "web"}}

    table = read(jsonl(tmp_path / "a.jsonl", line))

    assert table.column_names == ["q.text", "contexts", "answer", "meta.app"]
    assert table.column("meta.app").to_pylist() == ["web"]


def test_context_objects_become_their_text_field(tmp_path: Path) -> None:
    lines: list[dict[str, Any]] = [
        {"docs": [{"body": "first", "score": 1}, {"body": "second", "score": 0.5}]},
        {"docs": []},
        {"docs": None},
    ]
    mapping = ColumnMapping(contexts="docs", context_text="body")

    table = read(jsonl(tmp_path / "a.jsonl", *lines), mapping)

    assert table.schema.field("docs").type == pa.list_(pa.string())
    assert table.column("docs").to_pylist() == [["first", "second"], [], None]


@pytest.mark.parametrize(
    ("values", "unit"),
    [
        ([1795255200, 1795255200.5], "s"),
        ([1795255200000, 1795255200500], "ms"),
    ],
)
def test_epoch_timestamps_are_read_in_their_unit(
    tmp_path: Path, values: list[float], unit: str
) -> None:
    lines = [{"timestamp": value} for value in values]

    table = read(jsonl(tmp_path / "a.jsonl", *lines), ColumnMapping(epoch_unit=unit))  # type: ignore[arg-type]

    assert table.column("timestamp").to_pylist() == [
        datetime(2026, 11, 21, 10, 0, tzinfo=UTC),
        datetime(2026, 11, 21, 10, 0, 0, 500_000, tzinfo=UTC),
    ]


def test_iso_timestamps_with_and_without_offsets_are_utc(tmp_path: Path) -> None:
    stamps = ["2026-11-21T10:00:00Z", "2026-11-21T12:00:00+02:00", "2026-11-21T10:00:00", None]

    table = read(jsonl(tmp_path / "a.jsonl", *({"timestamp": stamp} for stamp in stamps)))

    expected = datetime(2026, 11, 21, 10, 0, tzinfo=UTC)
    assert table.column("timestamp").to_pylist() == [expected, expected, expected, None]


def test_a_timestamp_that_is_not_one_names_its_row(tmp_path: Path) -> None:
    path = jsonl(tmp_path / "a.jsonl", {"timestamp": "2026-11-21T10:00:00Z"}, {"timestamp": "soon"})

    with pytest.raises(ContractError, match=r"row 2 holds 'soon', not an ISO 8601 time"):
        read(path)


def test_a_line_that_is_not_json_is_a_contract_error(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    path.write_text('{"question": "q"}\nnot json\n', encoding="utf-8")

    with pytest.raises(ContractError, match="not a readable JSON Lines log"):
        read(path)


def test_csv_contexts_are_a_json_array_and_texts_stay_text(tmp_path: Path) -> None:
    path = tmp_path / "a.csv"
    path.write_text(
        'question,contexts,answer,timestamp,n\n42,"[""one"", {""text"": ""two""}]",7,'
        "2026-11-21 10:00:00,3\n",
        encoding="utf-8",
    )

    table = read(path)

    assert table.to_pylist() == [
        {
            "question": "42",
            "contexts": ["one", "two"],
            "answer": "7",
            "timestamp": datetime(2026, 11, 21, 10, 0, tzinfo=UTC),
            "n": 3,
        }
    ]


def test_a_csv_contexts_cell_that_is_no_json_array_says_so(tmp_path: Path) -> None:
    path = tmp_path / "a.csv"
    path.write_text("question,contexts,answer\nq,just text,a\n", encoding="utf-8")

    with pytest.raises(ContractError, match="'just text', not a JSON array of strings"):
        read(path)


def test_gzipped_logs_are_read_and_listed(tmp_path: Path) -> None:
    line = json.dumps({"question": "q", "contexts": ["c"], "answer": "a"}) + "\n"
    (tmp_path / "a.jsonl.gz").write_bytes(gzip.compress(line.encode()))
    (tmp_path / "notes.txt").write_text("not a log", encoding="utf-8")

    files, ignored = listing(locate(str(tmp_path)))

    assert [Path(path).name for path in files] == ["a.jsonl.gz"]
    assert [Path(path).name for path in ignored] == ["notes.txt"]
    assert read(tmp_path / "a.jsonl.gz").num_rows == 1


LIMITS = ReadLimits(line_bytes=1_000, cell_bytes=200, columns=10)


def read_within(path: Path, limits: ReadLimits = LIMITS) -> pa.Table:
    return read_text_log(pafs.LocalFileSystem(), str(path), ColumnMapping(), limits)


class CountingStream:
    """A stream of `size` bytes without a newline, counting what was read of it."""

    def __init__(self, size: int) -> None:
        self.size, self.read_bytes = size, 0

    def read(self, count: int) -> bytes:
        take = min(count, self.size - self.read_bytes)
        self.read_bytes += take
        return b"x" * take


def test_a_line_over_the_bound_is_refused_without_reading_the_file_further() -> None:
    stream = CountingStream(64 << 20)

    with pytest.raises(ContractError, match=r"line 1 is longer than 1,000 bytes"):
        bounded_read(stream, 1_000)

    assert stream.read_bytes == 1 << 20, "one block read, not the 64 MiB"


def test_a_long_line_after_short_ones_is_named_by_its_number(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    short = json.dumps({"question": "q", "contexts": ["c"], "answer": "a"})
    path.write_text(f"{short}\n{short}\n" + json.dumps({"question": "q" * 2_000}) + "\n")

    with pytest.raises(ContractError, match=r"line 3 is longer than 1,000 bytes"):
        read_within(path)


def test_a_csv_header_over_the_column_bound_is_refused_before_parsing(tmp_path: Path) -> None:
    path = tmp_path / "wide.csv"
    path.write_text(",".join(f"c{n}" for n in range(11)) + "\n" + ",".join("1" * 11) + "\n")

    with pytest.raises(ContractError, match=r"the CSV header has 11 columns, more than 10"):
        read_within(path)


def test_a_json_file_with_too_many_keys_is_refused(tmp_path: Path) -> None:
    path = jsonl(tmp_path / "wide.jsonl", {f"k{n}": n for n in range(11)})

    with pytest.raises(ContractError, match=r"the file has 11 columns, more than 10"):
        read_within(path)


def test_a_csv_cell_over_the_bound_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "a.csv"  # a quoted cell over several lines: each line is short
    cell = "\n".join(["y" * 100] * 3)
    path.write_text(f'question,contexts,answer\n"{cell}","[""c""]",a\n')

    with pytest.raises(ContractError, match=r"column 'question' holds 302 bytes, more than 200"):
        read_within(path)


@pytest.mark.parametrize("suffix", ["jsonl", "csv"])
def test_json_nested_deeper_than_the_bound_is_refused_before_any_parser(
    tmp_path: Path, suffix: str
) -> None:
    deep = "[" * 10_000 + "]" * 10_000
    path = tmp_path / f"deep.{suffix}"
    if suffix == "jsonl":
        path.write_text('{"question": "q", "contexts": ' + deep + ', "answer": "a"}\n')
    else:
        path.write_text(f'question,contexts,answer\nq,"{deep}",a\n')

    with pytest.raises(ContractError, match=r"nest(s JSON|ed) 10,00\d deep, more than 64"):
        read_within(path, ReadLimits())


def test_brackets_inside_strings_are_not_nesting(tmp_path: Path) -> None:
    path = jsonl(
        tmp_path / "a.jsonl", {"question": "[" * 500, "contexts": ["{" * 500], "answer": "a"}
    )

    assert read_within(path, ReadLimits()).num_rows == 1


def test_a_file_that_does_not_fit_in_memory_is_that_files_rejection(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import ragas_ops.storage

    def out_of_memory(*args: object) -> pa.Table:
        raise MemoryError

    monkeypatch.setattr(ragas_ops.storage, "read_text_log", out_of_memory)
    path = jsonl(tmp_path / "a.jsonl", {"question": "q", "contexts": ["c"], "answer": "a"})

    with pytest.raises(StorageError, match=r"a.jsonl: the file does not fit in this worker"):
        read_text_log_or_fail(pafs.LocalFileSystem(), str(path), ColumnMapping())


def test_a_parquet_file_over_the_column_bound_is_refused_from_its_footer(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    path = tmp_path / "wide.parquet"
    pq.write_table(pa.table({f"c{n}": [n] for n in range(11)}), path)

    with pytest.raises(StorageError, match=r"the file has 11 columns, more than 10"):
        read_footer(pafs.LocalFileSystem(), str(path), ColumnMapping(), LIMITS)


def test_conform_keeps_the_schemas_order_and_fills_the_missing_columns() -> None:
    table = pa.table({"b": [1], "a": ["x"]})
    schema = pa.schema([("a", pa.string()), ("c", pa.int64()), ("b", pa.int64())])

    conformed = conform(table, schema)

    assert conformed.schema == schema
    assert conformed.to_pylist() == [{"a": "x", "c": None, "b": 1}]
