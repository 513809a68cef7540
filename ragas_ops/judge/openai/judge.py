"""The judge for OpenAI and OpenAI-compatible endpoints (Azure OpenAI, vLLM, Ollama...).

It owns what metrics must not know: rate limits, timeouts, retries, error classes, parsing with
one repair attempt, the response cache, and the accounting of tokens and cost.

Error classes: 401/403 (bad key, no permission), 404 (unknown model) and a 429 saying the quota
is exhausted end the run (`JudgeFatalError`): nothing else can succeed; so does an endpoint that
never answers (`JudgeUnreachableError`, after `judge.unreachable_after` failed attempts).
400/422 and content filters reject one request (`JudgeRejectedError`): the row gets a status.
5xx errors, timeouts, dropped connections and status-200 replies that are no API reply (an HTML
page, a cut body, missing fields) are retried with jittered exponential backoff, up to
`max_attempts`, then `JudgeUnavailableError`. A 429 is the account's pace, not a failure: it is
retried after its Retry-After without using an attempt, for `judge.rate_limit_patience_seconds`.
On the flex service tier (`judge.service_tier`, see `tiers`), a 429 "resource unavailable" is
the tier's capacity, not the account's pace: only its request waits, without using attempts,
and falls back to the standard tier after `judge.flex_fallback_after_seconds`.

Every attempt is charged to the call that made it, so a row's requests, tokens and cost add up
to the run's, which add up to what the endpoint received. A reply that arrived is cached even
when it could not be used, with its outcome, so a rerun pays nothing for it either
(`judge.retry_failed` asks again).
"""

from __future__ import annotations

import asyncio
import importlib
import json
import logging
import random
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any

import numpy as np
import openai

from ragas_ops.config import JudgeSettings
from ragas_ops.judge.base import (
    CURRENT_ROW,
    Completion,
    Embeddings,
    JudgeFatalError,
    JudgeOutputError,
    JudgeRejectedError,
    JudgeRowError,
    JudgeUnavailableError,
    JudgeUnreachableError,
    RowTicket,
    Usage,
)
from ragas_ops.judge.cache import JudgeCache, ResponseCache, cache_key
from ragas_ops.judge.endpoint import describe_judge, effective_base_url, endpoint_name
from ragas_ops.judge.limits.budget import Budget, Spend
from ragas_ops.judge.limits.congestion import CongestionControl
from ragas_ops.judge.limits.priority import Decision, RowAdmission, priority_of
from ragas_ops.judge.limits.provider import TokenCounting, cause_of_429, rate_limit_headers
from ragas_ops.judge.limits.rate_limit import Admitted, PrioritySlots, RateLimiter
from ragas_ops.judge.limits.shared_budget import shared_budget_for, static_rates
from ragas_ops.judge.openai.replies import (
    BadReplyError,
    ChatReply,
    EmbeddingReply,
    ReportedUsage,
    read_chat_reply,
    read_embedding_reply,
    retry_after,
)
from ragas_ops.judge.openai.tiers import (
    TierPolicy,
    TierState,
    answered_tier,
    is_capacity_error,
    may_lack_capacity,
)
from ragas_ops.pricing import Price, price_for
from ragas_ops.prompts import OutputParseError, OutputT, Prompt, encode_data
from ragas_ops.secrets import Secret, redact, without_secret
from ragas_ops.text import estimate_tokens

log = logging.getLogger(__name__)

MESSAGE_OVERHEAD_TOKENS = 4
REQUEST_OVERHEAD_TOKENS = 3
"""Tokens a provider adds to every chat request (the reply's priming)."""
BACKOFF_BASE_SECONDS = 0.5
BACKOFF_CAP_SECONDS = 30.0
MAX_EMBEDDING_TOKENS_PER_REQUEST = 250_000  # OpenAI refuses more than 300k per request
REPAIR_INSTRUCTION = (
    "Your reply cannot be used: {problem}. Reply again with only the JSON object, following "
    "the schema and the instructions."
)
# Failures that come with a reply, and so are stored in the cache with it.
_STORED_OUTCOMES_BY_NAME: dict[str, type[JudgeRowError]] = {
    "output_invalid": JudgeOutputError,
    "rejected": JudgeRejectedError,
}
_STORED_OUTCOMES = tuple(_STORED_OUTCOMES_BY_NAME.values())
RETRIED_ERRORS = (openai.APIStatusError, openai.APIConnectionError, BadReplyError)
"""What an attempt may end in and still be worth another (timeouts are connection errors;
status errors that retrying cannot fix are raised by `_classify_status_error`)."""


def never_sent(error: BaseException) -> bool:
    """Whether an attempt failed before its request left this machine: the connection was
    refused, timed out while connecting (also when this process was too busy to see it made),
    or no connection of the pool came free in time. Such an attempt is no request: the
    endpoint never saw it, so the row is not charged for it. A failure after connecting (a
    reset, a read timeout) may have reached the endpoint, which may bill it: that is charged."""
    return isinstance(error, openai.APIConnectionError) and isinstance(
        error.__cause__, _unsent_errors()
    )


@lru_cache(maxsize=1)
def _unsent_errors() -> tuple[type[BaseException], ...]:
    """The transport's errors of a connection never made: `httpx2`'s (the SDK's transport
    since openai 2) and `httpx`'s (before), whichever are installed."""
    found: list[type[BaseException]] = []
    for transport in ("httpx2", "httpx"):
        try:
            module = importlib.import_module(transport)
        except ImportError:
            continue
        found += [getattr(module, name) for name in _UNSENT if hasattr(module, name)]
    return tuple(found)


