"""The one seam between the pipeline and how the warehouse keeps its tables.

`DayTables` is what the pipeline's publish, aggregate, report and manifest steps and the
quality page ask of the warehouse, a day at a time; `day_tables` picks the implementation the
`warehouse.table_format` setting names:

- `ParquetDayTables` (`parquet`, the default): one Parquet file per day and table under
  Hive-style `dt=` folders, published by a whole-file move (docs/lake-safety.md). A run's
  aggregate and report read the copy of the table it published, in its staging folder.
- `IcebergDayTables` (`iceberg`): the Iceberg tables `scored`, `daily_metrics` and `runs`
  (`tables.iceberg`, docs/iceberg.md). A publish is one overwrite commit of the day; a run's
  aggregate and report read the snapshot it committed; the day's earlier snapshots say what a
  rerun changed.

Run manifests stay JSON files under `runs/dt=<day>/` in both formats (they hold nested detail:
the plan, rejected files, batches), named `_<run>.<publish>.json` so that readers of the folder
skip them; each is also one row of the `runs` table (`runs_row`), the same columns in both
formats: a Parquet file beside it (`<run>.<publish>.parquet`), or a row of the Iceberg table.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ragas_ops.config import ConfigError, Settings, TableFormat, masked_catalog_uri
from ragas_ops.contract.inputs import PARTITION_COLUMN
from ragas_ops.contract.layout import DAY_TABLES, Lake, parse_day
from ragas_ops.secrets import redact
from ragas_ops.storage import ParquetOutput, S3Options, copy_into_place

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from ragas_ops.tables.iceberg import DayVersion, IcebergTables

log = logging.getLogger(__name__)

PUBLISH_ID_KEY, RUN_ID_KEY = "ragas_ops.publish_id", "ragas_ops.run_id"
"""Keys of a Parquet table's metadata: which publish, of which run, it is."""
MERGE_BATCH_ROWS = 8192
PUBLISH_PART_BYTES = 128 * 1024 * 1024
"""Arrow bytes of a day's rows an Iceberg publish writes at a time (one data file each)."""


@dataclass(frozen=True)
class Rerun:
    """A day published more than once: its version before the latest publish and the latest,
    with their rows (only the columns asked for)."""

    before: DayVersion
    after: DayVersion
    before_rows: pa.Table | None
    after_rows: pa.Table | None


