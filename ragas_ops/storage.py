"""Reading and writing Parquet on a local folder or S3 (or an S3-compatible store).

Paths are local paths, `file://` URIs or `s3://bucket/key` URIs. S3 credentials come from the
usual AWS places (environment, profile, instance role), never from ragas-ops settings; the
endpoint of an S3-compatible store is taken from `AWS_ENDPOINT_URL_S3` or `AWS_ENDPOINT_URL`.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from urllib.parse import urlparse

import pyarrow as pa
import pyarrow.dataset as pads
import pyarrow.fs as pafs
import pyarrow.parquet as pq


class StorageError(OSError):
    """An input or output location cannot be used."""


@dataclass(frozen=True)
class Location:
    filesystem: pafs.FileSystem
    path: str
    uri: str


def locate(uri: str, environ: Mapping[str, str] | None = None) -> Location:
    """The filesystem and path behind a local path, `file://` or `s3://` URI."""
    parsed = urlparse(uri)
    if parsed.scheme == "s3":
        return Location(
            _s3_filesystem(os.environ if environ is None else environ),
            f"{parsed.netloc}{parsed.path}".rstrip("/"),
            uri,
        )
    if parsed.scheme in ("", "file"):
        path = parsed.path if parsed.scheme == "file" else uri
        return Location(pafs.LocalFileSystem(), os.path.abspath(path), uri)
    raise StorageError(f"unsupported location {uri!r}: use a local path, file:// or s3://")


def _s3_filesystem(environ: Mapping[str, str]) -> pafs.S3FileSystem:
    endpoint = environ.get("AWS_ENDPOINT_URL_S3") or environ.get("AWS_ENDPOINT_URL")
    options: dict[str, object] = {
        "region": environ.get("AWS_REGION") or environ.get("AWS_DEFAULT_REGION") or "us-east-1"
    }
    if endpoint:
        parsed = urlparse(endpoint)
        options["endpoint_override"] = parsed.netloc or parsed.path
        options["scheme"] = parsed.scheme or "https"
    return pafs.S3FileSystem(**options)


def parquet_files(location: Location) -> list[str]:
    """The Parquet files at `location`: the file itself, or every `*.parquet` below a folder."""
    info = location.filesystem.get_file_info(location.path)
    if info.type == pafs.FileType.File:
        return [location.path]
    if info.type == pafs.FileType.NotFound:
        raise StorageError(f"nothing at {location.uri}")
    selector = pafs.FileSelector(location.path, recursive=True)
    files = sorted(
        entry.path
        for entry in location.filesystem.get_file_info(selector)
        if entry.type == pafs.FileType.File and entry.path.endswith(".parquet")
    )
    if not files:
        raise StorageError(f"no .parquet files under {location.uri}")
    return files


def read_batches(location: Location, batch_rows: int) -> tuple[pa.Schema, int, Iterator[pa.Table]]:
    """The input's schema, its row count, and its rows as tables of at most `batch_rows`."""
    dataset = pads.dataset(
        parquet_files(location), filesystem=location.filesystem, format="parquet"
    )
    total = dataset.count_rows()

    def batches() -> Iterator[pa.Table]:
        for batch in dataset.to_batches(batch_size=batch_rows):
            if batch.num_rows:
                yield pa.Table.from_batches([batch])

    return dataset.schema, total, batches()


class ParquetOutput:
    """A Parquet file written batch by batch, that appears at its location only when closed.

    It is written beside the target and moved into place on commit (a rename locally, a
    server-side copy on S3). A run that fails leaves no partial file behind, and a reader of
    the target sees either the previous file or the whole new one.
    """

    def __init__(self, location: Location, schema: pa.Schema) -> None:
        self.location = location
        fs = location.filesystem
        if not isinstance(fs, pafs.S3FileSystem):  # S3 has no folders to create
            fs.create_dir(location.path.rsplit("/", 1)[0], recursive=True)
        self._staging = f"{location.path}.{uuid.uuid4().hex}.tmp"
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
