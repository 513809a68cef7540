"""The near tier of the judge cache: responses and embeddings in a SQLite file, per host.

The key is a SHA-256 of everything that determines a response: the model, the request
parameters, the prompt's identity and version, and the messages. So a rerun, a retried task or
a backfill over unchanged rows pays nothing, and a changed prompt or model never reuses an old
answer. SQLite in WAL mode lets several processes (mapped Airflow tasks on one machine) read
and write the same file; the first answer stored for a key wins, except that a stored
failure (a reply that arrived but could not be used, with its `outcome`) gives way to a newer
reply. The shared tier (`shared.py`) keeps the same keys in the object store, for every host.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
from collections import Counter
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ragas_ops.judge.cache.integrity import MismatchLog, entry_digest

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, value TEXT NOT NULL, digest TEXT);
CREATE TABLE IF NOT EXISTS embeddings (key TEXT PRIMARY KEY, vector BLOB NOT NULL, digest TEXT);
"""
_WITH_DIGESTS = 1
"""`PRAGMA user_version` of a file whose every entry has its digest: a file of before (no
`digest` column) is given them once, when first opened; after that, an entry without one
fails its check like an edited one."""
_SQLITE_MAX_VARIABLES = 500
_UNREADABLE = ("SQLITE_CORRUPT", "SQLITE_NOTADB")
"""SQLite's errors for a damaged file (not "locked" or "busy", which are waits)."""

log = logging.getLogger(__name__)


def is_damaged(error: sqlite3.Error) -> bool:
    """Whether `error` says the file is damaged (truncated, overwritten, not SQLite)."""
    return getattr(error, "sqlite_errorname", "") in _UNREADABLE


