"""The log writer: RAG interactions from application code into the log lake, off the hot path.

    writer = LogWriter("s3://logs/rag/raw", app="support-bot")
    writer.append(question, contexts, answer, model="gpt-4o-mini", tenant="acme")

`append` only stamps the row (id, UTC time) and puts it on an in-memory buffer under a lock
held for a few instructions: it never does I/O, never waits for storage and never raises
because storage is slow or down. A background thread owns all I/O: it writes the buffer as
Parquet files into the day partitions of the log prefix (`<uri>/dt=YYYY-MM-DD/`, the day of
each row's timestamp in UTC) when `max_rows_per_file` rows wait, every `flush_interval`
seconds, on `flush()` and at exit (`close()`, also registered with `atexit`).

Each file is named `part-<UTC time>-<host>-<pid>-<uuid>.parquet` and appears whole (it is
written beside its final name and moved into place), so writers on many hosts and processes
never overwrite each other's files and the nightly scoring never reads half a file.

When storage fails, the rows stay buffered and the write is retried (with back-off); the
buffer is bounded (`max_buffered_rows`), and rows that arrive when it is full are counted in
`dropped` and reported by a rate-limited warning. When storage returns, the buffered rows are
written.

Columns: `id` (a uuid4 unless given), `timestamp` (UTC, microseconds), `question`, `contexts`
(list of strings, in retrieval order), `answer`, then one string column per metadata key
(app, model, retriever, tenant...; None stays null; lists and dicts are written as JSON).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import os
import socket
import threading
import time
import uuid
import weakref
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

log = logging.getLogger("ragas_ops.capture")

RESERVED = ("id", "timestamp", "question", "contexts", "answer")

Row = tuple[str, float | datetime, Any, Any, Any, dict[str, Any]]
"""id, timestamp (epoch seconds or a datetime), question, contexts, answer, metadata."""


class LogWriter:
    """Buffers RAG interactions in memory and writes them to the log lake in the background.

    Thread-safe, and safe to call from coroutines (`append` never blocks on I/O).
    """

    def __init__(
        self,
        uri: str,
        *,
        s3: Any = None,
        max_rows_per_file: int = 5_000,
        flush_interval: float = 60.0,
        max_buffered_rows: int = 100_000,
        retry_seconds: float = 1.0,
        max_retry_seconds: float = 60.0,
        warn_every_seconds: float = 60.0,
        close_at_exit: bool = True,
        exit_timeout: float = 10.0,
        **defaults: Any,
    ) -> None:
        """`uri`: the log prefix (`raw_uri`): a local folder, file:// or s3://. `s3`: an
        `ragas_ops.storage.S3Options` (default: from the AWS environment). `exit_timeout`: how
        long the interpreter's exit waits for the last write. `defaults`: metadata written on
        every row (e.g. `app="support-bot"`), overridden by `append`'s."""
        if max_rows_per_file < 1 or max_buffered_rows < 1:
            raise ValueError("max_rows_per_file and max_buffered_rows must be positive")
        check_metadata_names(defaults)
        self.uri = uri
        self._s3 = s3
        self.max_rows_per_file = max_rows_per_file
        self.flush_interval = flush_interval
        self.max_buffered_rows = max_buffered_rows
        self.retry_seconds = retry_seconds
        self.max_retry_seconds = max_retry_seconds
        self.warn_every_seconds = warn_every_seconds
        self.defaults = dict(defaults)
        self._rows: deque[Row] = deque()
        self._pending: list[Row] = []  # taken by the flusher, not yet written
        self._pending_count = 0
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._cycle = threading.Condition()
        self._cycles = 0
        self._flush_all = False
        self._closed = False
        self._stop = False
        self._dropped = 0
        self._written_rows = 0
        self._written_files = 0
        self._failures = 0
        self._last_error: str | None = None
        self._warned_at: dict[str, float] = {}
        self._suffix = f"{_safe(socket.gethostname())}-{os.getpid()}"
        # the storage modules and the filesystem are made now, not at the first write: that
        # may be at the interpreter's exit, when they can no longer be set up
        import pyarrow.compute  # noqa: F401

        from ragas_ops.storage import locate

        self._location: Any = locate(uri, s3)
        self._thread = self._start_thread()
        _writers.add(self)
        self._at_exit = close_at_exit
        self.exit_timeout = exit_timeout
        if close_at_exit:
            atexit.register(self._close_at_exit)

    def _start_thread(self) -> threading.Thread:
        thread = threading.Thread(
            target=self._run, name=f"ragas-ops-log-writer-{self.uri}", daemon=True
        )
        thread.start()
        return thread

    def _after_fork_in_child(self) -> None:
        """A forked worker (gunicorn, multiprocessing) gets a writer of its own: an empty
        buffer (the parent writes its rows), new locks, its own thread and file names."""
        self._rows = deque()
        self._pending = []
        self._pending_count = 0
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._cycle = threading.Condition()
        self._suffix = f"{_safe(socket.gethostname())}-{os.getpid()}"
        self._location = None  # filesystem clients are not fork-safe
        if not self._closed:
            self._thread = self._start_thread()

    # -- the hot path ------------------------------------------------------------------------

    def append(
        self,
        question: Any,
        contexts: Any,
        answer: Any,
        *,
        id: str | int | None = None,
        timestamp: datetime | str | float | None = None,
        **metadata: Any,
    ) -> str | None:
        """Buffer one interaction; returns its id, or None when it was dropped (full buffer or
        closed writer, counted in `dropped`). Never raises because of storage, never does I/O.

        `id`: the row's id (a string or an integer, kept as text; a uuid4 when none).
        `timestamp`: when it happened (now when none): a datetime (naive: UTC), ISO 8601
        text as a JSON log holds it (`2026-11-21T10:00:00Z`; no offset: UTC) or seconds since
        the epoch. A timestamp that is none of these is a ValueError or TypeError here, in the
        caller's hands: never a row lost later in the background."""
        row_id = str(id) if id is not None else str(uuid.uuid4())
        stamp = row_timestamp(timestamp)
        rows = self._rows
        with self._lock:
            if self._closed or len(rows) + self._pending_count >= self.max_buffered_rows:
                self._dropped += 1
                dropped = True
            else:
                rows.append((row_id, stamp, question, contexts, answer, metadata))
                dropped = False
                full = len(rows) >= self.max_rows_per_file
        if dropped:
            self._warn_dropped()
            return None
        if full:
            self._wake.set()
        return row_id

    # -- state -------------------------------------------------------------------------------

    @property
    def dropped(self) -> int:
        """Rows lost: the buffer was full or the writer closed (or could not write at exit)."""
        return self._dropped

    @property
    def buffered(self) -> int:
        """Rows waiting to be written (including those whose write is being retried)."""
        return len(self._rows) + self._pending_count

    @property
    def written_rows(self) -> int:
        return self._written_rows

    @property
    def written_files(self) -> int:
        return self._written_files

    @property
    def last_error(self) -> str | None:
        """The last storage error, or None after a successful write."""
        return self._last_error

    def stats(self) -> dict[str, Any]:
        return {
            "buffered": self.buffered,
            "dropped": self.dropped,
            "written_rows": self.written_rows,
            "written_files": self.written_files,
            "failures": self._failures,
            "last_error": self._last_error,
        }

    # -- flushing ----------------------------------------------------------------------------

    def flush(self, timeout: float | None = 30.0) -> bool:
        """Ask the background thread to write everything buffered now and wait (at most
        `timeout` seconds) for it to try; True when nothing is left buffered."""
        if not self._thread.is_alive():
            return self.buffered == 0
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cycle:
            target = self._cycles + 2  # a whole cycle that began after this call
            while self._cycles < target and self._thread.is_alive():
                self._flush_all = True
                self._wake.set()
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    break
                self._cycle.wait(remaining)
        return self.buffered == 0

    async def aflush(self, timeout: float | None = 30.0) -> bool:
        """`flush` for coroutines: waits in a worker thread, not on the event loop."""
        import asyncio

        return await asyncio.to_thread(self.flush, timeout)

    def close(self, timeout: float | None = 30.0) -> None:
        """Write what is buffered and stop the background thread; later appends are dropped.
        Rows that cannot be written by then are counted in `dropped`."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        if self._at_exit:
            with contextlib.suppress(Exception):
                atexit.unregister(self._close_at_exit)
        self._stop = True
        self._wake.set()
        self._thread.join(timeout)
        lost = self.buffered
        if lost:
            with self._lock:
                self._dropped += lost
            log.warning(
                "ragas-ops log writer closed with %d row(s) not written to %s (last error: %s)",
                lost,
                self.uri,
                self._last_error,
            )

    def _close_at_exit(self) -> None:
        self.close(self.exit_timeout)

    def __enter__(self) -> LogWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the background thread ---------------------------------------------------------------

    def _run(self) -> None:
        """Write full files as soon as they fill up; everything buffered every
        `flush_interval` seconds, on `flush()`, at close, and when retrying after a failure."""
        delay = self.retry_seconds
        failing = False
        next_everything = time.monotonic() + self.flush_interval
        while True:
            wait = delay if failing else max(0.0, next_everything - time.monotonic())
            self._wake.wait(wait)
            self._wake.clear()
            stopping = self._stop
            everything = (
                stopping or failing or self._flush_all or time.monotonic() >= next_everything
            )
            self._flush_all = False
            ok = self._drain(everything)
            if everything and ok:
                next_everything = time.monotonic() + self.flush_interval
            with self._cycle:
                self._cycles += 1
                self._cycle.notify_all()
            if stopping:
                if not ok and self.buffered:
                    # one more try at exit, then give up: close() counts what is left
                    self._drain(True)
                return
            failing = not ok
            delay = self.retry_seconds if ok else min(delay * 2, self.max_retry_seconds)

    def _drain(self, everything: bool) -> bool:
        """Write what is buffered, in files of at most max_rows_per_file rows per day (only
        full files unless `everything`); False when storage failed (the rows stay buffered)."""
        with self._lock:
            due = len(self._rows)  # rows that arrive meanwhile wait for the next full file
        while True:
            with self._lock:
                waiting = len(self._rows) + len(self._pending)
                if not waiting or (
                    waiting < self.max_rows_per_file and not (everything and (due or self._pending))
                ):
                    return True
                room = self.max_rows_per_file - len(self._pending)
                while room > 0 and self._rows:
                    self._pending.append(self._rows.popleft())
                    room -= 1
                    due -= 1
                self._pending_count = len(self._pending)
            try:
                self._write_pending()
            except Exception as error:  # storage is down or slow: keep the rows, retry later
                self._failures += 1
                self._last_error = f"{type(error).__name__}: {error}"
                self._warn(
                    "write",
                    "ragas-ops log writer cannot write to %s (%s); %d row(s) buffered, "
                    "retrying in the background",
                    self.uri,
                    self._last_error,
                    self.buffered,
                )
                return False
            self._last_error = None

    def _write_pending(self) -> None:
        by_day: dict[str, list[Row]] = {}
        for row in self._pending:
            by_day.setdefault(day_of(row[1]), []).append(row)
        for day, rows in by_day.items():
            self._write_file(day, rows)
            written = {id(row) for row in rows}
            self._pending = [row for row in self._pending if id(row) not in written]
            with self._lock:
                self._pending_count = len(self._pending)
            self._written_rows += len(rows)
            self._written_files += 1

    def _write_file(self, day: str, rows: list[Row]) -> None:
        from ragas_ops.contract.layout import day_folder
        from ragas_ops.storage import locate

        if self._location is None:
            self._location = locate(self.uri, self._s3)
        now = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
        name = f"part-{now}-{self._suffix}-{uuid.uuid4().hex[:12]}.parquet"
        write_rows(self._location.child(day_folder(day), name), rows, self.defaults)

    # -- warnings ----------------------------------------------------------------------------

    def _warn_dropped(self) -> None:
        reason = "it is closed" if self._closed else f"{self.max_buffered_rows} rows wait"
        self._warn(
            "dropped",
            "ragas-ops log writer dropped a row (%s; %d dropped so far; last storage error: %s)",
            reason,
            self._dropped,
            self._last_error,
        )

    def _warn(self, key: str, message: str, *args: Any) -> None:
        now = time.monotonic()
        last = self._warned_at.get(key)
        if last is not None and now - last < self.warn_every_seconds:
            return
        self._warned_at[key] = now
        log.warning(message, *args)


def write_rows(location: Any, rows: Sequence[Row], defaults: Mapping[str, Any] | None) -> None:
    """Write `rows` as one Parquet file at `location` (a `ragas_ops.storage.Location`) that
    appears whole or not at all; raises on storage errors."""
    from ragas_ops.storage import ParquetOutput

    table = rows_to_table(rows, defaults)
    output = ParquetOutput(location, table.schema)
    try:
        output.write(table)
        output.commit()
    except BaseException:
        with contextlib.suppress(Exception):
            output.abort()
        raise


def day_of(stamp: float | datetime) -> str:
    """The UTC day (YYYY-MM-DD) of a row's timestamp: its partition."""
    return _utc(stamp).date().isoformat()


