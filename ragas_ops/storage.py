"""Reading and writing Parquet on a local folder or S3 (or an S3-compatible store); reading
logs that are JSON Lines or CSV files as well (`contract.logs`).

Paths are local paths, `file://` URIs or `s3://bucket/key` URIs. S3 credentials come from the
usual AWS places (environment, profile, instance role), never from ragas-ops settings; the
endpoint of an S3-compatible store is taken from `AWS_ENDPOINT_URL_S3` or `AWS_ENDPOINT_URL`.

A file being written is never where readers look: it is written to a staging location (one
the caller names, e.g. under the warehouse's `_staging/`, or else a dot-prefixed sibling, see
`staging_sibling`) and moved into place whole. Readers that glob a partition folder (DuckDB's
`read_parquet('.../dt=D/*')` matches dot files too) then never meet a partial file.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import urlparse

import pyarrow as pa
import pyarrow.dataset  # unused here, imported up front: see the note below the imports
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from ragas_ops.contract.inputs import (
    ColumnMapping,
    ContractError,
    repair_utf8,
    schema_with_contract_names,
    with_contract_names,
)
from ragas_ops.contract.logs import (
    DEFAULT_READ_LIMITS,
    TEXT_LOG_SUFFIXES,
    ReadLimits,
    is_text_log,
    read_text_log,
)
from ragas_ops.secrets import Secret

# pyarrow.dataset's first import registers an atexit hook, which fails when the first Parquet
# write of a process happens at interpreter exit (the capture writer's close): so it is done here.


class StorageError(OSError):
    """An input or output location cannot be used."""


@dataclass(frozen=True)
class S3Options:
    """How to reach S3: explicit credentials (e.g. from an Airflow aws connection) or, when
    absent, the standard AWS chain (environment, profile, instance role)."""

    endpoint_url: str | None = None
    region: str = "us-east-1"
    access_key: Secret | None = None
    secret_key: Secret | None = None
    session_token: Secret | None = None
    connect_timeout_seconds: float | None = None
    """None: the AWS SDK's default; a store that must not hold up scoring sets a short one."""
    request_timeout_seconds: float | None = None
    max_attempts: int | None = None
    """Tries per request, counting the first; None: the AWS SDK's standard retry strategy."""
    small_objects: bool = False
    """Objects are small (a cache's): each is sent in one PUT when closed, not as a multipart
    upload (three requests), with pyarrow 16 or later."""

    def secrets(self) -> tuple[Secret | None, ...]:
        """The credentials, for `redact` to hide in a message about this store."""
        return (self.access_key, self.secret_key, self.session_token)

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None) -> S3Options:
        environ = os.environ if environ is None else environ
        return cls(
            endpoint_url=environ.get("AWS_ENDPOINT_URL_S3") or environ.get("AWS_ENDPOINT_URL"),
            region=environ.get("AWS_REGION") or environ.get("AWS_DEFAULT_REGION") or "us-east-1",
        )

    def filesystem(self) -> pafs.S3FileSystem:
        options: dict[str, object] = {"region": self.region}
        if self.endpoint_url:
            parsed = urlparse(self.endpoint_url)
            options["endpoint_override"] = parsed.netloc or parsed.path
            options["scheme"] = parsed.scheme or "https"
        if self.access_key and self.secret_key:
            options["access_key"] = self.access_key.reveal()
            options["secret_key"] = self.secret_key.reveal()
            if self.session_token:
                options["session_token"] = self.session_token.reveal()
        if self.connect_timeout_seconds is not None:
            options["connect_timeout"] = self.connect_timeout_seconds
        if self.request_timeout_seconds is not None:
            options["request_timeout"] = self.request_timeout_seconds
        if self.max_attempts is not None:
            options["retry_strategy"] = pafs.AwsStandardS3RetryStrategy(
                max_attempts=self.max_attempts
            )
        if self.small_objects:
            try:
                return pafs.S3FileSystem(**options, allow_delayed_open=True)
            except TypeError:  # pyarrow 15: no delayed open, multipart uploads
                pass
        return pafs.S3FileSystem(**options)


