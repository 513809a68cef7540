"""The warehouse as Apache Iceberg tables: `scored`, `daily_metrics` and `runs`, partitioned by
day (`dt`), in a SQL catalog (SQLite beside a local lake by default; any SQLAlchemy URL, e.g.
Postgres, for a deployment whose workers share it).

Why Iceberg rather than Delta: its catalog makes a commit a compare-and-swap of one row in a
database, so concurrent writers on S3 are safe without a lock service (Delta needs DynamoDB or
conditional writes for that), and Athena, Trino, Spark, Snowflake, BigQuery and DuckDB all read
it. Publishing a day is one commit that deletes the day's old files and adds the new ones:
readers see the old day or the new day, never a mix; writers of other days retry on a conflict
and both succeed; two writers of the same day end with the later one's rows, whole.

pyiceberg is imported inside the functions that use it: this module is light to import.
"""

from __future__ import annotations

import itertools
import logging
import random
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from ragas_ops.config import ConfigError
from ragas_ops.contract.layout import parse_day
from ragas_ops.storage import S3Options

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    import pyarrow as pa

NAMESPACE = "ragas_ops"
DAY_COLUMN = "dt"
TABLES = ("scored", "daily_metrics", "runs", "label_queue", "labels")
COMMIT_ATTEMPTS = 10
"""Tries of a commit that lost a race with another writer (each re-applied on the new state)."""
DAY_PROPERTY = "ragas-ops.day"
RUN_PROPERTY = "ragas-ops.run-id"
PUBLISH_PROPERTY = "ragas-ops.publish-id"
COMPACTION_PROPERTY = "ragas-ops.compaction"
INSTALL_HINT = (
    "the iceberg table format needs the [iceberg] extra: pip install 'ragas-ops[iceberg]'"
)


class IcebergError(RuntimeError):
    """A table could not be read or written (the message says which and why)."""


@dataclass(frozen=True)
class DayVersion:
    """One publish of a day: the snapshot it made, when, by which run, with how many rows."""

    snapshot_id: int
    committed_at: datetime
    run_id: str
    rows: int
    publish_id: str | None = None


LOCAL_CATALOG_FILE = "_iceberg_catalog.sqlite"


def local_catalog_path(warehouse: Path) -> Path:
    """The SQLite catalog of a local warehouse folder without a `catalog_uri` of its own."""
    return warehouse / LOCAL_CATALOG_FILE


def default_catalog_uri(warehouse_uri: str) -> str:
    """SQLite beside a local lake; an S3 lake needs a catalog every worker reaches."""
    parsed = urlparse(warehouse_uri)
    if parsed.scheme in ("", "file"):
        folder = Path(parsed.path if parsed.scheme else warehouse_uri).resolve()
        return f"sqlite:///{local_catalog_path(folder)}"
    raise ConfigError(
        f"warehouse.catalog_uri is needed for an Iceberg warehouse at {warehouse_uri}: a "
        "SQLAlchemy URL every worker reaches (e.g. postgresql+psycopg2://...), or sqlite:///PATH "
        "on a single machine"
    )


def _warehouse_location(warehouse_uri: str, *, create: bool) -> str:
    parsed = urlparse(warehouse_uri)
    if parsed.scheme in ("", "file"):
        folder = Path(parsed.path if parsed.scheme else warehouse_uri).resolve()
        if create:
            folder.mkdir(parents=True, exist_ok=True)
        return f"file://{folder}"
    return warehouse_uri.rstrip("/")


def _s3_properties(s3: S3Options | None) -> dict[str, str]:
    if s3 is None:
        return {}
    properties = {
        "s3.endpoint": s3.endpoint_url,
        "s3.region": s3.region,
        "s3.access-key-id": s3.access_key.reveal() if s3.access_key else None,
        "s3.secret-access-key": s3.secret_key.reveal() if s3.secret_key else None,
        "s3.session-token": s3.session_token.reveal() if s3.session_token else None,
    }
    return {key: value for key, value in properties.items() if value}


