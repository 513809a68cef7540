"""The BI SQL of `ragas_ops.quality.bi`, run by DuckDB on a lake the pipeline wrote: locally and
on S3 (moto over HTTP), with the extensions from PyPI packages, nothing downloaded."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from ragas_ops_testing.judge_server import JudgeServer, JudgeServerConfig

from ragas_ops.config import DEFAULT_METRICS, Settings
from ragas_ops.contract.layout import Lake
from ragas_ops.pipeline.aggregate import aggregate_day
from ragas_ops.pipeline.plan import plan_day
from ragas_ops.pipeline.publish import publish_day
from ragas_ops.pipeline.score import run_score_chunk
from ragas_ops.quality import bi
from ragas_ops.samples import sample_interactions
from tests.support import TEST_KEY, settings_for

duckdb = pytest.importorskip("duckdb")

DAYS = {"2026-11-26": 40, "2026-11-27": 25, "2026-11-28": 0}
"""Rows logged per day; the last day had no traffic (an empty partition)."""


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A warehouse written by the pipeline's steps (plan, score, publish, aggregate) for DAYS."""
    root = tmp_path_factory.mktemp("bi-lake")
    server = JudgeServer(JudgeServerConfig()).start()
    patch = pytest.MonkeyPatch()
    patch.setenv("OPENAI_API_KEY", TEST_KEY)
    try:
        settings: Settings = settings_for(server, root)
        settings.pipeline.raw_uri = str(root / "raw")
        settings.pipeline.warehouse_uri = str(root / "warehouse")
        settings.pipeline.chunk_rows = 20
        settings.pipeline.segments = ("app", "model_version")
        lake = Lake(settings.pipeline)
        for seed, (day, rows) in enumerate(DAYS.items()):
            if rows:
                folder = root / "raw" / f"dt={day}"
                folder.mkdir(parents=True)
                pq.write_table(sample_interactions(rows, seed=seed, day=day), folder / "p.parquet")
            plan = plan_day(lake, day, settings)
            for chunk in plan.chunks:
                run_score_chunk(lake, day, "run-1", chunk=chunk, settings=settings)
            published = publish_day(
                lake,
                day,
                "run-1",
                planned_rows=plan.rows,
                chunk_count=len(plan.chunks),
                settings=settings,
            )
            assert published["rows"] == rows
            aggregate_day(lake, day, settings)
        yield root / "warehouse"
    finally:
        patch.undo()
        server.stop()


def scored(warehouse: Path, day: str) -> list[dict[str, Any]]:
    return pq.read_table(warehouse / "scored" / f"dt={day}" / "scored.parquet").to_pylist()


def daily(warehouse: Path, day: str) -> list[dict[str, Any]]:
    path = warehouse / "daily_metrics" / f"dt={day}" / "daily_metrics.parquet"
    return pq.read_table(path).to_pylist()


def query(connection: Any, sql: str) -> list[dict[str, Any]]:
    result = connection.execute(sql)
    names = [column[0] for column in result.description]
    return [dict(zip(names, row, strict=True)) for row in result.fetchall()]


def mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def same(a: float | None, b: float | None) -> bool:
    return (a is None and b is None) or (a is not None and b is not None and math.isclose(a, b))


def assert_same(
    first: dict[str, list[dict[str, Any]]], second: dict[str, list[dict[str, Any]]]
) -> None:
    """The same answers, floats up to rounding (DuckDB sums in parallel, in any order)."""
    assert first.keys() == second.keys()
    for name, rows in first.items():
        assert len(rows) == len(second[name]), name
        for row, other in zip(rows, second[name], strict=True):
            assert row.keys() == other.keys()
            for column, value in row.items():
                if isinstance(value, float):
                    assert same(value, other[column]), (name, column)
                else:
                    assert value == other[column], (name, column)


def run_every_query(connection: Any, uri: str) -> dict[str, list[dict[str, Any]]]:
    return {
        "daily_trend": query(connection, bi.daily_trend_sql(uri)),
        "metric_trend": query(connection, bi.metric_trend_sql(uri)),
        "worst": query(connection, bi.worst_rows_sql(uri, "faithfulness", limit=5)),
        "worst_day": query(
            connection,
            bi.worst_rows_sql(uri, "context_relevance", day="2026-11-27", columns=["id", "app"]),
        ),
        "segments": query(connection, bi.segment_breakdown_sql(uri, "app", "faithfulness")),
    }


