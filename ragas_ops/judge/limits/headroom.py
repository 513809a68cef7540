"""Pacing to what the provider says is left: its `x-ratelimit-remaining-tokens`, less what
it may still count of the requests already sent.

The judge's buckets hold what it believes the provider counts. Until it knows how the provider
counts a completion (`provider_counts = auto` before its conclusion), it holds `max_tokens` x n
for every chat request: right for OpenAI, 1.2-1.3 times too much for a provider counting the
tokens used, whose bucket then sits full while the judge waits for its own. With several
processes on the account, the learner concludes late or never (`provider.CountingLearner`).

What the provider still has is in its headers, and what it may still count on top of that is
bounded in either way of counting: at most `max_tokens` x n of every request still in flight
(counted at its answer, or already counted at admission), the prompt of a request it may not
have seen yet (admitted within `GUARD_SECONDS` before the answer was read), and the completion
of an answer it may have sent after this one (ended within `GUARD_SECONDS`). So the judge's
buckets may hold at least `remaining - still countable - margin`: `RateLimiter.raise_tokens`
and `SharedBudget.offer_headroom` raise them to that, and never lower them (lowering is
`RateLimiter.observe_remaining`'s). The same bound is safe against a provider counting
`max_tokens` (it only counts some requests twice), so it needs no conclusion.

Headers may describe a longer window than the burst the provider enforces: OpenAI's state a
minute (`remaining` 393,000-400,000 of 400,000) while its limit refuses over about a second.
Both buckets refill at the limit / 60 a second and are charged alike, so what the minute's
window is owed (`limit - remaining`) is what the burst is owed: `BurstView` turns such headers
into the burst's level (its capacity less that), the view every use of `remaining` here and in
the limiter takes. A `remaining` above the burst's capacity is what tells the longer window
(once seen, for the rest of the run: a nearly spent minute's window would read as a burst).

`in_reach` says when the headers describe the bucket the judge paces to: the judge's `tpm` is the
whole account (at least `x-ratelimit-limit-tokens`: a `tpm` set lower is a share to keep to,
whatever the provider has left), and no 429 slowed the pace (AIMD).

Across processes, each process's requests in flight are kept in the account's coordinator state
beside the buckets (`recorded`, written with every take and every raise), so a raise subtracts
every process's (`account_countable`). A process gone without a word keeps its entry for
`ENTRY_TTL_SECONDS`: its requests count as in flight until then (raises are smaller, never
larger).
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field, replace
from typing import Any

from ragas_ops.judge.limits.provider import RateLimitHeaders

GUARD_SECONDS = 0.1
"""How long after a request's admission, or its answer's read, the provider may count it on
the other side of another answer's headers (the answer was sent before it was read; a busy
event loop reads late). A raise read longer ago than this is dropped."""

ENTRY_TTL_SECONDS = 600.0
"""A process's entry in the coordinator state is ignored once this old (it was killed): longer
than a request may be in flight."""


@dataclass(frozen=True)
class InFlightReport:
    """What one process tells the coordinator: the `max_tokens` x n of its requests in flight,
    and the tokens of the prompts admitted and completions ended since its last report."""

    max_completion: float
    news: tuple[float, ...]


@dataclass
class InFlight:
    """This process's requests the provider may still count (monotonic clock)."""

    guard_seconds: float = GUARD_SECONDS
    reporting: bool = False
    """Whether a coordinator is told (`report`): only then are the news kept for it."""
    max_completion: float = 0.0
    """`max_tokens` x n summed over the requests in flight."""
    _requests: dict[int, tuple[float, float]] = field(default_factory=dict)
    """key -> (prompt tokens, max_completion)."""
    _recent: deque[tuple[float, float]] = field(default_factory=deque)
    """(when, tokens) of prompts admitted and completions ended lately, oldest first."""
    _news: list[float] = field(default_factory=list)

    def admitted(self, key: int, now: float, prompt: float, max_completion: float) -> None:
        self._requests[key] = (prompt, max_completion)
        self.max_completion += max_completion
        self._happened(now, prompt)

    def ended(self, key: int, now: float) -> None:
        """Answered, refused or failed (idempotent): no longer in flight, but its completion
        may be counted on either side of another answer read within the guard."""
        request = self._requests.pop(key, None)
        if request is None:
            return
        self.max_completion = max(0.0, self.max_completion - request[1])
        if request[1] > 0:
            self._happened(now, request[1])

    def countable(self, now: float) -> float:
        """What the provider may count of this process's requests beyond the `remaining` of
        an answer read at `now`."""
        self._forget_before(now - self.guard_seconds)
        return self.max_completion + sum(tokens for _, tokens in self._recent)

    def report(self) -> InFlightReport:
        return InFlightReport(self.max_completion, tuple(self._news))

    def acknowledge(self, report: InFlightReport) -> None:
        """The coordinator stored `report`: its news are not told again."""
        del self._news[: len(report.news)]

    def _happened(self, now: float, tokens: float) -> None:
        self._forget_before(now - self.guard_seconds)
        self._recent.append((now, tokens))
        if self.reporting:
            self._news.append(tokens)

    def _forget_before(self, moment: float) -> None:
        while self._recent and self._recent[0][0] < moment:
            self._recent.popleft()


