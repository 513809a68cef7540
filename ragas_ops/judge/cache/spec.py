"""The judge cache's settings (`CacheSpec`); `[judge]` keys of the config file (see
`config.JudgeSettings`). A settings module: it imports nothing of ragas_ops but the settings
toolkit."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from ragas_ops.settings_fields import ConfigError, at_least_one, positive, setting


def check_shared_cache(uri: str, source: str = "judge.shared_cache") -> None:
    """Refuse a shared cache location that is not a folder, file:// or s3://bucket/prefix,
    or that holds credentials (they come from the aws connection or the AWS environment)."""
    parts = urlsplit(uri)
    if parts.scheme not in ("", "file", "s3"):
        raise ConfigError(f"{source}: use s3://bucket/prefix, a folder or a file:// URI")
    if parts.username is not None or parts.password is not None:
        raise ConfigError(
            f"{source}: the location holds credentials ({parts.scheme}://***@...): S3 "
            "credentials come from pipeline.aws_conn_id or the standard AWS chain"
        )
    if parts.scheme == "s3" and not parts.hostname:
        raise ConfigError(f"{source}: an s3:// location needs a bucket (s3://bucket/prefix)")


@dataclass
class CacheSpec:
    """Where cached judge responses are kept: a local file, and a store every host shares."""

    path: str | None = setting(".ragas-ops-cache/judge.sqlite", key="cache_path")
    """SQLite file of cached judge responses; None keeps the cache in memory for one run."""
    shared: str | None = setting(None, key="shared_cache", check=check_shared_cache)
    """Where every host of the deployment shares cached responses (s3://bucket/prefix, a
    folder or file://), behind the local file; None: the local file alone."""
    shared_threads: int = at_least_one(16, key="shared_cache_threads")
    """Reads and writes of the shared cache in flight at once, per scoring process."""
    shared_timeout_seconds: float = positive(5.0, key="shared_cache_timeout_seconds")
    """Connect and request timeout of the shared cache's S3 store."""
    shared_retry_seconds: float = positive(60.0, key="shared_cache_retry_seconds")
    """After the shared cache failed (down, access denied), how long the local cache is used
    alone before the shared one is tried again."""