class IcebergTables:
    """The warehouse's tables in one Iceberg catalog."""

    def __init__(
        self,
        warehouse_uri: str,
        catalog_uri: str | None = None,
        s3: S3Options | None = None,
        *,
        create: bool = False,
    ) -> None:
        """Open the catalog of `warehouse_uri`. A local warehouse's folder and default SQLite
        catalog are made only for a writer (`create`, as the pipeline opens it): a reader
        given a wrong path is told so and leaves nothing behind (SQLite would create an empty
        catalog file wherever it was pointed). A catalog named by `catalog_uri` is a server's
        database, opened (and its namespace made) as it is."""
        try:
            from pyiceberg.catalog.sql import SqlCatalog
        except ImportError:
            raise ConfigError(INSTALL_HINT) from None
        self.warehouse_uri = warehouse_uri
        uri = catalog_uri or default_catalog_uri(warehouse_uri)
        if not create and catalog_uri is None and not Path(uri.removeprefix("sqlite:///")).exists():
            raise IcebergError(
                f"no Iceberg warehouse at {warehouse_uri}: its catalog "
                f"{uri.removeprefix('sqlite:///')} does not exist (the pipeline creates it on "
                "its first publish with warehouse.table_format = iceberg)"
            )
        self.catalog = SqlCatalog(
            NAMESPACE,
            uri=uri,
            warehouse=_warehouse_location(warehouse_uri, create=create),
            **_s3_properties(s3),
        )
        if create or catalog_uri is not None:
            self.catalog.create_namespace_if_not_exists(NAMESPACE)

    # --- writing ---------------------------------------------------------------------------

    def publish_day(
        self,
        name: str,
        day: str,
        rows: pa.Table | DayParts,
        run_id: str,
        publish_id: str | None = None,
        *,
        compaction: bool = False,
    ) -> int:
        """Replace `day` of table `name` with `rows` in one commit; returns its snapshot id.
        `rows` is a table, or `DayParts`: the day part by part, never held whole (a part's
        data files are written as it comes; the commit makes them all visible at once). The
        snapshot records the day, the run and the publish id (`day_versions`)."""
        return self._overwrite(
            name,
            day,
            rows,
            _on_day(day),
            _properties(day, run_id, publish_id, compaction=compaction),
        )

    def replace_rows(
        self, name: str, day: str, rows: pa.Table, key: dict[str, str], run_id: str
    ) -> int:
        """Replace the rows of `day` whose columns equal `key` (e.g. one run's row of `runs`)
        with `rows`, leaving the day's other rows: concurrent writers of other keys of the
        same day both land."""
        for column, value in key.items():
            if column not in rows.schema.names:
                raise ValueError(f"{name}: the key column {column!r} is not in the rows")
            _checked_literal(value)
        condition = " and ".join(
            [_on_day(day), *(f"{column} == '{value}'" for column, value in key.items())]
        )
        return self._overwrite(name, day, rows, condition, _properties(day, run_id, None))

    def append_rows(self, name: str, day: str, rows: pa.Table, run_id: str) -> int:
        """Add `rows` to `day` of table `name` in one commit, keeping every row already there
        (an append-only table: the labels); returns its snapshot id."""
        return self._overwrite(name, day, rows, None, _properties(day, run_id, None))

    def _overwrite(
        self,
        name: str,
        day: str,
        rows: pa.Table | DayParts,
        condition: str | None,
        properties: dict[str, str],
    ) -> int:
        from pyiceberg.exceptions import CommitFailedException, ValidationException

        day = parse_day(day)
        parts = rows if isinstance(rows, DayParts) else DayParts(rows.schema, lambda: [rows])
        for attempt in range(1, COMMIT_ATTEMPTS + 1):
            table = self._table_for(name, _with_day(parts.schema.empty_table(), day).schema)
            try:
                with warnings.catch_warnings():  # a first publish of a day deletes nothing
                    warnings.filterwarnings("ignore", "Delete operation did not match any records")
                    _overwrite_by_parts(table, condition, parts, day, properties)
            except (CommitFailedException, ValidationException):
                # Another writer committed first (pyiceberg's own retries and conflict check
                # gave up): load its state and apply this day's overwrite on top of it (the
                # parts are read again).
                if attempt == COMMIT_ATTEMPTS:
                    raise IcebergError(
                        f"{name} {day}: {COMMIT_ATTEMPTS} commits lost a race with other writers"
                    ) from None
                time.sleep(random.uniform(0.05, 0.2) * attempt)
                continue
            snapshot = table.current_snapshot()
            assert snapshot is not None
            return int(snapshot.snapshot_id)
        raise AssertionError("unreachable")

    def _table_for(self, name: str, schema: pa.Schema) -> Any:
        """Table `name`, created partitioned by day, its schema widened to hold `schema`'s
        columns (schema evolution: a new metric's columns are added, old days read as null)."""
        import pyarrow as pa
        from pyiceberg.exceptions import CommitFailedException, TableAlreadyExistsError

        identifier = f"{NAMESPACE}.{_checked(name)}"
        if not self.catalog.table_exists(identifier):
            try:
                table = self.catalog.create_table(identifier, schema=schema)
                with table.update_spec() as spec:
                    spec.add_identity(DAY_COLUMN)
            except (TableAlreadyExistsError, CommitFailedException):
                pass  # another writer created it first
        table = self.catalog.load_table(identifier)
        known = {field.name for field in table.schema().fields}
        missing = [name for name in schema.names if name not in known]
        if missing:
            try:  # only the new columns: a `dt` kept as text stays text
                with table.update_schema() as update:
                    update.union_by_name(pa.schema([schema.field(name) for name in missing]))
            except CommitFailedException:
                pass  # another writer evolved it at the same time; the next attempt sees it
            table = self.catalog.load_table(identifier)
        return table

    def expire_snapshots(self, older_than: timedelta) -> dict[str, int]:
        """Drop snapshots older than `older_than` (the current one is always kept): time travel
        reaches back that far, and the files only they used can be deleted. Per table, the
        snapshots expired."""
        expired: dict[str, int] = {}
        cutoff = int((datetime.now(UTC) - older_than).timestamp() * 1000)
        for name in self.table_names():
            table = self._load(name)
            current = table.current_snapshot()
            old = [
                snapshot.snapshot_id
                for snapshot in table.snapshots()
                if snapshot.timestamp_ms < cutoff
                and (current is None or snapshot.snapshot_id != current.snapshot_id)
            ]
            if old:
                table.maintenance.expire_snapshots().by_ids(old).commit()
            expired[name] = len(old)
        return expired

    def compact_day(self, name: str, day: str) -> int:
        """Rewrite `day` of table `name` as one file when it has several (the small files of
        many runs' rows); returns the rows rewritten (0: nothing to do, or another writer
        committed meanwhile). The day's latest publish keeps its run and publish id:
        compaction is not a new version of the day.

        It rewrites the rows of the snapshot it read, and only over that snapshot: a commit
        made since (a nightly run's publish or its `runs` row) would otherwise be replaced by
        the older rows. Such a race skips the day; the next maintenance compacts it."""
        from pyiceberg.exceptions import CommitFailedException

        table = self._load(name, missing_ok=True)
        base = None if table is None else table.current_snapshot()
        if base is None or len(list(table.scan(row_filter=_on_day(day)).plan_files())) < 2:
            return 0
        rows = self.read_day(name, day, snapshot_id=base.snapshot_id)
        if rows is None:
            return 0
        versions = self.day_versions(name, day)
        latest = versions[-1] if versions else None
        properties = _properties(
            day,
            latest.run_id if latest else "compaction",
            latest.publish_id if latest else None,
            compaction=True,
        )
        current = self._table_for(name, rows.schema)
        try:  # pyiceberg's commit asserts that the snapshot it loaded is still the table's
            if current.current_snapshot().snapshot_id != base.snapshot_id:
                raise CommitFailedException("the table changed since the day was read")
            current.overwrite(
                _as_table_schema(_with_day(rows, parse_day(day)), current),
                overwrite_filter=_on_day(day),
                snapshot_properties=properties,
            )
        except CommitFailedException:
            log.info("%s %s: another writer committed while compacting; skipped", name, day)
            return 0
        return int(rows.num_rows)

    def data_files(self, name: str, day: str) -> int:
        """How many data files hold `day` of table `name` now."""
        table = self._load(name, missing_ok=True)
        if table is None:
            return 0
        return len(list(table.scan(row_filter=_on_day(day)).plan_files()))

    # --- reading ---------------------------------------------------------------------------

    def table_names(self) -> list[str]:
        return [identifier[-1] for identifier in self.catalog.list_tables(NAMESPACE)]

    def metadata_location(self, name: str) -> str:
        """The table's current metadata file: what DuckDB's `iceberg_scan` reads."""
        return str(self._load(name).metadata_location)

    def read_day(
        self,
        name: str,
        day: str,
        snapshot_id: int | None = None,
        columns: Sequence[str] | None = None,
    ) -> pa.Table | None:
        """`day` of table `name` (as of `snapshot_id`, else now; only those of `columns` the
        table has, when given); None if the table or the day has no rows."""
        table = self._load(name, missing_ok=True)
        if table is None:
            return None
        scan = _day_scan(table, day, snapshot_id, columns)
        rows = scan.to_arrow()
        return day_as_text(rows) if rows.num_rows else None

    def day_files(
        self,
        name: str,
        day: str,
        snapshot_id: int | None = None,
        columns: Sequence[str] | None = None,
    ) -> list[DayFile] | None:
        """`day` of table `name` file by file, in the order `read_day` reads it: each file's
        rows and how to read them (in `columns`) batch by batch, so that a reader holds one
        file's rows at most, and skips the files it needs nothing of. None if the table has
        none."""
        from pyiceberg.io.pyarrow import ArrowScan

        table = self._load(name, missing_ok=True)
        if table is None:
            return None
        scan = _day_scan(table, day, snapshot_id, columns)
        projection = scan.projection()

        def reader(task: Any) -> Callable[[], Iterator[pa.RecordBatch]]:
            def read() -> Iterator[pa.RecordBatch]:
                arrow = ArrowScan(
                    table.metadata, table.io, projection, scan.row_filter, scan.case_sensitive
                )
                batches: Iterator[pa.RecordBatch] = arrow.to_record_batches([task])
                return batches

            return read

        # A day's files are rewritten whole (copy-on-write): no delete file ever applies, so
        # a file's record count is the rows a scan of it gives.
        return [
            DayFile(int(task.file.record_count), reader(task))
            if not task.delete_files
            else DayFile(None, reader(task))
            for task in scan.plan_files()
        ]

    def days(self, name: str) -> list[str]:
        """The days table `name` holds rows of, oldest first."""
        table = self._load(name, missing_ok=True)
        if table is None:
            return []
        column = table.scan(selected_fields=(DAY_COLUMN,)).to_arrow().column(DAY_COLUMN)
        return sorted({str(day) for day in column.to_pylist() if day})

    def day_versions(self, name: str, day: str) -> list[DayVersion]:
        """Every publish of `day` still in the table's history, oldest first (compactions are
        not publishes). An overwrite commits a delete snapshot, then an append snapshot with
        the rows; a publish of no rows is its delete alone."""
        table = self._load(name, missing_ok=True)
        if table is None:
            return []
        versions: list[DayVersion] = []
        pending: Any = None  # a delete snapshot, waiting for its append
        for snapshot in table.snapshots():
            summary = snapshot.summary
            if summary is None or summary.get(DAY_PROPERTY) != day:
                continue
            if summary.get(COMPACTION_PROPERTY):
                continue
            same_publish = pending is not None and _same_publish(pending.summary, summary)
            if pending is not None and not same_publish:
                versions.append(_version(pending, rows=0))
            if summary.operation.value == "delete":
                pending = snapshot
                continue
            pending = None
            versions.append(_version(snapshot, rows=int(summary.get("added-records", "0") or 0)))
        if pending is not None:
            versions.append(_version(pending, rows=0))
        return versions

    def schema(self, name: str) -> pa.Schema:
        """Table `name`'s current schema, as Arrow."""
        return self._load(name).schema().as_arrow()

    def previous_day(self, name: str, day: str) -> tuple[DayVersion, pa.Table | None] | None:
        """The day as it was before its latest publish (its version and rows), or None when
        the day was published once (or its earlier snapshots expired)."""
        versions = self.day_versions(name, day)
        if len(versions) < 2:
            return None
        previous = versions[-2]
        return previous, self.read_day(name, day, snapshot_id=previous.snapshot_id)

    def _load(self, name: str, missing_ok: bool = False) -> Any:
        from pyiceberg.exceptions import NoSuchTableError

        try:
            return self.catalog.load_table(f"{NAMESPACE}.{_checked(name)}")
        except NoSuchTableError:
            if missing_ok:
                return None
            raise IcebergError(f"no Iceberg table {name!r} in {self.warehouse_uri}") from None


