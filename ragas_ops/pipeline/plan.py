"""Planning a day: which input files there are, how many rows, and how to cut them in chunks.

Planning reads the Parquet footers (schemas and row counts) and, with
`pipeline.verify_input_pages`, decodes each file once to find corrupt pages before any judge
is paid. The number of chunks is bounded by `max_chunks` (chunks grow past `chunk_rows` when
needed), so a day always fits in Airflow's mapping limit. A chunk is a list of row ranges of
files, so each mapped task reads only its own slice, with the day's schema.

A file is judged on its own merits: one that cannot be read or decoded, or whose columns or
types break the input contract, is rejected with the reason (`contract.inputs.unify_inputs`),
whatever the other files hold; the rest of the day is scored, and the run's manifest and report
list the rejected files.

Before anything is scored the plan refuses a day its settings do not fit: a segment
(`pipeline.segments`) that none of the day's files has a column for. It also refuses to shrink
a published day without a reason: a raw
root that does not exist is a configuration error, and a day whose raw partition is gone (or
holds far fewer rows) while the warehouse holds its scored rows needs `allow_shrink`.
"""

from __future__ import annotations

import base64
import json
import logging
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import date
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from ragas_ops.config import ConfigError, Settings
from ragas_ops.contract.inputs import OPTIONAL_FIELDS, FileSchema, unify_inputs
from ragas_ops.contract.layout import (
    EMPTY_DAY_FOLDER,
    MANIFEST_PREFIX,
    NO_DAY_FOLDER,
    Lake,
    no_folder_sentence,
    partition_days,
)
from ragas_ops.contract.outputs import output_column_names
from ragas_ops.contract.row_ids import needs_derived_ids, with_id_column
from ragas_ops.storage import Location, StorageError, decode_check, listing, read_footer
from ragas_ops.tables.format import day_tables

log = logging.getLogger(__name__)


class ShrinkRefused(RuntimeError):
    """Publishing would empty or shrink a day the warehouse holds, and no one asked for it."""


@dataclass
class InputFile:
    path: str
    bytes: int
    rows: int


@dataclass
class RejectedFile:
    path: str
    reason: str


@dataclass
class Slice:
    """Rows [start, start + rows) of one file."""

    path: str
    start: int
    rows: int


@dataclass
class Chunk:
    index: int
    slices: list[Slice]
    schema: pa.Schema | None = None
    """The day's input schema, which every chunk reads with."""

    @property
    def rows(self) -> int:
        return sum(piece.rows for piece in self.slices)


@dataclass
class DayPlan:
    day: str
    files: list[InputFile] = field(default_factory=list)
    rejected: list[RejectedFile] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)
    """Files of the day's folder that are not log file names (Parquet, JSON Lines, CSV):
    not read, but named."""
    chunks: list[Chunk] = field(default_factory=list)
    chunk_rows: int = 0
    schema: pa.Schema | None = None
    """The day's input schema, unified over the accepted files (None on a day with no file)."""
    folder: str = ""
    """The day's folder (`<raw_uri>/dt=D`)."""
    folder_exists: bool = True
    lake_days: dict[str, Any] | None = None
    """When the day's folder does not exist: the days the raw root holds (`count`, `first`,
    `last`), so that a day outside them shows as such."""
    quiet_days: int = 0
    """On a day without traffic: the days in a row, this one included, since the raw root's
    last earlier day folder (0 on a day with traffic, and when the root holds no earlier day:
    a backfill before the lake's first day is no outage)."""
    derived_ids: int = 0
    """Rows of files without an id column, which get derived ids (`contract.row_ids`)."""

    @property
    def rows(self) -> int:
        return sum(file.rows for file in self.files)

    @property
    def no_traffic_reason(self) -> str | None:
        """NO_DAY_FOLDER or EMPTY_DAY_FOLDER for a day with nothing to score, else None (a
        day of rows, or of files that were rejected or ignored, is not "no traffic")."""
        if self.rows or self.rejected or self.ignored:
            return None
        return EMPTY_DAY_FOLDER if self.folder_exists else NO_DAY_FOLDER

    def describe(self) -> str:
        """The plan in one line, for the plan task's log."""
        reason = self.no_traffic_reason
        if reason == NO_DAY_FOLDER:
            return f"{self.day}: no traffic: {no_folder_sentence(self.folder, self.lake_days)}"
        if reason == EMPTY_DAY_FOLDER:
            return (
                f"{self.day}: no traffic: the folder {self.folder} holds no row "
                f"({len(self.files)} Parquet file(s))"
            )
        held = f"{self.rows:,} rows in {len(self.files)} file(s), {len(self.chunks)} chunk(s)"
        for count, what in ((len(self.rejected), "rejected"), (len(self.ignored), "ignored")):
            held += f", {count} file(s) {what}" if count else ""
        return f"{self.day}: {held}"

    def summary(self) -> dict[str, Any]:
        """What the manifest records of the plan (JSON-serialisable)."""
        return {
            "day": self.day,
            "rows": self.rows,
            "files": [asdict(file) for file in self.files],
            "rejected_files": [asdict(file) for file in self.rejected],
            "ignored_files": list(self.ignored),
            "chunks": len(self.chunks),
            "chunk_rows": self.chunk_rows,
            "folder": self.folder,
            "folder_exists": self.folder_exists,
            "lake_days": self.lake_days,
            "no_traffic_reason": self.no_traffic_reason,
            "quiet_days": self.quiet_days,
            "derived_ids": self.derived_ids,
        }


