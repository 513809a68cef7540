"""The Iceberg table format (`ragas_ops.tables.iceberg`) on a local folder and on S3 (moto over
HTTP): one atomic overwrite per day, writers in other processes, a killed writer, schema
evolution, time travel, snapshot expiry, and DuckDB reading the table through its extension."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import boto3
import pyarrow as pa
import pytest

pytest.importorskip("pyiceberg")

from ragas_ops.storage import S3Options
from ragas_ops.tables.iceberg import DAY_COLUMN, IcebergTables

PROJECT = Path(__file__).resolve().parents[3]


def rows(run: str, count: int, *, extra: bool = False) -> pa.Table:
    columns: dict[str, pa.Array] = {
        "id": pa.array([f"{run}-{i}" for i in range(count)]),
        "run": pa.array([run] * count),
        "contexts": pa.array([["a", "b"]] * count, pa.list_(pa.string())),
        "faithfulness_score": pa.array([0.5] * count, pa.float64()),
        "scored_at": pa.array([0] * count, pa.timestamp("us", tz="UTC")),
    }
    if extra:
        columns["toy_score"] = pa.array([1.0] * count)
    return pa.table(columns)


def test_a_republished_day_is_replaced_whole_and_its_previous_version_is_kept(
    tmp_path: Path,
) -> None:
    tables = IcebergTables(str(tmp_path / "warehouse"), create=True)
    tables.publish_day("scored", "2026-11-01", rows("first", 3), run_id="first")
    tables.publish_day("scored", "2026-11-02", rows("other", 4), run_id="other")

    tables.publish_day("scored", "2026-11-01", rows("rerun", 5), run_id="rerun")

    day = tables.read_day("scored", "2026-11-01")
    assert day is not None
    assert set(day["run"].to_pylist()) == {"rerun"}
    assert day.num_rows == 5
    assert set(day[DAY_COLUMN].to_pylist()) == {"2026-11-01"}
    other = tables.read_day("scored", "2026-11-02")
    assert other is not None
    assert other.num_rows == 4
    versions = tables.day_versions("scored", "2026-11-01")
    assert [(v.run_id, v.rows) for v in versions] == [("first", 3), ("rerun", 5)]
    previous = tables.previous_day("scored", "2026-11-01")
    assert previous is not None
    version, before = previous
    assert version.run_id == "first"
    assert before is not None
    assert set(before["run"].to_pylist()) == {"first"}


def test_a_new_metric_adds_columns_and_old_days_stay_readable(tmp_path: Path) -> None:
    tables = IcebergTables(str(tmp_path / "warehouse"), create=True)
    tables.publish_day("scored", "2026-11-01", rows("old", 2), run_id="old")

    tables.publish_day("scored", "2026-11-02", rows("new", 2, extra=True), run_id="new")

    old = tables.read_day("scored", "2026-11-01")
    new = tables.read_day("scored", "2026-11-02")
    assert old is not None
    assert new is not None
    assert old["toy_score"].to_pylist() == [None, None]
    assert new["toy_score"].to_pylist() == [1.0, 1.0]


def test_expired_snapshots_end_time_travel_but_not_the_table(tmp_path: Path) -> None:
    tables = IcebergTables(str(tmp_path / "warehouse"), create=True)
    tables.publish_day("scored", "2026-11-01", rows("first", 3), run_id="first")
    tables.publish_day("scored", "2026-11-01", rows("second", 2), run_id="second")
    time.sleep(0.01)

    expired = tables.expire_snapshots(older_than=timedelta(0))

    assert expired["scored"] >= 1
    assert tables.previous_day("scored", "2026-11-01") is None
    day = tables.read_day("scored", "2026-11-01")
    assert day is not None
    assert set(day["run"].to_pylist()) == {"second"}


def test_compaction_rewrites_a_day_of_many_files_as_one_and_keeps_its_rows(
    tmp_path: Path,
) -> None:
    tables = IcebergTables(str(tmp_path / "warehouse"), create=True)
    tables.publish_day("scored", "2026-11-01", rows("first", 3), run_id="first", publish_id="p1")
    assert tables.compact_day("scored", "2026-11-01") == 0  # one file: nothing to do
    for run in ("a", "b"):  # one more file each, beside the first
        one = rows(run, 1).append_column("key", pa.array([run]))
        tables.replace_rows("scored", "2026-11-01", one, {"key": run}, run_id=run)
    assert tables.data_files("scored", "2026-11-01") == 3

    assert tables.compact_day("scored", "2026-11-01") == 5

    assert tables.data_files("scored", "2026-11-01") == 1
    day = tables.read_day("scored", "2026-11-01")
    assert day is not None
    assert sorted(day["id"].to_pylist()) == ["a-0", "b-0", "first-0", "first-1", "first-2"]
    # compaction is not a new version of the day: its latest publish is still the latest
    assert tables.day_versions("scored", "2026-11-01")[-1].run_id == "b"


def test_a_row_committed_while_a_day_is_compacted_is_kept_and_the_compaction_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Compaction read the day, another writer (a nightly run's `runs` row) committed, and
    compaction overwrote the day with what it had read: the new row was gone (the Iceberg
    review). The writer here is another catalog client, as another process would be."""
    warehouse = str(tmp_path / "warehouse")
    tables = IcebergTables(warehouse, create=True)
    for run in ("a", "b"):
        one = rows(run, 1).append_column("key", pa.array([run]))
        tables.replace_rows("runs", "2026-11-01", one, {"key": run}, run_id=run)
    read_day = IcebergTables.read_day

    def read_then_another_writer_commits(self: IcebergTables, *args: Any, **kwargs: Any) -> Any:
        found = read_day(self, *args, **kwargs)
        late = rows("c", 1).append_column("key", pa.array(["c"]))
        IcebergTables(warehouse).replace_rows("runs", "2026-11-01", late, {"key": "c"}, run_id="c")
        monkeypatch.setattr(IcebergTables, "read_day", read_day)  # once
        return found

    monkeypatch.setattr(IcebergTables, "read_day", read_then_another_writer_commits)

    assert tables.compact_day("runs", "2026-11-01") == 0, "skipped: the day changed"

    day = IcebergTables(warehouse).read_day("runs", "2026-11-01")
    assert day is not None
    assert sorted(day["id"].to_pylist()) == ["a-0", "b-0", "c-0"]
    assert tables.compact_day("runs", "2026-11-01") == 3, "the next maintenance compacts it"