def rows_to_table(rows: Sequence[Row], defaults: Mapping[str, Any] | None = None) -> Any:
    """Buffered rows as an Arrow table of the log lake's columns.

    Columns are converted by Arrow in one call each when the values already have the right
    types (the common case), and value by value only when they do not: the background thread
    holds the GIL as briefly as it can, so that the application's threads are not held up."""
    import pyarrow as pa

    defaults = defaults or {}
    names: dict[str, None] = dict.fromkeys(defaults)
    for row in rows:
        names.update(dict.fromkeys(row[5]))
    columns: dict[str, Any] = {
        "id": _column([row[0] for row in rows], pa.string(), _text),
        "timestamp": _timestamps([row[1] for row in rows]),
        "question": _column([row[2] for row in rows], pa.string(), _text),
        "contexts": _contexts_column([row[3] for row in rows]),
        "answer": _column([row[4] for row in rows], pa.string(), _text),
    }
    for name in names:
        if name in RESERVED:
            continue
        default = defaults.get(name)
        values = [row[5].get(name, default) for row in rows]
        columns[name] = _column(values, pa.string(), _metadata_text)
    return pa.table(columns)


def _column(values: list[Any], type_: Any, clean: Any) -> Any:
    import pyarrow as pa

    try:
        return pa.array(values, type_)
    except (pa.ArrowException, TypeError, ValueError):
        return pa.array([clean(value) for value in values], type_)


