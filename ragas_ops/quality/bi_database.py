"""A DuckDB database of views over the warehouse: what a BI tool (the Superset dashboard of
`ragas_ops.quality.superset`, or any SQL client) connects to.

The database holds no scored row. Its views read the warehouse's tables where they lie, so
under the `parquet` format a day published after the database was written shows at once (the
views glob every day's file). Two things are fixed when it is written, and a refresh
(`write_bi_database` again, e.g. from a consumer of the per-day Assets) brings them up to date:
under `iceberg` the tables' current metadata files (DuckDB's `iceberg_scan` reads a snapshot,
and the catalog is pyiceberg's, which DuckDB cannot ask), and the regression verdicts, which are
the pipeline's own check (`quality.regression`) over each day's daily metrics, not SQL that
could drift from it.

The views, every one with `dt` (a DATE) so that one date filter serves them all:

- `rq_daily_metrics`: the daily metrics, with `segment` = `all` or `<column> = <value>`;
- `rq_failures`: rows by failure status, per day, segment, metric and judge;
- `rq_daily_cost`: cost per day, segment and judge (a grouping's cost, not summed over metrics);
- `rq_worst_examples`: every scored row of every metric with its score, reason and evidence;
- `rq_regressions`: one row per day and finding of the regression check (a table).

duckdb is imported inside the functions (an optional dependency, `ragas-ops[bi]`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragas_ops.quality.bi import identifier, literal, table_glob

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa

    from ragas_ops.config import Settings
    from ragas_ops.contract.layout import Lake

PARQUET_SOURCE = (
    "read_parquet({pattern}, hive_partitioning = true, hive_types = {{'dt': VARCHAR}}, "
    "union_by_name = true)"
)
"""Every day of a Parquet table. `dt` is read as text and made a DATE in the views: DuckDB 1.5.5
fails with an internal error ("Unsupported type for NumericValueUnionToValue") on a GROUP BY
of a DATE partition column with another column, which is what a BI tool's charts ask."""

DAILY_METRICS_VIEW = """\
CREATE OR REPLACE VIEW rq_daily_metrics AS
SELECT CAST(dt AS DATE) AS dt,
       CASE WHEN segment_column = 'all' THEN 'all'
            ELSE segment_column || ' = ' || segment_value END AS segment,
       segment_column, segment_value, metric, rows, rows_scored, rows_not_applicable,
       rows_failed, failures_by_status, mean, ci_low, ci_high, median, p10, p90,
       cost_usd, day_spend_usd, judge, metric_version
FROM {daily_metrics}"""

FAILURES_VIEW = """\
CREATE OR REPLACE VIEW rq_failures AS
SELECT d.dt, d.segment, d.metric, d.judge, failure.key AS status,
       CAST(failure.value AS BIGINT) AS rows
FROM rq_daily_metrics AS d, json_each(d.failures_by_status) AS failure
WHERE d.rows_failed > 0"""

DAILY_COST_VIEW = """\
CREATE OR REPLACE VIEW rq_daily_cost AS
SELECT dt, segment, judge, any_value(cost_usd) AS cost_usd,
       any_value(day_spend_usd) AS day_spend_usd, max(rows) AS rows
FROM rq_daily_metrics
GROUP BY dt, segment, judge"""

WORST_EXAMPLES_PART = """\
SELECT CAST(dt AS DATE) AS dt, {metric_name} AS metric, {score} AS score, judge,
       question, answer, {reason} AS reason, {evidence} AS evidence
FROM {scored}
WHERE {status} = 'ok'"""

INSERT_REGRESSION = f"INSERT INTO rq_regressions VALUES ({', '.join('?' * 10)})"  # noqa: S608
REGRESSIONS_COLUMNS = (
    "dt DATE, verdict VARCHAR, summary VARCHAR, segment VARCHAR, metric VARCHAR, "
    "outcome VARCHAR, mean DOUBLE, baseline DOUBLE, delta DOUBLE, message VARCHAR"
)


def view_statements(sources: dict[str, str], metrics: Sequence[str]) -> list[str]:
    """The views' CREATE statements over `sources`: the table expressions (for a FROM clause)
    of `scored` and `daily_metrics`."""
    if not metrics:
        raise ValueError("name at least one metric")
    worst = "\nUNION ALL\n".join(
        WORST_EXAMPLES_PART.format(
            metric_name=literal(metric),
            score=identifier(f"{metric}_score"),
            reason=identifier(f"{metric}_reason"),
            evidence=identifier(f"{metric}_evidence"),
            status=identifier(f"{metric}_status"),
            scored=sources["scored"],
        )
        for metric in metrics
    )
    return [
        DAILY_METRICS_VIEW.format(daily_metrics=sources["daily_metrics"]),
        FAILURES_VIEW,
        DAILY_COST_VIEW,
        f"CREATE OR REPLACE VIEW rq_worst_examples AS\n{worst}",
    ]


