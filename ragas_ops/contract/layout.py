"""Where the pipeline reads and writes: the layout of the log lake and of the warehouse.

    <raw_uri>/dt=YYYY-MM-DD/*.parquet                          logs, written by the application
    <warehouse_uri>/scored/dt=YYYY-MM-DD/scored.parquet        one file per day, replaced whole
    <warehouse_uri>/daily_metrics/dt=YYYY-MM-DD/daily_metrics.parquet
    <warehouse_uri>/reports/dt=YYYY-MM-DD/report.html, report.md
    <warehouse_uri>/runs/dt=YYYY-MM-DD/<run>.<publish>.parquet  the `runs` table: one row per run
                                                                and publish
    <warehouse_uri>/runs/dt=YYYY-MM-DD/_<run>.<publish>.json    its manifest whole (a leading
                                                                underscore: readers of the
                                                                folder skip it, like _SUCCESS)
    <warehouse_uri>/_staging/dt=YYYY-MM-DD/run=<run>/           a run in progress: its chunk
                                                                files, the table it published
                                                                (scored.parquet) and the files
                                                                it is writing
    <warehouse_uri>/_batches/dt=YYYY-MM-DD/chunk-<n>-<hash>/    batch mode's record of a chunk
    <warehouse_uri>/candidate_scored/dt=YYYY-MM-DD/candidate_scored.parquet   the shadow judge's
                                                                rows, apart from the published
    <warehouse_uri>/judge_comparison/dt=YYYY-MM-DD/judge_comparison.parquet   it against the judge

A day's scored table is one file so that publishing it is one atomic replace, on a local disk
(a rename) as on S3 (an object is replaced whole): readers never see a partial day, nor a day
with rows from two runs. Nothing is ever written inside the partition folders readers glob:
files are written under `_staging/` (which every engine skips: a leading underscore) and moved
into place. A run's aggregate and report read the copy of the table the run published, in its
staging folder, not whatever another run of the day has published since.
"""

from __future__ import annotations

import re
import uuid
from datetime import date
from typing import Any, Protocol

from ragas_ops.storage import Location, S3Options, locate

_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")
_DAY_FOLDER = re.compile(r"dt=(\d{4}-\d{2}-\d{2})")

DAY_TABLES = ("scored", "daily_metrics", "label_queue")
"""The tables kept as one Parquet file a day, `<table>/dt=D/<table>.parquet`."""
SHADOW_TABLES = ("candidate_scored", "judge_comparison")
"""The shadow judge's day tables: one Parquet file a day in every table format (like the
manifests), never read as the published scores."""
LABELS_TABLE = "labels"
"""The human labels: append-only, one Parquet file per batch of labels,
`labels/dt=D/labels-<batch>.parquet` (D is the labelled row's scored day)."""
_BATCH = re.compile(r"[0-9a-f]{32}")
REPORT_EXTENSIONS = ("html", "md")
MANIFEST_PREFIX = "_"
"""A manifest's name begins with it: pandas, pyarrow datasets and Spark read the `runs` folder
as the Parquet rows beside and skip these files, as they skip `_SUCCESS` (polars skips nothing
in a folder: it reads every table through a `**/*.parquet` glob)."""


def parse_day(value: object) -> str:
    """`value` as a YYYY-MM-DD day, or a ValueError: nothing else may reach a path."""
    text = str(value)
    if not _DAY.fullmatch(text):
        raise ValueError(f"the day must be a date as YYYY-MM-DD, got {text!r}")
    try:
        date.fromisoformat(text)
    except ValueError:
        raise ValueError(f"the day must be a real date, got {text!r}") from None
    return text


def day_folder(day: str) -> str:
    """The name of a day's partition folder, `dt=YYYY-MM-DD`."""
    return f"dt={parse_day(day)}"


def day_of_folder(name: str) -> str | None:
    """The day a partition folder's name stands for, or None when `name` is no such folder."""
    match = _DAY_FOLDER.fullmatch(name)
    if match is None:
        return None
    try:
        return parse_day(match.group(1))
    except ValueError:
        return None  # dt=2026-02-30: shaped like a day, but none


def outside_day_folder(location: str) -> str:
    """The location that holds `location` when it is a day's partition folder (`.../dt=D`),
    else `location` itself: the raw root a day's folder was found under."""
    parent, _, name = location.rstrip("/").rpartition("/")
    return parent if parent and day_of_folder(name) is not None else location


