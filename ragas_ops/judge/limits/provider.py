"""What the provider's rate-limit headers say, and what a 429 says of who spent the budget.

OpenAI, Azure OpenAI and most gateways send `x-ratelimit-remaining-requests/-tokens` and
`x-ratelimit-reset-requests/-tokens` (durations such as `1s`, `6m0s`, `20ms`) on their answers,
429s included. The judge reads them on every answer to correct what its buckets believe is
left (`RateLimiter.observe_remaining`), and on a 429 to tell a spent budget of its own from
another limit's refusal (`cause_of_429`, used by `congestion.CongestionControl`).

Providers also differ in how they count a request's tokens (`TokenCounting`): OpenAI and Azure
count the prompt and `max_tokens` x `n` when they admit it, and keep that whatever the answer
uses; vLLM behind a gateway and most gateways count the prompt, then the completion it used.

Every number a provider or a gateway sends (these headers, `Retry-After`, a reply's `usage`,
`/v1/models`' `shutdown_date`) is read by one function, `provider_number`: what is not a
finite number within the range its use allows (`inf`, `nan`, `1e999`, a negative count, a
reset of a thousand years, garbage) is ignored, as if unsaid. Such a value is advice at
most: it never stops a run.
"""

from __future__ import annotations

import math
import re
from collections import Counter, deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal, overload

from ragas_ops.judge.limits.spec import ProviderCounts

MAX_COUNT = 10**12
"""The largest request or token count a provider may state (a trillion: far above any
account's limit); a larger one is ignored."""
MAX_WAIT_SECONDS = 86_400.0
"""The longest reset or Retry-After read (a day: OpenAI's daily limits reset within one); a
longer one is ignored, and the judge's own backoff stands."""


@overload
def provider_number(
    value: object, *, lowest: float, highest: float, integer: Literal[True]
) -> int | None: ...


@overload
def provider_number(
    value: object, *, lowest: float, highest: float, integer: Literal[False] = False
) -> float | None: ...


def provider_number(
    value: object, *, lowest: float, highest: float, integer: bool = False
) -> float | int | None:
    """A number a provider sent (a header's text, a JSON number), or None when it is none
    within [`lowest`, `highest`]: text that is not a number, a boolean, `inf`, `-inf`, `nan`,
    `1e999` (infinite once read), anything out of range. With `integer`, truncated to an int
    (`12.7` requests left: 12)."""
    number = _number(value)
    # an int is compared as it is: a huge one is never turned into a float
    if number is None or not lowest <= number <= highest:
        return None
    if integer:
        return math.trunc(number)
    return float(number)


def _number(value: object) -> int | float | None:
    """`value` as a finite int or float, or None."""
    if isinstance(value, str):
        text = value.strip()
        if not text or len(text) > 64 or "_" in text:  # no provider means these
            return None
        try:
            value = int(text) if text.lstrip("+-").isdigit() else float(text)
        except (ValueError, OverflowError):
            return None
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and math.isfinite(value):
        return value
    return None


@dataclass(frozen=True)
class RateLimitHeaders:
    """The `x-ratelimit-*` headers of one answer; None for what it did not say."""

    remaining_requests: int | None = None
    remaining_tokens: int | None = None
    reset_requests_seconds: float | None = None
    reset_tokens_seconds: float | None = None
    limit_tokens: int | None = None
    """`x-ratelimit-limit-tokens`: the account's tokens per minute."""
    limit_requests: int | None = None
    """`x-ratelimit-limit-requests`: the account's requests per minute."""

    @property
    def said_anything(self) -> bool:
        return self.remaining_requests is not None or self.remaining_tokens is not None


def rate_limit_headers(headers: Mapping[str, str]) -> RateLimitHeaders:
    """Read OpenAI's rate-limit headers (Azure and most gateways send the same names)."""
    return RateLimitHeaders(
        remaining_requests=_int(headers.get("x-ratelimit-remaining-requests")),
        remaining_tokens=_int(headers.get("x-ratelimit-remaining-tokens")),
        reset_requests_seconds=duration_seconds(headers.get("x-ratelimit-reset-requests")),
        reset_tokens_seconds=duration_seconds(headers.get("x-ratelimit-reset-tokens")),
        limit_tokens=_int(headers.get("x-ratelimit-limit-tokens")),
        limit_requests=_int(headers.get("x-ratelimit-limit-requests")),
    )


