"""The nightly and maintenance DAGs with `warehouse.table_format = iceberg`, run for real by
Airflow (`dag.test()`) against the test judge server: the tables `scored`, `daily_metrics` and
`runs` in the catalog (DuckDB reads them), a rerun's "what changed" section, a metric added
between two days, a same-day race between two publishers, and the weekly maintenance."""

from __future__ import annotations

import threading
from datetime import date
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyiceberg")

from ragas_ops_testing.judge_server import JudgeServer

from ragas_ops.samples import sample_interactions
from tests.integration.dag.test_pipeline_dag import (
    PROJECT,
    airflow_database,  # noqa: F401 (the module's Airflow database)
    lake,  # noqa: F401 (the fixture)
    run_dag,
    state,
    warehouse,
    write_logs,
)

DAY = "2026-11-28"
MAINTENANCE = "ragas_ops_maintenance"


@pytest.fixture
def iceberg_lake(lake: Path, monkeypatch: pytest.MonkeyPatch) -> Path:  # noqa: F811
    monkeypatch.setenv("RAGAS_OPS_WAREHOUSE_TABLE_FORMAT", "iceberg")
    return lake


def catalog(root: Path) -> Any:
    from ragas_ops.tables.iceberg import IcebergTables

    return IcebergTables(str(warehouse(root)))


def duckdb_scan(root: Path, table: str, sql: str) -> list[tuple[Any, ...]]:
    """`sql` over `iceberg_scan(<table's metadata>)` (named `t`), in DuckDB."""
    import duckdb

    from ragas_ops.quality.bi import connect, load_extension_sql

    con = connect()
    for extension in ("avro", "iceberg"):
        con.execute(load_extension_sql(extension, duckdb.__version__))
    location = catalog(root).metadata_location(table)
    rows: list[tuple[Any, ...]] = con.execute(
        f"WITH t AS (SELECT * FROM iceberg_scan('{location}')) {sql}"
    ).fetchall()
    return rows


def test_the_nightly_dag_publishes_iceberg_tables_that_duckdb_reads(
    iceberg_lake: Path,
) -> None:
    logs = sample_interactions(45, seed=1, day=DAY)
    write_logs(iceberg_lake, DAY, logs)

    run = run_dag(DAY)

    assert state(run) == "success"
    tables = catalog(iceberg_lake)
    scored = tables.read_day("scored", DAY)
    assert scored is not None
    assert sorted(scored.column("id").to_pylist()) == sorted(logs.column("id").to_pylist())
    assert not warehouse(iceberg_lake, "scored").exists(), "no Parquet day folders"
    assert not warehouse(iceberg_lake, "daily_metrics").exists()
    daily = tables.read_day("daily_metrics", DAY)
    assert daily is not None
    overall = [r for r in daily.to_pylist() if r["segment_column"] == "all"]
    assert {r["metric"] for r in overall} == {
        "faithfulness",
        "answer_relevance",
        "context_relevance",
    }
    assert all(r["rows"] == 45 for r in overall)
    runs = tables.read_day("runs", DAY)
    assert runs is not None
    (row,) = runs.to_pylist()
    assert row["run_id"] == run.run_id
    assert row["rows_in"] == row["rows_out"] == 45
    assert row["verdict"] == "not_checked", "the report completed the run's row"
    assert row["finished_at"] is not None
    assert row["judge_model"] == "test-judge"
    assert "report.html" in row["report"]
    # DuckDB reads the three tables from their metadata files.
    assert duckdb_scan(iceberg_lake, "scored", f"SELECT count(*) FROM t WHERE dt = '{DAY}'") == [
        (45,)
    ]
    means = duckdb_scan(
        iceberg_lake,
        "daily_metrics",
        "SELECT metric, mean FROM t WHERE segment_column = 'all' ORDER BY metric",
    )
    expected = sorted((r["metric"], r["mean"]) for r in overall)
    assert [(m, pytest.approx(v)) for m, v in means] == expected
    assert duckdb_scan(iceberg_lake, "runs", "SELECT run_id, rows_out FROM t") == [(run.run_id, 45)]
    report = warehouse(iceberg_lake, "reports", f"dt={DAY}", "report.md").read_text()
    assert "What this rerun changed" not in report, "a first publish changed nothing"


