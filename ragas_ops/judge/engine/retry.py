"""The retry policy: what a failed attempt means, and whether, when and how often a request is
asked again. The provider's wire says what its error was (`wire.Failure`); this decides, the
same for every provider.

401/403 (bad key, no permission), 404 (unknown model) and a 429 saying the quota is exhausted
end the run (`JudgeFatalError`): nothing else can succeed; so does an endpoint that never
answers (`JudgeUnreachableError`, after `judge.unreachable_after` failed attempts). 400/422
reject one request (`JudgeRejectedError`): the row gets a status. 5xx errors, timeouts, dropped
connections and status-200 replies that are no API reply (an HTML page, a cut body, missing
fields) are retried with jittered exponential backoff, up to `max_attempts`, then
`JudgeUnavailableError`. A 429 is the account's pace, not a failure: it is retried after its
Retry-After without using an attempt, for `judge.rate_limit_patience_seconds` (what it does to
the pace is the admission's). On the flex tier a capacity 429 waits alone and falls back to
the standard tier (see `tiers`).
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any, NoReturn

from ragas_ops.config import JudgeSettings
from ragas_ops.judge.base import (
    JudgeFatalError,
    JudgeRejectedError,
    JudgeUnavailableError,
    JudgeUnreachableError,
)
from ragas_ops.judge.engine.request import Attempt, Refusal, Request
from ragas_ops.judge.engine.tiers import TierPolicy, TierState, may_lack_capacity
from ragas_ops.judge.engine.wire import Failure, Fitting
from ragas_ops.secrets import Secret, redact

log = logging.getLogger(__name__)

MISCONFIGURED_AFTER = 3
"""Refusals of the same kind, before any chat request was answered, that stop the run."""
ROW_CONTENT_CODES = frozenset(
    {
        "context_length_exceeded",
        "content_filter",
        "content_policy_violation",
        "string_above_max_length",
    }
)
"""Refusals of one row's content, not of the request's settings: a row's status, always."""
SETTING_OF_PARAM = {
    "max_tokens": "judge.limit_parameter",
    "max_completion_tokens": "judge.limit_parameter",
    "temperature": "judge.send_temperature",
    "reasoning_effort": "judge.reasoning_effort",
    "service_tier": "judge.service_tier",
    "response_format": "judge.structured_output",
    "n": "judge.model_profile",
    "model": "judge.model",
}
"""The setting that decides a parameter of the request: what a refusal of it asks to change."""


def misconfigured(refusal: Refusal, model: str) -> str:
    """The one line that stops a run whose every request was refused the same way."""
    setting = SETTING_OF_PARAM.get(refusal.param or "", "judge.model (or judge.base_url)")
    return (
        f"every request was refused the same way ({MISCONFIGURED_AFTER} in a row, none "
        f"answered): {refusal.describe()}; check {setting} (model {model!r})"
    )


BACKOFF_BASE_SECONDS = 0.5
BACKOFF_CAP_SECONDS = 30.0

AttemptOnce = Callable[[Request, int], Awaitable[Attempt]]
"""Sends one attempt of a request (the request with this attempt's tier, its number)."""