_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")


def duration_seconds(text: str | None) -> float | None:
    """OpenAI's reset durations (`1s`, `6m0s`, `20ms`, `1h2m3.5s`) or plain seconds, in
    seconds, within [0, MAX_WAIT_SECONDS]; None for anything else."""
    if text is None:
        return None
    text = text.strip()
    plain = provider_number(text, lowest=0.0, highest=MAX_WAIT_SECONDS)
    if plain is not None or not text or len(text) > 64:
        return plain
    parts = _DURATION_PART.findall(text)
    if not parts or "".join(number + unit for number, unit in parts) != text:
        return None
    scale = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
    total = sum(float(number) * scale[unit] for number, unit in parts)
    return provider_number(total, lowest=0.0, highest=MAX_WAIT_SECONDS)


RateLimitCause = Literal["ours", "not_ours", "unknown"]


def cause_of_429(
    headers: RateLimitHeaders, tokens: int, burst_seconds: float | None = None
) -> RateLimitCause:
    """Whether a 429 says the limit the judge paces to is spent: `ours` when the headers show
    no request or fewer tokens left than this request needed, `not_ours` when they show room
    for it (another limit refused it: an organisation's shared quota, a gateway's own), and
    `unknown` when the 429 came without them, or when the room they show is in a window
    longer than the provider's burst (`burst_seconds` of the limit they name: OpenAI's
    headers describe a minute, 149,984 of 150,000 left, while its burst refuses), which says
    nothing of the burst."""
    if not headers.said_anything:
        return "unknown"
    if headers.remaining_requests is not None and headers.remaining_requests < 1:
        return "ours"
    if headers.remaining_tokens is not None and headers.remaining_tokens < tokens:
        return "ours"
    if burst_seconds is not None and not _within_burst(headers, burst_seconds):
        return "unknown"
    return "not_ours"


def _within_burst(headers: RateLimitHeaders, burst_seconds: float) -> bool:
    """Whether the remaining the headers show is at most a burst of the limit they name (a
    limit not named: taken as within)."""
    return all(
        remaining is None or not limit or remaining <= math.ceil(limit / 60.0 * burst_seconds)
        for remaining, limit in (
            (headers.remaining_requests, headers.limit_requests),
            (headers.remaining_tokens, headers.limit_tokens),
        )
    )


def _int(value: str | None) -> int | None:
    return provider_number(value, lowest=0, highest=MAX_COUNT, integer=True)


# Until a prompt's replies were seen, a reply is expected to fill its max_tokens.
_UNSEEN_RATIO = 1.0
# How fast the learnt share follows a reply: up fast, a longer reply than expected being the
# costlier surprise (the buckets let more through than the provider then counts); down slowly,
# over about the last 20 replies of a prompt.
_WEIGHT_UP, _WEIGHT_DOWN = 0.5, 0.05


@dataclass
class TokenCounting:
    """How the provider counts the completion tokens of a chat request, at admission and in
    all, and what the judge holds for them at admission.

    `max_tokens`: the provider admits the prompt and `max_tokens` x `n`, and keeps them
    (a longer answer costs more). `usage`: it admits on the prompt and counts the completion it
    used; then the judge holds the completion it expects (the share of `max_tokens` this prompt's
    replies used, learnt per prompt, starting at all of it), so that its buckets neither hold
    budget the provider does not count nor let a burst through that the provider then counts.
    """

    counts: ProviderCounts = "max_tokens"
    _used_share: dict[str, float] = field(default_factory=dict)
    learner: CountingLearner | None = None
    """With `auto`: what the provider's headers say of its counting (until they say, and
    without them, `max_tokens` or what a previous run concluded: `start`)."""
    start: ProviderCounts | None = None
    """With `auto`: the way a previous run on the account concluded (`limits.stated`)."""

    def __post_init__(self) -> None:
        if self.counts == "auto":
            self.learner = CountingLearner.starting(self.start)
            self.counts = self.learner.conclusion or "max_tokens"

    def concluded(self, counts: ProviderCounts) -> None:
        """The headers told how the provider counts (with `auto`)."""
        self.counts = counts

    def at_admission(self, prompt_id: str, max_completion: int) -> int:
        """Completion tokens to hold when a request with `max_completion` (max_tokens x n) is
        admitted."""
        if self.counts == "max_tokens":
            return max_completion
        share = self._used_share.get(prompt_id, _UNSEEN_RATIO)
        return min(max_completion, math.ceil(max_completion * share))

    def counted(self, max_completion: int, used: int) -> int:
        """Completion tokens the provider counted for an answered request."""
        return max(used, max_completion) if self.counts == "max_tokens" else used

    def learn(self, prompt_id: str, max_completion: int, used: int) -> None:
        """Remember what share of `max_completion` a reply of this prompt used."""
        if max_completion <= 0:
            return
        share = min(1.0, used / max_completion)
        known = self._used_share.get(prompt_id)
        if known is None:
            self._used_share[prompt_id] = share
            return
        weight = _WEIGHT_UP if share > known else _WEIGHT_DOWN
        self._used_share[prompt_id] = known + weight * (share - known)