def test_a_rerun_reports_what_it_changed_against_the_previous_snapshot(
    iceberg_lake: Path,
) -> None:
    write_logs(iceberg_lake, DAY, sample_interactions(40, seed=3, day=DAY))
    first = run_dag(DAY)
    assert state(first) == "success"
    tables = catalog(iceberg_lake)
    before = tables.read_day("scored", DAY)
    assert before is not None
    # The application logged more of the day (and worse answers) after the first run.
    write_logs(
        iceberg_lake,
        DAY,
        sample_interactions(40, seed=3, day=DAY),
        sample_interactions(20, seed=4, day=DAY, unfaithful_share=0.9),
    )

    second = run_dag(DAY)

    assert state(second) == "success"
    after = tables.read_day("scored", DAY)
    assert after is not None
    assert (before.num_rows, after.num_rows) == (40, 60)
    report = warehouse(iceberg_lake, "reports", f"dt={DAY}", "report.md").read_text()
    section = report.split("## What this rerun changed", 1)[1].split("\n## ", 1)[0]
    section = section.replace("\\", "")  # Markdown escapes: manual\_\_ -> manual__
    assert f"| run | {first.run_id} | {second.run_id} |" in section
    assert "| rows | 40 | 60 | +20 |" in section
    mean = {
        label: [
            r["faithfulness_score"] for r in table.to_pylist() if r["faithfulness_status"] == "ok"
        ]
        for label, table in (("before", before), ("after", after))
    }
    line = (
        f"| faithfulness mean | {sum(mean['before']) / len(mean['before']):.3f} | "
        f"{sum(mean['after']) / len(mean['after']):.3f} |"
    )
    assert line in section
    html = warehouse(iceberg_lake, "reports", f"dt={DAY}", "report.html").read_text()
    assert 'id="rerun"' in html
    runs = tables.read_day("runs", DAY)
    assert runs is not None
    assert sorted(runs.column("run_id").to_pylist()) == sorted([first.run_id, second.run_id])
    # The quality page shows the same comparison for the day.
    from ragas_ops.config import settings_from_environment
    from ragas_ops.quality.view import load_overview, render_page
    from ragas_ops.storage import locate

    settings = settings_from_environment()
    overview = load_overview(locate(settings.pipeline.warehouse_uri), settings)
    assert overview.rerun is not None
    assert (overview.rerun.rows_before, overview.rerun.rows_after) == (40, 60)
    assert overview.examples["faithfulness"], "worst examples read from the Iceberg table"
    assert "what the last rerun changed" in render_page(overview, "")


