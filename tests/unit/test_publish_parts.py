"""An Iceberg publish writes the day part by part and still commits it as one publish: every
row once, one version of the day."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ragas_ops.config import Settings
from ragas_ops.contract.layout import Lake
from ragas_ops.tables import format as table_format
from ragas_ops.tables.format import IcebergDayTables, publish_parts
from tests.fixtures.scored_tables import fake_scored_day

DAY = "2026-11-21"


def chunk_files(folder: Path, table: pa.Table, chunks: int) -> list[pq.ParquetFile]:
    folder.mkdir(parents=True)
    size = -(-table.num_rows // chunks)
    for index in range(chunks):
        pq.write_table(table.slice(index * size, size), folder / f"{index}.parquet")
    return [pq.ParquetFile(folder / f"{index}.parquet") for index in range(chunks)]


def test_the_parts_hold_every_row_once_in_order_each_about_a_part_in_size(tmp_path: Path) -> None:
    table = fake_scored_day(DAY, 300, seed=2)
    sources = chunk_files(tmp_path / "chunks", table, 6)  # a batch each
    limit = table.nbytes // 4

    parts = list(publish_parts(sources, table.schema, part_bytes=limit))

    assert len(parts) == 3  # two batches reach the limit
    assert pa.concat_tables(parts).equals(table)
    batch = max(source.read().nbytes for source in sources)
    assert all(part.nbytes < limit + batch for part in parts)


def test_an_iceberg_publish_in_several_parts_is_one_version_of_the_day(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("pyiceberg")
    settings = Settings()
    settings.pipeline.warehouse_uri = str(tmp_path / "warehouse")
    settings.warehouse.table_format = "iceberg"
    tables = IcebergDayTables(Lake(settings.pipeline), settings)
    first = fake_scored_day(DAY, 120, seed=3)
    tables.publish_scored(
        DAY, "run-1", chunk_files(tmp_path / "a", first, 2), first.schema, "publish-1"
    )
    table = fake_scored_day(DAY, 400, seed=4)
    monkeypatch.setattr(table_format, "PUBLISH_PART_BYTES", table.nbytes // 5)

    published = tables.publish_scored(
        DAY, "run-2", chunk_files(tmp_path / "b", table, 4), table.schema, "publish-2"
    )

    # every row once (Iceberg keeps no row order across a day's data files)
    read = tables.read_scored(DAY).sort_by("id")
    for column in ("id", "answer", "faithfulness_score", "faithfulness_evidence"):
        assert read[column].to_pylist() == table.sort_by("id")[column].to_pylist()
    # the report's positions are the same whether the day is read whole or batch by batch
    files = tables.tables.day_files("scored", DAY, columns=["id"])
    assert files is not None
    assert [file.rows for file in files] == [sum(map(len, file.read())) for file in files]
    in_files = [row for file in files for batch in file.read() for row in batch["id"].to_pylist()]
    assert in_files == tables.read_scored(DAY, columns=["id"])["id"].to_pylist()
    last = sum(file.rows or 0 for file in files) - 1
    assert tables.read_scored_rows(DAY, [last, 2], ["id"]) == {
        2: {"id": in_files[2]},
        last: {"id": in_files[last]},
    }
    versions = tables.tables.day_versions("scored", DAY)
    assert [(v.publish_id, v.rows) for v in versions] == [("publish-1", 120), ("publish-2", 400)]
    assert versions[-1].snapshot_id == published["snapshot_id"]
    assert tables.tables.data_files("scored", DAY) >= 4  # the parts' files, not one merged