def lake_days(lake: Lake, days: list[str] | None = None) -> dict[str, Any]:
    """How many `dt=YYYY-MM-DD` folders the raw root holds, and its first and last day (one
    listing of the root, not recursive, unless its `days` are given)."""
    days = partition_days(lake.raw, missing_ok=False) if days is None else days
    first, last = (days[0], days[-1]) if days else (None, None)
    return {"count": len(days), "first": first, "last": last}


def quiet_days(day: str, days: list[str]) -> int:
    """The days in a row without traffic ending with `day` (which has none): back to the
    last earlier day folder of the raw root (`days`); 0 when there is none."""
    earlier = [held for held in days if held < day]
    if not earlier:
        return 0
    return (date.fromisoformat(day) - date.fromisoformat(earlier[-1])).days


def chunk_to_dict(chunk: Chunk) -> dict[str, Any]:
    """A chunk as the plain dict that travels through XCom (the schema as base64 Arrow IPC)."""
    schema = None if chunk.schema is None else chunk.schema.serialize().to_pybytes()
    return {
        "index": chunk.index,
        "slices": [asdict(piece) for piece in chunk.slices],
        "schema": None if schema is None else base64.b64encode(schema).decode("ascii"),
    }


def chunk_from_dict(data: dict[str, Any]) -> Chunk:
    encoded = data.get("schema")
    schema = (
        None if encoded is None else pa.ipc.read_schema(pa.py_buffer(base64.b64decode(encoded)))
    )
    return Chunk(int(data["index"]), [Slice(**piece) for piece in data["slices"]], schema)