def table_file(table: str) -> str:
    """The file name of a day of `table` (one of `DAY_TABLES`)."""
    if table not in DAY_TABLES + SHADOW_TABLES:
        known = ", ".join(DAY_TABLES + SHADOW_TABLES)
        raise ValueError(f"table must be one of {known}, got {table!r}")
    return f"{table}.parquet"


def every_day_glob(root: str, table: str) -> str:
    """`<root>/<table>/dt=*/<table>.parquet`: every day of a table, as a glob (DuckDB's,
    the shell's)."""
    return every_day_folder(root, table) + table_file(table)


def every_day_folder(root: str, folder: str) -> str:
    """`<root>/<folder>/dt=*/`: every day's partition folder below `folder`, as a glob."""
    return f"{root.rstrip('/')}/{folder}/dt=*/"


def day_in_path_regex(table: str) -> str:
    """A regular expression whose group 1 is the day of a path to one day of `table`."""
    return rf"{_DAY_FOLDER.pattern}/{re.escape(table_file(table))}$"


def report_path(day: str, extension: str) -> tuple[str, str, str]:
    """The parts of a day's report below the warehouse: `reports`, `dt=D`, `report.<ext>`."""
    if extension not in REPORT_EXTENSIONS:
        raise ValueError(f"a report is {' or '.join(REPORT_EXTENSIONS)}, got {extension!r}")
    return "reports", day_folder(day), f"report.{extension}"


def report_of_path(relative: str) -> tuple[str, str] | None:
    """(day, extension) of `dt=D/report.<ext>` (a report's path below `reports/`), or None
    for any other text: checked part by part, so nothing else can name a file."""
    parts = relative.split("/")
    if len(parts) != 2:
        return None
    day = day_of_folder(parts[0])
    extension = parts[1].removeprefix("report.")
    if day is None or extension not in REPORT_EXTENSIONS or parts[1] != f"report.{extension}":
        return None
    return day, extension


def partition_days(folder: Location, *, missing_ok: bool = True) -> list[str]:
    """The days of the `dt=<day>` folders right below `folder`, oldest first (one listing, not
    recursive; folders not named so are not partitions). A missing `folder` has none, or,
    without `missing_ok`, is a FileNotFoundError."""
    import pyarrow.fs as pafs

    selector = pafs.FileSelector(folder.path, allow_not_found=missing_ok)
    days = [
        day
        for entry in folder.filesystem.get_file_info(selector)
        if entry.type == pafs.FileType.Directory
        and (day := day_of_folder(entry.base_name)) is not None
    ]
    return sorted(days)


def _run_publish(run_id: str, publish_id: str) -> str:
    return f"{run_folder_name(run_id)}.{run_folder_name(publish_id)}"


def run_folder_name(run_id: str) -> str:
    """An Airflow run id as a safe path segment (run ids hold ':' and '+')."""
    return _UNSAFE.sub("_", run_id).strip("._") or "run"


NO_DAY_FOLDER, EMPTY_DAY_FOLDER = "no_day_folder", "empty_day_folder"
"""Why a day has no traffic (the manifest's `no_traffic_reason`): its `dt=D` folder does not
exist (nothing was logged, or the day is outside the lake's days: a backfill's range, a
mistyped date), or it exists and holds no row."""


def no_folder_sentence(folder: str, lake_days: dict[str, Any] | None) -> str:
    """Why a day whose folder is missing has no traffic, and the raw root's days beside it
    (the plan's log and the report say it alike)."""
    sentence = f"its folder {folder} does not exist"
    if lake_days and lake_days.get("count"):
        sentence += (
            f" (the raw root holds {lake_days['count']} day(s), "
            f"{lake_days['first']} to {lake_days['last']})"
        )
    else:
        sentence += " (the raw root holds no day folder)"
    return sentence


class LakeSettings(Protocol):
    """Where the logs and the tables live (`config.PipelineSettings` is one)."""

    @property
    def raw_uri(self) -> str: ...

    @property
    def warehouse_uri(self) -> str: ...


