"""What the provider stated of an account, kept between runs: its limits and its way of counting.

A run with no `rpm`/`tpm` configured paces to the limits the provider's `x-ratelimit-limit-*`
headers state, and `provider_counts = auto` learns how it counts a chat request's tokens
(`provider.CountingLearner`). Both are written, as soon as they are known, to
`<cache folder>/provider_account.json` (the folder of `[judge] cache_path`, beside
`budget.sqlite`), one entry per account (the endpoint and the model, hashed as the shared
budget's key is: no URL or model name in the file). The next run's judge starts with the way of
counting decided (its learner still corrects it), and `ragas-ops estimate` prices the time of a
run at the stated limits when a run learnt them within `RECENT_DAYS`.

The file is a convenience: a folder that cannot be written, or a file that is not this JSON,
costs the run nothing (the judge learns again), and is said once in the log at DEBUG.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from ragas_ops.judge.limits.spec import ProviderCounts

log = logging.getLogger(__name__)

STATED_FILE = "provider_account.json"
RECENT_DAYS = 7
"""How old a stated limit may be for `estimate` to use it (a tier changes rarely; a week keeps
a nightly run's knowledge fresh)."""


@dataclass(frozen=True)
class Stated:
    """What one account's provider said: limits per minute (None: not stated) and counting."""

    rpm: int | None = None
    tpm: int | None = None
    counts: ProviderCounts | None = None
    """`max_tokens` or `usage`, as `provider_counts = auto` last concluded; None: not learnt."""
    learnt_at: str | None = None
    """When the entry last changed (ISO 8601, UTC)."""

    def learnt_within(self, days: float, now: datetime | None = None) -> bool:
        if self.learnt_at is None:
            return False
        try:
            when = datetime.fromisoformat(self.learnt_at)
        except ValueError:
            return False
        return (now or datetime.now(UTC)) - when <= timedelta(days=days)


def stated_file(cache_path: str | None) -> Path | None:
    """The file beside the judge cache; None when the cache lives in memory."""
    return None if cache_path is None else Path(cache_path).parent / STATED_FILE


def account_key(account: str) -> str:
    return hashlib.sha256(account.encode()).hexdigest()[:24]


def read_stated(cache_path: str | None, account: str) -> Stated | None:
    """The account's entry, or None (no file, no entry, or not readable)."""
    path = stated_file(cache_path)
    if path is None:
        return None
    entry = _entries(path).get(account_key(account))
    if not isinstance(entry, dict):
        return None
    known = {name: entry.get(name) for name in ("rpm", "tpm", "counts", "learnt_at")}
    try:
        return Stated(
            rpm=None if known["rpm"] is None else int(known["rpm"]),
            tpm=None if known["tpm"] is None else int(known["tpm"]),
            counts="usage"
            if known["counts"] == "usage"
            else "max_tokens"
            if known["counts"] == "max_tokens"
            else None,
            learnt_at=None if known["learnt_at"] is None else str(known["learnt_at"]),
        )
    except (TypeError, ValueError):
        return None


def remember(cache_path: str | None, account: str, **learnt: Any) -> None:
    """Update the account's entry with `learnt` (`rpm`, `tpm`, `counts`), stamped now; written
    whole and renamed into place, so a reader never sees half of it."""
    path = stated_file(cache_path)
    if path is None:
        return
    try:
        entries = _entries(path)
        key = account_key(account)
        before = read_stated(cache_path, account) or Stated()
        now = datetime.now(UTC).isoformat(timespec="seconds")
        entries[key] = asdict(replace(before, **learnt, learnt_at=now))
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".provider_account.")
        try:
            with os.fdopen(handle, "w") as file:
                json.dump(entries, file, indent=1, sort_keys=True)
            os.replace(temporary, path)
        finally:
            if os.path.exists(temporary):
                os.unlink(temporary)  # not renamed: nothing half-written stays
    except OSError as error:
        log.debug("what the provider stated was not kept in %s: %s", path, error)


def _entries(path: Path) -> dict[str, Any]:
    try:
        found = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}