class DayTables(Protocol):
    """The warehouse's day tables, whatever their format."""

    @property
    def table_format(self) -> TableFormat: ...

    @property
    def lake(self) -> Lake:
        """The lake whose warehouse holds these tables (its reports and manifests beside)."""
        ...

    def scored_uri(self, day: str) -> str:
        """Where the day's scored rows are, for messages and asset events."""
        ...

    def daily_metrics_uri(self, day: str) -> str: ...

    def publish_scored(
        self,
        day: str,
        run_id: str,
        sources: Sequence[pq.ParquetFile],
        schema: pa.Schema,
        publish_id: str,
    ) -> dict[str, Any]:
        """Publish the day's scored rows (the chunk files `sources`, conformed to `schema`)
        whole, in one step; returns what `read_scored` needs to read this very version."""
        ...

    def published_version(self, day: str) -> str | None:
        """The publish id of the day's published scored rows (None: none published)."""
        ...

    def published_rows(self, day: str) -> int:
        """Rows of the day's published scored table (0: none)."""
        ...

    def read_scored(
        self,
        day: str,
        published: Mapping[str, Any] | None = None,
        run_id: str | None = None,
        columns: Sequence[str] | None = None,
    ) -> pa.Table:
        """The day's scored rows: the version `published` describes, else the current one
        (only those of `columns` the table has, when given); FileNotFoundError when the day
        has none."""
        ...

    def read_scored_rows(
        self,
        day: str,
        positions: Sequence[int],
        columns: Sequence[str],
        published: Mapping[str, Any] | None = None,
        run_id: str | None = None,
    ) -> dict[int, dict[str, Any]]:
        """The day's scored rows at `positions` (row numbers as `read_scored` reads the day;
        the version `published` describes, else the current one), only those of `columns`
        the table has: a few rows' text without holding the day's."""
        ...

    def write_daily_metrics(
        self, day: str, table: pa.Table, publish_id: str | None, run_id: str | None
    ) -> str:
        """Replace the day's daily metrics (computed from publish `publish_id`)."""
        ...

    def metrics_version(self, day: str) -> str | None:
        """The publish id the day's daily metrics were computed from."""
        ...

    def read_daily_metrics(self, days: Sequence[str]) -> list[pa.Table]:
        """The daily metrics of those of `days` that have them, in order."""
        ...

    def metrics_days(self) -> list[str]:
        """The days that have daily metrics, oldest first."""
        ...

    def write_label_queue(self, day: str, table: pa.Table) -> str:
        """Replace the day's labelling queue (`ragas_ops.labels.queue`)."""
        ...

    def read_label_queue(self, day: str) -> pa.Table | None:
        """The day's labelling queue, None before the day has one."""
        ...

    def append_labels(self, day: str, table: pa.Table, batch_id: str) -> str:
        """Add one batch of labels of rows scored on `day`, whole or not at all; the labels
        already there are never rewritten."""
        ...

    def read_labels(self, days: Sequence[str]) -> list[pa.Table]:
        """Every label of rows scored on `days` (each table with a `dt` column)."""
        ...

    def record_run(self, day: str, manifest: Mapping[str, Any]) -> None:
        """Record a run's manifest as a row of the `runs` table (when the format has one)."""
        ...

    def rerun(self, day: str, columns: Sequence[str], snapshot: int | None = None) -> Rerun | None:
        """What the day's latest publish (or the one of `snapshot`) replaced, or None when it
        was the day's first (or the format keeps no earlier versions)."""
        ...

    def maintain(self, retention_days: int, compact_days: int, today: str) -> dict[str, Any]:
        """Expire old versions and compact recent days; what was done."""
        ...


def missing_for(table_format: TableFormat) -> str | None:
    """What to install before tables of `table_format` can be written, or None when nothing
    is missing (checked without importing it)."""
    import importlib.util

    if table_format == "iceberg" and importlib.util.find_spec("pyiceberg") is None:
        from ragas_ops.tables.iceberg import INSTALL_HINT

        return INSTALL_HINT
    return None


def local_table_formats(warehouse: Path) -> set[TableFormat]:
    """The table formats a local warehouse folder already holds tables in: Iceberg when its
    default catalog is there, Parquet when a day table's folder is."""
    from ragas_ops.tables.iceberg import local_catalog_path

    formats: set[TableFormat] = set()
    if local_catalog_path(warehouse).exists():
        formats.add("iceberg")
    if any((warehouse / table).is_dir() for table in DAY_TABLES):
        formats.add("parquet")
    return formats


def day_tables(lake: Lake, settings: Settings) -> DayTables:
    """The warehouse's tables in the format `warehouse.table_format` names."""
    if settings.warehouse.table_format == "iceberg":
        return IcebergDayTables(lake, settings)
    return ParquetDayTables(lake)


# -- parquet -------------------------------------------------------------------------------------


