"""`provider_counts = auto`: the judge learns from the provider's rate-limit headers whether
it counts `max_tokens` at admission or the completion used, alone on the account or beside
another process, and keeps `max_tokens` while the headers say nothing."""

from __future__ import annotations

import heapq
import math
import random
from dataclasses import dataclass
from typing import Literal

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


Charge = Literal["admission", "split", "answer"]


@dataclass
class Provider:
    """A token bucket of one second's budget that counts as `counts`, charging at `charge`:
    `admission` when the request arrives (OpenAI's `max_tokens`; a `usage` provider that knows
    the completion then), `split` the prompt when it arrives and the completion when it
    answers (a gateway counting usage), `answer` all of it when it answers (a server that
    admits a request only when it runs it: the test judge). Its headers describe the burst
    or, with `window = "minute"`, a minute's window charged alike (OpenAI's)."""

    counts: ProviderCounts
    charge: Charge = "split"
    window: str = "burst"
    level: float = RATE
    updated: float = 0.0

    def refill(self, now: float) -> None:
        self.level = min(RATE, self.level + (now - self.updated) * RATE)
        self.updated = now

    def completion(self, used: int, max_completion: int) -> int:
        return max_completion if self.counts == "max_tokens" else used

    def admit(self, now: float, prompt: int, used: int, max_completion: int) -> None:
        self.refill(now)
        if self.charge == "admission":
            self.level -= prompt + self.completion(used, max_completion)
        elif self.charge == "split":
            self.level -= prompt + (max_completion if self.counts == "max_tokens" else 0)

    def answer(self, now: float, prompt: int, used: int, max_completion: int) -> RateLimitHeaders:
        self.refill(now)
        if self.charge == "answer":
            self.level -= prompt + self.completion(used, max_completion)
        elif self.charge == "split":
            self.level -= used if self.counts == "usage" else max(0, used - max_completion)
        owed = RATE - self.level
        remaining = TPM - owed if self.window == "minute" else self.level
        return rate_limit_headers(
            {
                "x-ratelimit-limit-tokens": str(TPM),
                "x-ratelimit-remaining-tokens": str(max(0, math.floor(remaining))),
                "x-ratelimit-reset-tokens": f"{max(0.0, owed / RATE):.3f}s",
            }
        )


def run(
    counts: ProviderCounts,
    *,
    charge: Charge = "split",
    window: str = "burst",
    neighbours: int = 0,
    requests: int = 800,
    learner: CountingLearner | None = None,
) -> tuple[CountingLearner, int | None]:
    """This process's requests (prompt 700-1,100, max_tokens 512, 60-350 used) sent at the
    pace the provider's counting allows, 32 in flight, answered after 0.3-0.5 s; beside them
    `neighbours` other processes on the account sending the same at the same pace. Returns
    the learner and how many of this process's requests were admitted when it first came to
    the provider's way."""
    rng = random.Random(f"{counts}/{charge}/{window}/{neighbours}")
    provider = Provider(counts, charge, window)
    learner = learner or CountingLearner()
    events: list[tuple[float, int, str, int, int, int]] = []
    senders = 1 + neighbours
    for sender in range(senders):
        now = rng.uniform(0, 0.1)
        for number in range(requests):
            prompt, used = rng.randint(700, 1100), rng.randint(60, 350)
            counted = prompt + (512 if counts == "max_tokens" else used)
            heapq.heappush(events, (now, sender, "admit", prompt, used, number))
            answered = now + rng.uniform(0.3, 0.5)
            heapq.heappush(events, (answered, sender, "answer", prompt, used, number))
            now += counted / RATE * senders * rng.uniform(0.95, 1.1)
    learnt_after, admitted = None, 0
    while events:
        when, sender, kind, prompt, used, number = heapq.heappop(events)
        if kind == "admit":
            provider.admit(when, prompt, used, 512)
            if sender == 0:
                learner.admitted(number, when, prompt, 512)
                admitted += 1
        else:
            headers = provider.answer(when, prompt, used, 512)
            if sender == 0:  # read a moment after the provider sent it
                learner.answered(number, when + rng.uniform(0.001, 0.02), used, headers)
                if learner.conclusion == counts and learnt_after is None:
                    learnt_after = admitted
                if learner.conclusion != counts:
                    learnt_after = None
    return learner, learnt_after