class ResponseCache:
    """Judge responses by key. `path=None` keeps them in memory for this process only.

    Every entry carries its `integrity.entry_digest`, checked on each read: one that fails is
    deleted, logged and reported missing, so it is asked again. A file SQLite cannot read when
    it is opened (truncated, overwritten, not SQLite) or while it is used is set aside (renamed,
    said in one line with what to do) and a fresh one is started in its place: the run goes on,
    and what the file held is asked again."""

    def __init__(self, path: Path | None) -> None:
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._lock = threading.Lock()
        self.mismatches = MismatchLog(f"file {path}" if path else "in memory")
        self._inode: int | None = None
        self._db = self._open_or_set_aside(path)

    def _open_or_set_aside(self, path: Path | None) -> sqlite3.Connection:
        try:
            if path is not None:
                check_not_truncated(path)
            return self._opened(path)
        except sqlite3.DatabaseError as error:
            if path is None or not is_damaged(error):
                raise
            self._set_aside(path, error)
            return self._opened(path)

    def _opened(self, path: Path | None) -> sqlite3.Connection:
        db = _open(path)
        self._inode = None if path is None else path.stat().st_ino
        return db

    def _set_aside(self, path: Path, error: sqlite3.Error) -> None:
        """Rename the damaged file out of the way, unless another process did already (the
        path no longer names the file this cache opened), and say so in one line."""
        try:
            inode = path.stat().st_ino
        except FileNotFoundError:
            inode = None
        if inode is None or (self._inode is not None and inode != self._inode):
            return
        aside = set_aside(path)
        log.warning(
            "the judge cache file %s cannot be read (%s): set aside as %s, and this run goes "
            "on with a fresh one (what it held is asked again; delete %s when you no longer "
            "need it)",
            path,
            error,
            aside,
            aside.name,
        )

    def count_in(self, events: Counter[str]) -> None:
        """Nothing to count: a local lookup is a hit or a miss, which the judge counts."""

    async def aget(self, key: str) -> Any | None:
        """`get`, for a judge's coroutine (SQLite on this host answers without waiting)."""
        return self.get(key)

    async def aput(self, key: str, value: Any) -> None:
        self.put(key, value)

    async def aget_vectors(self, keys: Iterable[str]) -> dict[str, npt.NDArray[np.float64]]:
        return self.get_vectors(keys)

    async def aput_vectors(self, vectors: dict[str, npt.NDArray[np.float64]]) -> None:
        self.put_vectors(vectors)

    def get(self, key: str) -> Any | None:
        """The stored value of `key`, or None: none stored, or one that fails its check."""
        row = self._execute("SELECT value, digest FROM responses WHERE key = ?", (key,), one=True)
        if row is None:
            return None
        text, digest = row
        if digest == entry_digest(key, text.encode("utf-8")):
            try:
                return json.loads(text)
            except ValueError:
                pass  # stored so (the digest covers it): a bug's entry, asked again all the same
        self._discard("responses", key, "its digest" if digest else "no digest")
        return None

    def put(self, key: str, value: Any) -> None:
        """Store `value` unless an answer is stored already; a stored failure (a value with
        an `outcome`) is replaced."""
        encoded = json.dumps(value, ensure_ascii=False)
        digest = entry_digest(key, encoded.encode("utf-8"))
        self._execute(
            "INSERT INTO responses (key, value, digest) VALUES (?, ?, ?) ON CONFLICT (key) "
            "DO UPDATE SET value = excluded.value, digest = excluded.digest "
            "WHERE CASE WHEN json_valid(responses.value) "
            "THEN json_extract(responses.value, '$.outcome') IS NOT NULL ELSE 1 END",
            (key, encoded, digest),
        )

    def _discard(self, table: str, key: str, why: str) -> None:
        self.mismatches.report(key, f"{table}: {why}")
        self._execute(f"DELETE FROM {table} WHERE key = ?", (key,))  # noqa: S608 (two names)

    def _execute(self, sql: str, parameters: Any, *, one: bool = False) -> Any:
        """`sql` on the file; a file found damaged now is replaced by memory for this run."""
        with self._lock:
            try:
                cursor = self._db.execute(sql, parameters)
                return cursor.fetchone() if one else None
            except sqlite3.DatabaseError as error:
                if not is_damaged(error) or self.path is None:
                    raise
                self._damaged_during_run(error)
                cursor = self._db.execute(sql, parameters)
                return cursor.fetchone() if one else None

    def _damaged_during_run(self, error: sqlite3.Error) -> None:
        """The file turned out damaged while in use: set it aside (if no other process did)
        and go on with a fresh one."""
        assert self.path is not None
        self._db.close()
        self._set_aside(self.path, error)
        self._db = self._opened(self.path)

    def get_vectors(self, keys: Iterable[str]) -> dict[str, npt.NDArray[np.float64]]:
        """The cached vectors among `keys` (one that fails its check is not among them)."""
        wanted = list(keys)
        rows: list[tuple[str, bytes, str | None]] = []
        for start in range(0, len(wanted), _SQLITE_MAX_VARIABLES):
            chunk = wanted[start : start + _SQLITE_MAX_VARIABLES]
            marks = ",".join("?" * len(chunk))
            rows += self._fetch_all(
                f"SELECT key, vector, digest FROM embeddings WHERE key IN ({marks})",  # noqa: S608 (only placeholders)
                chunk,
            )
        found: dict[str, npt.NDArray[np.float64]] = {}
        for key, blob, digest in rows:
            if digest == entry_digest(key, blob) and len(blob) % 8 == 0 and blob:
                found[key] = np.frombuffer(blob, dtype=np.float64)
            else:
                self._discard("embeddings", key, "its digest" if digest else "no digest")
        return found

    def _fetch_all(self, sql: str, parameters: Any) -> list[Any]:
        with self._lock:
            try:
                return self._db.execute(sql, parameters).fetchall()
            except sqlite3.DatabaseError as error:
                if not is_damaged(error) or self.path is None:
                    raise
                self._damaged_during_run(error)
                return []

    def put_vectors(self, vectors: dict[str, npt.NDArray[np.float64]]) -> None:
        rows = []
        for key, vector in vectors.items():
            blob = np.asarray(vector, dtype=np.float64).tobytes()
            rows.append((key, blob, entry_digest(str(key), blob)))  # a bad key: SQLite says
        with self._lock:
            try:
                _insert_vectors(self._db, rows)
            except sqlite3.DatabaseError as error:
                if not is_damaged(error) or self.path is None:
                    raise
                self._damaged_during_run(error)
                _insert_vectors(self._db, rows)

    def close(self) -> None:
        with self._lock:
            self._db.close()


