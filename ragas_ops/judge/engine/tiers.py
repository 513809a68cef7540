"""Which service tier each request is sent on: flex processing, its capacity 429s, the
fall-back to the standard tier and the deadline (docs/flex-tier.md). The provider's wire says
which 429 is a capacity one (`wire.Failure.kind == "capacity"`); the rest is the same for any
provider with a flex-like tier.

OpenAI's flex tier answers Chat Completions at the Batch API's price, more slowly, and now and
then with a 429 "resource unavailable": the tier has no capacity for the request, which says
nothing about the account's rate limits. So a capacity 429 neither pauses nor slows the rate
limiter; the request alone waits (jittered exponential backoff) and tries again on flex, and
after `judge.flex_fallback_after_seconds` of that it goes to the standard tier. After
`judge.flex_deadline` every request goes to the standard tier, so that the run ends in time.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from ragas_ops.judge.engine.spec import FlexSpec, parse_flex_deadline
from ragas_ops.judge.spec import EndpointSpec

STANDARD_TIER = "default"
"""What a request falling back is sent as: OpenAI's standard processing, named explicitly
(sending nothing would be the project's tier, which may be flex)."""
BATCH_TIER = "batch"
"""The tier of requests answered through the Batch API (`judge.mode = batch`)."""
FLEXIBLE_TIERS = frozenset({"flex", "auto"})
"""Tiers whose requests may be refused for capacity (`auto` may be the project's flex)."""
CAPACITY_BACKOFF_BASE_SECONDS = 1.0
CAPACITY_BACKOFF_CAP_SECONDS = 60.0
CAPACITY_429S_PER_ATTEMPT = 4
"""Without a fall-back, a request gives up after this many capacity 429s per attempt."""
SECONDS_PER_DAY = 86_400.0
HALF_A_DAY = SECONDS_PER_DAY / 2


def may_lack_capacity(sent_tier: str | None) -> bool:
    """Whether a 429 "resource unavailable" to a request sent on `sent_tier` is a flex
    capacity 429. On the standard tier (or none named) it is handled as any 429 (the limiter
    pauses, attempts are used), so that it cannot make a request wait forever."""
    return sent_tier in FLEXIBLE_TIERS


def seconds_to_deadline(deadline: str, now: datetime) -> float:
    """Seconds from `now` to `judge.flex_deadline` (0 when it has passed).

    `<n>s` is n seconds from now (the judge starts with the run). `HH:MM` is the nearest such
    UTC time: when it was less than 12 hours ago it has passed (a task of the nightly run
    retried after the deadline keeps to the standard tier), else it is ahead."""
    kind, value = parse_flex_deadline(deadline)
    if kind == "after_seconds":
        return value
    midnight = now.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    since_midnight = (now.astimezone(UTC) - midnight).total_seconds()
    ahead = (value - since_midnight) % SECONDS_PER_DAY
    return 0.0 if ahead > HALF_A_DAY or ahead == 0 else ahead


@dataclass
class TierState:
    """One request's way through the tiers, across its attempts."""

    first_capacity_429_at: float | None = None
    capacity_429s: int = 0
    fell_back: bool = False
    after_deadline: bool = False


class TierPolicy:
    """Decides the tier and timeout of every attempt, and what a capacity 429 leads to. The
    requests sent to the standard tier are counted in `events`: `flex_fallback` after their
    wait, `flex_after_deadline` after the deadline."""

    def __init__(
        self,
        flex: FlexSpec,
        endpoint: EndpointSpec,
        rng: random.Random,
        events: Counter[str],
        *,
        clock: Callable[[], float] = time.monotonic,
        now: datetime | None = None,
    ) -> None:
        self.requested = flex.service_tier
        self._timeout = endpoint.timeout_seconds
        self._flex_timeout = flex.timeout_seconds
        self._fallback_after = flex.fallback_after_seconds
        self._max_attempts = endpoint.max_attempts
        self._rng = rng
        self._clock = clock
        self._deadline_at = (
            None
            if flex.deadline is None or self.requested == "default"
            else clock() + seconds_to_deadline(flex.deadline, now or datetime.now(UTC))
        )
        self._events = events

    @property
    def flexible(self) -> bool:
        """Whether requests may go to flex (and so meet capacity 429s) at all."""
        return self.requested != "default"

    def deadline_passed(self) -> bool:
        return self._deadline_at is not None and self._clock() >= self._deadline_at

    def tier_to_send(self, state: TierState) -> str | None:
        """The `service_tier` of the next attempt; None: send none (the endpoint's own)."""
        if not self.flexible:
            return None
        if not state.fell_back and self._waited_long_enough(state):
            state.fell_back = True
            self._events["flex_fallback"] += 1
        if state.fell_back:
            return STANDARD_TIER
        if self.deadline_passed():
            if not state.after_deadline:
                state.after_deadline = True
                self._events["flex_after_deadline"] += 1
            return STANDARD_TIER
        return self.requested

    def options(self, tier: str | None) -> Mapping[str, Any]:
        """The SDK's per-request options for an attempt on `tier`."""
        if tier is None:
            return {}
        timeout = self._timeout if tier == STANDARD_TIER else self._flex_timeout
        return {"service_tier": tier, "timeout": timeout}

    def timeout_of(self, tier: str | None) -> float:
        return self._timeout if tier in (None, STANDARD_TIER) else self._flex_timeout

    def after_capacity_429(self, state: TierState, retry_after: float | None = None) -> float:
        """Count a capacity 429; the seconds to wait before the next attempt: the 429's
        Retry-After if it has one, else jittered exponential backoff; never past the moment
        the request falls back, and 0 when it goes to the standard tier now."""
        now = self._clock()
        state.capacity_429s += 1
        if state.first_capacity_429_at is None:
            state.first_capacity_429_at = now
        if self._waited_long_enough(state) or self.deadline_passed():
            return 0.0
        wait = self._backoff(state.capacity_429s) if retry_after is None else retry_after
        if self._fallback_after > 0:  # never wait past the moment it falls back
            wait = min(wait, state.first_capacity_429_at + self._fallback_after - now)
        if self._deadline_at is not None:
            wait = min(wait, self._deadline_at - now)
        return max(0.0, wait)

    def _backoff(self, capacity_429s: int) -> float:
        """Equal jitter: half the exponential delay for sure, the other half at random."""
        delay = min(
            CAPACITY_BACKOFF_CAP_SECONDS,
            CAPACITY_BACKOFF_BASE_SECONDS * 2.0 ** min(capacity_429s - 1, 16),
        )
        return delay / 2 + self._rng.uniform(0, delay / 2)

    def gives_up(self, state: TierState) -> bool:
        """With no fall-back (`flex_fallback_after_seconds = 0`), a request answered with
        capacity 429s `CAPACITY_429S_PER_ATTEMPT` x `max_attempts` times ends in a status."""
        return (
            self._fallback_after == 0
            and state.capacity_429s >= CAPACITY_429S_PER_ATTEMPT * self._max_attempts
        )

    def _waited_long_enough(self, state: TierState) -> bool:
        first = state.first_capacity_429_at
        return (
            self._fallback_after > 0
            and first is not None
            and self._clock() - first >= self._fallback_after
        )


def answered_tier(reply_tier: str | None, sent: str | None) -> str:
    """The tier a request was answered on: what the reply says, else what was sent (a
    request sent with no tier was served on the standard one)."""
    return reply_tier or sent or STANDARD_TIER