WAYS = [
    ("max_tokens", "admission"),  # OpenAI, Azure
    ("max_tokens", "answer"),  # the test judge's max_tokens admission
    ("usage", "split"),  # a gateway: the prompt at admission, the completion at the end
    ("usage", "admission"),  # a usage provider charging the reply when it admits it
    ("usage", "answer"),  # the test judge's usage admission
]


@pytest.mark.parametrize(("counts", "charge"), WAYS)
@pytest.mark.parametrize("window", ["burst", "minute"])
def test_the_headers_tell_how_the_provider_counts_within_a_few_dozen_requests(
    counts: ProviderCounts, charge: Charge, window: str
) -> None:
    learner, learnt_after = run(counts, charge=charge, window=window, requests=300)
    assert learner.conclusion == counts
    assert learnt_after is not None
    assert learnt_after <= 60  # requests admitted when it first concluded (and kept to it)


@pytest.mark.parametrize(("counts", "charge"), WAYS)
def test_beside_another_process_it_never_concludes_wrong(
    counts: ProviderCounts, charge: Charge
) -> None:
    learner, _ = run(counts, charge=charge, neighbours=1)
    assert learner.conclusion in (counts, None)


@pytest.mark.parametrize(("counts", "charge"), WAYS)
def test_a_conclusion_kept_from_a_run_before_is_corrected_by_what_contradicts_it(
    counts: ProviderCounts, charge: Charge
) -> None:
    wrong: ProviderCounts = "usage" if counts == "max_tokens" else "max_tokens"
    counting = TokenCounting("auto", start=wrong)
    assert counting.counts == wrong  # the second night starts decided
    assert counting.learner is not None
    learner, _ = run(counts, charge=charge, requests=300, learner=counting.learner)
    assert learner.conclusion == counts


def test_without_headers_it_concludes_nothing_and_counts_max_tokens() -> None:
    learner = CountingLearner()
    for step in range(100):
        learner.admitted(step, step * 0.1, 900, 512)
        assert learner.answered(step, step * 0.1 + 0.06, 200, rate_limit_headers({})) is None
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
        learner.admitted(step, step * 1.0, 900, 512)
        learner.answered(step, step * 1.0 + 0.5, 200, full)
    assert learner.conclusion is None


def test_auto_is_the_default_and_the_explicit_values_stay_overrides() -> None:
    assert LimitsSpec().provider_counts == "auto"
    assert TokenCounting("usage").learner is None
    assert TokenCounting("max_tokens").learner is None


def test_a_429_with_room_for_the_prompt_but_not_max_tokens_overrules_the_votes():
    learner = CountingLearner()
    learner._votes.extend([frozenset({"usage at admission"})] * 20)
    assert learner._conclude() == "usage"  # the votes said usage
    room_for_prompt = RateLimitHeaders(remaining_requests=5, remaining_tokens=1_500)
    assert learner.refused_with_room(room_for_prompt, prompt_tokens=1_000, max_completion=512)
    assert learner.conclusion == "max_tokens"
    learner._votes.extend([frozenset({"usage at admission"})] * 41)
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
    learner._votes.extend([frozenset({"usage at admission"})] * 20)
    learner._conclude()
    assert not learner.refused_with_room(headers, prompt_tokens=1_000, max_completion=512)
    assert learner.conclusion == "usage"


def test_an_interval_with_a_429_in_it_does_not_vote():
    """A request answered 429 was admitted by the judge but counted by no provider: against
    a `max_tokens` provider its interval's drop would look like `usage` (closer to the used
    completion than to the max_tokens admitted)."""
    learner = CountingLearner()
    for key, when in ((0, -0.5), (2, -0.3), (4, -0.2)):
        learner.admitted(key, when, 600, 512)
    learner.answered(0, 0.0, 100, tokens_left(3_000))
    learner.admitted(1, 0.1, 800, 512)
    learner.refused()  # ... so the provider counted nothing: 0.3 s of refill, 5,000 left
    learner.ended(1)
    learner.answered(2, 0.3, 100, tokens_left(5_000))
    assert learner.weighed == 0
    learner.admitted(3, 0.35, 800, 512)
    learner.answered(4, 0.45, 100, tokens_left(5_000 + 1_000 - 800 - 512))
    learner.answered(3, 0.6, 100, rate_limit_headers({}))  # its usage known: weighed
    assert list(learner._votes) == [frozenset({"max_tokens at admission"})]  # votes again


def tokens_left(remaining: int) -> RateLimitHeaders:
    return RateLimitHeaders(
        remaining_tokens=remaining, limit_tokens=TPM, reset_tokens_seconds=(RATE - remaining) / RATE
    )