# How many intervals' votes the learner weighs (the latest ones), how many it needs before it
# concludes, and the share of them one way of counting needs.
_VOTES, _ENOUGH_VOTES, _MAJORITY = 41, 11, 0.75
# Below this difference in tokens between the two ways' predictions, an interval says nothing.
_LEAST_DIFFERENCE = 32
# How much later than the provider sent it an answer may be read (a busy event loop): the
# provider's bucket refills meanwhile, and the interval's drop is that uncertain.
_CLOCK_SLACK_SECONDS = 0.01
# A request admitted this long before an answer was read may be counted by the provider on
# either side of that answer.
_GUARD_SECONDS = 0.05
# Intervals waiting for the usage of the requests admitted in them: at most this many (a
# request that never ends must not hold the learner's memory).
_PENDING = 64

_MAX_TOKENS_WAYS = ("max_tokens at admission", "max_tokens at the answer")
_USAGE_WAYS = ("usage, prompt at admission", "usage at admission", "usage at the answer")


@dataclass
class _Interval:
    """Between two answers with headers: the provider's bucket at the first (its level, its
    capacity, its refill a second), what this process admitted within it (when, key), and the
    later answer (when it was read, the bucket's level then, its request)."""

    start: float
    level: float
    capacity: float
    rate: float
    admitted: list[tuple[float, int]]
    end: float
    remaining: float
    answer: tuple[float, float, float]
    """(prompt, max_completion, used) of the later answer's request."""

    def level_after(self, charges: list[tuple[float, float]]) -> float:
        """The bucket's level at `end` had it been charged `charges` (when, tokens), in order:
        refilled at its rate up to its capacity in between (a bucket that filled up meanwhile
        is followed exactly)."""
        level, now = self.level, self.start
        for when, tokens in [*charges, (self.end, 0.0)]:
            level = min(self.capacity, level + self.rate * max(0.0, when - now)) - tokens
            now = max(now, when)
        return level


