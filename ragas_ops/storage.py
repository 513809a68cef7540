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

from ragas_ops.secrets import Secret


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

    def write_text(self, text: str) -> None:
        """Write a whole small file so that readers see the old or the new one, never half."""
        _make_parent(self)
        staging = f"{self.path}.{uuid.uuid4().hex}.tmp"
        with self.filesystem.open_output_stream(staging) as stream:
            stream.write(text.encode("utf-8"))
        self.filesystem.move(staging, self.path)

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


def _make_parent(location: Location) -> None:
    if not isinstance(location.filesystem, pafs.S3FileSystem):  # S3 has no folders to create
        location.filesystem.create_dir(location.path.rsplit("/", 1)[0], recursive=True)


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
        self.schema = schema
        fs = location.filesystem
        _make_parent(location)
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
