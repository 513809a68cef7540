"""One account's rate limits shared by every scoring process on a machine, with no server.

Each process (a `ragas-ops score` run, a pipeline chunk) registers as a participant in a SQLite
file beside the judge cache (`budget.sqlite`), with its pool (`nightly` or `backfill`) and a
heartbeat. Every `heartbeat_seconds` it beats, drops the participants whose heartbeat is older
than `DEAD_AFTER_BEATS` intervals (a killed process), counts the live ones of its account (the
endpoint and the model: providers limit each model of an account apart) and sets its limiter
to its share (`share_of`). If the file cannot be used (unwritable, locked too long), the
process falls back to its static share and keeps scoring, after one warning.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import sqlite3
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from ragas_ops.config import BudgetPool, JudgeSettings
from ragas_ops.judge.rate_limit import RateLimiter

log = logging.getLogger(__name__)

T = TypeVar("T")

DEAD_AFTER_BEATS = 3
"""A participant whose heartbeat is older than this many intervals has died: it drops out."""

LOCK_TIMEOUT_SECONDS = 2.0
"""How long a process waits for the file's lock before it counts as a coordinator failure."""


@dataclass(frozen=True)
class Rates:
    """Requests and tokens per minute; None is no limit."""

    rpm: float | None
    tpm: float | None

    def scaled(self, fraction: float) -> Rates:
        return Rates(
            rpm=None if self.rpm is None else max(1.0, self.rpm * fraction),
            tpm=None if self.tpm is None else max(1.0, self.tpm * fraction),
        )


def share_fraction(pool: BudgetPool, live: Mapping[str, int], backfill_share: float) -> float:
    """The fraction of the account one participant of `pool` may use, given the live
    participants by pool (itself included).

    The nightly pool has priority: while a nightly participant is live, backfill participants
    share `backfill_share` of the account and nightly ones the rest; a pool alone shares it all.
    """
    nightly, backfill = max(0, live.get("nightly", 0)), max(0, live.get("backfill", 0))
    if pool == "nightly":
        nightly = max(1, nightly)
        return (1.0 - backfill_share if backfill else 1.0) / nightly
    backfill = max(1, backfill)
    return (backfill_share if nightly else 1.0) / backfill


def share_of(
    account: Rates, pool: BudgetPool, live: Mapping[str, int], backfill_share: float
) -> Rates:
    """One participant's rates (see `share_fraction`)."""
    return account.scaled(share_fraction(pool, live, backfill_share))


class CoordinatorError(Exception):
    """The budget file could not be used: the process falls back to its static share."""