def test_the_rows_a_day_holds_are_counted_after_its_snapshots_expire(tmp_path: Path) -> None:
    """The guard against shrinking a published day read the day's rows from its publish
    snapshot; once the maintenance DAG expired it, the day looked empty and could be wiped."""
    from ragas_ops.config import Settings
    from ragas_ops.contract.layout import Lake
    from ragas_ops.tables.format import IcebergDayTables

    settings = Settings()
    settings.pipeline.warehouse_uri = str(tmp_path / "warehouse")
    settings.pipeline.raw_uri = str(tmp_path / "raw")
    settings.warehouse.table_format = "iceberg"
    day_tables = IcebergDayTables(Lake(settings.pipeline), settings)
    day_tables.tables.publish_day("scored", "2026-11-01", rows("first", 4), run_id="first")
    day_tables.tables.publish_day("scored", "2026-11-02", rows("other", 2), run_id="other")
    time.sleep(0.01)
    day_tables.tables.expire_snapshots(older_than=timedelta(0))
    assert day_tables.tables.day_versions("scored", "2026-11-01") == []

    assert day_tables.published_rows("2026-11-01") == 4
    assert day_tables.published_rows("2026-11-03") == 0


WRITER = """
import sys, pyarrow as pa
from ragas_ops.tables.iceberg import IcebergTables
warehouse, day, run, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
table = pa.table({"id": [f"{run}-{i}" for i in range(count)], "run": [run] * count})
IcebergTables(warehouse, create=True).publish_day("scored", day, table, run_id=run)
"""


def start_writer(warehouse: Path, day: str, run: str, count: int) -> subprocess.Popen[bytes]:
    environment = {**os.environ, "PYTHONPATH": str(PROJECT)}
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, str(warehouse), day, run, str(count)],
        env=environment,
        stderr=subprocess.PIPE,
    )


def test_writers_in_other_processes_of_two_days_both_succeed_and_of_one_day_never_mix(
    tmp_path: Path,
) -> None:
    warehouse = tmp_path / "warehouse"
    IcebergTables(str(warehouse), create=True).publish_day(
        "scored", "2026-10-31", pa.table({"id": ["seed"], "run": ["seed"]}), run_id="seed"
    )
    writers = [
        start_writer(warehouse, "2026-11-01", "a", 500),
        start_writer(warehouse, "2026-11-02", "b", 500),
        start_writer(warehouse, "2026-11-03", "c1", 300),
        start_writer(warehouse, "2026-11-03", "c2", 400),
    ]
    for writer in writers:
        _, stderr = writer.communicate(timeout=120)
        assert writer.returncode == 0, stderr.decode()

    tables = IcebergTables(str(warehouse))
    first, second, third = (tables.read_day("scored", f"2026-11-0{n}") for n in (1, 2, 3))
    assert first is not None
    assert set(first["run"].to_pylist()) == {"a"}
    assert second is not None
    assert set(second["run"].to_pylist()) == {"b"}
    assert third is not None
    (winner,) = set(third["run"].to_pylist())
    assert third.num_rows == {"c1": 300, "c2": 400}[winner]


