"""One account's rate limits shared by every scoring process that uses it.

The account (the endpoint and the chat model: providers limit each model of an account apart)
has one set of token buckets in a coordinator that every process updates atomically: a SQLite
file beside the judge cache (`budget.sqlite`, `shared_budget = local`: the processes of one
machine) or a Redis server (`redis`, see `redis_budget.py`: the processes of every machine).
Each request, once its process's own limiter lets it go (Retry-After pauses, AIMD), takes one
request and its estimated tokens from the account's buckets (`SharedBudget.take`); what a reply
really cost, and a 429's refund, are carried to the process's next take.

The account's rates are split between two pool buckets: `backfill` refills at `backfill_share`
of the account, `nightly` at the rest, and what a full bucket would waste spills into the other
(`refilled`). So a pool alone has the whole account, both pools busy get their shares (nightly
first), and budget that a process does not use (it is starting, finishing its last rows,
waiting for answers) goes at once to whoever has work: there is no share to hand out, no
heartbeat to wait for, and a killed process simply stops taking.

If the coordinator fails (the file is unusable or locked too long, Redis is unreachable), the
process falls back to its static share and keeps scoring, after one warning.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

from ragas_ops.config import BudgetPool, JudgeSettings
from ragas_ops.judge.rate_limit import RateLimiter

log = logging.getLogger(__name__)

T = TypeVar("T")

LOCK_TIMEOUT_SECONDS = 2.0
"""How long a process waits for the file's lock before it counts as a coordinator failure."""

BURST_SECONDS = 1.0
"""The account's buckets hold this many seconds of its rates, split like the rates: the
processes together never send more at once than one process alone would."""

MAX_POLL_SECONDS = 0.25
"""A process short of budget looks again at least this often (others take and give back)."""

POOLS: tuple[BudgetPool, BudgetPool] = ("nightly", "backfill")
KINDS = ("requests", "tokens")


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

    def limit(self, kind: str) -> float | None:
        return self.rpm if kind == "requests" else self.tpm


@dataclass(frozen=True)
class AccountPlan:
    """How an account's budget is split: its rates, the backfill pool's share of them, and
    how many seconds of them the buckets hold."""

    account: Rates
    backfill_share: float
    burst_seconds: float = BURST_SECONDS

    def fraction(self, pool: BudgetPool) -> float:
        """The share of the account `pool`'s bucket refills at (what spills over comes on top)."""
        return self.backfill_share if pool == "backfill" else 1.0 - self.backfill_share

    def rate(self, pool: BudgetPool, kind: str) -> float:
        """Units per second that `pool`'s bucket of `kind` refills at (0 when unlimited)."""
        limit = self.account.limit(kind)
        return 0.0 if limit is None else limit / 60.0 * self.fraction(pool)

    def capacity(self, pool: BudgetPool, kind: str) -> float:
        """At least one unit, so that a pool with no share of its own can still take what
        spills over to it."""
        return max(1.0, self.rate(pool, kind) * self.burst_seconds)


State = dict[str, Any]
"""An account's buckets: {"updated": seconds, "nightly": {"requests": level, "tokens": level},
"backfill": {...}}; JSON, so that every coordinator stores it the same way."""


def full_state(plan: AccountPlan, now: float) -> State:
    state: State = {"updated": now}
    for pool in POOLS:
        state[pool] = {kind: plan.capacity(pool, kind) for kind in KINDS}
    return state


def refilled(state: State | None, now: float, plan: AccountPlan) -> State:
    """The buckets refilled up to `now`: each pool at its rate, and what would overflow a full
    bucket spills into the other pool's (up to its capacity). A missing or unreadable state
    starts full."""
    if not _well_formed(state):
        return full_state(plan, now)
    assert state is not None
    elapsed = max(0.0, now - float(state["updated"]))
    fresh: State = {"updated": max(now, float(state["updated"])), "nightly": {}, "backfill": {}}
    for kind in KINDS:
        raw = {pool: float(state[pool][kind]) + plan.rate(pool, kind) * elapsed for pool in POOLS}
        spill = {pool: max(0.0, raw[pool] - plan.capacity(pool, kind)) for pool in POOLS}
        fresh["nightly"][kind] = min(
            plan.capacity("nightly", kind), raw["nightly"] + spill["backfill"]
        )
        fresh["backfill"][kind] = min(
            plan.capacity("backfill", kind), raw["backfill"] + spill["nightly"]
        )
    return fresh