@dataclass(frozen=True)
class Location:
    filesystem: pafs.FileSystem
    path: str
    uri: str

    def child(self, *parts: str) -> Location:
        """A location below this one."""
        suffix = "/".join(part.strip("/") for part in parts)
        return Location(self.filesystem, f"{self.path}/{suffix}", f"{self.uri}/{suffix}")

    def exists(self) -> bool:
        return bool(self.filesystem.get_file_info(self.path).type != pafs.FileType.NotFound)

    def read_text(self) -> str:
        with self.filesystem.open_input_stream(self.path) as stream:
            return bytes(stream.read()).decode("utf-8")

    @property
    def name(self) -> str:
        return self.path.rstrip("/").rsplit("/", 1)[-1]

    def parent(self) -> Location:
        return Location(
            self.filesystem, self.path.rsplit("/", 1)[0], self.uri.rstrip("/").rsplit("/", 1)[0]
        )

    def write_text(self, text: str, staging: Location | None = None) -> None:
        """Write a whole small file so that readers see the old or the new one, never half
        (staged at `staging`, else at a dot-prefixed sibling)."""
        _make_parent(self)
        staged = staging or staging_sibling(self)
        _make_parent(staged)
        with self.filesystem.open_output_stream(staged.path) as stream:
            stream.write(text.encode("utf-8"))
        self.filesystem.move(staged.path, self.path)

    def read_bytes(self) -> bytes | None:
        """The whole object or file, or None when there is none (an outage is an OSError)."""
        try:
            with self.filesystem.open_input_stream(self.path) as stream:
                return bytes(stream.read())
        except FileNotFoundError:
            return None

    def write_bytes(self, data: bytes) -> None:
        """Write a whole small object so that readers never see part of it: on S3 one PUT
        (an object appears whole), elsewhere a dot-prefixed sibling renamed into place."""
        if isinstance(self.filesystem, pafs.S3FileSystem):
            with self.filesystem.open_output_stream(self.path) as stream:
                stream.write(data)
            return
        _make_parent(self)
        staged = staging_sibling(self)
        with self.filesystem.open_output_stream(staged.path) as stream:
            stream.write(data)
        self.filesystem.move(staged.path, self.path)

    def delete_tree(self) -> None:
        """Remove this folder and everything below it, if it exists."""
        if self.exists():
            self.filesystem.delete_dir(self.path)


def locate(uri: str, s3: S3Options | None = None) -> Location:
    """The filesystem and path behind a local path, `file://` or `s3://` URI."""
    parsed = urlparse(uri)
    if parsed.scheme == "s3":
        filesystem = (s3 or S3Options.from_environ()).filesystem()
        return Location(filesystem, f"{parsed.netloc}{parsed.path}".rstrip("/"), uri.rstrip("/"))
    if parsed.scheme in ("", "file"):
        path = os.path.abspath(parsed.path if parsed.scheme == "file" else uri)
        return Location(pafs.LocalFileSystem(), path, path if parsed.scheme == "" else uri)
    raise StorageError(f"unsupported location {uri!r}: use a local path, file:// or s3://")


def staging_sibling(location: Location) -> Location:
    """A unique dot-prefixed name beside `location` to write it at before moving it in."""
    return location.parent().child(f".{location.name}.{uuid.uuid4().hex}.tmp")


def remove_leftovers(location: Location) -> list[str]:
    """Delete the staging files that crashed writers of `location` left beside it (this
    module's dot-prefixed ones, and the `<name>.<hex>.tmp` ones of earlier versions); returns
    their paths. Only for targets that one writer at a time publishes."""
    folder = location.parent()
    if folder.filesystem.get_file_info(folder.path).type != pafs.FileType.Directory:
        return []
    entries = folder.filesystem.get_file_info(pafs.FileSelector(folder.path))
    stale = [
        entry.path
        for entry in entries
        if entry.type == pafs.FileType.File
        and entry.base_name.endswith(".tmp")
        and entry.base_name.lstrip(".").startswith(f"{location.name}.")
    ]
    for path in stale:
        folder.filesystem.delete_file(path)
    return stale


def copy_into_place(source: Location, target: Location, staging: Location) -> None:
    """Put a copy of `source` at `target` in one step: on S3 a server-side copy (an object
    appears whole), elsewhere a copy to `staging` and a rename over the target."""
    _make_parent(target)
    if isinstance(target.filesystem, pafs.S3FileSystem):
        target.filesystem.copy_file(source.path, target.path)
        return
    _make_parent(staging)
    target.filesystem.copy_file(source.path, staging.path)
    target.filesystem.move(staging.path, target.path)


def _make_parent(location: Location) -> None:
    if not isinstance(location.filesystem, pafs.S3FileSystem):  # S3 has no folders to create
        location.filesystem.create_dir(location.path.rsplit("/", 1)[0], recursive=True)


