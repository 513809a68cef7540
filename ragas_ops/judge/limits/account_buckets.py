"""An account's token buckets, as every coordinator of the shared budget keeps them.

The account's rates are split between two pool buckets: `backfill` refills at `backfill_share`
of the account, `nightly` at the rest, and what a full bucket would waste spills into the other
(`refilled`). `take_from` is the one piece of arithmetic: a take of requests and tokens from a
pool's buckets, or how long to wait for them. The coordinators (`shared_budget.LocalCoordinator`,
a SQLite file; `redis_budget.RedisCoordinator`) store the state and run it atomically.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from ragas_ops.judge.limits.headroom import (
    ENTRIES,
    InFlightReport,
    account_countable,
    recorded,
)
from ragas_ops.judge.limits.spec import BudgetPool

T = TypeVar("T")

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
"backfill": {...}, "in_flight": {process: ...} (see `headroom.recorded`)}; JSON, so that every
coordinator stores it the same way."""

Change = Callable[[State | None, float], tuple[State | None, T]]
"""What a coordinator runs atomically on the stored state and its clock: the state to store
(None: store nothing) and what to return."""


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
    if isinstance(state.get(ENTRIES), dict):
        fresh[ENTRIES] = state[ENTRIES]
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
    report: tuple[str, InFlightReport] | None = None,
) -> tuple[State, float]:
    """Refill the account's buckets to `now`, then take `requests` and `tokens` from `pool`'s
    if both hold them (an amount above a bucket's capacity needs a full bucket and leaves it
    below zero; a negative amount gives back), and record `report` (the process's requests in
    flight, this one included). Returns the new state and 0.0, or the state and the seconds to
    wait before looking again (nothing taken)."""
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
    if report is not None:
        recorded(fresh, now, *report)
    return fresh, 0.0


def raised_to_headroom(
    state: State | None,
    now: float,
    pool: BudgetPool,
    *,
    plan: AccountPlan,
    report: tuple[str, InFlightReport],
    remaining: float,
    margin: float,
) -> tuple[State, float]:
    """Record `report`, then raise the account's token buckets to what the provider said was
    left (`remaining`, just before `now`) less what it may still count of every process's
    requests and `margin`: when the two pools hold less than that together, `pool`'s gets the
    difference, up to its capacity, and what it cannot hold goes to the other's. Never lowers
    them (see `headroom`). Returns the state and the tokens added."""
    fresh = refilled(state, now, plan)
    recorded(fresh, now, *report)
    if plan.account.tpm is None:
        return fresh, 0.0
    added_in_all = 0.0
    missing = remaining - account_countable(fresh, now) - margin
    missing -= sum(fresh[each]["tokens"] for each in POOLS)
    other: BudgetPool = "backfill" if pool == "nightly" else "nightly"
    for each in (pool, other):
        if missing <= 0.0:
            break
        room = max(0.0, plan.capacity(each, "tokens") - fresh[each]["tokens"])
        added = min(room, missing)
        fresh[each]["tokens"] += added
        missing -= added
        added_in_all += added
    return fresh, added_in_all


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

    def change(self, change: Change[T]) -> T:
        """Run `change` on the stored state and the coordinator's clock atomically; raises
        CoordinatorError."""

    def close(self) -> None: ...


def taking(
    pool: BudgetPool,
    requests: float,
    tokens: float,
    plan: AccountPlan,
    report: tuple[str, InFlightReport] | None = None,
) -> Change[float]:
    """The change of a take (`take_from`): a take that finds too little stores nothing (the
    refill is a function of time); returns the seconds to wait, 0.0 when taken."""

    def change(stored: State | None, now: float) -> tuple[State | None, float]:
        state, wait = take_from(
            stored, now, pool, requests=requests, tokens=tokens, plan=plan, report=report
        )
        return (None if wait > 0.0 else state), wait

    return change


def loaded_state(text: str | bytes | None) -> State | None:
    """A stored state, or None when there is none or it does not parse (it starts full)."""
    if text is None:
        return None
    try:
        state = json.loads(text)
    except ValueError:
        return None
    return state if isinstance(state, dict) else None
