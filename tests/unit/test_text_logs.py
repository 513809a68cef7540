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
from ragas_ops.contract.logs import read_text_log
from ragas_ops.storage import listing, locate


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
