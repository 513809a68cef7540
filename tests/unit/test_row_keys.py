"""The id and time of a log under the contract's names (`columns.id`, `columns.timestamp`,
dotted paths included) and the derived ids of a log without ids (`contract.row_ids`)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from ragas_ops.cli.main import build_parser
from ragas_ops.cli.options import settings_from_options
from ragas_ops.contract.inputs import (
    ColumnMapping,
    ContractError,
    schema_with_contract_names,
    with_contract_names,
)
from ragas_ops.contract.row_ids import (
    derived_id,
    file_key,
    needs_derived_ids,
    with_derived_ids,
    with_id_column,
)

NESTED = ColumnMapping(id="request.id", timestamp="meta.ts")


def test_a_flattened_nested_id_and_time_are_renamed_id_and_timestamp() -> None:
    table = pa.table({"request.id": ["a", "b"], "meta.ts": [1, 2], "question": ["q", "r"]})

    renamed = with_contract_names(table, NESTED)

    assert renamed.column_names == ["id", "timestamp", "question"]
    assert renamed.column("id").to_pylist() == ["a", "b"]


def test_a_parquet_struct_field_is_copied_out_and_the_struct_carried_through() -> None:
    request = pa.array(
        [{"id": 7, "ua": "web"}, None], pa.struct([("id", pa.int64()), ("ua", pa.string())])
    )
    table = pa.table({"request": request, "question": ["q", "r"]})

    found = with_contract_names(table, NESTED)

    assert found.column_names == ["request", "question", "id"]
    assert found.column("id").to_pylist() == [7, None]
    assert schema_with_contract_names(table.schema, NESTED).field("id").type == pa.int64()


def test_a_log_with_both_the_mapped_column_and_an_id_column_is_refused_naming_both() -> None:
    table = pa.table({"request.id": ["a"], "id": ["b"]})

    with pytest.raises(ContractError, match=r"a column 'id' and the column 'request.id'"):
        with_contract_names(table, NESTED)


def test_an_unmapped_log_and_a_log_lacking_the_mapped_column_are_left_as_they_are() -> None:
    table = pa.table({"id": ["a"], "question": ["q"]})

    assert with_contract_names(table, ColumnMapping()) is table
    assert with_contract_names(table, ColumnMapping(id="request.id")).equals(table)


def test_id_and_timestamp_are_flags_and_settings() -> None:
    arguments = ["score", "in.jsonl", "out.parquet", "--column", "id=request.id"]
    arguments += ["--column", "timestamp=meta.ts"]

    settings = settings_from_options(build_parser().parse_args(arguments))

    assert settings.columns.renamed() == {"request.id": "id", "meta.ts": "timestamp"}


def test_a_derived_id_is_the_same_for_the_same_file_row_and_content_and_only_then() -> None:
    first = derived_id("dt=2026-11-21/app.jsonl", 0, "q", ["c"], "a")

    assert first == derived_id("dt=2026-11-21/app.jsonl", 0, "q", ["c"], "a")
    assert first.startswith("row-")
    assert len(first) == 24
    others = {
        derived_id("dt=2026-11-22/app.jsonl", 0, "q", ["c"], "a"),  # another day
        derived_id("dt=2026-11-21/app.jsonl", 1, "q", ["c"], "a"),  # a repeated row
        derived_id("dt=2026-11-21/app.jsonl", 0, "q", ["c"], "b"),  # rewritten
    }
    assert first not in others
    assert len(others) == 3


def test_a_file_key_is_the_path_from_its_day_folder_on_whatever_the_store() -> None:
    assert (
        file_key("/tmp/lake/raw/dt=2026-11-21/app/part-0.jsonl") == "dt=2026-11-21/app/part-0.jsonl"
    )
    assert file_key("bucket/raw/dt=2026-11-21/app/part-0.jsonl") == "dt=2026-11-21/app/part-0.jsonl"
    assert file_key("/tmp/logs.parquet") == "logs.parquet"


def test_rows_without_an_id_column_get_derived_ids_from_their_row_numbers() -> None:
    day = with_id_column(pa.schema([("question", pa.string())]))
    rows = pa.table({"question": ["q", "q"], "contexts": [["c"], ["c"]], "answer": ["a", "a"]})
    rows = rows.append_column("id", pa.nulls(2, pa.string()))

    ids = with_derived_ids(rows, "/lake/dt=2026-11-21/a.jsonl", 10, ColumnMapping())

    assert day.field("id").type == pa.string()
    assert ids.column("id").to_pylist() == [
        derived_id("dt=2026-11-21/a.jsonl", row, "q", ["c"], "a") for row in (10, 11)
    ]


def test_beside_integer_ids_of_other_files_no_id_is_derived() -> None:
    no_id = pa.schema([("question", pa.string())])

    assert needs_derived_ids(no_id, pa.schema([("id", pa.string())]))
    assert not needs_derived_ids(no_id, pa.schema([("id", pa.int64())]))
    assert not needs_derived_ids(pa.schema([("id", pa.string())]), pa.schema([("id", pa.string())]))
