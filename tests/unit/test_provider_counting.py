"""`provider_counts = auto`: the judge learns from the provider's rate-limit headers whether
it counts `max_tokens` at admission or the completion used, alone on the account or beside
another process, and keeps `max_tokens` while the headers say nothing."""

from __future__ import annotations

import heapq
import math
import random
from dataclasses import dataclass

import pytest

from ragas_ops.judge.limits.provider import (
    CountingLearner,
    RateLimitHeaders,
    TokenCounting,
    rate_limit_headers,
)
from ragas_ops.judge.limits.spec import LimitsSpec, ProviderCounts

TPM = 400_000
RATE = TPM / 60.0


@dataclass
class Provider:
    """A token bucket of one second's budget that counts as `counts` (the test judge's
    rule: `max_tokens` admits the prompt and max_tokens, `usage` the prompt, then the
    completion when it answers, before its headers)."""

    counts: ProviderCounts
    level: float = RATE
    updated: float = 0.0

    def refill(self, now: float) -> None:
        self.level = min(RATE, self.level + (now - self.updated) * RATE)
        self.updated = now

    def admit(self, now: float, prompt: int, max_completion: int) -> None:
        self.refill(now)
        self.level -= prompt + (max_completion if self.counts == "max_tokens" else 0)

    def answer(self, now: float, used: int, max_completion: int) -> RateLimitHeaders:
        self.refill(now)
        self.level -= used if self.counts == "usage" else max(0, used - max_completion)
        return rate_limit_headers(
            {
                "x-ratelimit-limit-tokens": str(TPM),
                "x-ratelimit-remaining-tokens": str(max(0, math.floor(self.level))),
                "x-ratelimit-reset-tokens": f"{max(0.0, (RATE - self.level) / RATE):.3f}s",
            }
        )


def run(counts: ProviderCounts, *, neighbours: int = 0, requests: int = 800) -> CountingLearner:
    """This process's requests (prompt 700-1,100, max_tokens 512, 60-350 used) sent at the
    pace the provider's counting allows, 32 in flight, answered after 0.3-0.5 s; beside them
    `neighbours` other processes on the account sending the same at the same pace."""
    rng = random.Random(f"{counts}/{neighbours}")
    provider, learner = Provider(counts), CountingLearner()
    events: list[tuple[float, int, str, int, int, int]] = []
    senders = 1 + neighbours
    for sender in range(senders):
        now = rng.uniform(0, 0.1)
        for number in range(requests):
            prompt, used = rng.randint(700, 1100), rng.randint(60, 350)
            counted = prompt + (512 if counts == "max_tokens" else used)
            heapq.heappush(events, (now, sender, "admit", prompt, used, number))
            heapq.heappush(events, (now + rng.uniform(0.3, 0.5), sender, "answer", prompt, used, 0))
            now += counted / RATE * senders * rng.uniform(0.95, 1.1)
    while events:
        when, sender, kind, prompt, used, _ = heapq.heappop(events)
        if kind == "admit":
            provider.admit(when, prompt, 512)
            if sender == 0:
                learner.admitted(when, prompt, 512)
        else:
            headers = provider.answer(when, used, 512)
            if sender == 0:  # read a moment after the provider sent it
                learner.answered(when + rng.uniform(0.001, 0.02), used, headers)
    return learner


@pytest.mark.parametrize("counts", ["max_tokens", "usage"])
@pytest.mark.parametrize("neighbours", [0, 1])
def test_the_headers_tell_how_the_provider_counts(counts: ProviderCounts, neighbours: int) -> None:
    assert run(counts, neighbours=neighbours).conclusion == counts


def test_without_headers_it_concludes_nothing_and_counts_max_tokens() -> None:
    learner = CountingLearner()
    for step in range(100):
        learner.admitted(step * 0.1, 900, 512)
        assert learner.answered(step * 0.1 + 0.06, 200, rate_limit_headers({})) is None
    counting = TokenCounting("auto")
    assert counting.counts == "max_tokens"
    assert counting.learner is not None
    assert counting.at_admission("faithfulness.verdicts/v1", 512) == 512


def test_a_bucket_that_stays_full_says_nothing() -> None:
    """A client far below the limit: every answer says the bucket is (nearly) full."""
    learner = CountingLearner()
    full = rate_limit_headers(
        {
            "x-ratelimit-limit-tokens": str(TPM),
            "x-ratelimit-remaining-tokens": str(int(RATE)),
            "x-ratelimit-reset-tokens": "0s",
        }
    )
    for step in range(100):
        learner.admitted(step * 1.0, 900, 512)
        learner.answered(step * 1.0 + 0.5, 200, full)
    assert learner.conclusion is None


def test_auto_is_the_default_and_the_explicit_values_stay_overrides() -> None:
    assert LimitsSpec().provider_counts == "auto"
    assert TokenCounting("usage").learner is None
    assert TokenCounting("max_tokens").learner is None


def test_a_429_with_room_for_the_prompt_but_not_max_tokens_overrules_the_votes():
    learner = CountingLearner()
    learner._votes.extend([True] * 20)
    assert learner._conclude() == "usage"  # the votes said usage
    room_for_prompt = RateLimitHeaders(remaining_requests=5, remaining_tokens=1_500)
    assert learner.refused_with_room(room_for_prompt, prompt_tokens=1_000, max_completion=512)
    assert learner.conclusion == "max_tokens"
    learner._votes.extend([True] * 41)
    assert learner._conclude() == "max_tokens"  # for the rest of the run


@pytest.mark.parametrize(
    "headers",
    [
        RateLimitHeaders(remaining_requests=5, remaining_tokens=900),  # no room for the prompt
        RateLimitHeaders(remaining_requests=5, remaining_tokens=1_600),  # room for it all
        RateLimitHeaders(remaining_requests=0, remaining_tokens=1_500),  # the requests' limit
        RateLimitHeaders(),  # nothing said
    ],
)
def test_a_429_that_any_counting_explains_overrules_nothing(headers):
    learner = CountingLearner()
    learner._votes.extend([True] * 20)
    learner._conclude()
    assert not learner.refused_with_room(headers, prompt_tokens=1_000, max_completion=512)
    assert learner.conclusion == "usage"


def test_an_interval_with_a_429_in_it_does_not_vote():
    """A request answered 429 was admitted by the judge but counted by no provider: against
    a `max_tokens` provider its interval's drop would look like `usage` (closer to the used
    completion than to the max_tokens admitted)."""
    learner = CountingLearner()
    learner.answered(0.0, 100, tokens_left(3_000))
    learner.admitted(0.1, 800, 512)
    learner.refused()  # ... so the provider counted nothing: 0.3 s of refill, 5,000 left
    learner.answered(0.3, 100, tokens_left(5_000))
    assert len(learner._votes) == 0
    learner.admitted(0.35, 800, 512)
    learner.answered(0.45, 100, tokens_left(5_000 + 1_000 - 800 - 512))
    assert list(learner._votes) == [False]  # the next interval votes again: max_tokens


def tokens_left(remaining: int) -> RateLimitHeaders:
    return RateLimitHeaders(
        remaining_tokens=remaining, limit_tokens=TPM, reset_tokens_seconds=(RATE - remaining) / RATE
    )
