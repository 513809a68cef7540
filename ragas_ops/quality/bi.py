"""DuckDB SQL that reads the warehouse's tables where they lie, on a local disk or on S3.

The scored table and the daily metrics are Hive-style partitions (see `ragas_ops.contract.layout`):

    <warehouse>/scored/dt=YYYY-MM-DD/scored.parquet
    <warehouse>/daily_metrics/dt=YYYY-MM-DD/daily_metrics.parquet

so `read_parquet('<warehouse>/scored/dt=*/scored.parquet', hive_partitioning = true)` reads
every day at once, with `dt` (a DATE taken from the folder name) as a column, and a filter on
`dt` opens only that day's file. Days are read by column name (`union_by_name`): a day whose
logs had other extra columns, or an empty day, reads as nulls in the columns it lacks.

The functions below return SQL text, ready for any DuckDB client (Python, the CLI, a BI tool).
Values put in it (paths, metric and column names, days) are quoted, never pasted raw.

S3 needs DuckDB's `httpfs` extension, and reading credentials from the environment its `aws`
extension. DuckDB downloads extensions at run time by default; `connect()` never does: it
loads them from the `duckdb-extension-httpfs` and `duckdb-extension-aws` packages installed by
`pip install "ragas-ops[bi]"` (signed DuckDB builds, checked when loaded), and turns DuckDB's
automatic installs off. Credentials never appear in the SQL: `duckdb_s3_setup_sql` makes a
secret with `PROVIDER credential_chain`, which reads them from the standard AWS places.

duckdb is an optional dependency: this module imports it only inside `connect`.
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlparse

from ragas_ops.config import DEFAULT_METRICS
from ragas_ops.contract.layout import day_in_path_regex, every_day_glob, parse_day

if TYPE_CHECKING:
    import duckdb

INSTALL_HINT = 'pip install "ragas-ops[bi]"'
S3_SECRET_NAME = "ragas_ops_s3"  # noqa: S105 (the secret's name, no password)
_URL_STYLES = ("path", "vhost")
_CHAIN = re.compile(r"[a-z]+(;[a-z]+)*")
_ENDPOINT = re.compile(r"[A-Za-z0-9.-]+(:\d+)?")
_REGION = re.compile(r"[a-z0-9-]+")

# -- the tables ----------------------------------------------------------------------------------

PARTITIONED_SOURCE = (
    "read_parquet({pattern}, hive_partitioning = true, hive_types = {{'dt': DATE}}, "
    "union_by_name = true{options})"
)
"""The table function that reads every day of a partitioned table; `{pattern}` is a quoted
glob such as `'<warehouse>/scored/dt=*/scored.parquet'`."""

DAILY_TREND_SQL = """\
WITH days AS (
    SELECT DISTINCT CAST(regexp_extract(file, {day_in_path}, 1) AS DATE) AS dt
    FROM glob({scored_glob})
)
SELECT
    days.dt,
    count(s.dt) AS rows,
{metric_columns}
    CASE WHEN count(s.dt) = count(s.cost_usd) THEN coalesce(sum(s.cost_usd), 0) END AS cost_usd
FROM days
LEFT JOIN {scored} AS s ON s.dt = days.dt
GROUP BY days.dt
ORDER BY days.dt"""
"""One row per published day, from the scored rows: how many rows, and per metric how many
were scored and their mean. A day published without rows has `rows` = 0 and null means;
`cost_usd` is null when any row's cost is unknown."""

_TREND_METRIC_COLUMNS = """\
    count(*) FILTER (WHERE s.{status} = 'ok') AS {scored_alias},
    avg(s.{score}) FILTER (WHERE s.{status} = 'ok') AS {mean_alias},"""

