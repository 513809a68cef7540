"""The judge cache: content-addressed judge responses and embeddings, so nothing is paid twice.

`local.ResponseCache` is the near tier, a SQLite file per host (the default); with
`judge.shared_cache` set, `tiered.TieredCache` puts it in front of `shared.SharedCache`, one
object per key in the warehouse's object store, which every host of the deployment reads
(docs/shared-cache.md). `open_cache` opens the cache a `spec.CacheSpec` describes.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING

# Light: config imports this package's spec, so this module imports the cache (SQLite, numpy)
# only when a cache is opened.
if TYPE_CHECKING:
    from ragas_ops.judge.cache.base import JudgeCache
    from ragas_ops.judge.cache.spec import CacheSpec
    from ragas_ops.storage import S3Options

SHARED_CACHE_ATTEMPTS = 2
"""Tries per request to the shared tier's S3 store: a store that is down is not worth more."""


def open_cache(spec: CacheSpec, s3: S3Options | None = None) -> JudgeCache:
    """The cache the spec describes: the local file (or memory), in front of the shared
    store when `shared_cache` is set (reached with `s3`, else the AWS environment)."""
    from ragas_ops.judge.cache.local import ResponseCache

    local = ResponseCache(Path(spec.path) if spec.path else None)
    if not spec.shared:
        return local
    from ragas_ops.judge.cache.tiered import TieredCache  # pyarrow: only when it is used
    from ragas_ops.storage import S3Options, locate

    options = dataclasses.replace(
        s3 or S3Options.from_environ(),
        connect_timeout_seconds=spec.shared_timeout_seconds,
        request_timeout_seconds=spec.shared_timeout_seconds,
        max_attempts=SHARED_CACHE_ATTEMPTS,
        small_objects=True,
    )
    return TieredCache(
        local,
        locate(spec.shared, options),
        threads=spec.shared_threads,
        retry_seconds=spec.shared_retry_seconds,
        secrets=options.secrets(),
    )