@dataclass(frozen=True)
class DayFile:
    """One data file of a day: its rows (None: known only once read) and its reader."""

    rows: int | None
    read: Callable[[], Iterator[pa.RecordBatch]]


@dataclass(frozen=True)
class DayParts:
    """A day's rows part by part: `parts()` gives them again on every call (a commit that
    lost a race is retried from the first part)."""

    schema: pa.Schema
    parts: Callable[[], Iterable[pa.Table]]


def _day_scan(table: Any, day: str, snapshot_id: int | None, columns: Sequence[str] | None) -> Any:
    """The scan of `day` (as of `snapshot_id`), in those of `columns` the table has (all when
    None; the day column alone when it has none of them)."""
    selected: tuple[str, ...] = ("*",)
    if columns is not None:
        known = {field.name for field in table.schema().fields}
        selected = tuple(c for c in dict.fromkeys(columns) if c in known) or (DAY_COLUMN,)
    return table.scan(row_filter=_on_day(day), snapshot_id=snapshot_id, selected_fields=selected)


def _overwrite_by_parts(
    table: Any, condition: str | None, parts: DayParts, day: str, properties: dict[str, str]
) -> None:
    """`Table.overwrite` (delete the day, append its rows: two snapshots, one commit) with
    the rows written part by part. pyiceberg streams a write only into an unpartitioned
    table (a RecordBatchReader; its issue 2152), so each part is turned into data files with
    the function its own overwrite uses, and one fast append adds them all. No condition: an
    append-only table's rows are added, nothing deleted."""
    from pyiceberg.io.pyarrow import _dataframe_to_data_files

    numbers = itertools.count()  # one count for the publish's files: their names must differ
    with table.transaction() as transaction:
        if condition is not None:
            transaction.delete(condition, snapshot_properties=properties)
        producer = transaction.update_snapshot(snapshot_properties=properties).fast_append()
        with producer as append:
            for part in parts.parts():
                if not part.num_rows:
                    continue
                files = _dataframe_to_data_files(
                    table_metadata=transaction.table_metadata,
                    df=_as_table_schema(_with_day(part, day), table),
                    io=table.io,
                    write_uuid=append.commit_uuid,
                    counter=numbers,
                )
                for data_file in files:
                    append.append_data_file(data_file)