METRIC_TREND_SQL = """\
SELECT dt, metric, rows, rows_scored, rows_not_applicable, rows_failed,
       mean, ci_low, ci_high, median, p10, p90, cost_usd, judge, metric_version
FROM {daily_metrics}
WHERE segment_column = 'all'{filters}
ORDER BY dt, metric"""
"""The daily metrics over every row of each day, one row per (day, metric), with the
confidence interval of the mean: the trend chart's table. `judge` and `metric_version` say
what each day was scored with: a change of either moves the scores (mark it on the chart)."""

WORST_ROWS_SQL = """\
SELECT dt, file_row_number, {columns}{score} AS score, {reason} AS reason,
       {evidence} AS evidence
FROM {scored}
WHERE {status} = 'ok'{filters}
ORDER BY score ASC, dt DESC, file_row_number ASC
LIMIT {limit}"""
"""The lowest-scored rows of a metric (rows the judge could not score are left out); ties go
to the latest day, then to the first row in the day's file."""

SEGMENT_BREAKDOWN_SQL = """\
SELECT dt, segment_value, metric, rows, rows_scored, rows_failed, mean, ci_low, ci_high
FROM {daily_metrics}
WHERE segment_column = {segment}{filters}
ORDER BY dt, metric, segment_value"""
"""The daily metrics of one segment column (one of the pipeline's `segments`), per value."""


def table_glob(warehouse_uri: str, table: str) -> str:
    """`<warehouse>/<table>/dt=*/<table>.parquet` (`layout.every_day_glob`), for a local
    path, `file://` or `s3://`."""
    parsed = urlparse(warehouse_uri)
    if parsed.scheme == "file":
        root = parsed.path
    elif parsed.scheme in ("", "s3") or len(parsed.scheme) == 1:  # "C:\..." parses as scheme c
        root = warehouse_uri
    else:
        raise ValueError(f"unsupported warehouse {warehouse_uri!r}: use a local path or s3://")
    return every_day_glob(root, table)


def scored_table(warehouse_uri: str, *, file_row_number: bool = False) -> str:
    """The scored rows of every day, as a table expression for a FROM clause; with
    `file_row_number`, plus that column (the row's place in its day's file, from 0)."""
    return PARTITIONED_SOURCE.format(
        pattern=literal(table_glob(warehouse_uri, "scored")),
        options=", file_row_number = true" if file_row_number else "",
    )


def daily_metrics_table(warehouse_uri: str) -> str:
    """The daily metrics of every day, as a table expression for a FROM clause."""
    return PARTITIONED_SOURCE.format(
        pattern=literal(table_glob(warehouse_uri, "daily_metrics")), options=""
    )


# -- the queries ---------------------------------------------------------------------------------


def daily_trend_sql(warehouse_uri: str, metrics: Sequence[str] = DEFAULT_METRICS) -> str:
    """Per published day: `dt`, `rows`, then `<metric>_scored` and `<metric>_mean` for each of
    `metrics`, then `cost_usd` (see `DAILY_TREND_SQL`)."""
    if not metrics:
        raise ValueError("name at least one metric")
    metric_columns = "\n".join(
        _TREND_METRIC_COLUMNS.format(
            status=identifier(f"{metric}_status"),
            score=identifier(f"{metric}_score"),
            scored_alias=identifier(f"{metric}_scored"),
            mean_alias=identifier(f"{metric}_mean"),
        )
        for metric in metrics
    )
    return DAILY_TREND_SQL.format(
        scored_glob=literal(table_glob(warehouse_uri, "scored")),
        day_in_path=literal(day_in_path_regex("scored")),
        scored=scored_table(warehouse_uri),
        metric_columns=metric_columns,
    )


def metric_trend_sql(
    warehouse_uri: str, metric: str | None = None, *, since: str | None = None
) -> str:
    """The overall daily metrics (see `METRIC_TREND_SQL`), of one metric or all, from `since`
    (a YYYY-MM-DD day) or from the first day."""
    filters = _filters(metric=metric, since=since)
    return METRIC_TREND_SQL.format(
        daily_metrics=daily_metrics_table(warehouse_uri), filters=filters
    )


