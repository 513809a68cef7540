"""One account's rate limits shared by every scoring process that uses it.

The account (the endpoint and the chat model: providers limit each model of an account apart)
has one set of token buckets in a coordinator that every process updates atomically: a SQLite
file beside the judge cache (`budget.sqlite`, `shared_budget = local`: the processes of one
machine) or a Redis server (`redis`, see `limits/redis_budget.py`: the processes of every machine).
Each request, once its process's own limiter lets it go (Retry-After pauses, AIMD), takes one
request and its estimated tokens from the account's buckets (`SharedBudget.take`); what a reply
really cost, and a 429's refund, are carried to the process's next take.

The account's rates are split between two pool buckets: `backfill` refills at `backfill_share`
of the account, `nightly` at the rest, and what a full bucket would waste spills into the other
(`refilled`). So a pool alone has the whole account, both pools busy get their shares (nightly
first), and budget that a process does not use (it is starting, finishing its last rows,
waiting for answers) goes at once to whoever has work: there is no share to hand out, no
heartbeat to wait for, and a killed process simply stops taking.

Beside the buckets, the state holds each process's requests in flight (told with every take),
so that what the provider's headers say is left raises the account's buckets less what it may
still count of all of them (`offer_headroom`, see `headroom`); a process that stops takes its
entry out. Every coordinator offers one primitive, `change`: a function of the stored state and
the coordinator's clock, run atomically.

If the coordinator fails (the file is unusable or locked too long, Redis is unreachable), the
process falls back to its static share and keeps scoring, after one warning.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from ragas_ops.judge.limits.account_buckets import (
    AccountPlan,
    Change,
    Coordinator,
    CoordinatorError,
    Rates,
    State,
    loaded_state,
    raised_to_headroom,
    refilled,
    taking,
)
from ragas_ops.judge.limits.headroom import GUARD_SECONDS, InFlight, InFlightReport, forgotten
from ragas_ops.judge.limits.rate_limit import RateLimiter
from ragas_ops.judge.limits.redis_budget import RedisCoordinator, redis_url_for
from ragas_ops.judge.limits.spec import BudgetPool, LimitsSpec, SharedBudgetSpec

log = logging.getLogger(__name__)

T = TypeVar("T")

LOCK_TIMEOUT_SECONDS = 2.0
"""How long a process waits for the file's lock before it counts as a coordinator failure."""


class LocalCoordinator:
    """An account's buckets in a SQLite file shared by the processes of one machine."""

    def __init__(self, path: Path, account: str, clock: Callable[[], float] = time.time) -> None:
        self.path = path
        self.account = account
        self._clock = clock  # wall time: the state is read by other processes
        self._db: sqlite3.Connection | None = None
        self._lock = threading.Lock()  # one connection, used from worker threads in turn

    def take(self, pool: BudgetPool, requests: float, tokens: float, plan: AccountPlan) -> float:
        """A take with no report (tests and diagnostics): the seconds to wait, 0.0 if taken."""
        return self.change(taking(pool, requests, tokens, plan))

    def change(self, change: Change[T]) -> T:
        def work(db: sqlite3.Connection) -> T:
            row = db.execute(
                "SELECT state FROM buckets WHERE account = ?", (self.account,)
            ).fetchone()
            state, result = change(loaded_state(row[0] if row else None), self._clock())
            if state is not None:
                db.execute(
                    "INSERT INTO buckets (account, state) VALUES (?, ?) "
                    "ON CONFLICT(account) DO UPDATE SET state = excluded.state",
                    (self.account, json.dumps(state)),
                )
            return result

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
        self.process = uuid.uuid4().hex[:16]
        """This process's name in the account's state (its requests in flight)."""
        self.in_flight = InFlight(reporting=True)
        """This process's requests in flight (`Admission` keeps it), told with every take."""
        self._headroom: tuple[float, float, float] | None = None
        self._raising: asyncio.Task[None] | None = None
        self.raised_tokens = 0.0
        """Tokens the provider's headroom added to the account's buckets."""

    async def start(self) -> None:
        """Check the coordinator before the first request (idempotent), then have the limiter
        take through it, its own ceiling the whole account."""
        if self._started:
            return
        async with self._lock:
            if self._started:
                return
            # Marked started only once the limiter takes through the account: until then the
            # other requests wait here, not pass on the limiter's own full bucket.
            try:
                await asyncio.to_thread(
                    self.coordinator.change, taking(self.pool, 0.0, 0.0, self.plan)
                )
            except CoordinatorError as error:
                self._fall_back(str(error))
            else:
                self.limiter.set_rates(self.plan.account.rpm, self.plan.account.tpm)
                self.limiter.share_account(self)
            self._started = True

    async def take(self, requests: float, tokens: float) -> None:
        """Wait until the account's bucket of this process's pool holds one request's worth
        (plus what earlier replies said they really cost), and take it."""
        requests += self._owed_requests
        tokens += self._owed_tokens
        self._owed_requests = self._owed_tokens = 0.0
        while not self.failed:
            report = self.in_flight.report()
            change = taking(self.pool, requests, tokens, self.plan, (self.process, report))
            try:
                wait = await asyncio.to_thread(self.coordinator.change, change)
            except CoordinatorError as error:
                self._fall_back(str(error))
                return
            if wait <= 0.0:
                self.taken += 1
                self.in_flight.acknowledge(report)
                return
            await asyncio.sleep(wait)

    def pace_account(self, account: Rates, fallback: Rates) -> None:
        """The account's rates are lower than this process was told (the provider's headers
        state them): take by them from now on, and fall back to `fallback`."""
        self.plan = dataclasses.replace(self.plan, account=account)
        self.fallback = fallback
        if not self.failed:
            self.limiter.set_rates(account.rpm, account.tpm)

    def offer_headroom(self, remaining: float, margin: float) -> None:
        """An answer read now said the provider has `remaining` tokens left: raise the
        account's buckets to that less every process's requests in flight and `margin`
        (`headroom`). Done in the background; a newer offer replaces one not yet made, and
        one that waited past `GUARD_SECONDS` is dropped."""
        if self.failed:
            return
        self._headroom = (time.monotonic(), remaining, margin)
        if self._raising is None or self._raising.done():
            self._raising = asyncio.get_running_loop().create_task(self._raise())

    async def _raise(self) -> None:
        while self._headroom is not None and not self.failed:
            (read_at, remaining, margin), self._headroom = self._headroom, None
            report = self.in_flight.report()
            change = raised_to_headroom_change(
                self.pool,
                self.plan,
                report=(self.process, report),
                remaining=remaining,
                margin=margin,
                read_at=read_at,
            )
            try:
                added = await asyncio.to_thread(self.coordinator.change, change)
            except CoordinatorError as error:
                self._fall_back(str(error))
                return
            if added is not None:
                self.in_flight.acknowledge(report)
                self.raised_tokens += added

    def correct(self, requests: float, tokens: float) -> None:
        """What a request really cost beyond its estimate (negative: a refund), settled with
        the next take."""
        self._owed_requests += requests
        self._owed_tokens += tokens

    async def stop(self) -> None:
        """Take this process's requests out of the account's state and close the
        coordinator."""
        if self._raising is not None:
            self._raising.cancel()
            with contextlib.suppress(asyncio.CancelledError, CoordinatorError):
                await self._raising
        if self._started and not self.failed:
            with contextlib.suppress(CoordinatorError):
                await asyncio.to_thread(self.coordinator.change, self._leaving)
        with contextlib.suppress(CoordinatorError):
            await asyncio.to_thread(self.coordinator.close)

    def _leaving(self, stored: State | None, now: float) -> tuple[State | None, None]:
        state = refilled(stored, now, self.plan)
        forgotten(state, self.process)
        return state, None

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