def test_a_metric_added_between_two_days_widens_the_tables(
    iceberg_lake: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    earlier, later = "2026-11-26", "2026-11-27"
    monkeypatch.setenv("RAGAS_OPS_METRICS_NAMES", "faithfulness")
    write_logs(iceberg_lake, earlier, sample_interactions(20, seed=5, day=earlier))
    assert state(run_dag(earlier)) == "success"
    monkeypatch.setenv("RAGAS_OPS_METRICS_NAMES", "faithfulness,context_relevance")
    write_logs(iceberg_lake, later, sample_interactions(20, seed=6, day=later))

    assert state(run_dag(later)) == "success"

    tables = catalog(iceberg_lake)
    old, new = tables.read_day("scored", earlier), tables.read_day("scored", later)
    assert old is not None
    assert new is not None
    assert set(old.column("context_relevance_status").to_pylist()) == {None}
    assert None not in new.column("context_relevance_status").to_pylist()
    daily = tables.read_day("daily_metrics", later)
    assert daily is not None
    assert {"faithfulness", "context_relevance"} <= set(daily.column("metric").to_pylist())
    counts = duckdb_scan(
        iceberg_lake,
        "scored",
        "SELECT dt, count(context_relevance_score) FROM t GROUP BY dt ORDER BY dt",
    )
    assert counts[0] == (date.fromisoformat(earlier), 0)
    assert counts[1][0] == date.fromisoformat(later)
    assert counts[1][1] > 0


def test_two_publishers_of_one_day_end_with_one_whole_day(
    iceberg_lake: Path, judge_server: JudgeServer
) -> None:
    """Two runs of the same day publish at the same moment through the DAG's publish step:
    the day holds one run's rows, all of them; the other run's aggregate is superseded."""
    from ragas_ops.config import settings_from_environment
    from ragas_ops.contract.layout import Lake
    from ragas_ops.pipeline.aggregate import aggregate_day
    from ragas_ops.pipeline.lake_safety import Superseded
    from ragas_ops.pipeline.plan import plan_day
    from ragas_ops.pipeline.publish import publish_day
    from ragas_ops.pipeline.score import run_score_chunk

    write_logs(iceberg_lake, DAY, sample_interactions(50, seed=7, day=DAY))
    settings = settings_from_environment()
    lake_ = Lake(settings.pipeline)
    day_plan = plan_day(lake_, DAY, settings)
    runs = ("manual__race-a", "manual__race-b")
    scored_at: dict[str, set[Any]] = {}
    for run_id in runs:
        for chunk in day_plan.chunks:
            run_score_chunk(lake_, DAY, run_id, chunk=chunk, settings=settings)
        scored_at[run_id] = {
            value
            for index in range(len(day_plan.chunks))
            for value in _column(lake_.chunk_file(DAY, run_id, index), "scored_at")
        }
    assert not scored_at[runs[0]] & scored_at[runs[1]], "the two runs are told apart"
    results: dict[str, dict[str, Any]] = {}
    errors: list[BaseException] = []
    barrier = threading.Barrier(len(runs))

    def publish(run_id: str) -> None:
        try:
            barrier.wait()
            results[run_id] = publish_day(
                lake_,
                DAY,
                run_id,
                planned_rows=day_plan.rows,
                chunk_count=len(day_plan.chunks),
                settings=settings,
            )
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=publish, args=(run_id,)) for run_id in runs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert not errors
    day = catalog(iceberg_lake).read_day("scored", DAY)
    assert day is not None
    assert day.num_rows == 50
    stamps = set(day.column("scored_at").to_pylist())
    (winner,) = [run_id for run_id in runs if stamps <= scored_at[run_id]]
    (loser,) = set(runs) - {winner}
    with pytest.raises(Superseded):
        aggregate_day(lake_, DAY, settings, published=results[loser], run_id=loser)
    aggregated = aggregate_day(lake_, DAY, settings, published=results[winner], run_id=winner)
    assert "daily_metrics" in aggregated["daily_metrics"]


def _column(location: Any, name: str) -> list[Any]:
    import pyarrow.parquet as pq

    return list(pq.read_table(location.path, columns=[name]).column(name).to_pylist())


def run_maintenance(**conf: Any) -> Any:
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(str(PROJECT / "dags"))
    assert not bag.import_errors
    return bag.dags[MAINTENANCE].test(run_conf=conf)