def _well_formed(state: State | None) -> bool:
    try:
        return (
            state is not None
            and all(isinstance(float(state[pool][kind]), float) for pool in POOLS for kind in KINDS)
            and isinstance(float(state["updated"]), float)
        )
    except (KeyError, TypeError, ValueError):
        return False


def take_from(
    state: State | None,
    now: float,
    pool: BudgetPool,
    *,
    requests: float,
    tokens: float,
    plan: AccountPlan,
) -> tuple[State, float]:
    """Refill the account's buckets to `now`, then take `requests` and `tokens` from `pool`'s
    if both hold them (an amount above a bucket's capacity needs a full bucket and leaves it
    below zero; a negative amount gives back). Returns the new state and 0.0, or the state and
    the seconds to wait before looking again (nothing taken)."""
    fresh = refilled(state, now, plan)
    amounts = {"requests": requests, "tokens": tokens}
    wait = 0.0
    for kind in KINDS:
        if plan.account.limit(kind) is not None:
            wait = max(wait, _wait_for(fresh, pool, kind, amounts[kind], plan))
    if wait > 0.0:
        return fresh, min(wait, MAX_POLL_SECONDS)
    for kind in KINDS:
        if plan.account.limit(kind) is not None:
            level = fresh[pool][kind] - amounts[kind]
            fresh[pool][kind] = min(plan.capacity(pool, kind), level)
    return fresh, 0.0


def _wait_for(state: State, pool: BudgetPool, kind: str, amount: float, plan: AccountPlan) -> float:
    needed = min(amount, plan.capacity(pool, kind)) - state[pool][kind]
    if needed <= 1e-9:
        return 0.0
    other: BudgetPool = "backfill" if pool == "nightly" else "nightly"
    rate = plan.rate(pool, kind)
    if state[other][kind] >= plan.capacity(other, kind) - 1e-9:
        rate += plan.rate(other, kind)  # the other pool is idle: its refill spills over
    return MAX_POLL_SECONDS if rate <= 0.0 else needed / rate


class CoordinatorError(Exception):
    """The coordinator could not be used: the process falls back to its static share."""


class Coordinator(Protocol):
    """Where an account's buckets live. Blocking calls: `SharedBudget` runs them in a thread."""

    def take(self, pool: BudgetPool, requests: float, tokens: float, plan: AccountPlan) -> float:
        """`take_from` on the stored state, atomically; raises CoordinatorError."""

    def close(self) -> None: ...