class RetryPolicy:
    """Asks a request again for as long as it may succeed; remembers a verdict that no request
    of the run can succeed, so that none is sent after it."""

    def __init__(
        self,
        settings: JudgeSettings,
        api_key: Secret,
        endpoint: str,
        events: Counter[str],
        rng: random.Random,
        *,
        shape: Fitting | None = None,
    ) -> None:
        self.settings = settings
        self._shape = shape
        self._refusals_before_any_answer: Counter[tuple[int, str, str]] = Counter()
        self._api_key = api_key
        self._endpoint = endpoint
        self._events = events
        self._rng = rng
        self.tiers = TierPolicy(settings.flex, settings.endpoint, rng, events)
        self.fatal: JudgeFatalError | None = None
        """Set once a failure says no request can succeed (raised for every later attempt)."""
        self._answered = False
        self._failures_before_any_answer = 0

    async def send(self, request: Request, attempt_once: AttemptOnce) -> Any:
        """Send `request` until an attempt succeeds; returns its read reply."""
        last_problem = ""
        attempt, sent = 0, 0
        first_429_at: float | None = None
        tiers = TierState()
        adapted: set[str] = set()
        while attempt < self.settings.endpoint.max_attempts:
            attempt += 1
            sent += 1
            outcome = await attempt_once(self._on_tier(request, tiers), sent)
            if outcome.adapted is not None:
                # A parameter the model refuses, now fitted: asked again at once, using no
                # attempt; refused again after that, it is the request's rejection.
                if outcome.adapted in adapted:
                    self._rejected(request.what, outcome.refusal)
                adapted.add(outcome.adapted)
                attempt -= 1
                continue
            if outcome.capacity:
                last_problem = outcome.problem
                if not await self._wait_for_capacity(tiers, attempt, outcome.retry_after):
                    attempt -= 1
                continue
            if outcome.rate_limited:
                # A 429 is the account's pace (or another's use of it), not this request
                # failing: it uses no attempt, and the request is asked again for as long as
                # `rate_limit_patience_seconds` since its first 429 allows.
                last_problem = outcome.problem
                now = time.monotonic()
                first_429_at = now if first_429_at is None else first_429_at
                if now - first_429_at >= self.settings.limits.rate_limit_patience_seconds:
                    break
                attempt -= 1
                if outcome.retry_after is not None:
                    await asyncio.sleep(outcome.retry_after)  # outside its slot
                continue
            if not outcome.problem:
                return outcome.reply
            last_problem = outcome.problem
            self._count_failure_before_any_answer(last_problem)
            log.debug(
                "%s: %s (attempt %d of %d)",
                request.what,
                last_problem,
                attempt,
                self.settings.endpoint.max_attempts,
            )
            if attempt < self.settings.endpoint.max_attempts:
                await asyncio.sleep(self.backoff(attempt))
        raise JudgeUnavailableError(
            f"{request.what}: gave up after {sent} attempts; last: {last_problem}"
        )

    def raise_if_fatal(self) -> None:
        """Another request found the judge unusable: this one is not sent."""
        if self.fatal is not None:
            raise self.fatal

    def answered(self) -> None:
        """An API reply came back (an answer or an API error): the endpoint is reachable."""
        self._answered = True

    def failed(self, failure: Failure, request: Request, attempt: int) -> Attempt:
        """What a failed attempt means (counted in the events); raise if no attempt can
        succeed. A 429's `retry_after` is its wait; the admission decides who waits it."""
        what = request.what
        kind = failure.kind
        if kind == "capacity" and may_lack_capacity(request.tier):
            self.answered()
            self._events["retry_flex_capacity"] += 1
            log.debug("%s: flex capacity 429 on tier %s (attempt %d)", what, request.tier, attempt)
            return Attempt(
                problem="flex capacity unavailable (429)",
                capacity=True,
                retry_after=failure.retry_after,
            )
        if kind in ("capacity", "rate_limited", "quota_exhausted"):
            self.answered()
            self._stop_if_fatal(self._raise_if_quota_exhausted, failure)
            self._events["retry_429"] += 1
            wait = self._retry_after(failure, attempt)
            return Attempt(problem="rate limited (429)", rate_limited=True, retry_after=wait)
        if failure.status is not None and kind in (
            "credentials",
            "unknown_model",
            "refused",
            "server",
        ):
            return self._adapted(failure) or self._status_error(failure, what)
        if kind == "timeout":
            self._events["retry_timeout"] += 1
            timeout = self.tiers.timeout_of(request.tier)
            return Attempt(problem=f"timed out after {timeout:g}s")
        if kind == "bad_reply":
            self._events["retry_bad_reply"] += 1
            self._events[f"bad_reply_{failure.code}"] += 1
            return Attempt(problem=f"not an API reply ({self._safe(failure.detail)})")
        self._events["retry_connection"] += 1  # refused, reset, DNS, TLS
        return Attempt(problem=f"connection failed ({self._safe(failure.detail)})")

    def backoff(self, attempt: int) -> float:
        """Equal jitter: half the exponential delay for sure, the other half at random."""
        delay = min(BACKOFF_CAP_SECONDS, BACKOFF_BASE_SECONDS * 2 ** (attempt - 1))
        return float(delay / 2 + self._rng.uniform(0, delay / 2))

    def _on_tier(self, request: Request, tiers: TierState) -> Request:
        """The next attempt of a chat request, with its service tier and timeout."""
        if not request.chat or not self.tiers.flexible:
            return request
        tier = self.tiers.tier_to_send(tiers)
        return replace(request, tier=tier, options=self.tiers.options(tier))

    async def _wait_for_capacity(
        self, tiers: TierState, attempt: int, retry_after: float | None
    ) -> bool:
        """After a flex capacity 429, only this request waits (jittered exponential backoff,
        outside its slot; the limiter keeps its pace) and tries again, on flex or, once it
        waited `flex_fallback_after_seconds`, on the standard tier. Returns whether the 429
        used an attempt: only past the cap when there is no fall-back."""
        wait = self.tiers.after_capacity_429(tiers, retry_after)
        counted = self.tiers.gives_up(tiers)
        if not counted or attempt < self.settings.endpoint.max_attempts:
            await asyncio.sleep(wait)
        return counted

    def _count_failure_before_any_answer(self, problem: str) -> None:
        """Stop the run when the endpoint has never answered and enough attempts failed: a
        wrong URL, DNS, TLS or a dead server would otherwise give every row a status."""
        limit = self.settings.endpoint.unreachable_after
        if self._answered or limit == 0:
            return
        self._failures_before_any_answer += 1
        if self._failures_before_any_answer >= limit and self.fatal is None:
            self.fatal = JudgeUnreachableError(
                f"the judge endpoint {self._endpoint} did not answer: {limit} attempts failed "
                f"and none succeeded (last: {problem}). Check judge.base_url (--base-url), "
                "the network and the server; judge.unreachable_after sets how many failures "
                "stop a run."
            )
        self.raise_if_fatal()

    def _stop_if_fatal(self, check: Any, *arguments: Any) -> None:
        """Run an error check; a fatal verdict is remembered, so that no other request of this
        run is sent after it (the run stops at once, not after the requests in flight)."""
        try:
            check(*arguments)
        except JudgeFatalError as fatal:
            self.fatal = fatal
            raise

    def _classify_status_error(self, failure: Failure, what: str) -> None:
        """Raise for errors that retrying cannot fix; return for those worth another try."""
        status = failure.status or 0
        if status < 500:
            self.answered()
        detail = self._safe(failure.detail)
        if failure.kind == "credentials":
            raise JudgeFatalError(
                f"the judge endpoint refused the credentials (HTTP {status}): {detail}. Check the "
                f"key in ${self.settings.endpoint.api_key_env} and that it may use model "
                f"{self.settings.endpoint.model!r}."
            ) from None
        if failure.kind == "unknown_model":
            raise JudgeFatalError(
                f"the judge endpoint does not know this model or path (HTTP {status}): {detail}. "
                f"Check the model name and the base URL."
            ) from None
        if failure.kind == "refused":
            self._rejected(what, Refusal(status, failure.code, failure.param, detail))

    def _status_error(self, failure: Failure, what: str) -> Attempt:
        """An error status: the run stops, the request is rejected, or it is asked again."""
        self._stop_if_fatal(self._classify_status_error, failure, what)
        self._events[f"retry_{failure.status}"] += 1
        return Attempt(problem=f"server error ({failure.status})")

    def _adapted(self, failure: Failure) -> Attempt | None:
        """A 400 refusing a parameter the request shape adjusts to: the attempt to ask again
        (None: not one)."""
        if self._shape is None or failure.kind != "refused" or failure.status != 400:
            return None
        if not self._shape.learn(failure.param, failure.code, failure.detail):
            return None
        self.answered()
        refusal = Refusal(400, failure.code, failure.param, self._safe(failure.detail))
        return Attempt(problem=refusal.describe(), adapted=failure.param, refusal=refusal)

    def _rejected(self, what: str, refusal: Refusal | None) -> NoReturn:
        """Reject the request; stop the run when no chat request was answered yet and
        `MISCONFIGURED_AFTER` were refused the same way (a setting, not a row)."""
        if refusal is None:
            raise JudgeRejectedError(f"{what}: request rejected") from None
        if refusal.code not in ROW_CONTENT_CODES and not (
            self._shape is not None and self._shape.answered
        ):
            kind = (refusal.status, refusal.code or "", refusal.param or "")
            self._refusals_before_any_answer[kind] += 1
            if self._refusals_before_any_answer[kind] >= MISCONFIGURED_AFTER:
                self.fatal = JudgeFatalError(misconfigured(refusal, self.settings.endpoint.model))
                raise self.fatal
        raise JudgeRejectedError(
            f"{what}: request rejected (HTTP {refusal.status}): {refusal.detail}"
        ) from None

    def _raise_if_quota_exhausted(self, failure: Failure) -> None:
        if failure.kind == "quota_exhausted":
            raise JudgeFatalError(
                f"the judge account has no quota left (HTTP {failure.status} "
                f"{failure.code or 'insufficient_quota'}): " + self._safe(failure.detail)
            ) from None

    def _retry_after(self, failure: Failure, attempt: int) -> float:
        """The reply's Retry-After, else our own backoff (also for an HTTP date)."""
        told = failure.retry_after
        return self.backoff(attempt) if told is None else told

    def _safe(self, text: str) -> str:
        return redact(text, self._api_key)