def worst_rows_sql(
    warehouse_uri: str,
    metric: str = "faithfulness",
    *,
    day: str | None = None,
    limit: int = 20,
    columns: Sequence[str] = ("question", "answer"),
) -> str:
    """The `limit` lowest-scored rows of `metric`, of one day or of every day: `dt`,
    `file_row_number` (the row's place in the day's file, from 0), the scored table's `columns`
    (input columns carried through, e.g. an id or a segment), then `score`, `reason` and
    `evidence` (JSON)."""
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ValueError(f"limit must be a positive integer, got {limit!r}")
    selected = "".join(f"{identifier(column)}, " for column in columns)
    return WORST_ROWS_SQL.format(
        columns=selected,
        score=identifier(f"{metric}_score"),
        reason=identifier(f"{metric}_reason"),
        evidence=identifier(f"{metric}_evidence"),
        status=identifier(f"{metric}_status"),
        scored=scored_table(warehouse_uri, file_row_number=True),
        filters=_filters(day=day),
        limit=limit,
    )


def segment_breakdown_sql(
    warehouse_uri: str,
    segment: str,
    metric: str | None = None,
    *,
    day: str | None = None,
) -> str:
    """The daily metrics of each value of the segment column `segment` (see
    `SEGMENT_BREAKDOWN_SQL`), of one metric or all, of one day or of every day."""
    return SEGMENT_BREAKDOWN_SQL.format(
        daily_metrics=daily_metrics_table(warehouse_uri),
        segment=literal(segment),
        filters=_filters(metric=metric, day=day),
    )


def _filters(*, metric: str | None = None, day: str | None = None, since: str | None = None) -> str:
    """`AND ...` conditions on `metric` and `dt` (the days are checked to be real dates)."""
    conditions = []
    if metric is not None:
        conditions.append(f"metric = {literal(metric)}")
    if day is not None:
        conditions.append(f"dt = DATE '{parse_day(day)}'")
    if since is not None:
        conditions.append(f"dt >= DATE '{parse_day(since)}'")
    return "".join(f"\n  AND {condition}" for condition in conditions)


def literal(value: str) -> str:
    """`value` as an SQL string literal."""
    if "\x00" in value:
        raise ValueError("a NUL character cannot be part of an SQL string")
    return "'" + value.replace("'", "''") + "'"


def identifier(name: str) -> str:
    """`name` as a quoted SQL identifier (a column name)."""
    if not name or "\x00" in name:
        raise ValueError(f"not a column name: {name!r}")
    return '"' + name.replace('"', '""') + '"'


# -- S3 ------------------------------------------------------------------------------------------


def duckdb_s3_setup_sql(
    endpoint: str | None = None,
    region: str = "us-east-1",
    use_ssl: bool | None = None,
    *,
    url_style: str | None = None,
    chain: str | None = None,
) -> str:
    """`CREATE OR REPLACE SECRET` for s3:// reads, with credentials from the AWS credential
    chain (environment variables, profile, instance role...): no key is ever part of the SQL.

    `endpoint`: an S3-compatible server (MinIO, moto...), as `host:port` or as a URL whose
    scheme sets `use_ssl` when that is not given; none for AWS itself. `url_style`: `path`
    (the default with an endpoint) or `vhost` (AWS's default). `chain`: the providers to try,
    e.g. `env` or `env;config` (default: the AWS SDK's whole chain). Needs the `httpfs` and
    `aws` extensions loaded (`connect(s3=True)`).
    """
    options = ["TYPE s3", "PROVIDER credential_chain"]
    if chain is not None:
        if not _CHAIN.fullmatch(chain):
            raise ValueError(f"chain must be provider names joined by ';', got {chain!r}")
        options.append(f"CHAIN {literal(chain)}")
    if not _REGION.fullmatch(region):
        raise ValueError(f"not an AWS region: {region!r}")
    options.append(f"REGION {literal(region)}")
    if endpoint:
        parsed = urlparse(endpoint if "://" in endpoint else f"//{endpoint}")
        if parsed.scheme not in ("", "http", "https") or parsed.path.strip("/"):
            raise ValueError(f"endpoint must be host:port or http(s)://host:port, got {endpoint!r}")
        host = parsed.netloc
        if not _ENDPOINT.fullmatch(host):
            raise ValueError(f"endpoint must be host:port or http(s)://host:port, got {endpoint!r}")
        if use_ssl is None and parsed.scheme:
            use_ssl = parsed.scheme == "https"
        options.append(f"ENDPOINT {literal(host)}")
        url_style = url_style or "path"
    if use_ssl is not None:
        options.append(f"USE_SSL {'true' if use_ssl else 'false'}")
    if url_style is not None:
        if url_style not in _URL_STYLES:
            raise ValueError(f"url_style must be one of {_URL_STYLES}, got {url_style!r}")
        options.append(f"URL_STYLE {literal(url_style)}")
    return f"CREATE OR REPLACE SECRET {S3_SECRET_NAME} ({', '.join(options)})"


