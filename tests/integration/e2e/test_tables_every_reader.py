"""Every table of a two-day warehouse, in both table formats, read by the tools analysts use
(issue 40): DuckDB, pandas, polars and pyarrow datasets, and Spark where pyspark and a JDK are
installed. Each gets every published row of `scored`, `daily_metrics` and `runs`, and `dt` is
a date in every table of both formats.

The Parquet layout keeps `dt` in the folder names only (`scored/dt=D/scored.parquet`): a
hive-partitioned read takes it from there, so no file holds a second `dt` (pandas refused the
daily metrics with an ArrowTypeError, polars read them as a String beside the scored table's
Date). Its `runs` table is one Parquet file per run's publish, beside the manifests
(`_<run>.<publish>.json`, skipped by every reader of the folder). pyarrow and pandas infer a
hive folder's `dt` as text: they are given the partitioning that makes it a date, the call
docs/bi.md recommends. The Iceberg tables are read through their catalog (pyiceberg,
DuckDB's iceberg_scan).
"""

from __future__ import annotations

import importlib.util
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from ragas_ops_testing.judge_server import JudgeServer, JudgeServerConfig

from ragas_ops.config import Settings
from ragas_ops.contract.layout import Lake
from ragas_ops.pipeline.aggregate import aggregate_day
from ragas_ops.pipeline.manifest import run_manifest, write_manifest
from ragas_ops.pipeline.plan import plan_day
from ragas_ops.pipeline.publish import publish_day
from ragas_ops.pipeline.report import report_day
from ragas_ops.pipeline.score import run_score_chunk
from ragas_ops.samples import sample_interactions
from ragas_ops.tables.format import day_tables
from tests.support import TEST_KEY, settings_for

duckdb = pytest.importorskip("duckdb")
DAYS = {"2026-11-26": 14, "2026-11-27": 9}
NEW_COLUMN = "channel"
"""A pass-through column the second day's logs have and the first day's lack."""
TABLES = ("scored", "daily_metrics", "runs")
Warehouse = tuple[Path, Settings, dict[str, int]]


@pytest.fixture(scope="module", params=["parquet", "iceberg"])
def warehouse(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Warehouse]:
    """DAYS run through the pipeline's steps as the DAG runs them (plan, score, publish with
    its manifest, aggregate, report) in one table format; the rows each table must hold."""
    table_format = request.param
    if table_format == "iceberg":
        pytest.importorskip("pyiceberg", reason="the iceberg extra")
    root = tmp_path_factory.mktemp(f"{table_format}-warehouse")
    server = JudgeServer(JudgeServerConfig()).start()
    patch = pytest.MonkeyPatch()
    patch.setenv("OPENAI_API_KEY", TEST_KEY)
    try:
        settings = settings_for(server, root)
        settings.pipeline.raw_uri = str(root / "raw")
        settings.pipeline.warehouse_uri = str(root / "warehouse")
        settings.pipeline.segments = ("app",)
        settings.warehouse.table_format = table_format  # type: ignore[assignment]
        lake = Lake(settings.pipeline)
        expected = {"scored": 0, "daily_metrics": 0, "runs": 0}
        for seed, (day, rows) in enumerate(DAYS.items()):
            folder = root / "raw" / f"dt={day}"
            folder.mkdir(parents=True)
            logs = sample_interactions(rows, seed=seed, day=day)
            if seed == 1:  # the logs gain a field: the second day's scored rows a column
                logs = logs.append_column(NEW_COLUMN, pa.array(["web"] * rows))
            pq.write_table(logs, folder / "p.parquet")
            plan = plan_day(lake, day, settings)
            results = [
                run_score_chunk(lake, day, "run-1", chunk=chunk, settings=settings)
                for chunk in plan.chunks
            ]
            published = publish_day(
                lake,
                day,
                "run-1",
                planned_rows=plan.rows,
                chunk_count=len(plan.chunks),
                settings=settings,
            )
            summary = plan.summary()
            manifest = run_manifest(
                day,
                "run-1",
                settings,
                try_number=1,
                plan_summary=summary,
                chunk_results=results,
                published=published,
            )
            write_manifest(lake, day, "run-1", manifest, settings)
            aggregate_day(lake, day, settings, published=published, run_id="run-1")
            report_day(lake, day, "run-1", settings, published=published)
            expected["scored"] += rows
            expected["runs"] += 1
        daily = day_tables(lake, settings).read_daily_metrics(list(DAYS))
        expected["daily_metrics"] = sum(table.num_rows for table in daily)
        yield root / "warehouse", settings, expected
    finally:
        patch.undo()
        server.stop()


