"""The admission: when a request may go, paced to the provider's account.

It holds the rate limiter (this process's share of the account's RPM/TPM, in buckets no larger
than the provider's burst), the shared budget that keeps that share up to date with the other
processes on the account, how the provider counts completion tokens (`limits.provider`),
which 429s slow the judge down (`limits.congestion`), and the concurrency slots. It counts
each request as the provider does, before (admission) and after (its answer's usage)."""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import replace

from ragas_ops.config import JudgeSettings
from ragas_ops.judge.base import Usage
from ragas_ops.judge.engine.request import Attempt, Request
from ragas_ops.judge.limits.account_buckets import Rates
from ragas_ops.judge.limits.congestion import CongestionControl
from ragas_ops.judge.limits.headroom import BurstView, InFlight, in_reach, margin_tokens
from ragas_ops.judge.limits.provider import RateLimitHeaders, TokenCounting, cause_of_429
from ragas_ops.judge.limits.rate_limit import Admitted, PrioritySlots, RateLimiter
from ragas_ops.judge.limits.shared_budget import (
    SharedBudget,
    paced_rates,
    shared_budget_for,
    static_rates,
)
from ragas_ops.judge.limits.spec import DefaultRate
from ragas_ops.judge.limits.stated import read_stated, remember, stated_file

log = logging.getLogger(__name__)


FAR_BELOW = 0.5
"""A limit the provider states below this share of the configured one is said (a warning, a
note in the manifest and the report), once a run."""


