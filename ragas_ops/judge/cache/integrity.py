"""What makes a cache entry trustworthy: a digest of the stored bytes, bound to the entry's key.

Every tier stores, beside each answer and vector, `entry_digest(key, stored bytes)`: a SHA-256
over a domain tag, the key and the exact bytes kept. A read recomputes it; an entry whose
digest differs (an edit of the stored reply, even of the same length; a reply copied under
another key; a torn or half-written object) is a miss: the request is asked again, the entry
replaced, and a line is logged. It is a checksum, not a signature: it catches corruption,
mistakes and careless edits by anyone and anything (a disk, a sync tool, a script, a bug, a
hand in `sqlite3`), not a forger who can write the store and recompute it (docs/shared-cache.md
says why a keyed digest was not chosen).
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from typing import Any

log = logging.getLogger(__name__)

_DOMAIN = b"ragas-ops judge cache entry v1\0"
LOGGED_MISMATCHES = 10
"""Mismatches logged one by one per cache; after these, they are counted and summed up once."""


def entry_digest(key: str, stored: bytes) -> str:
    """The hex SHA-256 binding `stored` (the exact bytes a tier keeps) to `key`."""
    return hashlib.sha256(_DOMAIN + key.encode("utf-8") + b"\0" + stored).hexdigest()


def canonical_json(value: Any) -> bytes:
    """`value` as JSON in one spelling (sorted keys, no spaces): what the shared tier's digest
    covers, so that a reader that parsed the object recomputes the writer's bytes."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode()


class MismatchLog:
    """Logs an entry that failed its digest: the first `LOGGED_MISMATCHES` one line each,
    then one line saying that further ones are only counted."""

    def __init__(self, where: str) -> None:
        self.where = where
        self.count = 0
        self._lock = threading.Lock()

    def report(self, key: str, why: str) -> None:
        with self._lock:
            self.count += 1
            number = self.count
        if number <= LOGGED_MISMATCHES:
            log.warning(
                "the judge cache %s holds an entry that fails its check (key %s..., %s): "
                "not used, asked again, and replaced",
                self.where,
                key[:12],
                why,
            )
        if number == LOGGED_MISMATCHES:
            log.warning(
                "the judge cache %s: further entries that fail their check are asked again "
                "without a line each (a damaged or edited cache: see docs/shared-cache.md)",
                self.where,
            )