@dataclass
class BurstView:
    """The provider's headers as its burst sees them (see the module's docstring)."""

    burst_seconds: float
    longer_window: dict[str, bool] = field(default_factory=dict)
    """Per kind (`requests`, `tokens`): the headers were seen to describe a longer window."""

    def of(self, headers: RateLimitHeaders) -> RateLimitHeaders:
        """`headers` with each `remaining` the burst's level (the others as they are)."""
        requests = self._level("requests", headers.remaining_requests, headers.limit_requests)
        tokens = self._level("tokens", headers.remaining_tokens, headers.limit_tokens)
        if requests == headers.remaining_requests and tokens == headers.remaining_tokens:
            return headers
        return replace(headers, remaining_requests=requests, remaining_tokens=tokens)

    def _level(self, kind: str, remaining: int | None, limit: int | None) -> int | None:
        if remaining is None or limit is None or limit <= 0:
            return remaining
        burst = math.ceil(limit / 60.0 * self.burst_seconds)
        if remaining > burst:
            self.longer_window[kind] = True
        if not self.longer_window.get(kind):
            return remaining
        return burst - (limit - remaining)


def in_reach(
    headers: RateLimitHeaders, *, tpm: float | None, burst_seconds: float, pace: float
) -> bool:
    """Whether `headers` describe the bucket the judge paces to (see the module's docstring)."""
    remaining, limit = headers.remaining_tokens, headers.limit_tokens
    if remaining is None or limit is None or limit <= 0 or tpm is None or pace < 1.0:
        return False
    # a remaining above the burst: headers of a longer window not seen through `BurstView`
    return tpm >= limit and remaining <= math.ceil(limit / 60.0 * burst_seconds)


def margin_tokens(headers: RateLimitHeaders, *, rate_margin: float, burst_seconds: float) -> float:
    """The tokens a raise leaves unused: `rate_margin` of the provider's burst."""
    limit = headers.limit_tokens or 0
    return rate_margin * limit / 60.0 * burst_seconds


# -- in the coordinator's state (wall or server clock, JSON) ---------------------------------

ENTRIES = "in_flight"


def recorded(state: dict[str, Any], now: float, process: str, report: InFlightReport) -> None:
    """Store `process`'s report in `state` (its news stamped `now`), dropping what no raise
    needs any more: news older than the guard, entries of processes gone."""
    entries = _entries(state)
    recent = _recent(entries.get(process), now) + [[now, tokens] for tokens in report.news]
    entries[process] = {"max_completion": report.max_completion, "recent": recent, "seen": now}
    for other in [key for key, entry in entries.items() if _stale(entry, now)]:
        del entries[other]
    state[ENTRIES] = entries


def forgotten(state: dict[str, Any], process: str) -> None:
    """A process that stops has nothing in flight."""
    entries = _entries(state)
    entries.pop(process, None)
    state[ENTRIES] = entries


def account_countable(state: dict[str, Any], now: float) -> float:
    """What the provider may count of every process's requests beyond a `remaining` read
    just before `now`."""
    total = 0.0
    for entry in _entries(state).values():
        if _stale(entry, now):
            continue
        try:
            in_flight = float(entry["max_completion"])
        except (KeyError, TypeError, ValueError):
            continue  # not an entry this code wrote: left out
        total += in_flight + sum(tokens for _, tokens in _recent(entry, now))
    return total


def _entries(state: dict[str, Any]) -> dict[str, Any]:
    entries = state.get(ENTRIES)
    return dict(entries) if isinstance(entries, dict) else {}


def _recent(entry: Any, now: float) -> list[list[float]]:
    """An entry's news within the guard before `now`, [[when, tokens], ...]."""
    try:
        return [
            [float(when), float(tokens)]
            for when, tokens in entry["recent"]
            if float(when) >= now - GUARD_SECONDS
        ]
    except (KeyError, TypeError, ValueError):
        return []


def _stale(entry: Any, now: float) -> bool:
    try:
        return float(entry["seen"]) < now - ENTRY_TTL_SECONDS
    except (KeyError, TypeError, ValueError):
        return True
