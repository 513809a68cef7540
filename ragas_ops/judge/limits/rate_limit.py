"""Requests-per-minute and tokens-per-minute limits, enforced before a request is sent.

Two token buckets refill continuously at limit/60 per second. A request waits until both hold
enough (one request; its estimated tokens), in arrival order. The estimate is corrected with
the usage the API returns (`settle`), so the budget is used fully but not exceeded; a 429's
Retry-After of a 429 the judge caused pauses every request (`pause_for`); the provider's
`x-ratelimit-remaining-*` headers, carried forward from when the request was sent, lower what
the buckets believe is left (`observe_remaining`), and raise it to what the provider may not
count of the requests in flight (`raise_tokens`, see `headroom`).

The buckets hold at most `burst_seconds` of budget, so a run paces itself from the first
second instead of spending a minute's budget in a burst the provider would refuse.

The rates may change while requests wait (`set_rates`: a share of the account that changed as
other processes came and went). Sustained 429s lower them further (`slow_down`: AIMD, a
multiplicative decrease at most once per `decrease_interval`), and they climb back by an
additive step per second without a 429 (a share of the pace the 429 came at), so processes that
share nothing still converge on what the account allows.

Processes that share one account (`shared_budget.SharedBudget`) also take every request from
the account's buckets once this limiter lets it go (`share_account`): this limiter then paces
the process (Retry-After, AIMD) and the account's buckets pace all of them together.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import math
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Protocol


@dataclass
class TokenBucket:
    """`rate` units per second, at most `capacity` stored. The level may go below zero
    when a request turns out to cost more than estimated: later requests wait for it."""

    rate: float
    capacity: float
    level: float
    updated: float

    def refill(self, now: float) -> None:
        self.level = min(self.capacity, self.level + (now - self.updated) * self.rate)
        self.updated = now

    def wait_for(self, amount: float) -> float:
        """Seconds until `amount` is available (amounts above capacity wait for a full bucket)."""
        needed = min(amount, self.capacity) - self.level
        return max(0.0, needed / self.rate)


# A wait shorter than this is no wait: sleeping it may not move a clock at all.
_CLOCK_TOLERANCE_SECONDS = 1e-6

# AIMD: a 429 halves the pace; each second without one gives back 5% of the pace the 429
# came at (from half to full in ten seconds), so the climb is gentle where 429s came at a low
# pace; the pace never drops below 1/64 of the ceiling.
DECREASE_FACTOR = 0.5
ADDITIVE_INCREASE_PER_SECOND = 0.05
MINIMUM_PACE = 1 / 64


class AccountBudget(Protocol):
    """An account's budget shared with other processes (see `shared_budget.SharedBudget`)."""

    async def take(self, requests: float, tokens: float) -> None:
        """Wait until the account has room for them, and take it."""

    def correct(self, requests: float, tokens: float) -> None:
        """Cost beyond what was taken (negative: a refund), settled with the next take."""