def _insert_vectors(db: sqlite3.Connection, rows: list[tuple[str, bytes, str]]) -> None:
    db.execute("BEGIN")
    try:
        db.executemany(
            "INSERT OR IGNORE INTO embeddings (key, vector, digest) VALUES (?, ?, ?)", rows
        )
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def _open(path: Path | None) -> sqlite3.Connection:
    db = sqlite3.connect(
        ":memory:" if path is None else str(path),
        timeout=60.0,  # waits for another process's write instead of failing
        isolation_level=None,  # autocommit: every put is its own short transaction
        check_same_thread=False,
    )
    try:
        if path is not None:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
        db.executescript(_SCHEMA)
        _add_digests(db)
    except BaseException:
        db.close()
        raise
    return db


def _add_digests(db: sqlite3.Connection) -> None:
    """Give a file of before digests its entries (once: then `user_version` says so). Its
    entries are trusted as they are: asking them all again would pay for a whole cache."""
    if db.execute("PRAGMA user_version").fetchone()[0] >= _WITH_DIGESTS:
        return
    db.execute("BEGIN IMMEDIATE")  # one process migrates; the others find it done
    try:
        if db.execute("PRAGMA user_version").fetchone()[0] < _WITH_DIGESTS:
            for table in ("responses", "embeddings"):
                columns = {row[1] for row in db.execute(f"PRAGMA table_info({table})")}
                if "digest" not in columns:
                    db.execute(f"ALTER TABLE {table} ADD COLUMN digest TEXT")
            _digest_rows(db)
            db.execute(f"PRAGMA user_version = {_WITH_DIGESTS}")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def _digest_rows(db: sqlite3.Connection) -> None:
    responses = db.execute("SELECT key, value FROM responses WHERE digest IS NULL").fetchall()
    db.executemany(
        "UPDATE responses SET digest = ? WHERE key = ?",
        [(entry_digest(key, value.encode("utf-8")), key) for key, value in responses],
    )
    vectors = db.execute("SELECT key, vector FROM embeddings WHERE digest IS NULL").fetchall()
    db.executemany(
        "UPDATE embeddings SET digest = ? WHERE key = ?",
        [(entry_digest(key, blob), key) for key, blob in vectors],
    )


def check_not_truncated(path: Path) -> None:
    """Raise SQLite's "malformed" error for a file shorter than its header says it is (cut
    short by a full disk or a copy): SQLite itself would read what is left and fail only when a
    lookup reaches a missing page, in the middle of a run. Cheap: the header's 100 bytes."""
    if not path.exists() or path.with_name(path.name + "-wal").exists():
        return  # with a write-ahead log the file may lag its pages; SQLite checks those
    with path.open("rb") as handle:
        header = handle.read(100)
    if len(header) < 100 or not header.startswith(b"SQLite format 3\0"):
        return  # empty (new), or not SQLite at all: opening it says so
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages = int.from_bytes(header[28:32], "big")
    valid = header[24:28] == header[92:96]  # the page count is meant for this version
    if valid and pages * page_size > path.stat().st_size:
        error = sqlite3.DatabaseError(
            f"database disk image is malformed: {pages} pages of {page_size} bytes in its "
            f"header, {path.stat().st_size} bytes on disk"
        )
        error.sqlite_errorname = "SQLITE_CORRUPT"
        raise error


def set_aside(path: Path) -> Path:
    """Rename the file (and SQLite's `-wal` and `-shm` beside it) out of the way; the new name
    says when and why: `judge.sqlite.unreadable-20261205T073000Z`."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    aside = path.with_name(f"{path.name}.unreadable-{stamp}")
    for suffix in ("-wal", "-shm"):
        companion = path.with_name(path.name + suffix)
        if companion.exists():
            companion.replace(aside.with_name(aside.name + suffix))
    path.replace(aside)
    return aside