def _contexts_column(values: list[Any]) -> Any:
    import pyarrow as pa

    kind = pa.list_(pa.string())
    if any(isinstance(value, str) for value in values):  # Arrow would split it in characters
        return pa.array([_texts(value) for value in values], kind)
    return _column(values, kind, _texts)


def _timestamps(stamps: list[float | datetime]) -> Any:
    import pyarrow as pa
    import pyarrow.compute as pc

    kind = pa.timestamp("us", tz="UTC")
    if all(type(stamp) is float for stamp in stamps):
        micros = pc.cast(pc.round(pc.multiply(pa.array(stamps, pa.float64()), 1e6)), pa.int64())
        return micros.cast(kind)
    return pa.array([_utc(stamp) for stamp in stamps], kind)


def row_timestamp(timestamp: datetime | str | float | None) -> float | datetime:
    """`append`'s timestamp as the writer keeps it: epoch seconds (a float) or an aware
    datetime; a value that is no time raises, naming it."""
    if timestamp is None:
        return time.time()
    if isinstance(timestamp, datetime):
        return timestamp if timestamp.tzinfo else timestamp.replace(tzinfo=UTC)
    if isinstance(timestamp, bool) or not isinstance(timestamp, str | int | float):
        raise TypeError(
            f"timestamp must be a datetime, ISO 8601 text or epoch seconds, got "
            f"{type(timestamp).__name__} {timestamp!r}"
        )
    if not isinstance(timestamp, str):
        return float(timestamp)
    try:
        moment = datetime.fromisoformat(timestamp)
    except ValueError:
        raise ValueError(
            f"timestamp {timestamp!r} is not an ISO 8601 time (such as 2026-11-21T10:00:00Z)"
        ) from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def check_metadata_names(metadata: Mapping[str, Any]) -> None:
    clash = [name for name in metadata if name in RESERVED]
    if clash:
        raise ValueError(f"metadata may not be named {clash}: those are the log's own columns")