class Admission:
    """Admits requests at the account's pace; learns from every answer and every 429."""

    def __init__(
        self,
        settings: JudgeSettings,
        endpoint: str,
        events: Counter[str],
        rate_limits: Callable[[Mapping[str, str]], RateLimitHeaders],
    ) -> None:
        """`rate_limits` reads the provider's rate-limit signals from a reply's headers (its
        wire's `rate_limits`)."""
        limits = settings.limits
        self._rate_limits = rate_limits
        static = static_rates(limits, settings.shared_budget)
        self.limiter = RateLimiter(
            static.rpm, static.tpm, burst_seconds=limits.provider_burst_seconds
        )
        self._account = f"{endpoint} {settings.endpoint.model}"
        self._cache_path = settings.cache.path
        known = read_stated(self._cache_path, self._account)
        started = None if known is None else known.counts
        self._counting = TokenCounting(limits.provider_counts, start=started)
        if self._counting.learner is not None and started is not None:
            log.info(
                "a previous run concluded the provider counts %s (%s): starting from it",
                started,
                stated_file(self._cache_path),
            )
        self._admission_margin = limits.admission_margin
        self.shared_budget: SharedBudget | None = shared_budget_for(
            settings.shared_budget,
            limits,
            self._account,
            settings.cache.path,
            self.limiter,
        )
        """This process's share of the account, kept up to date with the others (or None)."""
        self._limits = limits
        self._spec = settings.shared_budget
        self._told = Rates(limits.rpm, limits.tpm)
        """The account's rates as told, lowered to what the provider's headers state (an
        untold one: what they state)."""
        self._untold = (isinstance(limits.rpm, DefaultRate), isinstance(limits.tpm, DefaultRate))
        """Whether `rpm` and `tpm` were left at their defaults (`DefaultRate`)."""
        self.stated = Rates(None, None)
        """The limits the provider's `x-ratelimit-limit-*` stated, once they did."""
        self._burst_view = BurstView(limits.provider_burst_seconds)
        self._attempts: dict[int, int] = {}
        """id of a request admitted and not over -> its attempt's key for the learner."""
        self._keys = itertools.count()
        self._answered_any = False
        self._first_over = asyncio.Event()
        """With `rpm`/`tpm` not set: the first request goes alone and the others wait until it
        is over, so that the limits its answer states pace them (a cautious start)."""
        self._first_sent = not any(self._untold)
        self._in_flight = InFlight() if self.shared_budget is None else self.shared_budget.in_flight
        """Requests admitted and not ended: what the provider may still count of them."""
        self._whole_account = settings.shared_budget.static_share >= 1.0
        """Without a working shared budget, whether this process's ceiling is the account's
        (no other process counted on it)."""
        self._congestion = CongestionControl()
        self._slots = PrioritySlots(limits.max_concurrency)
        self._events = events
        self.notes: list[str] = []
        """What the run should be told once (a limit stated far below the configured one)."""

    def tokens_at_admission(self, prompt_id: str, prompt_tokens: int, max_completion: int) -> int:
        """What the provider counts for a chat request when it admits it (`max_tokens`
        counting) or will count once answered (`usage`: the completion this prompt uses)."""
        return prompt_tokens + self._counting.at_admission(prompt_id, max_completion)

    @asynccontextmanager
    async def slot(self, priority: int) -> AsyncIterator[None]:
        """One of `max_concurrency` requests in flight; the rows started first go first."""
        async with self._slots.slot(priority):
            yield

    async def admit(self, request: Request) -> Admitted:
        """Wait until the account's pace lets `request` go; what was admitted before it."""
        if self.shared_budget is not None:
            await self.shared_budget.start()  # the first request joins the others
        if not self._first_sent:
            self._first_sent = True  # this one goes alone: its answer states the limits
        elif not self._first_over.is_set() and any(self._untold):
            await self._first_over.wait()
        hold = self._counting.at_admission(request.what, request.max_completion)
        prompt = request.tokens - hold if request.chat else request.tokens

        def in_flight() -> None:
            self._in_flight.admitted(id(request), time.monotonic(), prompt, request.max_completion)

        # Without a token limit there is no bucket to raise: nothing in flight to keep.
        tracked = in_flight if self._told.tpm is not None else None
        await self.limiter.acquire(request.tokens, tracked)
        learner = self._counting.learner
        if learner is not None and request.chat:
            key = next(self._keys)
            self._attempts[id(request)] = key
            unmargined = round(prompt / (1 + self._admission_margin))
            learner.admitted(key, time.monotonic(), unmargined, request.max_completion)
        return self.limiter.admitted

    def ended(self, request: Request) -> None:
        """An admitted request is over, answered or not (idempotent)."""
        self._first_over.set()
        self._in_flight.ended(id(request), time.monotonic())
        key = self._attempts.pop(id(request), None)
        if key is not None and self._counting.learner is not None:
            self._counting.learner.ended(key)  # not answered: its interval says nothing

    def answered(
        self, request: Request, usage: Usage, headers: Mapping[str, str], since: Admitted
    ) -> None:
        """An answer: settle its tokens as the provider counted them, let the rate-limit
        headers correct the buckets, and tell the congestion control it was no 429."""
        key = self._attempts.pop(id(request), None)
        self.ended(request)
        self._answered_any = True
        completion = usage.completion_tokens
        if request.chat:
            self._counting.learn(request.what, request.max_completion, completion)
        counted = (
            usage.prompt_tokens
            + usage.embedding_tokens
            + request.counted_besides_usage
            + self._counting.counted(request.max_completion, completion)
        )
        self.limiter.settle(request.tokens, counted)
        stated = self._rate_limits(headers)
        self._keep_to_stated_limits(stated)
        if request.chat:
            self._learn_counting(key, completion, stated)
        said = self._burst_view.of(stated)  # what the provider's burst holds
        self.limiter.observe_remaining(said.remaining_requests, said.remaining_tokens, since)
        self._pace_to_headroom(said)
        restore = self._congestion.answered()
        if restore is not None:
            self.limiter.restore_pace(restore)

    def _keep_to_stated_limits(self, said: RateLimitHeaders) -> None:
        """The provider's `x-ratelimit-limit-*` state the account's limits: with `rpm`/`tpm`
        not configured, the judge paces to them; told more (a guess, a tier above the
        account's), it paces to them too; told less, it keeps its share."""
        stated = Rates(
            _positive(said.limit_requests) or self.stated.rpm,
            _positive(said.limit_tokens) or self.stated.tpm,
        )
        if stated != self.stated:
            self.stated = stated
            remember(self._cache_path, self._account, rpm=stated.rpm, tpm=stated.tpm)
        told = self._told
        untold_rpm, untold_tpm = self._untold
        kept = Rates(
            _kept(told.rpm, said.limit_requests, untold=untold_rpm),
            _kept(told.tpm, said.limit_tokens, untold=untold_tpm),
        )
        if kept == told:
            return
        self._told = kept
        static = static_rates(self._limits, self._spec, kept)
        if self.shared_budget is not None:
            self.shared_budget.pace_account(paced_rates(self._limits, kept), static)
        if self.shared_budget is None or self.shared_budget.failed:
            self.limiter.set_rates(static.rpm, static.tpm)
        if (untold_rpm and kept.rpm != told.rpm) or (untold_tpm and kept.tpm != told.tpm):
            self._events["limits_from_headers"] += 1
            log.info(
                "no rpm/tpm set: the judge paces to the limits the provider's headers state "
                "(rpm %s, tpm %s, less rate_margin %g)",
                _count(kept.rpm),
                _count(kept.tpm),
                self._limits.rate_margin,
            )
            return
        self._events["limits_lowered_to_headers"] += 1
        log.info(
            "the provider's headers state limits below what the judge was told (rpm %s, "
            "tpm %s): it paces to them",
            kept.rpm,
            kept.tpm,
        )
        self._say_if_far_below(Rates(self._limits.rpm, self._limits.tpm), kept)

    def _say_if_far_below(self, configured: Rates, stated: Rates) -> None:
        """Once a run: a stated limit below `FAR_BELOW` of the configured one is a warning
        and a note for the manifest and the report (the run will be that much slower)."""
        if self.notes:
            return
        far = [
            f"{name} {value:,.0f} (configured {told:,.0f})"
            for name, told, value in (
                ("x-ratelimit-limit-requests", configured.rpm, stated.rpm),
                ("x-ratelimit-limit-tokens", configured.tpm, stated.tpm),
            )
            if told is not None and value is not None and value < told * FAR_BELOW
        ]
        if not far:
            return
        note = (
            f"the provider's headers state {' and '.join(far)}: far below judge.rpm/tpm, the "
            "judge paces to them (check the account's tier, or the gateway's limits)"
        )
        self.notes.append(note)
        log.warning("%s", note)

    def _pace_to_headroom(self, said: RateLimitHeaders) -> None:
        """Raise the buckets to what the provider said is left less what it may still count
        (`limits.headroom`), when its headers describe the bucket the judge paces to."""
        burst = self._limits.provider_burst_seconds
        reach = in_reach(said, tpm=self._told.tpm, burst_seconds=burst, pace=self.limiter.pace)
        shared = self.shared_budget
        if shared is not None and shared.failed:
            shared = None
        if not reach or (shared is None and not self._whole_account):
            return
        assert said.remaining_tokens is not None
        margin = margin_tokens(said, rate_margin=self._limits.rate_margin, burst_seconds=burst)
        countable = self._in_flight.countable(time.monotonic())
        if self.limiter.raise_tokens(said.remaining_tokens - countable - margin) > 0.0:
            self._events["paced_to_headroom"] += 1
        if shared is not None:
            shared.offer_headroom(said.remaining_tokens, margin)

    def _learn_counting(self, key: int | None, completion: int, said: RateLimitHeaders) -> None:
        """With `provider_counts = auto`: what this answer's headers say of the provider's
        counting; a new conclusion applies to the requests admitted from now on, and is kept
        for the account's next run (`limits.stated`)."""
        learner = self._counting.learner
        if learner is None:
            return
        before = learner.conclusion
        concluded = learner.answered(key, time.monotonic(), completion, said)
        if concluded is not None and concluded != self._counting.counts:
            self._counting.concluded(concluded)
        if concluded is not None and concluded != before:
            self._events[f"provider_counts_{concluded}"] += 1
            log.info(
                "the provider's rate-limit headers say it counts %s (after %d weighed intervals)",
                concluded,
                learner.weighed,
            )
            remember(self._cache_path, self._account, counts=concluded)

    def _overrule_usage(self, request: Request, said: RateLimitHeaders) -> None:
        """With `auto` concluded `usage`: a 429 with room for the prompt but not for its
        `max_tokens` says the provider counts `max_tokens` (the votes were wrong)."""
        learner = self._counting.learner
        if learner is None or not request.chat or self._counting.counts != "usage":
            return
        hold = self._counting.at_admission(request.what, request.max_completion)
        if learner.refused_with_room(said, request.tokens - hold, request.max_completion):
            self._counting.concluded("max_tokens")
            self._events["provider_counts_max_tokens"] += 1
            log.info("a 429 says the provider counts max_tokens at admission, not usage")
            remember(self._cache_path, self._account, counts="max_tokens")

    @property
    def provider_counts(self) -> str:
        """How the provider is taken to count a chat request's tokens now."""
        return self._counting.counts

    def refund(self, request: Request) -> None:
        """A request refused before any work (a 429): its tokens were not spent."""
        self.limiter.refund(request.tokens)

    def rate_limited(
        self, request: Request, headers: Mapping[str, str], outcome: Attempt
    ) -> Attempt:
        """A 429: it slows every request down only when this judge's pace caused it (the
        headers say the budget is spent, or the share of 429s follows the pace); otherwise
        only this request waits its Retry-After, and the others go on."""
        wait = outcome.retry_after or 0.0
        said = self._rate_limits(headers)
        self._keep_to_stated_limits(said)
        if self._counting.learner is not None and request.chat:
            self._counting.learner.refused()
        self._overrule_usage(request, said)
        cause = cause_of_429(said, request.tokens, self._limits.provider_burst_seconds)
        reaction, restore = self._congestion.refused(cause, self.limiter.pace)
        if restore is not None:
            self.limiter.restore_pace(restore)
        if reaction == "keep_pace":
            self._events["retry_429_not_ours"] += 1
            log.debug("%s: 429 not caused by our pace, retried in %.2f s", request.what, wait)
            return outcome
        log.debug("%s: 429, every request waits %.2f s", request.what, wait)
        self.limiter.pause_for(wait)
        self.limiter.slow_down()  # AIMD: sustained 429s lower the pace
        return replace(outcome, retry_after=None)  # every request waits, in the limiter

    def limits_note(self) -> str | None:
        """What the run's output says of the rates with `rpm`/`tpm` not configured: the
        provider's stated limits it paced to, or the defaults kept when it stated none (None:
        both were configured, or nothing was answered)."""
        untold_rpm, untold_tpm = self._untold
        if not (untold_rpm or untold_tpm) or not self._answered_any:
            return None
        if self.stated.rpm is None and self.stated.tpm is None:
            return (
                "the provider stated no rate limits (no x-ratelimit-limit-* headers): the judge "
                f"kept its defaults, rpm {_count(self._told.rpm)} and tpm "
                f"{_count(self._told.tpm)}; set [judge] rpm and tpm to your account's"
            )
        return (
            f"rate limits as the provider states them: rpm {_count(self._told.rpm)}, "
            f"tpm {_count(self._told.tpm)} (no rpm/tpm set; kept in "
            f"{stated_file(self._cache_path) or 'memory only'})"
        )

    async def aclose(self) -> None:
        note = self.limits_note()
        if note is not None and self.stated == Rates(None, None):
            self._events["limits_defaults_kept"] += 1
            log.warning("%s", note)
        if self.shared_budget is not None:
            await self.shared_budget.stop()


def _kept(told: float | None, stated: int | None, *, untold: bool) -> float | None:
    """The rate the judge keeps to: an untold one is the provider's `stated` limit; a told
    one is lowered to it (an unset one, or one the provider does not state, stays)."""
    if told is None or stated is None or stated <= 0:
        return told
    return float(stated) if untold else min(told, float(stated))


def _positive(stated: int | None) -> int | None:
    return stated if stated is not None and stated > 0 else None


def _count(rate: float | None) -> str:
    return "unlimited" if rate is None else f"{rate:,.0f}"