def test_a_writer_killed_mid_publish_leaves_the_table_readable_at_its_last_snapshot(
    tmp_path: Path,
) -> None:
    warehouse = tmp_path / "warehouse"
    tables = IcebergTables(str(warehouse), create=True)
    tables.publish_day("scored", "2026-11-01", pa.table({"id": ["old"], "run": ["old"]}), "old")
    writer = start_writer(warehouse, "2026-11-01", "killed", 2_000_000)
    time.sleep(3.0)  # past start-up, inside the write of two million rows
    writer.kill()
    writer.wait(timeout=30)

    day = IcebergTables(str(warehouse)).read_day("scored", "2026-11-01")

    assert day is not None
    runs = set(day["run"].to_pylist())
    assert runs in ({"old"}, {"killed"})
    assert day.num_rows == (1 if runs == {"old"} else 2_000_000)


def test_a_table_created_with_dt_as_text_keeps_it_and_new_tables_store_a_date(
    tmp_path: Path,
) -> None:
    """Tables created before `dt` was a date keep their text column: a publish writes the day
    as text into them, and the package reads `dt` as text from both kinds."""
    from pyiceberg.types import DateType, StringType

    from ragas_ops.tables.iceberg import NAMESPACE

    tables = IcebergTables(str(tmp_path / "warehouse"), create=True)
    schema = rows("old", 1).schema.append(pa.field("dt", pa.string()))
    old = tables.catalog.create_table((NAMESPACE, "scored"), schema=schema)
    with old.update_spec() as spec:
        spec.add_identity("dt")

    tables.publish_day("scored", "2026-11-01", rows("first", 3), run_id="first")
    tables.publish_day("scored", "2026-11-01", rows("again", 2, extra=True), run_id="again")
    tables.publish_day("daily_metrics", "2026-11-01", rows("first", 1), run_id="first")

    def dt_type(name: str) -> object:
        return tables.catalog.load_table((NAMESPACE, name)).schema().find_field("dt").field_type

    assert dt_type("scored") == StringType()
    assert dt_type("daily_metrics") == DateType()
    for name, count in (("scored", 2), ("daily_metrics", 1)):
        read = tables.read_day(name, "2026-11-01")
        assert read is not None
        assert read.column("dt").to_pylist() == ["2026-11-01"] * count, name
        assert read.schema.field("dt").type == pa.string(), name
        assert tables.days(name) == ["2026-11-01"]
    assert [version.run_id for version in tables.day_versions("scored", "2026-11-01")] == [
        "first",
        "again",
    ]


def test_duckdb_reads_the_table_through_its_extension(tmp_path: Path) -> None:
    duckdb = pytest.importorskip("duckdb")
    from ragas_ops.quality.bi import connect, load_extension_sql

    tables = IcebergTables(str(tmp_path / "warehouse"), create=True)
    tables.publish_day("scored", "2026-11-01", rows("first", 3), run_id="first")
    tables.publish_day("scored", "2026-11-02", rows("second", 4), run_id="second")
    connection = connect()
    for extension in ("avro", "iceberg"):
        connection.execute(load_extension_sql(extension, duckdb.__version__))

    counts = connection.execute(
        "SELECT dt, count(*) FROM iceberg_scan(?) GROUP BY dt ORDER BY dt",
        [tables.metadata_location("scored")],
    ).fetchall()

    assert counts == [(date(2026, 11, 1), 3), (date(2026, 11, 2), 4)], "dt a DATE"


def test_on_s3_through_moto(start_s3: Callable[[], str], tmp_path: Path) -> None:
    endpoint = start_s3()
    boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1").create_bucket(Bucket="lake")
    s3 = S3Options.from_environ()
    catalog = f"sqlite:///{tmp_path / 'catalog.sqlite'}"
    tables = IcebergTables("s3://lake/warehouse", catalog_uri=catalog, s3=s3)
    tables.publish_day("scored", "2026-11-01", rows("first", 3), run_id="first")
    tables.publish_day("scored", "2026-11-01", rows("rerun", 2), run_id="rerun")

    again = IcebergTables("s3://lake/warehouse", catalog_uri=catalog, s3=s3)
    day = again.read_day("scored", "2026-11-01")

    assert day is not None

    assert set(day["run"].to_pylist()) == {"rerun"}
    assert again.metadata_location("scored").startswith("s3://lake/warehouse/")
    previous = again.previous_day("scored", "2026-11-01")
    assert previous is not None
    _, before = previous
    assert before is not None
    assert before.num_rows == 3


def test_an_s3_lake_without_a_catalog_uri_is_a_configuration_error() -> None:
    from ragas_ops.config import ConfigError

    with pytest.raises(ConfigError, match="catalog_uri"):
        IcebergTables("s3://lake/warehouse")


def test_a_reader_of_a_missing_local_warehouse_is_told_so_and_nothing_is_created(
    tmp_path: Path,
) -> None:
    from ragas_ops.tables.iceberg import IcebergError

    missing = tmp_path / "lake" / "warehouse"
    with pytest.raises(IcebergError, match=r"no Iceberg warehouse at .*does not exist"):
        IcebergTables(str(missing))
    assert not (tmp_path / "lake").exists(), "no folder, no empty SQLite catalog left behind"