def _utc(stamp: float | datetime) -> datetime:
    if isinstance(stamp, datetime):
        return stamp.replace(tzinfo=UTC) if stamp.tzinfo is None else stamp.astimezone(UTC)
    return datetime.fromtimestamp(stamp, UTC)


def _text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return str(value)


def _texts(value: Any) -> list[str | None] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return [value]
    if not isinstance(value, Iterable):
        return [str(value)]
    return [_text(item) for item in value]


def _metadata_text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool | int | float):
        return str(value)
    try:
        return json.dumps(value, default=str, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        return str(value)


def _safe(text: str) -> str:
    return "".join(char if char.isalnum() or char in "-_." else "_" for char in text)[:40] or "host"


_writers: weakref.WeakSet[LogWriter] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    for writer in list(_writers):
        writer._after_fork_in_child()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


# -- a process-wide writer for application code --------------------------------------------


class _Process:
    """The process-wide writer (set by `configure`, else made on first use)."""

    writer: LogWriter | None = None
    lock = threading.Lock()


def configure(uri: str | None = None, **options: Any) -> LogWriter:
    """Set up the process-wide writer (closing a previous one). `uri` defaults to the
    `pipeline.raw_uri` setting (config file or `RAGAS_OPS_PIPELINE_RAW_URI`); `options` are
    LogWriter's (buffer sizes, intervals, and segment metadata for every row)."""
    writer = LogWriter(uri if uri is not None else _settings_raw_uri(), **options)
    with _Process.lock:
        previous, _Process.writer = _Process.writer, writer
    if previous is not None:
        previous.close()
    return writer


def default_writer() -> LogWriter:
    """The process-wide writer, configured from the settings on first use."""
    with _Process.lock:
        if _Process.writer is None:
            _Process.writer = LogWriter(_settings_raw_uri())
        return _Process.writer


def _settings_raw_uri() -> str:
    from ragas_ops.config import load_settings

    return load_settings().pipeline.raw_uri


def append(question: Any, contexts: Any, answer: Any, **metadata: Any) -> str | None:
    """Log one interaction with the process-wide writer (see `configure`)."""
    return default_writer().append(question, contexts, answer, **metadata)