def check_results(results: dict[str, list[dict[str, Any]]], warehouse: Path) -> None:
    """Every query's answer against the Parquet files, read with pyarrow."""
    days = list(DAYS)
    trend = results["daily_trend"]
    assert [str(row["dt"]) for row in trend] == days, "every published day, the empty one too"
    for row in trend:
        day = str(row["dt"])
        rows = scored(warehouse, day)
        assert row["rows"] == DAYS[day] == len(rows)
        overall = {r["metric"]: r for r in daily(warehouse, day) if r["segment_column"] == "all"}
        for metric in DEFAULT_METRICS:
            assert row[f"{metric}_scored"] == overall[metric]["rows_scored"]
            assert same(row[f"{metric}_mean"], overall[metric]["mean"]), (day, metric)
        assert same(row["cost_usd"], overall["faithfulness"]["cost_usd"])
    assert trend[-1]["rows"] == 0
    assert trend[-1]["faithfulness_mean"] is None

    history = results["metric_trend"]
    assert len(history) == len(days) * len(DEFAULT_METRICS)
    for row in history:
        (expected,) = [
            r
            for r in daily(warehouse, str(row["dt"]))
            if r["segment_column"] == "all" and r["metric"] == row["metric"]
        ]
        for column in ("rows", "rows_scored", "rows_failed", "mean", "ci_low", "ci_high"):
            assert same(row[column], expected[column]), (row["dt"], row["metric"], column)
        assert (row["judge"], row["metric_version"]) == (
            expected["judge"],
            expected["metric_version"],
        )
    assert min(row["ci_low"] for row in history if row["ci_low"] is not None) >= 0.0

    every_faithfulness = sorted(
        r["faithfulness_score"]
        for day in days
        for r in scored(warehouse, day)
        if r["faithfulness_status"] == "ok"
    )
    worst = results["worst"]
    assert [row["score"] for row in worst] == pytest.approx(every_faithfulness[:5])
    assert all(row["question"] and row["answer"] for row in worst)
    for row in worst:
        source = scored(warehouse, str(row["dt"]))[row["file_row_number"]]
        assert source["faithfulness_score"] == row["score"]
        assert source["question"] == row["question"]
    assert all('"statements"' in row["evidence"] for row in worst)

    day_rows = [r for r in scored(warehouse, "2026-11-27") if r["context_relevance_status"] == "ok"]
    worst_day = results["worst_day"]
    assert len(worst_day) == min(20, len(day_rows))
    assert {str(row["dt"]) for row in worst_day} == {"2026-11-27"}
    by_id = {r["id"]: r for r in day_rows}
    for row in worst_day:
        assert row["score"] == by_id[row["id"]]["context_relevance_score"]
        assert row["app"] == by_id[row["id"]]["app"]
    assert [row["score"] for row in worst_day] == sorted(
        r["context_relevance_score"] for r in day_rows
    )[: len(worst_day)]

    segments = results["segments"]
    expected_apps = {
        (day, r["app"]) for day in days for r in scored(warehouse, day) if r["app"] is not None
    }
    assert {(str(row["dt"]), row["segment_value"]) for row in segments} == expected_apps
    for row in segments:
        rows = [r for r in scored(warehouse, str(row["dt"])) if r["app"] == row["segment_value"]]
        assert row["rows"] == len(rows)
        assert row["metric"] == "faithfulness"
        ok = [r["faithfulness_score"] for r in rows if r["faithfulness_status"] == "ok"]
        assert row["rows_scored"] == len(ok)
        assert same(row["mean"], mean(ok))


def test_the_sql_reads_the_local_lake(warehouse: Path) -> None:
    with bi.connect() as connection:
        columns = {
            name: kind
            for name, kind, *_ in connection.execute(
                f"DESCRIBE SELECT * FROM {bi.scored_table(str(warehouse))}"
            ).fetchall()
        }
        assert columns["dt"] == "DATE", "dt comes from the folder names"
        assert {"id", "faithfulness_score", "faithfulness_status", "app"} <= set(columns)
        results = run_every_query(connection, str(warehouse))
        # a file:// URI reads the same tables
        from_uri = query(connection, bi.daily_trend_sql(f"file://{warehouse}"))
        assert_same({"daily_trend": from_uri}, {"daily_trend": results["daily_trend"]})
    check_results(results, warehouse)


def test_since_keeps_that_day_and_the_later_ones(warehouse: Path) -> None:
    with bi.connect() as connection:
        sql = bi.metric_trend_sql(str(warehouse), "faithfulness", since="2026-11-27")
        rows = query(connection, sql)
    assert [str(row["dt"]) for row in rows] == ["2026-11-27", "2026-11-28"]
    assert [row["rows"] for row in rows] == [25, 0]


