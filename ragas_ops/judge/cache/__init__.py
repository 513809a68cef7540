"""The judge cache: content-addressed judge responses and embeddings, so nothing is paid twice.

`local.ResponseCache` is the near tier, a SQLite file per host (the default); with
`judge.shared_cache` set, `tiered.TieredCache` puts it in front of `shared.SharedCache`, one
object per key in the warehouse's object store, which every host of the deployment reads
(docs/shared-cache.md).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING

from ragas_ops.config import JudgeSettings
from ragas_ops.judge.cache.base import JudgeCache, Vector, is_stored_failure
from ragas_ops.judge.cache.keys import cache_key
from ragas_ops.judge.cache.local import ResponseCache

if TYPE_CHECKING:
    from ragas_ops.storage import S3Options

__all__ = [
    "JudgeCache",
    "ResponseCache",
    "Vector",
    "cache_key",
    "is_stored_failure",
    "open_cache",
]

SHARED_CACHE_ATTEMPTS = 2
"""Tries per request to the shared tier's S3 store: a store that is down is not worth more."""


def open_cache(settings: JudgeSettings, s3: S3Options | None = None) -> JudgeCache:
    """The cache the settings describe: the local file (or memory), in front of the shared
    store when `shared_cache` is set (reached with `s3`, else the AWS environment)."""
    local = ResponseCache(Path(settings.cache_path) if settings.cache_path else None)
    if not settings.shared_cache:
        return local
    from ragas_ops.judge.cache.tiered import TieredCache  # pyarrow: only when it is used
    from ragas_ops.storage import S3Options, locate

    options = dataclasses.replace(
        s3 or S3Options.from_environ(),
        connect_timeout_seconds=settings.shared_cache_timeout_seconds,
        request_timeout_seconds=settings.shared_cache_timeout_seconds,
        max_attempts=SHARED_CACHE_ATTEMPTS,
        small_objects=True,
    )
    return TieredCache(
        local,
        locate(settings.shared_cache, options),
        threads=settings.shared_cache_threads,
        retry_seconds=settings.shared_cache_retry_seconds,
        secrets=options.secrets(),
    )