PROJECT = Path(__file__).resolve().parents[3]


def parquet_path(root: Path, table: str) -> str:
    return str(root / table)


def parquet_glob(root: Path, table: str) -> str:
    return str(root / table / "dt=*" / "*.parquet")


def dt_as_date() -> Any:
    """The hive partitioning that reads `dt=YYYY-MM-DD` as a date (pyarrow infers text)."""
    import pyarrow as pa
    import pyarrow.dataset as ds

    return ds.partitioning(pa.schema([("dt", pa.date32())]), flavor="hive")


def bi_recipes() -> dict[str, Any]:
    """docs/bi.md's recipes for days whose columns differ: its Python block, run as written
    (its last line reads the demo's warehouse, which is not here: left out)."""
    text = (PROJECT / "docs" / "bi.md").read_text(encoding="utf-8")
    marker = "```python\n# tests/integration/e2e/test_tables_every_reader.py"
    block = text.split(marker)[1].split("\n", 1)[1]
    code = block.split("```")[0].rsplit("\nscored = ", 1)[0]
    recipes: dict[str, Any] = {}
    exec(compile(code, "docs/bi.md", "exec"), recipes)
    return recipes


Read = dict[str, tuple[int, str, Any]]
"""Table -> (rows, the type of `dt`, the table as read)."""


def duckdb_reads(root: Path, settings: Settings) -> Read:
    from ragas_ops.quality.bi import connect, load_extension_sql

    connection = connect()
    iceberg = settings.warehouse.table_format == "iceberg"
    for extension in ("avro", "iceberg") if iceberg else ():  # from their PyPI packages
        connection.execute(load_extension_sql(extension, duckdb.__version__))
    read = {}
    for table in TABLES:
        if iceberg:
            metadata = iceberg_tables(root).metadata_location(table)
            source = f"iceberg_scan('{metadata}')"
        else:
            source = (
                f"read_parquet('{parquet_glob(root, table)}', hive_partitioning = true, "
                "union_by_name = true)"
            )
        rows = connection.execute(f"SELECT count(*) FROM {source}").fetchone()
        kind = connection.execute(f"SELECT typeof(dt) FROM {source} LIMIT 1").fetchone()
        assert rows is not None
        assert kind is not None
        whole = connection.execute(f"FROM {source}").fetch_arrow_table()
        read[table] = (int(rows[0]), str(kind[0]), whole)
    return read


def iceberg_tables(root: Path) -> Any:
    from ragas_ops.tables.iceberg import IcebergTables

    return IcebergTables(str(root))


def iceberg_table(root: Path, table: str) -> Any:
    from ragas_ops.tables.iceberg import NAMESPACE

    return iceberg_tables(root).catalog.load_table((NAMESPACE, table))


def pandas_reads(root: Path, settings: Settings) -> Read:
    read = {}
    for table in TABLES:
        if settings.warehouse.table_format == "iceberg":
            frame = iceberg_table(root, table).scan().to_pandas()
        else:
            frame = bi_recipes()["with_pandas"](str(root), table)
        read[table] = (len(frame), str(frame["dt"].dtype), pa.Table.from_pandas(frame))
    return read


def polars_reads(root: Path, settings: Settings) -> Read:
    pytest.importorskip("polars", reason="polars is in the dev extra")
    read = {}
    for table in TABLES:
        if settings.warehouse.table_format == "iceberg":
            frame = iceberg_table(root, table).scan().to_polars()
        else:
            frame = bi_recipes()["with_polars"](str(root), table)
        read[table] = (frame.height, str(frame.schema["dt"]), frame.to_arrow())
    return read


def pyarrow_reads(root: Path, settings: Settings) -> Read:
    read = {}
    for table in TABLES:
        if settings.warehouse.table_format == "iceberg":
            rows = iceberg_table(root, table).scan().to_arrow()
        else:
            rows = bi_recipes()["with_pyarrow"](str(root), table)
        read[table] = (rows.num_rows, str(rows.schema.field("dt").type), rows)
    return read