_UNSENT = ("ConnectError", "ConnectTimeout", "PoolTimeout")


def estimate_chat_tokens(messages: Sequence[Mapping[str, str]]) -> int:
    """Prompt tokens of a chat request, estimated before sending it."""
    return sum(estimate_tokens(m["content"]) + MESSAGE_OVERHEAD_TOKENS for m in messages)


def admission_tokens(
    messages: Sequence[Mapping[str, str]], params: Mapping[str, Any], margin: float = 0.0
) -> int:
    """The tokens a provider's rate limiter counts for a chat request when it admits it, as
    OpenAI's does: the messages, the schema sent in `response_format`, and `max_tokens` for
    each of the `n` choices (counted whatever the answer then uses); `margin` more of the
    prompt part, which is an estimate."""
    prompt = estimate_chat_tokens(messages) + REQUEST_OVERHEAD_TOKENS + schema_tokens(params)
    reserved = int(params.get("max_tokens", 0)) * int(params.get("n", 1))
    return round(prompt * (1 + margin)) + reserved


def schema_tokens(params: Mapping[str, Any]) -> int:
    """Tokens of the `response_format` sent, which providers count with the prompt."""
    response_format = params.get("response_format")
    if response_format is None:
        return 0
    return estimate_tokens(json.dumps(response_format, separators=(",", ":")))


def openai_client(
    settings: JudgeSettings, api_key: Secret, *, max_retries: int, base_url: str | None = None
) -> openai.AsyncOpenAI:
    """The SDK client for the judge endpoint (an endpoint without keys still needs a value)."""
    return openai.AsyncOpenAI(
        api_key=api_key.reveal() or "no-key",
        base_url=base_url or effective_base_url(settings.base_url),
        timeout=settings.timeout_seconds,
        max_retries=max_retries,
    )


MIN_OUTPUT_TOKENS = 128
OUTPUT_TOKENS_PER_INPUT_TOKEN = 2
"""A ragas-ops prompt's output restates, selects from or judges its input (statements from an
answer, a verdict and reason per statement, sentences copied from the contexts, questions for
an answer): it needs at most about as many tokens as the input, twice that is a wide margin."""


def output_tokens_for(prompt: Prompt[Any], data: Mapping[str, Any]) -> int:
    """`max_tokens` for one request: what the prompt's output can need for this input (the
    prompt's own `output_budget`, else its data's tokens, see `OUTPUT_TOKENS_PER_INPUT_TOKEN`),
    at most the prompt's own maximum.
    Providers reserve `max_tokens` at admission: a blanket maximum wastes the TPM budget."""
    if prompt.output_budget is not None:
        return max(1, min(prompt.max_output_tokens, prompt.output_budget(data)))
    input_tokens = estimate_tokens(encode_data(data))
    needed = MIN_OUTPUT_TOKENS + OUTPUT_TOKENS_PER_INPUT_TOKEN * input_tokens
    return min(prompt.max_output_tokens, needed)