class RateLimiter:
    """Paces requests to an RPM and a TPM budget; either limit may be None (unlimited)."""

    def __init__(
        self,
        rpm: float | None,
        tpm: float | None,
        burst_seconds: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self._clock = clock
        self._sleep = sleep
        self._burst_seconds = burst_seconds
        now = clock()
        self.rpm, self.tpm = _checked(rpm), _checked(tpm)
        """The ceiling: the rates this process may use at most (its share of the account)."""
        self.pace = 1.0
        """The share of the ceiling AIMD currently allows, in [MINIMUM_PACE, 1]."""
        self.decrease_interval = 1.0
        """A burst of 429s answering requests sent together lowers the pace once."""
        self._paced_at = now
        self._increase_per_second = ADDITIVE_INCREASE_PER_SECOND
        self._last_decrease = -math.inf
        self.decreases = 0
        """How many times 429s lowered the pace."""
        self.requests = _bucket(rpm, burst_seconds, now, minimum=1.0)
        self.tokens = _bucket(tpm, burst_seconds, now, minimum=1.0)
        self._paused_until = 0.0
        self._lock = asyncio.Lock()  # FIFO: requests are admitted in arrival order
        self.waited_seconds = 0.0
        """Time spent sleeping for the budget or a Retry-After, summed over requests."""
        self._account: AccountBudget | None = None
        self.admitted = Admitted()
        """What this limiter let go so far (see `observe_remaining`)."""

    async def acquire(self, tokens: int, on_admitted: Callable[[], None] | None = None) -> None:
        """Wait until one request with `tokens` estimated tokens fits the budget, and take it;
        `on_admitted` is called once it is taken here, before it is taken from the account."""
        async with self._lock:
            while True:
                now = self._clock()
                self._recover(now)
                wait = self._paused_until - now
                for bucket, amount in ((self.requests, 1.0), (self.tokens, float(tokens))):
                    if bucket is not None:
                        bucket.refill(now)
                        wait = max(wait, bucket.wait_for(amount))
                if wait <= _CLOCK_TOLERANCE_SECONDS:
                    break
                self.waited_seconds += wait
                await self._sleep(wait)
            if self.requests is not None:
                self.requests.level -= 1
            if self.tokens is not None:
                self.tokens.level -= tokens
            self.admitted = Admitted(
                self.admitted.requests + 1, self.admitted.tokens + tokens, self._clock()
            )
            if on_admitted is not None:
                on_admitted()
            if self._account is not None:  # in the lock: the process's requests keep their order
                started = self._clock()
                await self._account.take(1.0, float(tokens))
                self.waited_seconds += max(0.0, self._clock() - started)

    def share_account(self, account: AccountBudget | None) -> None:
        """Take every request from `account` too, once this limiter lets it go (None: stop)."""
        self._account = account

    def settle(self, estimated_tokens: int, actual_tokens: int) -> None:
        """Correct the token bucket once a response says what a request really cost."""
        if self.tokens is not None:
            self.tokens.level -= actual_tokens - estimated_tokens
        if self._account is not None:
            self._account.correct(0.0, float(actual_tokens - estimated_tokens))

    def refund(self, estimated_tokens: int) -> None:
        """Give back a request the provider refused before doing any work (a 429)."""
        if self.requests is not None:
            self.requests.level = min(self.requests.capacity, self.requests.level + 1)
        if self.tokens is not None:
            self.tokens.level = min(self.tokens.capacity, self.tokens.level + estimated_tokens)
        if self._account is not None:
            self._account.correct(-1.0, -float(estimated_tokens))

    def pause_for(self, seconds: float) -> None:
        """Hold every request for `seconds` (a 429's Retry-After)."""
        self._paused_until = max(self._paused_until, self._clock() + seconds)

    def set_rates(self, rpm: float | None, tpm: float | None) -> None:
        """Change the ceiling while running (None: no limit). What the buckets hold is kept,
        up to their new capacity, so a change neither grants a burst nor takes back budget."""
        self.rpm, self.tpm = _checked(rpm), _checked(tpm)
        self._apply_pace(self._clock())

    def slow_down(self) -> None:
        """A 429 from the provider: halve the pace, unless it was just halved (the other
        429s of one burst say the same thing)."""
        now = self._clock()
        if now - self._last_decrease < self.decrease_interval:
            return
        self._recover(now)
        self._last_decrease = now
        self.decreases += 1
        self._increase_per_second = ADDITIVE_INCREASE_PER_SECOND * self.pace
        self.pace = max(MINIMUM_PACE, self.pace * DECREASE_FACTOR)
        self._apply_pace(now)

    def restore_pace(self, pace: float) -> None:
        """Go back to `pace` (a slow-down that turned out not to make 429s rarer)."""
        now = self._clock()
        self._recover(now)
        self.pace = max(self.pace, min(1.0, pace))
        self._apply_pace(now)

    def _recover(self, now: float) -> None:
        """Additive increase: the pace climbs back while no 429 comes."""
        elapsed = now - self._paced_at
        self._paced_at = now
        if self.pace < 1.0 and elapsed > 0:
            self.pace = min(1.0, self.pace + self._increase_per_second * elapsed)
            self._apply_pace(now)

    def _apply_pace(self, now: float) -> None:
        self.requests = _rebucket(self.requests, self.rpm, self.pace, self._burst_seconds, now)
        self.tokens = _rebucket(self.tokens, self.tpm, self.pace, self._burst_seconds, now)

    def current_rates(self) -> tuple[float | None, float | None]:
        """The rates per minute the buckets refill at now (the ceiling times the pace)."""
        return (
            None if self.requests is None else self.requests.rate * 60.0,
            None if self.tokens is None else self.tokens.rate * 60.0,
        )

    def observe_remaining(
        self, requests: int | None, tokens: int | None, since: Admitted | None = None
    ) -> None:
        """Believe the provider when it says less budget is left than the buckets think.

        `since` is what the limiter had admitted when the answered request was let go: the
        provider counted its `remaining` then, so what refilled and what this limiter let go
        since are carried forward before comparing."""
        now = self._clock()
        for bucket, remaining, kind in (
            (self.requests, requests, "requests"),
            (self.tokens, tokens, "tokens"),
        ):
            if bucket is None or remaining is None:
                continue
            bucket.refill(now)
            believed = float(remaining)
            if since is not None:
                admitted_since = getattr(self.admitted, kind) - getattr(since, kind)
                believed += bucket.rate * max(0.0, now - since.at) - admitted_since
            bucket.level = min(bucket.level, believed)

    def raise_tokens(self, level: float) -> float:
        """Believe the token bucket may hold `level` (what the provider said is left, less
        what it may still count: `headroom`), if it holds less; never above capacity.
        Returns the tokens added."""
        if self.tokens is None:
            return 0.0
        self.tokens.refill(self._clock())
        before = self.tokens.level
        self.tokens.level = max(before, min(self.tokens.capacity, level))
        return self.tokens.level - before


@dataclass(frozen=True)
class Admitted:
    """Requests and tokens a limiter let go in all, and when it last did."""

    requests: int = 0
    tokens: int = 0
    at: float = 0.0


def _checked(per_minute: float | None) -> float | None:
    if per_minute is not None and per_minute <= 0:
        raise ValueError("a rate limit must be positive (or None for no limit)")
    return per_minute


def _rebucket(
    bucket: TokenBucket | None,
    per_minute: float | None,
    pace: float,
    burst_seconds: float,
    now: float,
) -> TokenBucket | None:
    """`bucket` refilling at `per_minute * pace` from now on, keeping what it holds."""
    if per_minute is None:
        return None
    fresh = _bucket(per_minute * pace, burst_seconds, now, minimum=1.0)
    assert fresh is not None
    if bucket is not None:
        bucket.refill(now)
        fresh.level = min(fresh.capacity, bucket.level)
    return fresh


def _bucket(
    per_minute: float | None, burst_seconds: float, now: float, minimum: float
) -> TokenBucket | None:
    if per_minute is None:
        return None
    if per_minute <= 0:
        raise ValueError("a rate limit must be positive (or None for no limit)")
    rate = per_minute / 60.0
    capacity = max(minimum, rate * burst_seconds)
    return TokenBucket(rate=rate, capacity=capacity, level=capacity, updated=now)


class PrioritySlots:
    """At most `size` holders at once; a freed slot goes to the waiter with the lowest
    priority (ties: first come). The judge gives the rows that started first the lowest, so
    that rows already begun finish before new ones start."""

    def __init__(self, size: int) -> None:
        self._free = size
        self._waiting: list[tuple[int, int, asyncio.Future[None]]] = []
        self._arrivals = itertools.count()

    @asynccontextmanager
    async def slot(self, priority: int) -> AsyncIterator[None]:
        await self._acquire(priority)
        try:
            yield
        finally:
            self._release()

    async def _acquire(self, priority: int) -> None:
        if self._free > 0 and not self._waiting:
            self._free -= 1
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiting, (priority, next(self._arrivals), future))
        try:
            await future
        except asyncio.CancelledError:
            if future.done() and not future.cancelled():
                self._release()  # handed a slot while being cancelled: pass it on
            else:
                self._waiting = [entry for entry in self._waiting if entry[2] is not future]
                heapq.heapify(self._waiting)
            raise

    def _release(self) -> None:
        while self._waiting:
            _, _, future = heapq.heappop(self._waiting)
            if not future.done():
                future.set_result(None)  # the slot passes straight to the waiter
                return
        self._free += 1