PARQUET_SUFFIXES = (".parquet", ".parq", ".pq")
"""File names read as Parquet, in any case (`part-0.PARQUET`, fastparquet's `.parq`)."""
LOG_SUFFIXES = PARQUET_SUFFIXES + TEXT_LOG_SUFFIXES
"""File names read as logs: Parquet, JSON Lines and CSV (`contract.logs`), in any case."""


def parquet_files(location: Location) -> list[str]:
    """The log files at `location`: the file itself, or every log file name below a folder
    (see `listing`)."""
    files, ignored = listing(location)
    if not files:
        raise no_parquet(location, ignored)
    return files


def no_parquet(location: Location, ignored: Sequence[str]) -> StorageError:
    """The error of a folder with no log file, naming the files it does hold."""
    suffixes = ", ".join(LOG_SUFFIXES)
    held = f"; not read: {', '.join(ignored)}" if ignored else ""
    return StorageError(f"no log files ({suffixes}) under {location.uri}{held}")


def listing(location: Location) -> tuple[list[str], list[str]]:
    """The log files at `location` (the file itself, or every file below a folder whose
    name ends in a LOG_SUFFIXES, in any case), and the other files below it, which are
    not read and must be named. Hidden and underscore names (what writers stage in and
    readers skip: `.crc`, `_SUCCESS`, `_temporary/`) are neither."""
    info = location.filesystem.get_file_info(location.path)
    if info.type == pafs.FileType.File:
        return [location.path], []
    if info.type == pafs.FileType.NotFound:
        raise StorageError(f"nothing at {location.uri}")
    selector = pafs.FileSelector(location.path, recursive=True)
    visible = sorted(
        entry.path
        for entry in location.filesystem.get_file_info(selector)
        if entry.type == pafs.FileType.File and not _hidden(entry.path[len(location.path) :])
    )
    files = [path for path in visible if path.lower().endswith(LOG_SUFFIXES)]
    return files, [path for path in visible if not path.lower().endswith(LOG_SUFFIXES)]


def _hidden(relative: str) -> bool:
    return any(part.startswith((".", "_")) for part in relative.split("/") if part)


@dataclass(frozen=True)
class Footer:
    """What a Parquet file's footer says: its schema, rows and size."""

    path: str
    schema: pa.Schema
    rows: int
    bytes: int


def read_footer(
    filesystem: pafs.FileSystem,
    path: str,
    columns: ColumnMapping,
    limits: ReadLimits = DEFAULT_READ_LIMITS,
) -> Footer:
    """The footer of a Parquet file, or a StorageError naming the file and what is wrong
    (with more than `limits.columns` columns, too). A JSON Lines or CSV log has none: it is
    read whole, in the shape `columns` gives it, within `limits`."""
    if is_text_log(path):
        table = read_text_log_or_fail(filesystem, path, columns, limits)
        size = filesystem.get_file_info(path).size
        return Footer(path, table.schema, table.num_rows, int(size or 0))
    try:
        info = filesystem.get_file_info(path)
        with filesystem.open_input_file(path) as handle:
            metadata = pq.ParquetFile(handle).metadata
            schema = schema_with_contract_names(metadata.schema.to_arrow_schema(), columns)
    except ContractError as error:
        raise StorageError(f"{path}: {error}") from None
    except (OSError, pa.ArrowException) as error:
        _raise_if_unreachable(filesystem, path)
        raise StorageError(f"{path}: not a readable Parquet file: {error}") from None
    if len(schema) > limits.columns:
        raise StorageError(
            f"{path}: the file has {len(schema):,} columns, more than {limits.columns:,} "
            "(pipeline.max_input_columns)"
        )
    return Footer(path, schema, int(metadata.num_rows), int(info.size or 0))


def read_text_log_or_fail(
    filesystem: pafs.FileSystem,
    path: str,
    columns: ColumnMapping,
    limits: ReadLimits = DEFAULT_READ_LIMITS,
) -> pa.Table:
    """A JSON Lines or CSV log, whole (`contract.logs`), or a StorageError naming the file and
    what is wrong with it (an outage is itself)."""
    try:
        return read_text_log(filesystem, path, columns, limits)
    except ContractError as error:
        raise StorageError(f"{path}: {error}") from None
    except MemoryError:  # one file too large for this worker: that file's rejection
        raise StorageError(
            f"{path}: the file does not fit in this worker's memory once parsed; split it "
            "or lower pipeline.max_log_line_bytes"
        ) from None
    except (OSError, pa.ArrowException) as error:
        _raise_if_unreachable(filesystem, path)
        raise StorageError(f"{path}: not a readable log file: {error}") from None


