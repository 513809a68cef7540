"""The shared tier of the judge cache: one object per key in an object store, for every host.

Under the configured prefix (`judge.shared_cache`, an `s3://` URI or a folder):

    responses/<k[:2]>/<key>.json    an answer: written once, only where none is
    failures/<k[:2]>/<key>.json     a stored failure (a reply that could not be used)
    embeddings/<k[:2]>/<key>.f64    a vector: its float64 values, little-endian

Every object carries its `integrity.entry_digest`, bound to its key, and is checked on read:
a JSON object is `{"digest": ..., "value": ...}` (the digest of the value's canonical JSON), a
vector is `RGV1`, its 32-byte digest, then its values. An object that fails its check, or
written before digests (a bare value), is a miss: it is asked again and the answer is written
over it, and the first ones are logged one line each.

An answer and a failure of one key are separate objects, so a failure can never hide an answer
that another host bought: a lookup reads the answer first, the failure only when there is no
answer, and a newer failure replaces an older one. Two hosts writing one key at once leave one
of their objects whole (an S3 PUT appears whole; a local file is renamed into place).

A store that is down or refuses access never stops scoring: the first error is logged once
(its message without credentials), counted, and the tier is left alone for
`retry_seconds`; meanwhile lookups miss and writes are skipped (the local tier keeps them).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from ragas_ops.judge.cache.base import Vector
from ragas_ops.judge.cache.integrity import MismatchLog, canonical_json, entry_digest
from ragas_ops.secrets import Secret, redact
from ragas_ops.storage import Location

log = logging.getLogger(__name__)

_VECTOR_DTYPE = np.dtype("<f8")
_VECTOR_MAGIC = b"RGV1"  # 4 bytes: a sealed vector's length is never a multiple of 8
_DIGEST_BYTES = 32
_MOST_REMEMBERED_ABSENT = 100_000
"""Bound of the set of objects seen missing (an optimisation only: forgetting costs a HEAD)."""


class SharedCache:
    """Judge responses and vectors as objects under `root`; blocking calls (run them in a
    thread from a coroutine). `count` is told of every event by name (`read`, `hit`, `written`,
    `error`, `skipped`...)."""

    def __init__(
        self,
        root: Location,
        *,
        retry_seconds: float,
        count: Callable[[str], None],
        secrets: tuple[Secret | None, ...] = (),
    ) -> None:
        self.root = root
        self._retry_seconds = retry_seconds
        self._count = count
        self._secrets = secrets
        self._lock = threading.Lock()
        self._down_until = 0.0
        self._down = False
        self._warned = False
        self._absent: set[str] = set()
        self.mismatches = MismatchLog(f"at {root.uri}")
        """Objects found missing (or unreadable) here: their writer need not look again."""

    # -- responses ----------------------------------------------------------------------------

    def read_answer(self, key: str) -> Any | None:
        return self._read_json(key, self._object("responses", key, "json"))

    def read_failure(self, key: str) -> Any | None:
        # Not remembered when missing: a failure is written whether one is there or not.
        return self._read_json(key, self._object("failures", key, "json"), remember_absent=False)

    def write_answer(self, key: str, value: Any) -> None:
        """Store an answer unless one is stored already (first wins)."""
        self._write(self._object("responses", key, "json"), _sealed(key, value), if_absent=True)

    def write_failure(self, key: str, value: Any) -> None:
        """Store a failure, replacing an older one (an answer of the key still wins)."""
        self._write(self._object("failures", key, "json"), _sealed(key, value), if_absent=False)

    # -- embeddings ---------------------------------------------------------------------------

    def read_vector(self, key: str) -> Vector | None:
        location = self._object("embeddings", key, "f64")
        data = self._read(location)
        if data is None:
            return None
        header = len(_VECTOR_MAGIC) + _DIGEST_BYTES
        values = data[header:]
        if not data.startswith(_VECTOR_MAGIC) or not values or len(values) % 8:
            self._unchecked(key, location, "no digest")
            return None
        if data[len(_VECTOR_MAGIC) : header].hex() != entry_digest(key, values):
            self._unchecked(key, location, "its digest")
            return None
        return np.frombuffer(values, dtype=_VECTOR_DTYPE).astype(np.float64)

    def write_vector(self, key: str, vector: Vector) -> None:
        values = np.asarray(vector, dtype=_VECTOR_DTYPE).tobytes()
        data = _VECTOR_MAGIC + bytes.fromhex(entry_digest(key, values)) + values
        self._write(self._object("embeddings", key, "f64"), data, if_absent=True)

    # -- objects ------------------------------------------------------------------------------

    def _object(self, kind: str, key: str, extension: str) -> Location:
        return self.root.child(kind, key[:2], f"{key}.{extension}")

    def _read_json(
        self, key: str, location: Location, *, remember_absent: bool = True
    ) -> Any | None:
        data = self._read(location, remember_absent=remember_absent)
        if data is None:
            return None
        try:
            sealed = json.loads(data.decode("utf-8"))
        except ValueError:  # UnicodeDecodeError is one too
            self._unreadable(location)
            return None
        if not isinstance(sealed, dict) or "digest" not in sealed or "value" not in sealed:
            self._unchecked(key, location, "no digest")
            return None
        value = sealed["value"]
        if sealed["digest"] != entry_digest(key, canonical_json(value)):
            self._unchecked(key, location, "its digest")
            return None
        if not isinstance(value, dict) or not isinstance(value.get("texts"), list):
            self._unreadable(location)
            return None
        return value

    def _unchecked(self, key: str, location: Location, why: str) -> None:
        """An object that fails its check: a miss, and the next answer is written over it."""
        self._count("mismatch")
        self.mismatches.report(key, f"{location.uri}: {why}")
        self._remember_absent(location)

    def _read(self, location: Location, *, remember_absent: bool = True) -> bytes | None:
        if not self._available():
            return None
        try:
            data = location.read_bytes()
        except OSError as error:
            self._failed(error)
            return None
        self._succeeded()
        self._count("read")
        if data is None and remember_absent:
            self._remember_absent(location)
        return data

    def _unreadable(self, location: Location) -> None:
        """A damaged object is a miss, and the next answer for it is written over it."""
        self._count("unreadable")
        log.warning("the shared judge cache's object %s is unreadable: asked again", location.uri)
        self._remember_absent(location)

    def _remember_absent(self, location: Location) -> None:
        with self._lock:
            if len(self._absent) >= _MOST_REMEMBERED_ABSENT:
                self._absent.clear()
            self._absent.add(location.path)

    def _write(self, location: Location, data: bytes, *, if_absent: bool) -> None:
        if not self._available():
            return
        with self._lock:
            known_absent = location.path in self._absent
            self._absent.discard(location.path)
        try:
            if if_absent and not known_absent and location.exists():
                self._count("already_stored")
                return
            location.write_bytes(data)
        except OSError as error:
            self._failed(error)
            return
        self._succeeded()
        self._count("written")

    # -- outages ------------------------------------------------------------------------------

    def _available(self) -> bool:
        with self._lock:
            if self._down and time.monotonic() < self._down_until:
                self._count("skipped")
                return False
            return True

    def _failed(self, error: OSError) -> None:
        self._count("error")
        with self._lock:
            self._down, self._down_until = True, time.monotonic() + self._retry_seconds
            first, self._warned = not self._warned, True
        if first:
            log.warning(
                "the shared judge cache at %s cannot be used (%s): scoring goes on with the "
                "local cache alone, and tries the shared one again every %g s",
                self.root.uri,
                redact(f"{type(error).__name__}: {error}", *self._secrets),
                self._retry_seconds,
            )

    def _succeeded(self) -> None:
        with self._lock:
            came_back, self._down = self._down, False
        if came_back:
            log.info("the shared judge cache at %s answers again", self.root.uri)


def _sealed(key: str, value: Any) -> bytes:
    """The object stored for `value`: it and its digest, bound to `key`."""
    sealed = {"digest": entry_digest(key, canonical_json(value)), "value": value}
    return json.dumps(sealed, ensure_ascii=False).encode("utf-8")