def plan_day(lake: Lake, day: str, settings: Settings, *, allow_shrink: bool = False) -> DayPlan:
    """List, check and cut the day's input files; refuse to shrink a published day unless
    `allow_shrink` (see `check_shrink`)."""
    if not lake.raw.exists():
        raise ConfigError(
            f"the raw root {lake.raw.uri} does not exist: check pipeline.raw_uri "
            "(RAGAS_OPS_PIPELINE_RAW_URI). A day without traffic is a day folder missing under "
            "an existing root, never a missing root."
        )
    folder = lake.raw_day(day)
    present = folder.exists()
    plan = DayPlan(day, folder=folder.uri, folder_exists=present)
    raw_days = None if present else partition_days(lake.raw, missing_ok=False)
    if not present:
        plan.lake_days = lake_days(lake, raw_days)
    paths, plan.ignored = listing(folder) if present else ([], [])
    footers, unreadable = [], {}
    for path in paths:
        try:
            footers.append(
                read_footer(
                    folder.filesystem, path, settings.columns, settings.pipeline.read_limits()
                )
            )
            if settings.pipeline.verify_input_pages:
                decode_check(folder.filesystem, path)
        except StorageError as error:
            footers = [footer for footer in footers if footer.path != path]
            unreadable[path] = str(error).removeprefix(f"{path}: ")
    unified = unify_inputs(
        [FileSchema(footer.path, footer.schema, footer.rows) for footer in footers],
        settings.columns,
        output_column_names(settings.metrics.names),
    )
    reasons = {**unreadable, **unified.rejected}
    plan.rejected = [RejectedFile(path, reasons[path]) for path in paths if path in reasons]
    plan.files = [
        InputFile(footer.path, footer.bytes, footer.rows)
        for footer in footers
        if footer.path not in reasons
    ]
    accepted = [footer for footer in footers if footer.path not in reasons]
    plan.schema = None if unified.schema is None else with_id_column(unified.schema)
    if plan.schema is not None:
        plan.derived_ids = sum(
            footer.rows for footer in accepted if needs_derived_ids(footer.schema, plan.schema)
        )
    if plan.no_traffic_reason is not None:
        raw_days = raw_days if raw_days is not None else partition_days(lake.raw)
        plan.quiet_days = quiet_days(day, raw_days)
    check_segments(plan, settings)
    check_mapped_columns(plan, settings, {name for f in accepted for name in f.schema.names})
    check_shrink(lake, day, plan.rows, settings, allow_shrink=allow_shrink, raw_present=present)
    plan.chunk_rows = max(
        settings.pipeline.chunk_rows, math.ceil(plan.rows / settings.pipeline.max_chunks)
    )
    plan.chunks = cut_chunks(plan.files, plan.chunk_rows)
    for chunk in plan.chunks:
        chunk.schema = plan.schema
    if plan.folder_exists:
        log.info("plan %s", plan.describe())
    else:  # a normal outcome, but the one a backfill past the lake's first day also gives
        log.warning("plan %s", plan.describe())
    return plan


def check_segments(plan: DayPlan, settings: Settings) -> None:
    """Refuse, before any request, a day whose files have no column for a configured segment.

    Failing, not skipping the segment: a segment is a breakdown of the daily metrics that
    dashboards and the regression check follow day after day, so a night without it would be
    a hole in every series it feeds, seen weeks later; and a missing column is a setting that
    does not fit the logs, which every night would meet again. Columns some files lack are
    fine (their rows hold null there)."""
    segments = settings.pipeline.segments
    if plan.schema is None or not segments:
        return  # no file to score: no breakdown to make
    missing = [segment for segment in segments if segment not in plan.schema.names]
    if missing:
        raise ConfigError(
            f"pipeline.segments names {', '.join(map(repr, missing))}, but the files of "
            f"{plan.day} ({plan.folder}) have no such column; their columns are "
            f"{plan.schema.names}. Set pipeline.segments (RAGAS_OPS_PIPELINE_SEGMENTS) to "
            "columns your logs have (a nested JSON field by its dotted path); nothing was "
            "scored"
        )


def check_mapped_columns(plan: DayPlan, settings: Settings, found: set[str]) -> None:
    """Refuse, before any request, a day none of whose files has the column `columns.id` or
    `columns.timestamp` names, when they name one (`found`: the columns of the day's files,
    under the contract's names): a misspelt path would otherwise give every row a derived id
    and no time, night after night, unseen."""
    if plan.schema is None:
        return
    missing = [
        f"columns.{name} = {settings.columns.source(name)!r}"
        for name in OPTIONAL_FIELDS
        if settings.columns.source(name) != name and name not in found
    ]
    if missing:
        raise ConfigError(
            f"{' and '.join(missing)}, but no file of {plan.day} ({plan.folder}) has such a "
            f"column (a nested JSON field by its dotted path); their columns are "
            f"{[name for name in plan.schema.names if name not in OPTIONAL_FIELDS]}. Fix the "
            "mapping ([columns] in the config file, or --column id=PATH); nothing was scored"
        )


def published_rows(location: Location) -> int:
    """Rows of the table published at `location` (0 when there is none), from its footer."""
    if not location.exists():
        return 0
    return int(pq.ParquetFile(location.path, filesystem=location.filesystem).metadata.num_rows)