class Lake:
    """The locations of one deployment's logs and tables."""

    def __init__(
        self,
        settings: LakeSettings,
        s3: S3Options | None = None,
        *,
        warehouse: Location | None = None,
    ) -> None:
        self.s3 = s3
        """How the lake reaches S3 (None: the AWS environment); the shared judge cache and an
        Iceberg catalog use the same options."""
        self.raw = locate(settings.raw_uri, s3)
        self.warehouse = warehouse or locate(settings.warehouse_uri, s3)
        """`warehouse`, when given: a location its caller reached already (the quality page's,
        with its own credentials)."""

    def raw_day(self, day: str) -> Location:
        return self.raw.child(day_folder(day))

    def scored(self, day: str) -> Location:
        return self.day_file("scored", day)

    def daily_metrics(self, day: str) -> Location:
        return self.day_file("daily_metrics", day)

    def day_file(self, table: str, day: str) -> Location:
        """The file of one day of `table` (one of `DAY_TABLES`)."""
        return self.warehouse.child(table, day_folder(day), table_file(table))

    def label_queue(self, day: str) -> Location:
        """The day's labelling queue: which scored rows are put up for labelling."""
        return self.day_file("label_queue", day)

    def labels_day(self, day: str) -> Location:
        """The folder of the labels of the rows scored on `day`."""
        return self.warehouse.child(LABELS_TABLE, day_folder(day))

    def labels_file(self, day: str, batch_id: str) -> Location:
        """One batch of labels of `day` (a uuid4 hex): written once, never replaced."""
        if not _BATCH.fullmatch(batch_id):
            raise ValueError(f"a labels batch id is 32 hex digits, got {batch_id!r}")
        return self.labels_day(day).child(f"{LABELS_TABLE}-{batch_id}.parquet")

    def table_days(self, table: str) -> list[str]:
        """The days that have a partition folder of `table` (`scored`, `daily_metrics`,
        `runs`...), oldest first."""
        return partition_days(self.warehouse.child(table))

    def report(self, day: str, extension: str) -> Location:
        return self.warehouse.child(*report_path(day, extension))

    def manifest(self, day: str, run_id: str, publish_id: str) -> Location:
        """The manifest of one publish of a run: never overwritten by another run or try."""
        name = f"{MANIFEST_PREFIX}{_run_publish(run_id, publish_id)}.json"
        return self.manifests(day).child(name)

    def legacy_manifest(self, day: str, run_id: str, publish_id: str) -> Location:
        """Where a manifest written before the `runs` table had Parquet rows is: no leading
        underscore (`migrate_manifests` renames it)."""
        return self.manifests(day).child(f"{_run_publish(run_id, publish_id)}.json")

    def run_row(self, day: str, run_id: str, publish_id: str) -> Location:
        """The Parquet format's `runs` table row of one publish of a run (the manifest's
        `tables.format.runs_row`)."""
        return self.manifests(day).child(f"{_run_publish(run_id, publish_id)}.parquet")

    def manifests(self, day: str) -> Location:
        """The folder of the day's manifests and `runs` rows."""
        return self.warehouse.child("runs", day_folder(day))

    def manifest_files(self, day: str) -> list[Location]:
        """The day's manifests, by name: `_<run>.<publish>.json`, and a legacy
        `<run>.<publish>.json` only where no underscored one of the same name is (a manifest
        is read once). Dot-prefixed names are writes in progress; a missing folder has none."""
        import pyarrow.fs as pafs

        folder = self.manifests(day)
        selector = pafs.FileSelector(folder.path, allow_not_found=True)
        names = {
            entry.base_name
            for entry in folder.filesystem.get_file_info(selector)
            if entry.type == pafs.FileType.File
            and entry.base_name.endswith(".json")
            and not entry.base_name.startswith(".")
        }
        legacy = {name for name in names if f"{MANIFEST_PREFIX}{name}" in names}
        return [folder.child(name) for name in sorted(names - legacy)]

    def staging_day(self, day: str) -> Location:
        """The staging folders of every run of the day."""
        return self.warehouse.child("_staging", day_folder(day))

    def staging(self, day: str, run_id: str) -> Location:
        return self.staging_day(day).child(f"run={run_folder_name(run_id)}")

    def run_table(self, day: str, run_id: str) -> Location:
        """The scored table as this run published it (read by its aggregate and report)."""
        return self.staging(day, run_id).child(table_file("scored"))

    def scratch(self, day: str, run_id: str, name: str) -> Location:
        """A unique place in the run's staging folder to write `name` before moving it in."""
        return self.staging(day, run_id).child(f"{name}.{uuid.uuid4().hex}.tmp")

    def batch_work(self, day: str) -> Location:
        """Batch mode's records of the day's chunks (see `pipeline.batch_chunk`)."""
        return self.warehouse.child("_batches", day_folder(day))

    def chunk_file(self, day: str, run_id: str, index: int) -> Location:
        return self.staging(day, run_id).child(f"chunk-{index:05d}.parquet")

    def candidate_chunk_file(self, day: str, run_id: str, index: int) -> Location:
        """The shadow judge's rows of a chunk, until the publish merges them."""
        return self.staging(day, run_id).child(f"candidate-chunk-{index:05d}.parquet")
