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
import sqlite3
import threading
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS embeddings (key TEXT PRIMARY KEY, vector BLOB NOT NULL);
"""
_SQLITE_MAX_VARIABLES = 500


class ResponseCache:
    """Judge responses by key. `path=None` keeps them in memory for this process only."""

    def __init__(self, path: Path | None) -> None:
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(
            ":memory:" if path is None else str(path),
            timeout=60.0,  # waits for another process's write instead of failing
            isolation_level=None,  # autocommit: every put is its own short transaction
            check_same_thread=False,
        )
        if path is not None:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(_SCHEMA)

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
        with self._lock:
            row = self._db.execute("SELECT value FROM responses WHERE key = ?", (key,)).fetchone()
        return None if row is None else json.loads(row[0])

    def put(self, key: str, value: Any) -> None:
        """Store `value` unless an answer is stored already; a stored failure (a value with
        an `outcome`) is replaced."""
        encoded = json.dumps(value, ensure_ascii=False)
        with self._lock:
            self._db.execute(
                "INSERT INTO responses (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE "
                "SET value = excluded.value "
                "WHERE json_extract(responses.value, '$.outcome') IS NOT NULL",
                (key, encoded),
            )

    def get_vectors(self, keys: Iterable[str]) -> dict[str, npt.NDArray[np.float64]]:
        """The cached vectors among `keys`."""
        wanted = list(keys)
        found: dict[str, npt.NDArray[np.float64]] = {}
        with self._lock:
            for start in range(0, len(wanted), _SQLITE_MAX_VARIABLES):
                chunk = wanted[start : start + _SQLITE_MAX_VARIABLES]
                marks = ",".join("?" * len(chunk))
                rows = self._db.execute(
                    f"SELECT key, vector FROM embeddings WHERE key IN ({marks})",  # noqa: S608 (only placeholders)
                    chunk,
                ).fetchall()
                for key, blob in rows:
                    found[key] = np.frombuffer(blob, dtype=np.float64)
        return found

    def put_vectors(self, vectors: dict[str, npt.NDArray[np.float64]]) -> None:
        rows = [
            (key, np.asarray(vector, dtype=np.float64).tobytes()) for key, vector in vectors.items()
        ]
        with self._lock:
            self._db.execute("BEGIN")
            try:
                self._db.executemany(
                    "INSERT OR IGNORE INTO embeddings (key, vector) VALUES (?, ?)", rows
                )
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def close(self) -> None:
        with self._lock:
            self._db.close()