def chat_params(
    settings: JudgeSettings,
    prompt: Prompt[Any],
    n: int,
    data: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The request parameters besides the messages (sync and batch requests alike)."""
    params: dict[str, Any] = {
        "model": settings.model,
        "temperature": prompt.temperature,
        "max_tokens": prompt.max_output_tokens if data is None else output_tokens_for(prompt, data),
    }
    if n > 1:
        params["n"] = n
    if settings.structured_output == "json_schema":
        params["response_format"] = {
            "type": "json_schema",
            "json_schema": {
                "name": prompt.schema_name,
                "strict": True,
                "schema": prompt.json_schema,
            },
        }
    elif settings.structured_output == "json_object":
        params["response_format"] = {"type": "json_object"}
    return params


def chat_messages(
    settings: JudgeSettings, prompt: Prompt[Any], data: Mapping[str, Any]
) -> list[dict[str, str]]:
    """The messages of a request: with strict json_schema output the schema goes only in
    `response_format`, not in the text too."""
    return prompt.messages(data, schema_in_text=settings.structured_output != "json_schema")


def chat_cache_key(
    endpoint: str, prompt: Prompt[Any], params: Mapping[str, Any], messages: Any
) -> str:
    """The key of a chat request in the response cache; batch requests use it as custom_id.
    The endpoint is part of it: another server's answers are never reused."""
    # Not `max_tokens`: room to answer is not part of the question (a reply cut short is
    # asked again with more, under the same key), so a change of budget reuses the answers.
    keyed = {name: value for name, value in params.items() if name != "max_tokens"}
    return cache_key(
        kind="chat", endpoint=endpoint, prompt=prompt.id, params=keyed, messages=messages
    )


def stored_failure(texts: list[str], error: JudgeRowError) -> dict[str, Any]:
    """The cache entry of a reply that arrived but could not be used."""
    outcome = next(
        name for name, kind in _STORED_OUTCOMES_BY_NAME.items() if isinstance(error, kind)
    )
    return {"texts": texts, "outcome": outcome, "reason": str(error)}


def repair_messages(
    messages: Sequence[Mapping[str, str]], text: str, problem: Exception
) -> list[dict[str, str]]:
    """The conversation that asks the judge once to fix an unusable reply."""
    return [
        *(dict(message) for message in messages),
        {"role": "assistant", "content": text},
        {"role": "user", "content": REPAIR_INSTRUCTION.format(problem=problem)},
    ]


def budget_for(settings: JudgeSettings, chat_price: Price | None) -> Budget:
    """The run's budget; a budget in money needs a price for the judge model."""
    if settings.budget_usd is not None and chat_price is None:
        raise JudgeFatalError(
            f"judge.budget_usd is set but model {settings.model!r} has no price: add it to "
            "the [prices] table of the config file, or set judge.budget_tokens instead"
        )
    return Budget(settings.budget_usd, settings.budget_tokens)


@dataclass(frozen=True)
class _Request:
    """One request to send, however many attempts it takes."""

    what: str
    call: Callable[[Mapping[str, Any]], Awaitable[Any]]
    """Sends it once with the SDK's per-request options (`options`); returns the SDK's raw
    response."""
    read: Callable[[str, bytes], Any]
    """Reads a status-200 body (content type, bytes), or raises `BadReplyError`."""
    tokens: int
    """What the rate limiter is charged at admission."""
    counted_besides_usage: int
    """What the provider counts besides the reported usage (the schema sent)."""
    max_completion: int
    """`max_tokens` x `n`: the most completion tokens its reply may use (0: no completion)."""
    expected: Spend
    """What the budget holds for it while it is in flight: at most what it can cost."""
    chat: bool
    row: RowTicket | None
    """The row it is for (None: no row in particular)."""
    tier: str | None = None
    """The `service_tier` this attempt is sent with (None: none); set per attempt."""
    options: Mapping[str, Any] = field(default_factory=dict)
    """The SDK's per-request options for this attempt: its tier and timeout."""

    @property
    def priority(self) -> int:
        """Lower goes first when requests wait for a slot: the rows started first finish first."""
        return priority_of(self.row)


@dataclass
class _Call:
    """One `complete` or `embed` call: the ledger its requests are charged to, and its row."""

    spent: Usage
    row: RowTicket | None


@dataclass(frozen=True)
class _Attempt:
    """How one attempt ended: a read reply, or the problem (and whether it was a 429)."""

    reply: Any = None
    problem: str = ""
    rate_limited: bool = False
    capacity: bool = False
    """A flex capacity 429: the tier had no room, the account's rate is not in question."""
    retry_after: float | None = None
    """The Retry-After of a capacity 429, if it had one; of a 429 this request alone waits."""


class OpenAIJudge:
    """An OpenAI-compatible judge. Create one per run; `aclose()` it at the end."""

    def __init__(
        self,
        settings: JudgeSettings,
        api_key: Secret,
        prices: Mapping[str, Price],
        cache: JudgeCache | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.settings = settings
        self._api_key = api_key
        self.base_url = effective_base_url(settings.base_url)
        self.endpoint = endpoint_name(self.base_url)
        """Where the judge is (no credentials): part of its name and of every cache key."""
        # Retries are ours: they must go through the rate limiter.
        self._client = openai_client(settings, api_key, max_retries=0, base_url=self.base_url)
        self._chat_price = price_for(settings.model, prices)
        self._embedding_price = price_for(settings.embedding_model, prices)
        self._cache = cache or ResponseCache(None)
        static = static_rates(settings)
        self._limiter = RateLimiter(
            static.rpm, static.tpm, burst_seconds=settings.provider_burst_seconds
        )
        self._counting = TokenCounting(settings.provider_counts)
        """How the provider counts completion tokens (see `limits.provider`)."""
        self.shared_budget = shared_budget_for(settings, self.endpoint, self._limiter)
        """This process's share of the account, kept up to date with the others (or None)."""
        self._congestion = CongestionControl()
        """Which 429s slow the judge down (see `limits.congestion`)."""
        self._slots = PrioritySlots(settings.max_concurrency)
        self._in_flight: dict[str, asyncio.Future[Any]] = {}
        self._rng = rng or random.Random()
        self._fatal: JudgeFatalError | None = None
        self._answered = False
        self._failures_before_any_answer = 0
        self.budget = budget_for(settings, self._chat_price)
        self._budget_settled = asyncio.Event()
        self._budget_queue: Counter[int] = Counter()
        """Requests waiting for budget, by the priority of their row."""
        self.rows = RowAdmission(self.budget)
        """The rows under way, and whether the budget lets a new one start."""
        self.total = Usage()
        self.events: Counter[str] = Counter()
        """Counts of what happened on the wire: retries by cause, repairs, cache hits."""
        self._tiers = TierPolicy(settings, self._rng, self.events)
        self._cache.count_in(self.events)

    @property
    def description(self) -> str:
        return describe_judge(self.settings.model, self.endpoint)

    @property
    def embedding_description(self) -> str:
        return describe_judge(self.settings.embedding_model, self.endpoint)

    def usage_total(self) -> Usage:
        return self.total

    @property
    def rate_limit_wait_seconds(self) -> float:
        """Seconds requests waited for the RPM/TPM budget or a Retry-After."""
        return self._limiter.waited_seconds

    @property
    def rate_limit_slowdowns(self) -> int:
        """How many times sustained 429s halved the request and token rates (AIMD)."""
        return self._limiter.decreases

    async def aclose(self) -> None:
        if self.shared_budget is not None:
            await self.shared_budget.stop()
        await self._client.close()

    # -- chat ---------------------------------------------------------------------------------

    async def complete(
        self, prompt: Prompt[OutputT], data: Mapping[str, Any], *, n: int = 1
    ) -> Completion[OutputT]:
        messages = chat_messages(self.settings, prompt, data)
        params = chat_params(self.settings, prompt, n, data)
        key = chat_cache_key(self.endpoint, prompt, params, messages)
        # Identical rows get one answer and one status: the cache lookup, the request, the
        # repair and the stored outcome happen once per key at a time, and whoever asks later
        # finds the stored outcome (a repair per row made their statuses differ, and the last
        # one stored decided a rerun's).
        completion: Completion[OutputT] = await self._single_flight(
            key, lambda: self._complete_once(prompt, data, messages, params, n=n, key=key)
        )
        return completion

    async def _complete_once(
        self,
        prompt: Prompt[OutputT],
        data: Mapping[str, Any],
        messages: list[dict[str, str]],
        params: dict[str, Any],
        *,
        n: int,
        key: str,
    ) -> Completion[OutputT]:
        cached = await self._cache.aget(key)
        if cached is not None:
            hit = self._from_cache(prompt, data, cached)
            if hit is not None:
                return hit
        # Everything this call sends is charged here as it happens, so that the row pays for
        # every attempt, repair and top-up, also when it ends in an error.
        call = _Call(Usage(), CURRENT_ROW.get())
        texts: list[str] = []
        try:
            texts = await self._chat_n(prompt, messages, params, n, call=call)
            outputs = [
                await self._parse_or_repair(prompt, data, messages, params, text, call=call)
                for text in texts
            ]
        except JudgeRowError as error:
            if isinstance(error, _STORED_OUTCOMES) and texts:
                await self._cache.aput(key, stored_failure(texts, error))
            error.usage = call.spent
            raise
        await self._cache.aput(key, {"texts": [output.model_dump_json() for output in outputs]})
        return Completion(outputs, call.spent)

    async def send_chat(
        self, prompt: Prompt[Any], messages: list[dict[str, str]], params: dict[str, Any]
    ) -> tuple[list[str], Usage]:
        """Send one prepared chat request (no cache, no parsing): the reply texts and their
        cost. Batch mode uses it for the requests its batches did not answer."""
        call = _Call(Usage(), CURRENT_ROW.get())
        try:
            texts = await self._chat(prompt, messages, params, call=call)
        except JudgeRowError as error:
            error.usage = call.spent
            raise
        return texts, call.spent

    def _from_cache(
        self, prompt: Prompt[OutputT], data: Mapping[str, Any], cached: Mapping[str, Any]
    ) -> Completion[OutputT] | None:
        """A cached reply's completion, or its stored failure raised again; None: ask."""
        failure = cached.get("outcome")
        if failure is None:
            outputs = self._parse_cached(prompt, data, cached["texts"])
            if outputs is None:
                return None
            self.events["cache_hit"] += 1
            return Completion(outputs, Usage(cache_hits=1))
        if self.settings.retry_failed:
            self.events["stored_failure_asked_again"] += 1
            return None
        self.events["cache_hit"] += 1
        self.events["stored_failure_reused"] += 1
        error_class = _STORED_OUTCOMES_BY_NAME.get(str(failure), JudgeOutputError)
        raise error_class(
            f"{cached.get('reason', 'the stored reply was unusable')} (stored; "
            "--retry-failed asks again)",
            Usage(cache_hits=1),
        )

    def _parse_cached(
        self, prompt: Prompt[OutputT], data: Mapping[str, Any], texts: list[str]
    ) -> list[OutputT] | None:
        try:
            return [prompt.parse(data, text) for text in texts]
        except OutputParseError:
            return None  # stored under an older check: ask again

    async def _single_flight(
        self, key: str, call: Callable[[], Awaitable[Completion[OutputT]]]
    ) -> Completion[OutputT]:
        """Identical requests in flight at once are answered once; the others wait for its
        outcome, the same outputs or the same failure (and pay nothing for it)."""
        if key in self._in_flight:
            self.events["deduplicated"] += 1
            try:
                shared: Completion[OutputT] = await asyncio.shield(self._in_flight[key])
            except JudgeRowError as error:
                raise type(error)(str(error)) from None  # this row's own, paying nothing
            return Completion(list(shared.outputs), Usage())
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._in_flight[key] = future
        try:
            completion = await call()
        except BaseException as error:
            future.set_exception(error)
            future.exception()  # mark retrieved: waiters, if any, re-raise it
            raise
        else:
            future.set_result(completion)
            return completion
        finally:
            del self._in_flight[key]

    async def _chat_n(
        self,
        prompt: Prompt[Any],
        messages: list[dict[str, str]],
        params: dict[str, Any],
        n: int,
        *,
        call: _Call,
    ) -> list[str]:
        """Ask for n samples; endpoints that ignore `n` are topped up with single requests."""
        texts = await self._chat(prompt, messages, params, call=call)
        single = {key: value for key, value in params.items() if key != "n"}
        while len(texts) < n:
            self.events["n_top_up"] += 1
            # A seed per top-up: reproducible samples that differ from each other.
            more = {**single, "seed": len(texts)}
            texts.extend(await self._chat(prompt, messages, more, call=call))
        return texts[:n]

    async def _parse_or_repair(
        self,
        prompt: Prompt[OutputT],
        data: Mapping[str, Any],
        messages: list[dict[str, str]],
        params: dict[str, Any],
        text: str,
        *,
        call: _Call,
    ) -> OutputT:
        try:
            return prompt.parse(data, text)
        except OutputParseError as first_problem:
            self.events["repair"] += 1
            single = {key: value for key, value in params.items() if key != "n"}
            conversation = repair_messages(messages, text, first_problem)
            repaired = await self._chat(prompt, conversation, single, call=call)
            try:
                return prompt.parse(data, repaired[0])
            except OutputParseError as second_problem:
                raise JudgeOutputError(
                    f"{prompt.id}: the judge's output did not follow the format after one "
                    f"repair attempt ({second_problem})"
                ) from None

    async def _chat(
        self,
        prompt: Prompt[Any],
        messages: list[dict[str, str]],
        params: dict[str, Any],
        *,
        call: _Call,
    ) -> list[str]:
        max_completion = int(params["max_tokens"]) * int(params.get("n", 1))
        most_tokens = admission_tokens(messages, params, self.settings.admission_margin)
        prompt_tokens = most_tokens - max_completion
        expected = Spend(
            0.0
            if self._chat_price is None
            else self._chat_price.cost(prompt_tokens, max_completion),
            most_tokens,
        )
        # What the provider counts at admission (max_tokens) or will count (usage).
        admitted = prompt_tokens + self._counting.at_admission(prompt.id, max_completion)
        request = _Request(
            what=prompt.id,
            call=lambda options: self._client.chat.completions.with_raw_response.create(
                messages=messages,  # type: ignore[arg-type]
                **params,
                **options,
            ),
            read=read_chat_reply,
            tokens=admitted,
            counted_besides_usage=schema_tokens(params),
            max_completion=max_completion,
            expected=expected,
            chat=True,
            row=call.row,
        )
        reply: ChatReply = await self._send(request, call.spent)
        cut = any(choice.finish_reason == "length" for choice in reply.choices)
        if cut and int(params["max_tokens"]) < prompt.max_output_tokens:
            # Cut at the room it was given: asked again with all the prompt allows. A reply
            # cut even then does not parse, and goes the way of every unusable reply.
            self.events["length_retry"] += 1
            roomier = {**params, "max_tokens": prompt.max_output_tokens}
            return await self._chat(prompt, messages, roomier, call=call)
        texts = []
        for choice in reply.choices:
            if choice.finish_reason == "content_filter":
                raise JudgeRejectedError(
                    f"{prompt.id}: the provider's content filter refused the reply"
                )
            # A gateway that echoes the request could put the key in a reply: the reply
            # becomes evidence, a report and a cache entry.
            texts.append(without_secret(choice.content, self._api_key))
        return texts

    def _chat_usage(self, reply: ChatReply, sent_tier: str | None) -> Usage:
        """Tokens and cost of an answered chat request (its request is counted when sent),
        priced at the tier that answered it."""
        reported = reply.usage
        tier = answered_tier(reply.service_tier, sent_tier)
        return Usage(
            prompt_tokens=reported.prompt_tokens,
            cached_prompt_tokens=reported.cached_prompt_tokens,
            completion_tokens=reported.completion_tokens,
            cost_usd=None
            if self._chat_price is None
            else self._chat_price.cost_at_tier(
                tier,
                reported.prompt_tokens,
                reported.completion_tokens,
                reported.cached_prompt_tokens,
            ),
            requests_by_tier={tier: 1},
        )

    # -- embeddings ---------------------------------------------------------------------------

    async def embed(self, texts: Sequence[str]) -> Embeddings:
        distinct = list(dict.fromkeys(texts))
        keys = {
            text: cache_key(
                kind="embedding",
                endpoint=self.endpoint,
                model=self.settings.embedding_model,
                text=text,
            )
            for text in distinct
        }
        cached = await self._cache.aget_vectors(keys.values())
        vectors = {text: cached[keys[text]] for text in distinct if keys[text] in cached}
        missing = [text for text in distinct if text not in vectors]
        call = _Call(Usage(cache_hits=len(vectors)), CURRENT_ROW.get())
        try:
            for batch in self._embedding_batches(missing):
                fresh = await self._embed_batch(batch, call)
                vectors.update(fresh)
                await self._cache.aput_vectors(
                    {keys[text]: vector for text, vector in fresh.items()}
                )
        except JudgeRowError as error:
            error.usage = call.spent
            raise
        return Embeddings(vectors, call.spent)

    def _embedding_batches(self, texts: list[str]) -> list[list[str]]:
        batches: list[list[str]] = []
        tokens = 0
        for text in texts:
            size = estimate_tokens(text)
            if (
                not batches
                or len(batches[-1]) >= self.settings.embedding_batch_size
                or (tokens + size > MAX_EMBEDDING_TOKENS_PER_REQUEST)
            ):
                batches.append([])
                tokens = 0
            batches[-1].append(text)
            tokens += size
        return batches

    async def _embed_batch(self, texts: list[str], call: _Call) -> dict[str, np.ndarray[Any, Any]]:
        estimate = round(
            sum(estimate_tokens(text) for text in texts) * (1 + self.settings.admission_margin)
        )
        expected = Spend(
            0.0 if self._embedding_price is None else self._embedding_price.cost(estimate, 0),
            estimate,
        )

        def read(content_type: str, body: bytes) -> EmbeddingReply:
            reply = read_embedding_reply(content_type, body)
            if sorted(reply.vectors) != list(range(len(texts))):
                raise BadReplyError(
                    "wrong_shape", f"asked for {len(texts)} vectors, got {len(reply.vectors)}"
                )
            return reply

        request = _Request(
            what="embeddings",
            call=lambda options: self._client.embeddings.with_raw_response.create(
                model=self.settings.embedding_model, input=texts, encoding_format="float"
            ),
            read=read,
            tokens=estimate,
            counted_besides_usage=0,
            max_completion=0,
            expected=expected,
            chat=False,
            row=call.row,
        )
        reply: EmbeddingReply = await self._send(request, call.spent)
        return {texts[index]: vector for index, vector in reply.vectors.items()}

    def _embedding_usage(self, reported: ReportedUsage) -> Usage:
        return Usage(
            embedding_tokens=reported.prompt_tokens,
            cost_usd=None
            if self._embedding_price is None
            else self._embedding_price.cost(reported.prompt_tokens, 0),
        )

    # -- transport ----------------------------------------------------------------------------

    def _charge(self, spent: Usage, usage: Usage) -> None:
        """Count `usage` on the row's ledger and in the run's total at once: they cannot drift."""
        spent.add(usage)
        self.total.add(usage)

    async def _send(self, request: _Request, spent: Usage) -> Any:
        """Send one request through the limiter, with retries; returns its read reply.

        Every attempt that was sent is counted on `spent` as a request (one that never made its
        connection is not: `never_sent`), and its tokens and cost when a reply reports them.
        The budget holds a request's most possible cost from the moment it is sent (not while
        it waits) until its reply says what it cost.
        """
        await self._start_row(request)
        last_problem = ""
        attempt, sent = 0, 0
        first_429_at: float | None = None
        tiers = TierState()
        while attempt < self.settings.max_attempts:
            attempt += 1
            sent += 1
            on_tier = self._on_tier(request, tiers)
            async with self._slots.slot(request.priority):
                outcome = await self._attempt(on_tier, spent, sent)
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
                if now - first_429_at >= self.settings.rate_limit_patience_seconds:
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
                self.settings.max_attempts,
            )
            if attempt < self.settings.max_attempts:
                await asyncio.sleep(self._backoff(attempt))
        raise JudgeUnavailableError(
            f"{request.what}: gave up after {sent} attempts; last: {last_problem}"
        )

    def _on_tier(self, request: _Request, tiers: TierState) -> _Request:
        """The next attempt of a chat request, with its service tier and timeout."""
        if not request.chat or not self._tiers.flexible:
            return request
        tier = self._tiers.tier_to_send(tiers)
        return replace(request, tier=tier, options=self._tiers.options(tier))

    async def _wait_for_capacity(
        self, tiers: TierState, attempt: int, retry_after: float | None
    ) -> bool:
        """After a flex capacity 429, only this request waits (jittered exponential backoff,
        outside its slot; the limiter keeps its pace) and tries again, on flex or, once it
        waited `flex_fallback_after_seconds`, on the standard tier. Returns whether the 429
        used an attempt: only past the cap when there is no fall-back."""
        wait = self._tiers.after_capacity_429(tiers, retry_after)
        counted = self._tiers.gives_up(tiers)
        if not counted or attempt < self.settings.max_attempts:
            await asyncio.sleep(wait)
        return counted

    async def _attempt(self, request: _Request, spent: Usage, attempt: int) -> _Attempt:
        """One attempt, holding a slot: admission, the budget, the call, and what came back."""
        reserved = await self._reserve(request)
        try:
            if self.shared_budget is not None:
                await self.shared_budget.start()  # the first request joins the others
            await self._limiter.acquire(request.tokens)
            admitted = self._limiter.admitted
            if self._fatal is not None:  # another request found the judge unusable
                raise self._fatal
        except BaseException:
            self._settle_budget(request, reserved, Spend())
            raise
        sent = Usage(requests=1) if request.chat else Usage(embedding_requests=1)
        try:
            raw = await request.call(request.options)
            reply = request.read(raw.headers.get("content-type", ""), raw.content)
        except RETRIED_ERRORS as error:
            if not never_sent(error):  # a connection that was never made is no request
                self._charge(spent, sent)
            self._settle_budget(request, reserved, Spend())  # not answered: no cost said
            return self._failed_attempt(error, request, attempt)
        except BaseException:  # a fatal class of error, a cancellation: it may have been sent
            self._charge(spent, sent)
            self._settle_budget(request, reserved, Spend())
            raise
        self._charge(spent, sent)
        self._settle_answer(request, reply, reserved, spent)
        self._observe_headers(raw.headers, admitted)
        restore = self._congestion.answered()
        if restore is not None:
            self._limiter.restore_pace(restore)
        return _Attempt(reply=reply)

    def _failed_attempt(self, error: Exception, request: _Request, attempt: int) -> _Attempt:
        """Count a failed attempt and say why; raise if no attempt can succeed."""
        what = request.what
        if (
            isinstance(error, openai.RateLimitError)
            and may_lack_capacity(request.tier)
            and is_capacity_error(error)
        ):
            self._limiter.refund(request.tokens)  # refused before any work; no pause, no AIMD
            self._answered_by_api()
            self.events["retry_flex_capacity"] += 1
            log.debug("%s: flex capacity 429 on tier %s (attempt %d)", what, request.tier, attempt)
            return _Attempt(
                problem="flex capacity unavailable (429)",
                capacity=True,
                retry_after=retry_after(error.response.headers),
            )
        if isinstance(error, openai.RateLimitError):
            return self._rate_limited(error, request, attempt)
        if isinstance(error, openai.APIStatusError):
            self._stop_if_fatal(self._classify_status_error, error, what)
            self.events[f"retry_{error.status_code}"] += 1
            return _Attempt(problem=f"server error ({error.status_code})")
        if isinstance(error, openai.APITimeoutError):
            self.events["retry_timeout"] += 1
            timeout = self._tiers.timeout_of(request.tier)
            return _Attempt(problem=f"timed out after {timeout:g}s")
        if isinstance(error, BadReplyError):
            self.events["retry_bad_reply"] += 1
            self.events[f"bad_reply_{error.kind}"] += 1
            return _Attempt(problem=f"not an API reply ({self._safe(str(error))})")
        self.events["retry_connection"] += 1  # refused, reset, DNS, TLS
        return _Attempt(problem=f"connection failed ({self._safe(_connection_problem(error))})")

    def _rate_limited(
        self, error: openai.RateLimitError, request: _Request, attempt: int
    ) -> _Attempt:
        """A 429: retried; it slows every request down only when this judge's pace caused it."""
        what = request.what
        self._limiter.refund(request.tokens)
        self._answered_by_api()
        self._stop_if_fatal(self._raise_if_quota_exhausted, error)
        self.events["retry_429"] += 1
        wait = self._retry_after(error.response.headers, attempt)
        headers = rate_limit_headers(error.response.headers)
        reaction, restore = self._congestion.refused(
            cause_of_429(headers, request.tokens), self._limiter.pace
        )
        if restore is not None:
            self._limiter.restore_pace(restore)
        if reaction == "keep_pace":
            # Not this judge's pace (the headers show budget left, or 429s come at the same
            # share whatever the pace): only this request waits, the others go on.
            self.events["retry_429_not_ours"] += 1
            log.debug("%s: 429 not caused by our pace, retried in %.2f s", what, wait)
            return _Attempt(problem="rate limited (429)", rate_limited=True, retry_after=wait)
        self._limiter.pause_for(wait)
        self._limiter.slow_down()  # AIMD: sustained 429s lower the pace
        log.debug("%s: 429, every request waits %.2f s (attempt %d)", what, wait, attempt)
        return _Attempt(problem="rate limited (429)", rate_limited=True)

    async def _start_row(self, request: _Request) -> None:
        """Under a budget, let the request's row start only when the budget can pay for it
        beside the rows under way (`ragas_ops.judge.limits.priority`); a row under way goes on."""
        row = request.row
        if row is None or not self.budget.limited or self.rows.started(row.ordinal):
            return
        expected = self._expected_spend(row)
        if row.sequence is not None and self._sequence_row_done not in row.sequence.listeners:
            row.sequence.listeners.append(self._sequence_row_done)
        self.rows.wait(row.ordinal)
        try:
            while not self.rows.started(row.ordinal):  # another metric may start it first
                decision = self.rows.decide(row, expected, in_flight=self.budget.in_flight)
                if decision is Decision.START:
                    row.listeners.append(self._row_finished)
                    return
                if decision is Decision.REFUSE:
                    raise self.budget.refuse(request.what)
                await self._budget_settled.wait()
        finally:
            self.rows.stop_waiting(row.ordinal)
            self._wake_budget_waiters()  # the first row in line changed

    def _row_finished(self, row: RowTicket) -> None:
        self.rows.finish(row.ordinal)
        self._wake_budget_waiters()

    def _sequence_row_done(self, row: RowTicket) -> None:
        """A row of the run is finished, started or not: the rows after it may go."""
        self._wake_budget_waiters()

    def _expected_spend(self, row: RowTicket) -> Spend:
        """What the row is expected to cost: its expected requests' messages counted as the
        judge counts them, their expected replies, at the model's price."""
        if row.expected is None:
            return Spend()
        prompt_tokens = completion_tokens = 0
        for expected in row.expected():
            messages = chat_messages(self.settings, expected.prompt, expected.data)
            prompt_tokens += estimate_chat_tokens(messages)
            completion_tokens += expected.n * expected.completion_tokens
        usd = (
            0.0
            if self._chat_price is None
            else self._chat_price.cost(prompt_tokens, completion_tokens)
        )
        return Spend(usd, prompt_tokens + completion_tokens)

    async def _reserve(self, request: _Request) -> Spend:
        """Hold the most `request` can cost, at send time.

        When it fits only once requests in flight have settled (they usually cost less than
        their most), it waits for them instead of being refused, so the budget is used to
        within one request's worth. Requests of rows begun earlier go first.
        """
        budget = self.budget
        if not budget.limited:
            return budget.reserve(request.expected, request.what)
        rank = request.priority
        self._budget_queue[rank] += 1
        try:
            while True:
                first = rank <= min(r for r, waiting in self._budget_queue.items() if waiting)
                if first and budget.fits(request.expected, with_reserved=True):
                    reserved = budget.reserve(request.expected, request.what)
                    self.rows.reserve(_ordinal(request), reserved)
                    return reserved
                if first and (
                    not budget.in_flight or not budget.fits(request.expected, with_reserved=False)
                ):
                    raise budget.refuse(request.what)
                await self._budget_settled.wait()
        finally:
            self._budget_queue[rank] -= 1
            if not self._budget_queue[rank]:
                del self._budget_queue[rank]
            self._wake_budget_waiters()  # the first in line changed

    def _settle_budget(self, request: _Request, reserved: Spend, actual: Spend) -> None:
        self.budget.settle(reserved, actual)
        if self.budget.limited:
            self.rows.settle(_ordinal(request), reserved, actual)
        self._wake_budget_waiters()

    def _wake_budget_waiters(self) -> None:
        """Those waiting for budget look again (a settle, a row done, a change of who is
        first)."""
        self._budget_settled.set()
        self._budget_settled = asyncio.Event()

    def _settle_answer(self, request: _Request, reply: Any, reserved: Spend, spent: Usage) -> None:
        usage = (
            self._chat_usage(reply, request.tier)
            if request.chat
            else self._embedding_usage(reply.usage)
        )
        self._charge(spent, usage)
        self._settle_budget(request, reserved, Spend.of(usage))
        # What the provider counted: the real prompt, and the completion as it counts it
        # (with max_tokens admission it keeps a reservation the answer did not use).
        completion = usage.completion_tokens
        if request.chat:
            self._counting.learn(request.what, request.max_completion, completion)
        counted = (
            usage.prompt_tokens
            + usage.embedding_tokens
            + request.counted_besides_usage
            + self._counting.counted(request.max_completion, completion)
        )
        self._limiter.settle(request.tokens, counted)
        self._answered_by_api()

    def _answered_by_api(self) -> None:
        """An API reply came back (an answer or an API error): the endpoint is reachable."""
        self._answered = True

    def _count_failure_before_any_answer(self, problem: str) -> None:
        """Stop the run when the endpoint has never answered and enough attempts failed: a
        wrong URL, DNS, TLS or a dead server would otherwise give every row a status."""
        limit = self.settings.unreachable_after
        if self._answered or limit == 0:
            return
        self._failures_before_any_answer += 1
        if self._failures_before_any_answer >= limit and self._fatal is None:
            self._fatal = JudgeUnreachableError(
                f"the judge endpoint {self.endpoint} did not answer: {limit} attempts failed "
                f"and none succeeded (last: {problem}). Check judge.base_url (--base-url), "
                "the network and the server; judge.unreachable_after sets how many failures "
                "stop a run."
            )
        if self._fatal is not None:
            raise self._fatal

    def _stop_if_fatal(self, check: Any, *arguments: Any) -> None:
        """Run an error check; a fatal verdict is remembered, so that no other request of this
        run is sent after it (the run stops at once, not after the requests in flight)."""
        try:
            check(*arguments)
        except JudgeFatalError as fatal:
            self._fatal = fatal
            raise

    def _classify_status_error(self, error: openai.APIStatusError, what: str) -> None:
        """Raise for errors that retrying cannot fix; return for those worth another try."""
        status = error.status_code
        if status < 500:
            self._answered_by_api()
        detail = self._safe(_error_message(error))
        if status in (401, 403):
            raise JudgeFatalError(
                f"the judge endpoint refused the credentials (HTTP {status}): {detail}. Check the "
                f"key in ${self.settings.api_key_env} and that it may use model "
                f"{self.settings.model!r}."
            ) from None
        if status == 404:
            raise JudgeFatalError(
                f"the judge endpoint does not know this model or path (HTTP 404): {detail}. "
                f"Check the model name and the base URL."
            ) from None
        if status < 500 and status != 408:
            raise JudgeRejectedError(
                f"{what}: request rejected (HTTP {status}): {detail}"
            ) from None

    def _raise_if_quota_exhausted(self, error: openai.RateLimitError) -> None:
        body = error.body if isinstance(error.body, dict) else {}
        if body.get("code") == "insufficient_quota" or body.get("type") == "insufficient_quota":
            raise JudgeFatalError(
                "the judge account has no quota left (HTTP 429 insufficient_quota): "
                + self._safe(_error_message(error))
            ) from None

    def _retry_after(self, headers: Mapping[str, str], attempt: int) -> float:
        """The reply's Retry-After, else our own backoff (also for an HTTP date)."""
        told = retry_after(headers)
        return self._backoff(attempt) if told is None else told

    def _backoff(self, attempt: int) -> float:
        """Equal jitter: half the exponential delay for sure, the other half at random."""
        delay = min(BACKOFF_CAP_SECONDS, BACKOFF_BASE_SECONDS * 2 ** (attempt - 1))
        return float(delay / 2 + self._rng.uniform(0, delay / 2))

    def _observe_headers(self, headers: Mapping[str, str], since: Admitted) -> None:
        said = rate_limit_headers(headers)
        self._limiter.observe_remaining(said.remaining_requests, said.remaining_tokens, since)

    def _safe(self, text: str) -> str:
        return redact(text, self._api_key)


def _error_message(error: openai.APIStatusError) -> str:
    body = error.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])
    return error.message


def _ordinal(request: _Request) -> int | None:
    return None if request.row is None else request.row.ordinal


def _connection_problem(error: Exception) -> str:
    """What failed under the SDK's "Connection error.": refused, DNS, TLS, a reset..."""
    cause = error.__cause__ or error.__context__
    if isinstance(error, openai.APIConnectionError) and cause is not None:
        error = cause if isinstance(cause, Exception) else error
    text = str(error).strip()
    return f"{type(error).__name__}: {text}" if text else type(error).__name__