def test_the_maintenance_dag_expires_snapshots_and_compacts_recent_days(
    iceberg_lake: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_logs(iceberg_lake, DAY, sample_interactions(20, seed=8, day=DAY))
    for _ in range(2):
        assert state(run_dag(DAY)) == "success"
    tables = catalog(iceberg_lake)
    assert len(tables.day_versions("scored", DAY)) == 2
    assert tables.data_files("runs", DAY) >= 2, "a small file per run's row"
    # Keep no snapshot but the current one: the day's earlier version goes.
    monkeypatch.setenv("RAGAS_OPS_WAREHOUSE_SNAPSHOT_RETENTION_DAYS", "0")

    run = run_maintenance(last_day=DAY)

    assert state(run) == "success"
    tables = catalog(iceberg_lake)
    assert len(tables.day_versions("scored", DAY)) == 1
    assert tables.data_files("runs", DAY) == 1
    runs = tables.read_day("runs", DAY)
    assert runs is not None
    assert runs.num_rows == 2, "compaction keeps every run's row"
    scored = tables.read_day("scored", DAY)
    assert scored is not None
    assert scored.num_rows == 20


def test_the_maintenance_dag_is_a_no_op_under_parquet(lake: Path) -> None:  # noqa: F811
    write_logs(lake, DAY, sample_interactions(10, seed=9, day=DAY))
    assert state(run_dag(DAY)) == "success"
    before = sorted(str(p) for p in warehouse(lake).rglob("*"))

    assert state(run_maintenance(last_day=DAY)) == "success"

    assert sorted(str(p) for p in warehouse(lake).rglob("*")) == before
    assert not warehouse(lake, "_iceberg_catalog.sqlite").exists()


def test_the_nightly_dag_publishes_iceberg_tables_on_s3_over_http(
    lake: Path,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    start_s3: Any,
) -> None:
    """The warehouse on S3 (moto over HTTP), its catalog in a SQLite file every process of
    this machine reaches (`warehouse.catalog_uri`)."""
    import boto3
    import pyarrow.parquet as pq

    from ragas_ops.storage import S3Options, locate
    from ragas_ops.tables.iceberg import IcebergTables

    endpoint = start_s3()
    catalog_uri = f"sqlite:///{tmp_path / 'catalog.sqlite'}"
    for name, value in {
        "RAGAS_OPS_PIPELINE_RAW_URI": "s3://rag-logs/raw",
        "RAGAS_OPS_PIPELINE_WAREHOUSE_URI": "s3://rag-warehouse/ragas",
        "RAGAS_OPS_WAREHOUSE_TABLE_FORMAT": "iceberg",
        "RAGAS_OPS_WAREHOUSE_CATALOG_URI": catalog_uri,
    }.items():
        monkeypatch.setenv(name, value)
    client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
    for bucket in ("rag-logs", "rag-warehouse"):
        client.create_bucket(Bucket=bucket)
    raw = locate(f"s3://rag-logs/raw/dt={DAY}")
    logs = sample_interactions(25, seed=10, day=DAY)
    pq.write_table(logs, f"{raw.path}/part-0.parquet", filesystem=raw.filesystem)

    assert state(run_dag(DAY)) == "success"

    tables = IcebergTables("s3://rag-warehouse/ragas", catalog_uri, S3Options.from_environ())
    scored = tables.read_day("scored", DAY)
    assert scored is not None
    assert sorted(scored.column("id").to_pylist()) == sorted(logs.column("id").to_pylist())
    runs = tables.read_day("runs", DAY)
    assert runs is not None
    assert runs.column("rows_out").to_pylist() == [25]
    keys = [item["Key"] for item in client.list_objects_v2(Bucket="rag-warehouse")["Contents"]]
    data = [key for key in keys if "/scored/data/" in key and key.endswith(".parquet")]
    assert data, keys
    assert all(key.startswith("ragas/") for key in data), "the table's files are in the bucket"
    assert f"ragas/reports/dt={DAY}/report.html" in keys
    assert not any(key.startswith("ragas/scored/") for key in keys), "no Parquet day folders"


def test_a_day_without_traffic_publishes_an_empty_iceberg_day(iceberg_lake: Path) -> None:
    empty_day = "2026-11-20"
    (iceberg_lake / "raw" / "dt=2026-11-19").mkdir()  # a lake of days (none at all is broken input)

    assert state(run_dag(empty_day)) == "success"

    tables = catalog(iceberg_lake)
    (version,) = tables.day_versions("scored", empty_day)
    assert version.rows == 0
    assert tables.read_day("scored", empty_day) is None
    runs = tables.read_day("runs", empty_day)
    assert runs is not None
    assert runs.column("rows_out").to_pylist() == [0]
    assert warehouse(iceberg_lake, "reports", f"dt={empty_day}", "report.html").exists()