def decode_check(filesystem: pafs.FileSystem, path: str) -> None:
    """Decode every page of a Parquet file (and drop the rows): a StorageError names the file
    when a page is corrupt or its compression broken, which a footer cannot show. A JSON
    Lines or CSV log was read whole for its "footer" already."""
    if is_text_log(path):
        return
    try:
        with filesystem.open_input_file(path) as handle:
            for _batch in pq.ParquetFile(handle).iter_batches(batch_size=8192):
                pass
    except (OSError, pa.ArrowException) as error:
        _raise_if_unreachable(filesystem, path)
        raise StorageError(f"{path}: its data cannot be decoded: {error}") from None


def _raise_if_unreachable(filesystem: pafs.FileSystem, path: str) -> None:
    """Let an outage (the store itself failing) propagate as itself: only a file that can
    still be reached is judged broken."""
    filesystem.get_file_info(path)


def conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """`table` with the columns of `schema`, in its order (missing ones null): one lookup
    per column, so linear in the columns (a name looked up in `table.column_names` built
    that list again for each column: 100,000 columns took minutes)."""
    index: dict[str, int] = {}
    for position, name in enumerate(table.column_names):
        index.setdefault(name, position)
    columns = [
        table.column(index[f.name]).cast(f.type)
        if f.name in index
        else pa.nulls(table.num_rows, f.type)
        for f in schema
    ]
    return pa.Table.from_arrays(columns, schema=schema)


def in_day_schema(
    rows: pa.Table, schema: pa.Schema, path: str, first_row: int, columns: ColumnMapping
) -> pa.Table:
    """Rows `first_row`... of the file at `path` (under the contract's names) in the day's
    `schema`, with derived ids when the file has none (`contract.row_ids`)."""
    from ragas_ops.contract.row_ids import needs_derived_ids, with_derived_ids

    conformed = conform(rows, schema)
    if not needs_derived_ids(rows.schema, schema):
        return conformed
    return with_derived_ids(repair_utf8(conformed), path, first_row, columns)


def read_files(
    filesystem: pafs.FileSystem,
    paths: list[str],
    schema: pa.Schema,
    batch_rows: int,
    columns: ColumnMapping,
    *,
    limits: ReadLimits = DEFAULT_READ_LIMITS,
) -> Iterator[pa.Table]:
    """The files' rows, in order, as tables of at most `batch_rows` rows with `schema`; a file
    whose data cannot be decoded is a StorageError naming it. A JSON Lines or CSV log is read
    in the shape `columns` gives it. A file without ids gets derived ones
    (`contract.row_ids`) when `schema` has an `id` column of text."""
    for path in paths:
        if is_text_log(path):
            table = read_text_log_or_fail(filesystem, path, columns, limits)
            for start in range(0, table.num_rows, batch_rows):
                rows = table.slice(start, batch_rows)
                yield in_day_schema(rows, schema, path, start, columns)
            continue
        try:
            with filesystem.open_input_file(path) as handle:
                position = 0
                for batch in pq.ParquetFile(handle).iter_batches(batch_size=batch_rows):
                    if batch.num_rows:
                        rows = with_contract_names(pa.Table.from_batches([batch]), columns)
                        yield in_day_schema(rows, schema, path, position, columns)
                    position += batch.num_rows
        except (OSError, pa.ArrowException) as error:
            _raise_if_unreachable(filesystem, path)
            raise StorageError(f"{path}: its data cannot be read: {error}") from None


class ParquetOutput:
    """A Parquet file written batch by batch, that appears at its location only when closed.

    It is written at `staging` (else a dot-prefixed sibling of the target) and moved into
    place on commit (a rename locally, a server-side copy on S3). A run that fails leaves no
    partial file behind, and a reader of the target sees either the previous file or the
    whole new one. A killed process may leave its staging file: see `remove_leftovers`.
    """

    def __init__(
        self, location: Location, schema: pa.Schema, staging: Location | None = None
    ) -> None:
        self.location = location
        self.schema = schema
        fs = location.filesystem
        _make_parent(location)
        staged = staging or staging_sibling(location)
        _make_parent(staged)
        self._staging = staged.path
        self._writer = pq.ParquetWriter(self._staging, schema, filesystem=fs, compression="zstd")

    def write(self, table: pa.Table) -> None:
        self._writer.write_table(table)

    def commit(self) -> None:
        self._writer.close()
        self.location.filesystem.move(self._staging, self.location.path)

    def abort(self) -> None:
        try:
            self._writer.close()
        finally:
            self.location.filesystem.delete_file(self._staging)