class LocalCoordinator:
    """A participant's view of the budget file (blocking calls: run them in a thread)."""

    def __init__(
        self,
        path: Path,
        account: str,
        pool: BudgetPool,
        heartbeat_seconds: float,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.path = path
        self.account = account
        self.pool = pool
        self.heartbeat_seconds = heartbeat_seconds
        self._clock = clock  # wall time: heartbeats are compared across processes
        self.participant = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"

    def join(self) -> dict[str, int]:
        """Register (or beat again) and return the live participants of the account by pool."""
        return self._run(self._beat)

    def leave(self) -> None:
        self._run(
            lambda db: db.execute("DELETE FROM participants WHERE id = ?", (self.participant,))
        )

    def _run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(self.path, timeout=LOCK_TIMEOUT_SECONDS, isolation_level=None)
            try:
                db.execute(
                    "CREATE TABLE IF NOT EXISTS participants (id TEXT PRIMARY KEY, "
                    "account TEXT NOT NULL, pool TEXT NOT NULL, heartbeat REAL NOT NULL)"
                )
                db.execute("BEGIN IMMEDIATE")
                result = work(db)
                db.execute("COMMIT")
                return result
            finally:
                db.close()
        except (sqlite3.Error, OSError) as error:
            raise CoordinatorError(f"{self.path}: {error}") from None

    def _beat(self, db: sqlite3.Connection) -> dict[str, int]:
        now = self._clock()
        db.execute(
            "DELETE FROM participants WHERE heartbeat < ?",
            (now - DEAD_AFTER_BEATS * self.heartbeat_seconds,),
        )
        db.execute(
            "INSERT INTO participants (id, account, pool, heartbeat) VALUES (?, ?, ?, ?) "
            "ON CONFLICT(id) DO UPDATE SET heartbeat = excluded.heartbeat",
            (self.participant, self.account, self.pool, now),
        )
        rows = db.execute(
            "SELECT pool, COUNT(*) FROM participants WHERE account = ? GROUP BY pool",
            (self.account,),
        ).fetchall()
        return {str(pool): int(count) for pool, count in rows}


class SharedBudget:
    """Keeps a limiter at this process's share of the account while the judge runs."""

    def __init__(
        self,
        coordinator: LocalCoordinator,
        limiter: RateLimiter,
        account: Rates,
        fallback: Rates,
        backfill_share: float,
    ) -> None:
        self.coordinator = coordinator
        self.limiter = limiter
        self.account = account
        self.fallback = fallback
        self.backfill_share = backfill_share
        self.live: dict[str, int] = {}
        """The live participants of the account by pool, at the last heartbeat."""
        self.failed = False
        self._task: asyncio.Task[None] | None = None
        self._started = False
        self._lock = asyncio.Lock()

    async def start(self) -> None:
        """Join before the first request (idempotent), then beat in the background."""
        if self._started:
            return
        async with self._lock:
            if self._started:
                return
            self._started = True
            if await self._refresh():
                self._task = asyncio.create_task(self._beat_forever())

    async def stop(self) -> None:
        """Stop beating and leave, so the others take this process's share at once."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        if self._started and not self.failed:
            with contextlib.suppress(CoordinatorError):
                await asyncio.to_thread(self.coordinator.leave)

    async def _beat_forever(self) -> None:
        while await self._refresh():
            await asyncio.sleep(self.coordinator.heartbeat_seconds)

    async def _refresh(self) -> bool:
        try:
            self.live = await asyncio.to_thread(self.coordinator.join)
        except CoordinatorError as error:
            self._fall_back(str(error))
            return False
        share = share_of(self.account, self.coordinator.pool, self.live, self.backfill_share)
        self.limiter.set_rates(share.rpm, share.tpm)
        return True

    def _fall_back(self, problem: str) -> None:
        self.failed = True
        self.limiter.set_rates(self.fallback.rpm, self.fallback.tpm)
        log.warning(
            "the shared judge budget is unavailable (%s): this process keeps scoring at its "
            "static share, %s rpm and %s tpm",
            problem,
            _rate(self.fallback.rpm),
            _rate(self.fallback.tpm),
        )


def _rate(value: float | None) -> str:
    return "unlimited" if value is None else f"{value:.0f}"


def budget_file(cache_path: str | None) -> Path | None:
    """The budget file beside the judge cache; None when the cache lives in memory."""
    return None if cache_path is None else Path(cache_path).parent / "budget.sqlite"


def shared_budget_for(
    settings: JudgeSettings, endpoint: str, limiter: RateLimiter
) -> SharedBudget | None:
    """The shared budget the settings ask for, or None: `shared_budget = none`, a cache in
    memory (no file to share), or no rate limit to share."""
    path = budget_file(settings.cache_path)
    if settings.shared_budget == "none" or path is None:
        return None
    if settings.rpm is None and settings.tpm is None:
        return None
    account = Rates(settings.rpm, settings.tpm)
    coordinator = LocalCoordinator(
        path,
        f"{endpoint} {settings.model}",
        settings.budget_pool,
        settings.shared_budget_heartbeat_seconds,
    )
    return SharedBudget(
        coordinator, limiter, account, static_rates(settings), settings.backfill_share
    )


def static_rates(settings: JudgeSettings) -> Rates:
    """The rates of a process that shares nothing: its static share of `rpm` and `tpm`."""
    return Rates(settings.rpm, settings.tpm).scaled(settings.static_share)
