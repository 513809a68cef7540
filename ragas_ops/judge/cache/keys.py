"""The content-addressed key of a judge response or embedding."""

from __future__ import annotations

import hashlib
import json
from typing import Any


def cache_key(**parts: Any) -> str:
    """A stable digest of `parts` (JSON-serialisable): the SHA-256 hex of their canonical JSON."""
    canonical = json.dumps(parts, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()