class LocalCoordinator:
    """An account's buckets in a SQLite file shared by the processes of one machine."""

    def __init__(self, path: Path, account: str, clock: Callable[[], float] = time.time) -> None:
        self.path = path
        self.account = account
        self._clock = clock  # wall time: the state is read by other processes
        self._db: sqlite3.Connection | None = None
        self._lock = threading.Lock()  # one connection, used from worker threads in turn

    def take(self, pool: BudgetPool, requests: float, tokens: float, plan: AccountPlan) -> float:
        def work(db: sqlite3.Connection) -> float:
            row = db.execute(
                "SELECT state FROM buckets WHERE account = ?", (self.account,)
            ).fetchone()
            stored = loaded_state(row[0] if row else None)
            state, wait = take_from(
                stored, self._clock(), pool, requests=requests, tokens=tokens, plan=plan
            )
            if wait > 0.0:
                return wait  # nothing taken: the refill is a function of time, no need to store
            db.execute(
                "INSERT INTO buckets (account, state) VALUES (?, ?) "
                "ON CONFLICT(account) DO UPDATE SET state = excluded.state",
                (self.account, json.dumps(state)),
            )
            return wait

        return self._run(work)

    def state(self) -> State | None:
        """The account's stored buckets (for tests and diagnostics)."""

        def read(db: sqlite3.Connection) -> State | None:
            row = db.execute(
                "SELECT state FROM buckets WHERE account = ?", (self.account,)
            ).fetchone()
            return loaded_state(row[0] if row else None)

        return self._run(read)

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None

    def _run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        with self._lock:
            try:
                db = self._db or self._connect()
                db.execute("BEGIN IMMEDIATE")
                try:
                    result = work(db)
                except BaseException:
                    db.execute("ROLLBACK")
                    raise
                db.execute("COMMIT")
                return result
            except (sqlite3.Error, OSError) as error:
                if self._db is not None:
                    with contextlib.suppress(sqlite3.Error):
                        self._db.close()
                    self._db = None
                raise CoordinatorError(f"{self.path}: {error}") from None

    def _connect(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(
            self.path, timeout=LOCK_TIMEOUT_SECONDS, isolation_level=None, check_same_thread=False
        )
        try:
            # The state is a few seconds of budget: losing it in a power cut costs nothing,
            # so commits need not wait for the disk.
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=OFF")
            db.execute(
                "CREATE TABLE IF NOT EXISTS buckets (account TEXT PRIMARY KEY, state TEXT NOT NULL)"
            )
        except sqlite3.Error:
            db.close()
            raise
        self._db = db
        return db


def loaded_state(text: str | bytes | None) -> State | None:
    """A stored state, or None when there is none or it does not parse (it starts full)."""
    if text is None:
        return None
    try:
        state = json.loads(text)
    except ValueError:
        return None
    return state if isinstance(state, dict) else None


class SharedBudget:
    """This process's side of the account's buckets: the limiter takes every request through
    `take` once it has let it go, and gives back through `correct`."""

    def __init__(
        self,
        coordinator: Coordinator,
        limiter: RateLimiter,
        plan: AccountPlan,
        *,
        pool: BudgetPool,
        fallback: Rates,
        where: str,
    ) -> None:
        self.coordinator = coordinator
        self.limiter = limiter
        self.plan = plan
        self.pool = pool
        self.fallback = fallback
        self.where = where
        """The coordinator, for messages (never with a password)."""
        self.failed = False
        self.taken = 0
        """Takes that succeeded: requests sent under the shared budget."""
        self._owed_requests = 0.0
        self._owed_tokens = 0.0
        self._started = False
        self._lock = asyncio.Lock()

    async def start(self) -> None:
        """Check the coordinator before the first request (idempotent), then have the limiter
        take through it, its own ceiling the whole account."""
        if self._started:
            return
        async with self._lock:
            if self._started:
                return
            self._started = True
            try:
                await asyncio.to_thread(self.coordinator.take, self.pool, 0.0, 0.0, self.plan)
            except CoordinatorError as error:
                self._fall_back(str(error))
                return
            self.limiter.set_rates(self.plan.account.rpm, self.plan.account.tpm)
            self.limiter.share_account(self)

    async def take(self, requests: float, tokens: float) -> None:
        """Wait until the account's bucket of this process's pool holds one request's worth
        (plus what earlier replies said they really cost), and take it."""
        requests += self._owed_requests
        tokens += self._owed_tokens
        self._owed_requests = self._owed_tokens = 0.0
        while not self.failed:
            try:
                wait = await asyncio.to_thread(
                    self.coordinator.take, self.pool, requests, tokens, self.plan
                )
            except CoordinatorError as error:
                self._fall_back(str(error))
                return
            if wait <= 0.0:
                self.taken += 1
                return
            await asyncio.sleep(wait)

    def correct(self, requests: float, tokens: float) -> None:
        """What a request really cost beyond its estimate (negative: a refund), settled with
        the next take."""
        self._owed_requests += requests
        self._owed_tokens += tokens

    async def stop(self) -> None:
        """Close the coordinator (nothing to leave: a process that stops taking is gone)."""
        with contextlib.suppress(CoordinatorError):
            await asyncio.to_thread(self.coordinator.close)

    def _fall_back(self, problem: str) -> None:
        self.failed = True
        self.limiter.share_account(None)
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
    """The shared budget the settings ask for, or None: `shared_budget = none`, `local` with
    a cache in memory (no folder to share a file in), or no rate limit to share."""
    if settings.shared_budget == "none":
        return None
    if settings.rpm is None and settings.tpm is None:
        return None
    account = f"{endpoint} {settings.model}"
    coordinator: Coordinator
    if settings.shared_budget == "redis":
        from ragas_ops.judge.redis_budget import RedisCoordinator, redis_url_for

        redis = RedisCoordinator(redis_url_for(settings), account)
        coordinator, where = redis, f"redis at {redis.where}"
    else:
        path = budget_file(settings.cache_path)
        if path is None:
            return None
        coordinator = LocalCoordinator(path, account)
        where = str(path)
    plan = AccountPlan(Rates(settings.rpm, settings.tpm), settings.backfill_share)
    return SharedBudget(
        coordinator,
        limiter,
        plan,
        pool=settings.budget_pool,
        fallback=static_rates(settings),
        where=where,
    )


def static_rates(settings: JudgeSettings) -> Rates:
    """The rates of a process that shares nothing: its static share of `rpm` and `tpm`."""
    return Rates(settings.rpm, settings.tpm).scaled(settings.static_share)