def duckdb_s3_setup_sql_from_environment(*, chain: str | None = None) -> str:
    """`duckdb_s3_setup_sql` for the endpoint and region the rest of ragas-ops uses
    (`AWS_ENDPOINT_URL_S3` or `AWS_ENDPOINT_URL`, `AWS_REGION` or `AWS_DEFAULT_REGION`)."""
    from ragas_ops.storage import S3Options

    options = S3Options.from_environ()
    return duckdb_s3_setup_sql(options.endpoint_url, options.region, chain=chain)


# -- connections ---------------------------------------------------------------------------------


def extension_file(name: str, duckdb_version: str) -> Path | None:
    """The `<name>.duckdb_extension` of the `duckdb-extension-<name>` package built for
    `duckdb_version`; None when that package is not installed. A ValueError when it is built
    for another DuckDB version (DuckDB refuses to load it)."""
    if not re.fullmatch(r"[a-z0-9_]+", name):
        raise ValueError(f"not an extension name: {name!r}")
    spec = importlib.util.find_spec(f"duckdb_extension_{name}")
    if spec is None or not spec.submodule_search_locations:
        return None
    found = sorted(
        path
        for folder in spec.submodule_search_locations
        for path in Path(folder).glob(f"extensions/*/{name}.duckdb_extension")
    )
    for path in found:
        if path.parent.name == f"v{duckdb_version}":
            return path
    builds = ", ".join(path.parent.name for path in found) or "none"
    raise ValueError(
        f"duckdb-extension-{name} holds builds for {builds}, but duckdb is {duckdb_version}: "
        f"install the matching versions ({INSTALL_HINT})"
    )


def load_extension_sql(name: str, duckdb_version: str) -> str:
    """`LOAD` of the extension `name` from its PyPI package, or, without the package, from
    DuckDB's own extension folder (`~/.duckdb/extensions`): never a download."""
    path = extension_file(name, duckdb_version)
    return f"LOAD {literal(str(path)) if path is not None else name}"


def connect(database: str = ":memory:", *, s3: bool = False) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection that never downloads an extension; with `s3`, able to read s3://
    (the `httpfs` and `aws` extensions loaded; add the secret: `duckdb_s3_setup_sql`)."""
    try:
        import duckdb
    except ImportError as error:
        raise ImportError(f"reading the tables with SQL needs duckdb: {INSTALL_HINT}") from error

    connection = duckdb.connect(
        database,
        config={"autoinstall_known_extensions": False, "autoload_known_extensions": False},
    )
    if s3:
        for name in ("httpfs", "aws"):
            statement = load_extension_sql(name, duckdb.__version__)
            try:
                connection.execute(statement)
            except duckdb.Error as error:
                connection.close()
                raise RuntimeError(
                    f"DuckDB could not load its {name} extension ({error}); {INSTALL_HINT} "
                    "installs it with a duckdb of the same version"
                ) from error
    return connection