class ParquetDayTables:
    """The Hive-style Parquet layout of `contract.layout.Lake`."""

    table_format: TableFormat = "parquet"

    def __init__(self, lake: Lake) -> None:
        self.lake = lake

    def scored_uri(self, day: str) -> str:
        return self.lake.scored(day).uri

    def daily_metrics_uri(self, day: str) -> str:
        return self.lake.daily_metrics(day).uri

    def publish_scored(
        self,
        day: str,
        run_id: str,
        sources: Sequence[pq.ParquetFile],
        schema: pa.Schema,
        publish_id: str,
    ) -> dict[str, Any]:
        """Merge into the run's staging folder, where it stays as the version this run's
        aggregate and report read (`Lake.run_table`), then copy into place whole: the previous
        table stays until the new one replaces it."""
        import pyarrow as pa

        from ragas_ops.storage import conform

        lake = self.lake
        schema = schema.with_metadata({PUBLISH_ID_KEY: publish_id, RUN_ID_KEY: run_id})
        snapshot = lake.run_table(day, run_id)
        output = ParquetOutput(
            snapshot, schema, staging=lake.scratch(day, run_id, "scored.parquet")
        )
        try:
            for source in sources:
                for batch in source.iter_batches(batch_size=MERGE_BATCH_ROWS):
                    output.write(conform(pa.Table.from_batches([batch]), schema))
        except BaseException:
            output.abort()
            raise
        output.commit()
        copy_into_place(snapshot, lake.scored(day), lake.scratch(day, run_id, "scored.parquet"))
        return {"table": lake.scored(day).uri, "run_table": snapshot.uri}

    def published_version(self, day: str) -> str | None:
        return _parquet_key(self.lake.scored(day), PUBLISH_ID_KEY)

    def published_rows(self, day: str) -> int:
        import pyarrow.parquet as pq

        location = self.lake.scored(day)
        if not location.exists():
            return 0
        return int(pq.ParquetFile(location.path, filesystem=location.filesystem).metadata.num_rows)

    def _scored_location(
        self, day: str, published: Mapping[str, Any] | None, run_id: str | None
    ) -> Any:
        if published is None or run_id is None:
            location = self.lake.scored(day)
        else:
            location = self.lake.run_table(day, run_id)
        if not location.exists():
            raise FileNotFoundError(f"no scored rows in {location.uri}")
        return location

    def read_scored(
        self,
        day: str,
        published: Mapping[str, Any] | None = None,
        run_id: str | None = None,
        columns: Sequence[str] | None = None,
    ) -> pa.Table:
        return read_parquet(self._scored_location(day, published, run_id), columns)

    def read_scored_rows(
        self,
        day: str,
        positions: Sequence[int],
        columns: Sequence[str],
        published: Mapping[str, Any] | None = None,
        run_id: str | None = None,
    ) -> dict[int, dict[str, Any]]:
        """Only the row groups that hold `positions` are read."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        location = self._scored_location(day, published, run_id)
        ordered = sorted(set(positions))
        found: dict[int, dict[str, Any]] = {}
        with location.filesystem.open_input_file(location.path) as handle:
            parquet = pq.ParquetFile(handle)
            present = set(parquet.schema_arrow.names)
            wanted = [column for column in dict.fromkeys(columns) if column in present]
            start = 0
            for group in range(parquet.metadata.num_row_groups):
                size = parquet.metadata.row_group(group).num_rows
                inside = [i for i in ordered if start <= i < start + size]
                if inside:
                    table = parquet.read_row_group(group, columns=wanted)
                    offsets = pa.array([i - start for i in inside], pa.int64())
                    found.update(zip(inside, table.take(offsets).to_pylist(), strict=True))
                start += size
        return found

    def write_daily_metrics(
        self, day: str, table: pa.Table, publish_id: str | None, run_id: str | None
    ) -> str:
        table = without_partition_column(table)
        if publish_id is not None:
            table = table.replace_schema_metadata({PUBLISH_ID_KEY: publish_id})
        target = self.lake.daily_metrics(day)
        staging = None if run_id is None else self.lake.scratch(day, run_id, target.name)
        output = ParquetOutput(target, table.schema, staging=staging)
        output.write(table)
        output.commit()
        return target.uri

    def metrics_version(self, day: str) -> str | None:
        return _parquet_key(self.lake.daily_metrics(day), PUBLISH_ID_KEY)

    def read_daily_metrics(self, days: Sequence[str]) -> list[pa.Table]:
        return [
            with_partition_column(read_parquet(location), day)
            for day, location in ((day, self.lake.daily_metrics(day)) for day in days)
            if location.exists()
        ]

    def metrics_days(self) -> list[str]:
        return self.lake.table_days("daily_metrics")

    def write_label_queue(self, day: str, table: pa.Table) -> str:
        target = self.lake.label_queue(day)
        output = ParquetOutput(target, table.schema)
        output.write(table)
        output.commit()
        return target.uri

    def read_label_queue(self, day: str) -> pa.Table | None:
        location = self.lake.label_queue(day)
        return read_parquet(location) if location.exists() else None

    def append_labels(self, day: str, table: pa.Table, batch_id: str) -> str:
        """A new file of its own, written beside the folder and moved in whole."""
        target = self.lake.labels_file(day, batch_id)
        if target.exists():
            raise FileExistsError(f"{target.uri} exists: a batch of labels is written once")
        output = ParquetOutput(target, table.schema)
        output.write(table)
        output.commit()
        return target.uri

    def read_labels(self, days: Sequence[str]) -> list[pa.Table]:
        import pyarrow.parquet as pq

        from ragas_ops.storage import PARQUET_SUFFIXES, listing

        found = []
        for day in days:
            folder = self.lake.labels_day(day)
            if not folder.exists():
                continue
            # staged files (dot-prefixed) are not yet labels; a log's JSON or CSV is no batch
            batches = [
                path for path in listing(folder)[0] if path.lower().endswith(PARQUET_SUFFIXES)
            ]
            for path in batches:
                rows = pq.read_table(path, filesystem=folder.filesystem)
                found.append(rows.append_column("dt", pa_strings([day] * rows.num_rows)))
        return found

    def record_run(self, day: str, manifest: Mapping[str, Any]) -> None:
        """The run's row as a file of its own, `runs/dt=D/<run>.<publish>.parquet` (beside
        its manifest; `dt` from the folder, as in every table), staged and moved in whole: a
        rewrite (the report completing the manifest) replaces it."""
        self.write_run_row(day, runs_row(manifest))

    def write_run_row(self, day: str, row: Mapping[str, Any]) -> None:
        """Write one row of `runs` (a `runs_row`) as its file."""
        target = self.lake.run_row(day, row["run_id"], row["publish_id"])
        table = runs_table([row])
        output = ParquetOutput(
            target, table.schema, staging=self.lake.scratch(day, row["run_id"], target.name)
        )
        output.write(table)
        output.commit()

    def rerun(self, day: str, columns: Sequence[str], snapshot: int | None = None) -> Rerun | None:
        """None: a republished Parquet day replaces its file, nothing of it is kept."""
        return None

    def maintain(self, retention_days: int, compact_days: int, today: str) -> dict[str, Any]:
        log.info(
            "warehouse.table_format is parquet: one file per day and table, no snapshots to "
            "expire and no small files to compact; nothing to do"
        )
        return {"table_format": "parquet", "expired": {}, "compacted": {}}


def without_partition_column(table: pa.Table) -> pa.Table:
    """`table` without its `dt` column, for a file whose `dt=` folder names the day: a
    hive-partitioned read (pandas, pyarrow datasets, polars, Spark, DuckDB) takes `dt` from the
    folder, and a file that holds it too is an error to some (pandas' ArrowTypeError) and a
    second type to others (polars' String beside the folder's Date)."""
    if PARTITION_COLUMN not in table.column_names:
        return table
    return table.drop_columns([PARTITION_COLUMN])


def with_partition_column(table: pa.Table, day: str) -> pa.Table:
    """A day's file as the pipeline reads it: `dt` (text, `YYYY-MM-DD`) first, from its folder
    (a file written before the folder alone carried it keeps its own)."""
    if PARTITION_COLUMN in table.column_names:
        return table
    return table.add_column(0, PARTITION_COLUMN, pa_strings([parse_day(day)] * table.num_rows))


def pa_strings(values: Sequence[str]) -> pa.Array:
    import pyarrow as pa

    return pa.array(values, pa.string())


def read_parquet(location: Any, columns: Sequence[str] | None = None) -> pa.Table:
    """A Parquet file, or only those of `columns` that it has."""
    import pyarrow.parquet as pq

    if columns is not None:
        present = set(pq.read_schema(location.path, filesystem=location.filesystem).names)
        columns = [column for column in dict.fromkeys(columns) if column in present]
    return pq.read_table(location.path, filesystem=location.filesystem, columns=columns)


def publish_parts(
    sources: Sequence[pq.ParquetFile], schema: pa.Schema, part_bytes: int | None = None
) -> Iterator[pa.Table]:
    """The chunk files' rows in order, conformed to `schema`, in tables of about
    `part_bytes` (default `PUBLISH_PART_BYTES`; a batch of `MERGE_BATCH_ROWS` at least)."""
    import pyarrow as pa

    from ragas_ops.storage import conform

    part_bytes = part_bytes or PUBLISH_PART_BYTES
    pending: list[pa.Table] = []
    size = 0
    for source in sources:
        for batch in source.iter_batches(batch_size=MERGE_BATCH_ROWS):
            pending.append(conform(pa.Table.from_batches([batch]), schema))
            size += pending[-1].nbytes
            if size >= part_bytes:
                yield pa.concat_tables(pending)
                pending, size = [], 0
    if pending:
        yield pa.concat_tables(pending)


def _parquet_key(location: Any, key: str) -> str | None:
    import pyarrow.parquet as pq

    if not location.exists():
        return None
    metadata = pq.read_schema(location.path, filesystem=location.filesystem).metadata or {}
    value = metadata.get(key.encode())
    return None if value is None else value.decode()


RUNS_SCHEMA_COLUMNS: tuple[tuple[str, str], ...] = (
    ("run_id", "string"),
    ("publish_id", "string"),
    ("try_number", "int64"),
    ("published_at", "timestamp"),
    ("finished_at", "timestamp"),
    ("verdict", "string"),
    ("rows_in", "int64"),
    ("rows_out", "int64"),
    ("rejected_files", "int64"),
    ("cost_usd", "float64"),
    ("judge_kind", "string"),
    ("judge_model", "string"),
    ("embedding_model", "string"),
    ("metrics", "string"),
    ("ragas_ops_version", "string"),
    ("report", "string"),
    ("manifest", "string"),
)
"""The `runs` table's columns (and `dt`): one row per publish of a run, its manifest whole.
`timestamp` is UTC, to the microsecond, as the scored table's `scored_at`."""


# -- iceberg -------------------------------------------------------------------------------------


class IcebergDayTables:
    """The tables `scored`, `daily_metrics` and `runs` of an Iceberg catalog."""

    table_format: TableFormat = "iceberg"

    def __init__(self, lake: Lake, settings: Settings) -> None:
        self.lake = lake
        self.catalog_uri = settings.warehouse.catalog_uri
        s3 = lake.s3
        if s3 is None and settings.pipeline.warehouse_uri.startswith("s3://"):
            s3 = S3Options.from_environ()  # as `storage.locate` reaches S3 without a connection
        self.tables = _catalog(settings.pipeline.warehouse_uri, self.catalog_uri, s3)

    def _where(self, name: str, day: str) -> str:
        return (
            f"iceberg table ragas_ops.{name} (dt={parse_day(day)}) of {self.tables.warehouse_uri}"
        )

    def scored_uri(self, day: str) -> str:
        return self._where("scored", day)

    def daily_metrics_uri(self, day: str) -> str:
        return self._where("daily_metrics", day)

    def publish_scored(
        self,
        day: str,
        run_id: str,
        sources: Sequence[pq.ParquetFile],
        schema: pa.Schema,
        publish_id: str,
    ) -> dict[str, Any]:
        """One overwrite commit of the day: readers see the old day or the new one. The rows
        are written part by part (`PUBLISH_PART_BYTES` of Arrow at a time), never merged
        whole in memory."""
        from ragas_ops.tables.iceberg import DayParts

        rows = DayParts(schema, lambda: publish_parts(sources, schema))
        snapshot = self._guarded(
            lambda: self.tables.publish_day("scored", day, rows, run_id, publish_id)
        )
        return {
            "table": self.scored_uri(day),
            "snapshot_id": snapshot,
            "metadata_location": self._guarded(lambda: self.tables.metadata_location("scored")),
        }

    def _latest(self, name: str, day: str) -> DayVersion | None:
        versions = self._guarded(lambda: self.tables.day_versions(name, day))
        return versions[-1] if versions else None

    def published_version(self, day: str) -> str | None:
        latest = self._latest("scored", day)
        return None if latest is None else latest.publish_id

    def published_rows(self, day: str) -> int:
        """The day's rows in the table now, counted: not its latest publish's snapshot, which
        the maintenance DAG expires (the guard against shrinking a day would then see 0)."""
        from ragas_ops.tables.iceberg import DAY_COLUMN

        rows = self._guarded(lambda: self.tables.read_day("scored", day, columns=[DAY_COLUMN]))
        return 0 if rows is None else int(rows.num_rows)

    def read_scored(
        self,
        day: str,
        published: Mapping[str, Any] | None = None,
        run_id: str | None = None,
        columns: Sequence[str] | None = None,
    ) -> pa.Table:
        snapshot = None if published is None else published.get("snapshot_id")
        rows = self._guarded(
            lambda: self.tables.read_day("scored", day, snapshot_id=snapshot, columns=columns)
        )
        if rows is None:
            if published is not None and int(published.get("rows", 0)) == 0:
                return _empty_scored(self.tables, columns)
            raise FileNotFoundError(f"no scored rows in {self.scored_uri(day)}")
        return _without_day(rows)

    def read_scored_rows(
        self,
        day: str,
        positions: Sequence[int],
        columns: Sequence[str],
        published: Mapping[str, Any] | None = None,
        run_id: str | None = None,
    ) -> dict[int, dict[str, Any]]:
        """The day's data files that hold `positions` are read, in those columns, batch by
        batch (a scan reads whole data files anyway); the others are skipped."""
        import pyarrow as pa

        snapshot = None if published is None else published.get("snapshot_id")
        files = self._guarded(
            lambda: self.tables.day_files("scored", day, snapshot_id=snapshot, columns=columns)
        )
        if files is None:
            raise FileNotFoundError(f"no scored rows in {self.scored_uri(day)}")
        ordered = sorted(set(positions))
        found: dict[int, dict[str, Any]] = {}
        start = 0
        for file in files:
            if file.rows is not None and not any(start <= i < start + file.rows for i in ordered):
                start += file.rows
                continue
            for batch in file.read():
                inside = [i for i in ordered if start <= i < start + batch.num_rows]
                if inside:
                    rows = _without_day(pa.Table.from_batches([batch]))
                    offsets = pa.array([i - start for i in inside], pa.int64())
                    found.update(zip(inside, rows.take(offsets).to_pylist(), strict=True))
                start += batch.num_rows
        return found

    def write_daily_metrics(
        self, day: str, table: pa.Table, publish_id: str | None, run_id: str | None
    ) -> str:
        self._guarded(
            lambda: self.tables.publish_day(
                "daily_metrics", day, table, run_id or "manual", publish_id
            )
        )
        return self.daily_metrics_uri(day)

    def metrics_version(self, day: str) -> str | None:
        latest = self._latest("daily_metrics", day)
        return None if latest is None else latest.publish_id

    def read_daily_metrics(self, days: Sequence[str]) -> list[pa.Table]:
        return self._read_days("daily_metrics", days)

    def metrics_days(self) -> list[str]:
        return list(self._guarded(lambda: self.tables.days("daily_metrics")))

    def write_label_queue(self, day: str, table: pa.Table) -> str:
        self._guarded(lambda: self.tables.publish_day("label_queue", day, table, "labels"))
        return self._where("label_queue", day)

    def read_label_queue(self, day: str) -> pa.Table | None:
        rows = self._guarded(lambda: self.tables.read_day("label_queue", day))
        return None if rows is None else _without_day(rows)

    def append_labels(self, day: str, table: pa.Table, batch_id: str) -> str:
        self._guarded(lambda: self.tables.append_rows("labels", day, table, batch_id))
        return self._where("labels", day)

    def read_labels(self, days: Sequence[str]) -> list[pa.Table]:
        return self._read_days("labels", days)

    def _read_days(self, name: str, days: Sequence[str]) -> list[pa.Table]:
        """The rows of each of `days` of table `name` that has any."""
        found = []
        for day in days:
            rows = self._guarded(lambda day=day: self.tables.read_day(name, day))
            if rows is not None:
                found.append(rows)
        return found

    def record_run(self, day: str, manifest: Mapping[str, Any]) -> None:
        row = runs_row(manifest)
        key = {"run_id": row["run_id"], "publish_id": row["publish_id"]}
        self._guarded(
            lambda: self.tables.replace_rows(
                "runs", day, runs_table([row]), key, run_id=row["run_id"]
            )
        )

    def rerun(self, day: str, columns: Sequence[str], snapshot: int | None = None) -> Rerun | None:
        versions = self._guarded(lambda: self.tables.day_versions("scored", day))
        if snapshot is not None:
            ids = [version.snapshot_id for version in versions]
            versions = versions[: ids.index(snapshot) + 1] if snapshot in ids else []
        if len(versions) < 2:
            return None
        before, after = versions[-2], versions[-1]

        def rows_of(version: DayVersion) -> pa.Table | None:
            return self._guarded(
                lambda: self.tables.read_day(
                    "scored", day, snapshot_id=version.snapshot_id, columns=columns
                )
            )

        return Rerun(before, after, rows_of(before), rows_of(after))

    def maintain(self, retention_days: int, compact_days: int, today: str) -> dict[str, Any]:
        expired = self._guarded(
            lambda: self.tables.expire_snapshots(timedelta(days=retention_days))
        )
        compacted: dict[str, dict[str, int]] = {}
        anchor = date.fromisoformat(parse_day(today))
        recent = [(anchor - timedelta(days=n)).isoformat() for n in range(compact_days)]
        for name in self._guarded(self.tables.table_names):
            for day in recent:
                rows = self._guarded(lambda name=name, day=day: self.tables.compact_day(name, day))
                if rows:
                    compacted.setdefault(name, {})[day] = rows
        log.info(
            "iceberg maintenance of %s: snapshots expired %s (older than %d days); days "
            "compacted %s",
            self.tables.warehouse_uri,
            expired,
            retention_days,
            compacted or "none",
        )
        return {"table_format": "iceberg", "expired": expired, "compacted": compacted}

    def _guarded(self, action: Any) -> Any:
        """Run `action`; an error from the catalog's database comes back without the catalog
        URI's password (SQLAlchemy puts the URL in some of its messages)."""
        try:
            return action()
        except ConfigError:
            raise
        except Exception as error:
            password = _catalog_password(self.catalog_uri)
            if password is None:
                raise
            message = redact(str(error), password)
            if message == str(error):
                raise
            raise type(error)(message) if _rebuildable(error) else RuntimeError(message) from None


def _rebuildable(error: Exception) -> bool:
    try:
        type(error)("probe")
    except Exception:
        return False
    return True


def _catalog_password(uri: str | None) -> str | None:
    from urllib.parse import unquote, urlsplit

    if not uri:
        return None
    password = urlsplit(uri).password
    return None if password is None else unquote(password)


_CATALOGS: dict[tuple[str, str | None, str], IcebergTables] = {}


def _catalog(warehouse_uri: str, catalog_uri: str | None, s3: S3Options | None) -> IcebergTables:
    """One catalog connection per process, warehouse, catalog and S3 credentials (a task asks
    several times)."""
    from ragas_ops.tables.iceberg import IcebergTables

    key = (warehouse_uri, catalog_uri, _s3_identity(s3))
    if key not in _CATALOGS:
        try:
            _CATALOGS[key] = IcebergTables(warehouse_uri, catalog_uri or None, s3, create=True)
        except ConfigError:
            raise
        except Exception as error:
            password = _catalog_password(catalog_uri)
            message = redact(str(error), password) if password else str(error)
            raise ConfigError(
                f"the Iceberg catalog {masked_catalog_uri(catalog_uri or '(SQLite default)')} "
                f"cannot be used: {type(error).__name__}: {message}"
            ) from None
    return _CATALOGS[key]


def _s3_identity(s3: S3Options | None) -> str:
    """A digest of the S3 options (the credentials themselves are not kept in the key)."""
    import hashlib

    if s3 is None:
        return ""
    parts = [
        s3.endpoint_url or "",
        s3.region,
        *(secret.reveal() if secret else "" for secret in (s3.access_key, s3.secret_key)),
        s3.session_token.reveal() if s3.session_token else "",
    ]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def runs_row(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """A manifest as a row of the `runs` table."""
    plan = manifest.get("plan") or {}
    scoring = manifest.get("scoring") or {}
    regression = manifest.get("regression") or {}
    report = manifest.get("report") or {}
    published = manifest.get("published") or {}
    return {
        "run_id": str(manifest.get("run_id") or ""),
        "publish_id": str(published.get("publish_id") or "unpublished"),
        "try_number": manifest.get("try_number"),
        "published_at": _instant(published.get("published_at") or manifest.get("created_at")),
        "finished_at": datetime.now(UTC).replace(microsecond=0) if report else None,
        "verdict": regression.get("verdict"),
        "rows_in": plan.get("rows"),
        "rows_out": scoring.get("rows_out"),
        "rejected_files": len(plan.get("rejected_files") or []),
        "cost_usd": (scoring.get("usage") or {}).get("cost_usd"),
        "judge_kind": manifest.get("judge_kind"),
        "judge_model": manifest.get("judge_model"),
        "embedding_model": manifest.get("embedding_model"),
        "metrics": ",".join(manifest.get("metrics") or []),
        "ragas_ops_version": manifest.get("ragas_ops_version"),
        "report": report.get("html"),
        "manifest": json.dumps(manifest, sort_keys=True, default=str),
    }


def _instant(value: Any) -> datetime | None:
    """A manifest's ISO 8601 time as a UTC datetime (none: None; no offset: UTC)."""
    if value is None or isinstance(value, datetime):
        return value
    moment = datetime.fromisoformat(str(value))
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def runs_table(rows: Sequence[Mapping[str, Any]]) -> pa.Table:
    import pyarrow as pa

    def arrow_type(kind: str) -> pa.DataType:
        return pa.timestamp("us", tz="UTC") if kind == "timestamp" else getattr(pa, kind)()

    schema = pa.schema([(name, arrow_type(kind)) for name, kind in RUNS_SCHEMA_COLUMNS])
    rows = [
        {**row, **{name: _instant(row.get(name)) for name in ("published_at", "finished_at")}}
        for row in rows
    ]
    return pa.Table.from_pylist(rows, schema=schema)


def _without_day(rows: pa.Table) -> pa.Table:
    """The scored rows without the partition column (the Parquet layout's rows have none)."""
    from ragas_ops.tables.iceberg import DAY_COLUMN

    return rows.drop_columns([DAY_COLUMN]) if DAY_COLUMN in rows.schema.names else rows


def _empty_scored(tables: IcebergTables, columns: Sequence[str] | None) -> pa.Table:
    """A day published with no rows (no traffic): an empty table with the table's columns."""
    from ragas_ops.tables.iceberg import DAY_COLUMN

    schema = tables.schema("scored")
    names = [n for n in schema.names if n != DAY_COLUMN and (columns is None or n in columns)]
    return schema.empty_table().select(names)
