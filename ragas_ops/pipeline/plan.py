"""Planning a day: which input files there are, how many rows, and how to cut them in chunks.

Planning reads only Parquet footers (schemas and row counts), never the rows, so a day of a
million rows plans in about the time it takes to list its files. The number of chunks is
bounded by `max_chunks` (chunks grow past `chunk_rows` when needed), so a day always fits in
Airflow's mapping limit. A chunk is a list of row ranges of files, so each mapped task reads
only its own slice.

A file that cannot be read, or that breaks the input contract (a mapped column missing, or a
column whose type conflicts with the day's other files), is rejected with the reason: the rest
of the day is scored, and the run's manifest and report list the rejected files.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from ragas_ops.config import Settings
from ragas_ops.contract.inputs import ContractError, check_columns
from ragas_ops.contract.layout import Lake
from ragas_ops.storage import StorageError, parquet_files


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

    @property
    def rows(self) -> int:
        return sum(piece.rows for piece in self.slices)


@dataclass
class DayPlan:
    day: str
    files: list[InputFile] = field(default_factory=list)
    rejected: list[RejectedFile] = field(default_factory=list)
    chunks: list[Chunk] = field(default_factory=list)
    chunk_rows: int = 0
    schema: pa.Schema | None = None
    """The day's input schema, unified over the accepted files (None on a day with no file)."""

    @property
    def rows(self) -> int:
        return sum(file.rows for file in self.files)

    def summary(self) -> dict[str, Any]:
        """What the manifest records of the plan (JSON-serialisable)."""
        return {
            "day": self.day,
            "rows": self.rows,
            "files": [asdict(file) for file in self.files],
            "rejected_files": [asdict(file) for file in self.rejected],
            "chunks": len(self.chunks),
            "chunk_rows": self.chunk_rows,
        }


def chunk_to_dict(chunk: Chunk) -> dict[str, Any]:
    """A chunk as the plain dict that travels through XCom."""
    return {"index": chunk.index, "slices": [asdict(piece) for piece in chunk.slices]}


def chunk_from_dict(data: dict[str, Any]) -> Chunk:
    return Chunk(int(data["index"]), [Slice(**piece) for piece in data["slices"]])


def plan_day(lake: Lake, day: str, settings: Settings) -> DayPlan:
    """List, check and cut the day's input files."""
    plan = DayPlan(day)
    folder = lake.raw_day(day)
    if not folder.exists():
        return plan  # no traffic: a normal, empty day
    try:
        paths = parquet_files(folder)
    except StorageError:
        return plan  # the folder holds no Parquet file: no traffic either
    schemas: list[pa.Schema] = []
    for path in paths:
        accepted = _check_file(folder.filesystem, path, settings, schemas)
        if isinstance(accepted, RejectedFile):
            plan.rejected.append(accepted)
        else:
            plan.files.append(accepted[0])
            schemas.append(accepted[1])
    if schemas:
        plan.schema = pa.unify_schemas(schemas, promote_options="permissive")
    plan.chunk_rows = max(
        settings.pipeline.chunk_rows, math.ceil(plan.rows / settings.pipeline.max_chunks)
    )
    plan.chunks = cut_chunks(plan.files, plan.chunk_rows)
    return plan


def _check_file(
    filesystem: Any, path: str, settings: Settings, accepted: list[pa.Schema]
) -> RejectedFile | tuple[InputFile, pa.Schema]:
    try:
        info = filesystem.get_file_info(path)
        with filesystem.open_input_file(path) as handle:
            metadata = pq.ParquetFile(handle).metadata
            schema = metadata.schema.to_arrow_schema()
    except (OSError, pa.ArrowException) as error:
        return RejectedFile(path, f"not a readable Parquet file: {error}")
    try:
        check_columns(schema, settings.columns)
    except ContractError as error:
        return RejectedFile(path, str(error))
    if accepted:
        try:
            pa.unify_schemas([*accepted, schema], promote_options="permissive")
        except (pa.ArrowTypeError, pa.ArrowInvalid) as error:
            return RejectedFile(path, f"its columns conflict with the day's other files: {error}")
    return InputFile(path, int(info.size or 0), int(metadata.num_rows)), schema


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