@pytest.fixture
def s3_warehouse(warehouse: Path, start_s3: Callable[[], str]) -> str:
    """The same warehouse's tables copied to a bucket of a local S3 server (moto, over HTTP)."""
    import boto3

    endpoint = start_s3()
    client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
    client.create_bucket(Bucket="bi-warehouse")
    for table in ("scored", "daily_metrics"):
        for path in (warehouse / table).rglob("*.parquet"):
            key = f"ragas/{path.relative_to(warehouse).as_posix()}"
            client.upload_file(str(path), "bi-warehouse", key)
    return "s3://bi-warehouse/ragas"


def test_the_same_sql_reads_the_lake_on_s3(warehouse: Path, s3_warehouse: str) -> None:
    uri = s3_warehouse
    setup = bi.duckdb_s3_setup_sql_from_environment(chain="env")
    assert "testing" not in setup, "credentials never appear in the SQL"
    with bi.connect(s3=True) as connection:
        loaded = dict(
            connection.execute(
                "SELECT extension_name, loaded FROM duckdb_extensions()"
                " WHERE extension_name IN ('httpfs', 'aws')"
            ).fetchall()
        )
        assert loaded == {"httpfs": True, "aws": True}
        connection.execute(setup)
        (secret,) = connection.execute(
            "SELECT provider, secret_string FROM duckdb_secrets()"
        ).fetchall()
        assert secret[0] == "credential_chain"
        assert "key_id=testing" in secret[1], "the key came from the environment"
        assert "secret=testing" not in secret[1], "DuckDB redacts the secret key"
        results = run_every_query(connection, uri)
        with bi.connect() as local:
            assert_same(results, run_every_query(local, str(warehouse)))
    check_results(results, warehouse)


def test_without_credentials_in_the_environment_no_secret_is_made(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The secret takes the keys from the environment when it is made: none there, no secret
    (rather than anonymous requests that fail later)."""
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    with bi.connect(s3=True) as connection:
        with pytest.raises(duckdb.Error, match="Secret Validation Failure"):
            connection.execute(bi.duckdb_s3_setup_sql("http://127.0.0.1:9", chain="env"))
        assert connection.execute("SELECT count(*) FROM duckdb_secrets()").fetchone() == (0,)


def test_connect_never_downloads_an_extension() -> None:
    with bi.connect() as connection:
        settings = dict(
            connection.execute(
                "SELECT name, value FROM duckdb_settings() WHERE name IN"
                " ('autoinstall_known_extensions', 'autoload_known_extensions',"
                " 'allow_unsigned_extensions')"
            ).fetchall()
        )
    assert settings == {
        "autoinstall_known_extensions": "false",
        "autoload_known_extensions": "false",
        "allow_unsigned_extensions": "false",
    }, "extensions load only from the installed packages, and only signed ones"
    path = bi.extension_file("httpfs", duckdb.__version__)
    assert path is not None
    assert path.is_file()
    with pytest.raises(ValueError, match=r"duckdb is 0\.0\.1"):
        bi.extension_file("httpfs", "0.0.1")
    assert bi.extension_file("no_such_extension", duckdb.__version__) is None


def test_values_are_quoted_never_pasted() -> None:
    sql = bi.segment_breakdown_sql("/lake/it's", "app' OR 1=1 --", 'x"y')
    assert "'/lake/it''s/daily_metrics/dt=*/daily_metrics.parquet'" in sql
    assert "segment_column = 'app'' OR 1=1 --'" in sql
    assert "metric = 'x\"y'" in sql
    assert '"we""ird_score"' in bi.worst_rows_sql("/lake", 'we"ird')
    with pytest.raises(ValueError, match="YYYY-MM-DD"):
        bi.worst_rows_sql("/lake", day="2026-11-01' OR true --")
    with pytest.raises(ValueError, match="limit"):
        bi.worst_rows_sql("/lake", limit=0)
    with pytest.raises(ValueError, match="endpoint"):
        bi.duckdb_s3_setup_sql("http://h:1/'; DROP")
    with pytest.raises(ValueError, match="region"):
        bi.duckdb_s3_setup_sql(None, "us-east-1'")
    assert bi.duckdb_s3_setup_sql() == (
        "CREATE OR REPLACE SECRET ragas_ops_s3 (TYPE s3, PROVIDER credential_chain,"
        " REGION 'us-east-1')"
    )
    assert bi.duckdb_s3_setup_sql("https://minio.internal:9000", "eu-west-1") == (
        "CREATE OR REPLACE SECRET ragas_ops_s3 (TYPE s3, PROVIDER credential_chain,"
        " REGION 'eu-west-1', ENDPOINT 'minio.internal:9000', USE_SSL true, URL_STYLE 'path')"
    )