def _same_publish(first: Any, second: Any) -> bool:
    return all(first.get(key) == second.get(key) for key in (RUN_PROPERTY, PUBLISH_PROPERTY))


def _version(snapshot: Any, rows: int) -> DayVersion:
    summary = snapshot.summary
    return DayVersion(
        snapshot_id=int(snapshot.snapshot_id),
        committed_at=datetime.fromtimestamp(snapshot.timestamp_ms / 1000, UTC),
        run_id=str(summary.get(RUN_PROPERTY, "")),
        rows=rows,
        publish_id=summary.get(PUBLISH_PROPERTY),
    )


def _properties(
    day: str, run_id: str, publish_id: str | None, *, compaction: bool = False
) -> dict[str, str]:
    properties = {DAY_PROPERTY: day, RUN_PROPERTY: run_id}
    if publish_id is not None:
        properties[PUBLISH_PROPERTY] = publish_id
    if compaction:
        properties[COMPACTION_PROPERTY] = "true"
    return properties


def _checked_literal(value: str) -> str:
    """A value that may go into a row filter between quotes (ids: no quote, no backslash)."""
    if "'" in value or "\\" in value:
        raise ValueError(f"a key value may not hold a quote or a backslash: {value!r}")
    return value


def _as_table_schema(rows: pa.Table, table: Any) -> pa.Table:
    """`rows` with the table's columns (nulls for those the rows lack), in its order, so an
    older writer's rows still land in a table a newer schema widened."""
    import pyarrow as pa

    schema = table.schema().as_arrow()
    columns = []
    for field in schema:
        if field.name in rows.schema.names:
            columns.append(rows.column(field.name).cast(field.type))
        else:
            columns.append(pa.nulls(rows.num_rows, field.type))
    return pa.Table.from_arrays(columns, schema=schema)