def raised_to_headroom_change(
    pool: BudgetPool,
    plan: AccountPlan,
    *,
    report: tuple[str, InFlightReport],
    remaining: float,
    margin: float,
    read_at: float,
) -> Change[float | None]:
    """The change of a raise (`account_buckets.raised_to_headroom`), or of nothing when it
    runs longer than `GUARD_SECONDS` after the answer was read (`read_at`, monotonic: the
    provider may since have counted requests that ended meanwhile); returns the tokens it
    added, None when it stored nothing."""

    def change(stored: State | None, now: float) -> tuple[State | None, float | None]:
        if time.monotonic() - read_at > GUARD_SECONDS:
            return None, None
        return raised_to_headroom(
            stored, now, pool, plan=plan, report=report, remaining=remaining, margin=margin
        )

    return change


def _rate(value: float | None) -> str:
    return "unlimited" if value is None else f"{value:.0f}"


def budget_file(cache_path: str | None) -> Path | None:
    """The budget file beside the judge cache; None when the cache lives in memory."""
    return None if cache_path is None else Path(cache_path).parent / "budget.sqlite"


def shared_budget_for(
    spec: SharedBudgetSpec,
    limits: LimitsSpec,
    account: str,
    cache_path: str | None,
    limiter: RateLimiter,
) -> SharedBudget | None:
    """The shared budget `spec` asks for, of `account`'s `limits` (the account: the endpoint
    and the model), or None: `shared_budget = none`, `local` with a cache in memory
    (`cache_path` None: no folder to share a file in), or no rate limit to share."""
    if spec.mode == "none":
        return None
    if limits.rpm is None and limits.tpm is None:
        return None
    coordinator: Coordinator
    if spec.mode == "redis":
        redis = RedisCoordinator(redis_url_for(spec), account)
        coordinator, where = redis, f"redis at {redis.where}"
    else:
        path = budget_file(cache_path)
        if path is None:
            return None
        coordinator = LocalCoordinator(path, account)
        where = str(path)
    plan = AccountPlan(
        paced_rates(limits), spec.backfill_share, burst_seconds=limits.provider_burst_seconds
    )
    return SharedBudget(
        coordinator,
        limiter,
        plan,
        pool=spec.pool,
        fallback=static_rates(limits, spec),
        where=where,
    )


def paced_rates(limits: LimitsSpec, told: Rates | None = None) -> Rates:
    """The rates the judge paces the account to: `rpm` and `tpm` (or `told`) less
    `rate_margin`."""
    told = told or Rates(limits.rpm, limits.tpm)
    return told.scaled(1.0 - limits.rate_margin)


def static_rates(limits: LimitsSpec, spec: SharedBudgetSpec, told: Rates | None = None) -> Rates:
    """The rates of a process that shares nothing: its static share of the paced rates."""
    return paced_rates(limits, told).scaled(spec.static_share)