READERS = {
    "duckdb": duckdb_reads,
    "pandas": pandas_reads,
    "polars": polars_reads,
    "pyarrow": pyarrow_reads,
}


DT_TYPE = {"duckdb": "DATE", "pandas": "object", "polars": "Date", "pyarrow": "date32[day]"}
"""The type of `dt` each reader gives, in every table of both formats (pandas keeps dates as
Python `datetime.date` objects)."""


@pytest.mark.parametrize("reader", list(READERS))
def test_every_table_reads_whole_with_dt_a_date(warehouse: Warehouse, reader: str) -> None:
    root, settings, expected = warehouse

    read = READERS[reader](root, settings)

    assert set(read) == set(TABLES), f"{reader} read {sorted(read)}"
    for table, (rows, _kind, _table) in read.items():
        assert rows == expected[table] > 0, (reader, table)
    kinds = {table: kind for table, (_rows, kind, _table) in read.items()}
    assert kinds == dict.fromkeys(TABLES, DT_TYPE[reader]), f"{reader} reads dt as {kinds}"


@pytest.mark.parametrize("reader", list(READERS))
def test_every_reader_reads_a_column_only_the_second_day_has(
    warehouse: Warehouse, reader: str
) -> None:
    root, settings, _expected = warehouse

    scored = READERS[reader](root, settings)["scored"][2]

    values = scored.column(NEW_COLUMN).to_pylist()
    assert sorted(value for value in values if value is not None) == ["web"] * DAYS["2026-11-27"]
    assert values.count(None) == DAYS["2026-11-26"], "the first day's rows: null, not lost"


@pytest.mark.parametrize("reader", list(READERS))
def test_every_time_is_a_timestamp_in_every_reader(warehouse: Warehouse, reader: str) -> None:
    root, settings, _expected = warehouse

    read = READERS[reader](root, settings)

    times = {
        (table, column): str(read[table][2].schema.field(column).type)
        for table, column in (
            ("scored", "scored_at"),
            ("scored", "timestamp"),
            ("runs", "published_at"),
            ("runs", "finished_at"),
        )
    }
    assert all(kind.startswith("timestamp[") for kind in times.values()), times


def test_runs_has_the_same_columns_in_both_formats(warehouse: Warehouse) -> None:
    """One SQL serves both formats' `runs` table: the Parquet files hold the Iceberg table's
    columns (`dt` from the folder), each run's manifest whole in `manifest`."""
    import pyarrow.dataset as ds

    from ragas_ops.tables.format import RUNS_SCHEMA_COLUMNS

    root, settings, _expected = warehouse
    if settings.warehouse.table_format == "iceberg":
        rows = iceberg_table(root, "runs").scan().to_arrow()
    else:
        rows = ds.dataset(parquet_path(root, "runs"), partitioning=dt_as_date()).to_table()

    assert sorted(rows.column_names) == sorted([*dict(RUNS_SCHEMA_COLUMNS), "dt"])
    assert sorted(str(day) for day in rows.column("dt").to_pylist()) == sorted(DAYS)
    manifests = [json.loads(text) for text in rows.column("manifest").to_pylist()]
    assert sorted(manifest["day"] for manifest in manifests) == sorted(DAYS)
    assert rows.column("rows_in").to_pylist() == [DAYS[manifest["day"]] for manifest in manifests]


def spark_missing() -> str | None:
    if importlib.util.find_spec("pyspark") is None:
        return "pyspark is not installed (pip install pyspark: about 320 MB)"
    if shutil.which("java") is None:
        return "no JDK: apt-get install -y openjdk-17-jre-headless"
    return None


def test_spark_reads_the_parquet_tables_with_dt_a_date(warehouse: Warehouse) -> None:
    root, settings, expected = warehouse
    if settings.warehouse.table_format == "iceberg":
        pytest.skip("Spark reads Iceberg through the iceberg-spark-runtime jar: not on PyPI")
    missing = spark_missing()
    if missing:
        pytest.skip(missing)
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[1]")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.sql.shuffle.partitions", "1")
        .getOrCreate()
    )
    try:
        kinds = {}
        for table in TABLES:
            frame = spark.read.parquet(parquet_path(root, table))  # `_` manifests skipped
            assert frame.count() == expected[table], table
            kinds[table] = frame.schema["dt"].dataType.simpleString()
    finally:
        spark.stop()
    assert set(kinds.values()) == {"date"}, kinds