def _on_day(day: str) -> str:
    """The row filter of one day (`parse_day` admits nothing but YYYY-MM-DD into it)."""
    return f"{DAY_COLUMN} == '{parse_day(day)}'"


def _checked(name: str) -> str:
    if name not in TABLES:
        raise ValueError(f"unknown table {name!r}; one of {list(TABLES)}")
    return name


def _with_day(rows: pa.Table, day: str) -> pa.Table:
    """`rows` with the partition column set to `day`, a date (replacing one the rows carry)."""
    import pyarrow as pa

    rows = rows.replace_schema_metadata(None)
    for index, field in enumerate(rows.schema):
        # Iceberg has no null type: a column that is null on every row is kept as text, and
        # nanosecond timestamps are stored at Iceberg's microsecond precision.
        if pa.types.is_null(field.type):
            rows = rows.set_column(index, field.name, rows.column(index).cast(pa.string()))
        elif pa.types.is_timestamp(field.type) and field.type.unit == "ns":
            target = pa.timestamp("us", tz=field.type.tz)
            rows = rows.set_column(index, field.name, rows.column(index).cast(target, safe=False))
    # A date, as the Parquet layout's folders give `dt` to every reader; a table created
    # when `dt` was text keeps it so (`_as_table_schema` casts to the table's type).
    days = pa.array([day] * rows.num_rows, pa.string()).cast(pa.date32())
    if DAY_COLUMN in rows.schema.names:  # the daily metrics carry it: kept in its place
        return rows.set_column(rows.schema.get_field_index(DAY_COLUMN), DAY_COLUMN, days)
    return rows.append_column(DAY_COLUMN, days)


def day_as_text(rows: pa.Table) -> pa.Table:
    """`rows` with `dt` as the rest of the package reads a day, `YYYY-MM-DD` text (as
    `tables.format.with_partition_column` gives the Parquet layout's), whether the table
    stores it as a date (since tables had one `dt` type) or as text (tables created before)."""
    import pyarrow as pa

    if DAY_COLUMN not in rows.schema.names:
        return rows
    index = rows.schema.get_field_index(DAY_COLUMN)
    return rows.set_column(index, DAY_COLUMN, rows.column(index).cast(pa.string()))


def iter_days(first: str, last: str) -> Iterator[str]:
    """Every day from `first` to `last`, inclusive."""
    day, end = datetime.fromisoformat(parse_day(first)), datetime.fromisoformat(parse_day(last))
    while day <= end:
        yield day.date().isoformat()
        day += timedelta(days=1)