def check_shrink(
    lake: Lake,
    day: str,
    rows: int,
    settings: Settings,
    *,
    allow_shrink: bool,
    raw_present: bool = True,
) -> None:
    """Refuse to publish `rows` rows over a day the warehouse holds more of: nothing when the
    day's raw partition is gone, fewer than `pipeline.min_republish_fraction` of the published
    rows otherwise. `allow_shrink` (the DAG's parameter) republishes on purpose."""
    fraction = settings.pipeline.min_republish_fraction
    if not 0 <= fraction <= 1:
        raise ConfigError(f"pipeline.min_republish_fraction must be in [0, 1], got {fraction!r}")
    if allow_shrink or fraction == 0:
        return
    tables = day_tables(lake, settings)
    before, scored_uri = tables.published_rows(day), tables.scored_uri(day)
    if not before:
        return
    conf = json.dumps({"day": day, "allow_shrink": True})
    remedy = (
        "If this is on purpose, rerun with allow_shrink: "
        f"airflow dags trigger ragas_ops_nightly -c '{conf}'"
    )
    elsewhere = scored_from(lake, day)
    if elsewhere is not None and elsewhere != lake.raw_day(day).uri:
        # Another lake's day (the demo's, under `airflow up --raw` in its home): allow_shrink
        # would mix the two lakes in one warehouse, and its baseline.
        remedy = (
            f"The published day was scored from another lake, {elsewhere}: give these logs a "
            "warehouse of their own (pipeline.warehouse_uri; `ragas-ops airflow up --raw` "
            "without --home uses .airflow-own/) rather than allow_shrink, which would mix the "
            "two lakes' days and baselines"
        )
    if not raw_present:
        raise ShrinkRefused(
            f"the raw partition {lake.raw_day(day).uri} does not exist, but {scored_uri} holds "
            f"{before:,} scored rows for {day}: refusing to publish an empty day over them "
            f"(a mistyped pipeline.raw_uri?). {remedy}"
        )
    if rows < before * fraction:
        raise ShrinkRefused(
            f"{lake.raw_day(day).uri} holds {rows:,} rows to publish, but {scored_uri} holds "
            f"{before:,} for {day} (below pipeline.min_republish_fraction {fraction:g}): "
            f"refusing to shrink the published day. {remedy}"
        )


def scored_from(lake: Lake, day: str) -> str | None:
    """The raw day folder the warehouse's latest run of `day` read (its manifest's plan), or
    None when no manifest says."""
    try:
        found = lake.manifest_files(day)
        if not found:
            return None
        latest = max(found, key=lambda location: location.name.removeprefix(MANIFEST_PREFIX))
        folder = json.loads(latest.read_text()).get("plan", {}).get("folder")
    except (OSError, ValueError, AttributeError):
        return None
    return str(folder) if folder else None


def cut_chunks(files: list[InputFile], chunk_rows: int) -> list[Chunk]:
    """Pack the files' rows, in order, into chunks of `chunk_rows` (the last may be smaller)."""
    chunks: list[Chunk] = []
    current: list[Slice] = []
    room = chunk_rows
    for file in files:
        start = 0
        while start < file.rows:
            take = min(room, file.rows - start)
            current.append(Slice(file.path, start, take))
            start += take
            room -= take
            if room == 0:
                chunks.append(Chunk(len(chunks), current))
                current, room = [], chunk_rows
    if current:
        chunks.append(Chunk(len(chunks), current))
    return chunks


def plan_result(
    day_plan: DayPlan, *, backfill: bool, model_warnings: Sequence[str] = ()
) -> dict[str, Any]:
    """What the plan task hands on through XCom: the day, the plan's summary (for the
    manifest, with `model_warnings`: the judge's models that shut down soon, also in the
    plan's log), its chunks as plain dicts that carry the day and its rows (a chunk's share
    of the judge's budget), and whether the run is a backfill (which pool scores it)."""
    for warning in model_warnings:
        log.warning("plan warning: %s", warning)
    return {
        "day": day_plan.day,
        "summary": {**day_plan.summary(), "model_warnings": list(model_warnings)},
        "chunks": [
            {**chunk_to_dict(chunk), "day": day_plan.day, "day_rows": day_plan.rows}
            for chunk in day_plan.chunks
        ],
        "backfill": backfill,
    }