def parquet_sources(warehouse_uri: str) -> dict[str, str]:
    """Every day of the Parquet tables, read where they lie (`quality.bi`'s globs)."""
    return {
        name: PARQUET_SOURCE.format(pattern=literal(table_glob(warehouse_uri, name)))
        for name in ("scored", "daily_metrics")
    }


def iceberg_sources(metadata_locations: dict[str, str]) -> dict[str, str]:
    """The Iceberg tables at their current metadata files (fixed until the next refresh)."""
    return {
        name: f"iceberg_scan({literal(metadata_locations[name])})"
        for name in ("scored", "daily_metrics")
    }


def regression_rows(history: pa.Table, settings: Settings) -> list[tuple[Any, ...]]:
    """One row per day of `history` (daily metrics of many days) and finding of the day's
    regression check, as the pipeline makes it; a day without findings keeps one row."""
    from ragas_ops.quality.regression import check_regression

    pipeline = settings.pipeline
    rows: list[tuple[Any, ...]] = []
    for day in sorted({str(dt) for dt in history.column("dt").to_pylist()}):
        report = check_regression(
            history,
            day,
            window_days=pipeline.regression_window_days,
            threshold=pipeline.regression_threshold,
        )
        head = (day, report.verdict.value, report.summary)
        findings = [finding for finding in report.findings if finding.outcome.value != "ok"]
        if not findings:
            rows.append((*head, None, None, None, None, None, None, None))
        for finding in findings:
            segment = (
                "all"
                if finding.segment_column == "all"
                else f"{finding.segment_column} = {finding.segment_value}"
            )
            rows.append(
                (
                    *head,
                    segment,
                    finding.metric,
                    finding.outcome.value,
                    finding.mean,
                    finding.baseline,
                    finding.delta,
                    finding.message,
                )
            )
    return rows


def write_bi_database(path: Path, lake: Lake, settings: Settings) -> dict[str, Any]:
    """Write (or refresh) the database at `path` for the warehouse of `lake`: the views, and
    the regression verdicts of every day with daily metrics. Written beside and moved into
    place, so a BI tool reading the old file never sees half a new one."""
    import pyarrow as pa

    from ragas_ops.quality.bi import connect
    from ragas_ops.tables.format import IcebergDayTables, day_tables

    tables = day_tables(lake, settings)
    if isinstance(tables, IcebergDayTables):
        sources = iceberg_sources(
            {name: tables.tables.metadata_location(name) for name in ("scored", "daily_metrics")}
        )
    else:
        sources = parquet_sources(str(Path(lake.warehouse.path).resolve()))
    days = tables.metrics_days()
    if not days:
        raise FileNotFoundError(
            f"no day has daily metrics in {settings.pipeline.warehouse_uri}: nothing to show"
        )
    history = pa.concat_tables(
        tables.read_daily_metrics(days),
        promote_options="default",
    )
    verdicts = regression_rows(history, settings)
    path.parent.mkdir(parents=True, exist_ok=True)
    written = path.with_name(path.name + ".new")
    written.unlink(missing_ok=True)
    connection = connect(str(written))
    try:
        load_table_extensions(connection, iceberg=isinstance(tables, IcebergDayTables))
        for statement in view_statements(sources, settings.metrics.names):
            connection.execute(statement)
        connection.execute(f"CREATE TABLE rq_regressions ({REGRESSIONS_COLUMNS})")
        connection.executemany(INSERT_REGRESSION, verdicts)
        counts = {view: view_rows(connection, view) for view in VIEWS}
    finally:
        connection.close()
    written.replace(path)
    return {"database": str(path), "days": len(days), "rows": counts}


VIEWS = (
    "rq_daily_metrics",
    "rq_failures",
    "rq_daily_cost",
    "rq_worst_examples",
    "rq_regressions",
)


def view_rows(connection: duckdb.DuckDBPyConnection, view: str) -> int:
    """How many rows a view (one of `VIEWS`: a fixed name) reads."""
    found = connection.execute(f"SELECT count(*) FROM {identifier(view)}").fetchone()  # noqa: S608
    return int(found[0]) if found else 0


def load_table_extensions(connection: duckdb.DuckDBPyConnection, *, iceberg: bool) -> None:
    """Iceberg's extensions (and avro, which it reads manifests with) from their PyPI
    packages: creating a view over `iceberg_scan` checks the table once."""
    if not iceberg:
        return
    import duckdb

    from ragas_ops.quality.bi import load_extension_sql

    for name in ("avro", "iceberg"):
        connection.execute(load_extension_sql(name, duckdb.__version__))