@dataclass
class CountingLearner:
    """Which way the provider counts a chat request's completion, from its
    `x-ratelimit-remaining-tokens` headers.

    Between two answers with the headers, the provider's bucket refilled at its rate (from
    `x-ratelimit-limit-tokens`, up to its capacity: `remaining` plus `x-ratelimit-reset-tokens`
    of refill) and lost what it charged. The bucket's level at the later answer is predicted
    five ways, for the moments a provider may charge at: `max_tokens` at admission (the prompts
    and `max_tokens` x n of the requests admitted in between, when they were: OpenAI),
    `max_tokens` when it answers (a provider that admits a request only when it runs it: the
    later answer's prompt and max_tokens), `usage` with the prompt at admission and the
    completion when it answers (most gateways), `usage` charged whole at admission (the
    requests admitted in between, with the completion they then used), and `usage` when it
    answers. An interval is weighed once every request admitted in it has been answered
    (their usage known); it is left out when this process admitted a request within 50 ms
    before either answer was read (the provider may have seen it on the other side of that
    answer), when a request admitted in it was answered 429 or not at all (the provider
    counted none of it), when the bucket was empty (its `remaining` stops at 0), or when it
    holds less than every prediction by more than a quarter of this process's largest request
    (another process of the account sent one meanwhile). When the best prediction of one way of
    counting (`max_tokens` or `usage`) is closer to what the headers said than the best of the
    other by at least `_LEAST_DIFFERENCE` tokens and 20 ms of refill (an answer is read a little
    after it was sent), it votes for the ways whose predictions are within half that of the
    closest; with at least 11 votes, a way voted for by three quarters of the latest 41 decides
    how the provider counts (and a way of the other counting with as many later overturns it).
    Voting for the ways, not for the countings, keeps the intervals another process spoilt (its
    charges fall on one way or another by chance) from adding up to a conclusion. Until then,
    `max_tokens` (the one that never lets a burst through that the provider would then count),
    or what a previous run concluded (`starting`). A 429 only `max_tokens` explains outranks the
    votes (`refused_with_room`). The headers' window does not matter: a minute's
    window and the provider's one-second burst are charged and refilled alike.
    """

    conclusion: ProviderCounts | None = None
    overruled: bool = False
    """A 429 showed the provider counts `max_tokens` (`refused_with_room`): so it stays."""
    _votes: deque[frozenset[str]] = field(default_factory=lambda: deque(maxlen=_VOTES))
    """The ways (of `_MAX_TOKENS_WAYS` and `_USAGE_WAYS`) each interval voted for."""
    _previous: tuple[float, float, float] | None = None
    """(when, remaining tokens, capacity) of the previous answer with headers."""
    _requests: dict[int, tuple[float, float]] = field(default_factory=dict)
    """Requests admitted and not answered: key -> (prompt, max_completion)."""
    _since: list[tuple[float, int]] = field(default_factory=list)
    """(when, key) of the requests admitted since the previous answer with headers."""
    _pending: deque[_Interval] = field(default_factory=deque)
    _answered: dict[int, tuple[float, float, float]] = field(default_factory=dict)
    """Requests a pending interval waits for, once answered: key -> (prompt, max, used)."""
    _waited: set[int] = field(default_factory=set)
    _failed: set[int] = field(default_factory=set)
    _largest_request = 0.0

    _last_admitted = -math.inf
    _last_admitted_before = -math.inf
    """When the last request was admitted, now and at the previous answer."""
    _refused_since = False
    """A request was answered 429 since the previous answer: counted among the admitted, not
    by the provider."""

    @classmethod
    def starting(cls, counts: ProviderCounts | None) -> CountingLearner:
        """A learner that starts from what a previous run concluded (None: nothing)."""
        return cls(conclusion=counts if counts in ("max_tokens", "usage") else None)

    @property
    def weighed(self) -> int:
        """Votes among the latest (at most 41)."""
        return len(self._votes)

    def refused(self) -> None:
        """A chat request of this process was answered 429: the interval it falls in says
        nothing (the provider counted none of it, and may have refused it on either side of
        an answer)."""
        self._refused_since = True

    def admitted(self, key: int, now: float, prompt_tokens: int, max_completion: int) -> None:
        """A chat request of this process was let go at `now` (`key`: this attempt's, unique;
        `prompt_tokens`: its prompt's estimate, without margin)."""
        self._last_admitted = now
        self._requests[key] = (float(prompt_tokens), float(max_completion))
        self._since.append((now, key))
        self._largest_request = max(self._largest_request, prompt_tokens + max_completion)

    def ended(self, key: int) -> None:
        """The attempt `key` ended without an answer (refused, failed): the interval it was
        admitted in says nothing."""
        if self._requests.pop(key, None) is not None and key in self._waited:
            self._failed.add(key)
            self._weigh_ready()

    def answered(
        self, key: int | None, now: float, used: int, headers: RateLimitHeaders
    ) -> ProviderCounts | None:
        """The answer of the attempt `key` (`used` completion tokens) and its headers; the
        conclusion so far."""
        request = None if key is None else self._requests.pop(key, None)
        answer = None if request is None else (request[0], request[1], float(used))
        if answer is not None and key in self._waited:
            self._answered[key] = answer
        remaining, limit = headers.remaining_tokens, headers.limit_tokens
        admitted, self._since = self._since, []
        last_before, self._last_admitted_before = self._last_admitted_before, self._last_admitted
        refused, self._refused_since = self._refused_since, False
        until_full = headers.reset_tokens_seconds
        if remaining is None or limit is None or limit <= 0 or until_full is None:
            self._previous = None
            return self._weigh_ready()
        rate = limit / 60.0
        previous = self._previous
        self._previous = (now, float(remaining), remaining + until_full * rate)
        if previous is None or answer is None:
            return self._weigh_ready()
        before, left, capacity = previous
        says_nothing = (
            refused  # a 429 among the admitted: the provider counted none of it
            # a request admitted just before an answer was read may be on either side of it
            # for the provider (it sent the answer before, saw the request after)
            or self._last_admitted > now - _GUARD_SECONDS
            or last_before > before - _GUARD_SECONDS
            or remaining <= 0  # below zero (not said)
            or left <= 0
        )
        if not says_nothing:
            keys = [key for _, key in admitted]
            interval = _Interval(
                before, left, capacity, rate, admitted, now, float(remaining), answer
            )
            self._pending.append(interval)
            self._waited.update(keys)
            if key in self._waited and answer is not None:
                self._answered[key] = answer  # admitted and answered within the interval
            while len(self._pending) > _PENDING:
                self._forget(self._pending.popleft())
        return self._weigh_ready()

    def _weigh_ready(self) -> ProviderCounts | None:
        """Weigh the pending intervals whose admitted requests are all answered (in order)."""
        while self._pending:
            interval = self._pending[0]
            if any(key in self._failed for _, key in interval.admitted):
                self._forget(self._pending.popleft())
                continue
            if not all(key in self._answered for _, key in interval.admitted):
                break
            self._pending.popleft()
            vote = self._vote_of(interval)
            self._forget(interval)
            if vote is not None:
                self._votes.append(vote)
        return self._conclude()

    def _vote_of(self, interval: _Interval) -> frozenset[str] | None:
        """The ways the interval says the provider may count and charge (several predict the
        same when the request admitted is the one answered), or None: nothing."""
        requests = [(when, self._answered[key]) for when, key in interval.admitted]
        prompt, maximum, used = interval.answer
        end = interval.end
        predicted = {
            "max_tokens at admission": [(when, p + m) for when, (p, m, _) in requests],
            "max_tokens at the answer": [(end, prompt + maximum)],
            "usage, prompt at admission": [(when, p) for when, (p, _, _) in requests]
            + [(end, used)],
            "usage at admission": [(when, p + u) for when, (p, _, u) in requests],
            "usage at the answer": [(end, prompt + used)],
        }
        levels = {way: interval.level_after(charges) for way, charges in predicted.items()}
        if interval.remaining < min(levels.values()) - self._largest_request / 4:
            return None  # another process's requests
        errors = {way: abs(interval.remaining - level) for way, level in levels.items()}
        max_tokens = min(errors[way] for way in _MAX_TOKENS_WAYS)
        usage = min(errors[way] for way in _USAGE_WAYS)
        slack = interval.rate * _CLOCK_SLACK_SECONDS
        least = max(_LEAST_DIFFERENCE, 2 * slack)
        if abs(max_tokens - usage) < least:
            return None  # too close to call (every request used about its max_tokens, ...)
        best = min(max_tokens, usage)
        return frozenset(way for way, error in errors.items() if error <= best + least / 2)

    def _forget(self, interval: _Interval) -> None:
        for _, key in interval.admitted:
            self._answered.pop(key, None)
            self._waited.discard(key)
            self._failed.discard(key)

    def refused_with_room(
        self, headers: RateLimitHeaders, prompt_tokens: int, max_completion: int
    ) -> bool:
        """A 429 for a request of `prompt_tokens` (with the admission margin) and
        `max_completion`: when its headers show room for the prompt but not for the prompt and
        `max_completion` (and requests left), only a provider counting `max_tokens` at
        admission refuses it, whatever the intervals said: the conclusion is `max_tokens` for
        the rest of the run. Returns whether it was."""
        remaining = headers.remaining_tokens
        if remaining is None or max_completion <= 0:
            return False
        if headers.remaining_requests is not None and headers.remaining_requests < 1:
            return False
        if not prompt_tokens <= remaining < prompt_tokens + max_completion:
            return False
        self.overruled = True
        self.conclusion = "max_tokens"
        self._votes.clear()
        return True

    def _conclude(self) -> ProviderCounts | None:
        if self.overruled or len(self._votes) < _ENOUGH_VOTES:
            return self.conclusion
        way, votes = Counter(way for ways in self._votes for way in ways).most_common(1)[0]
        if votes >= _MAJORITY * len(self._votes):
            self.conclusion = "max_tokens" if way in _MAX_TOKENS_WAYS else "usage"
        return self.conclusion
