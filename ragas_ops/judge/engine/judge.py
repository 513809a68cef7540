"""The engine's judge: a remote provider's judge, whichever provider's wire it speaks.

It owns what metrics must not know, each in a part of its own: the provider's wire (`wire`: a
`ChatWire`, and an `EmbeddingWire` for embeddings), what a failed attempt means and whether to
ask again (`retry`), when a request may go at the account's pace (`admission`), and what the run
may spend and did spend (`accounting`). Here they meet: the response cache and single flight,
parsing with one repair attempt, replies cut at `max_tokens` asked again with more room, and
embeddings in batches.

Every attempt is charged to the call that made it, so a row's requests, tokens and cost add up
to the run's, which add up to what the endpoint received. A reply that arrived is cached even
when it could not be used, with its outcome, so a rerun pays nothing for it either
(`judge.retry_failed` asks again).
"""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ragas_ops.config import JudgeSettings
from ragas_ops.judge.base import (
    CURRENT_ROW,
    Completion,
    Embeddings,
    JudgeOutputCutError,
    JudgeOutputError,
    JudgeRejectedError,
    JudgeRowError,
    RowTicket,
    Usage,
)
from ragas_ops.judge.cache.base import JudgeCache
from ragas_ops.judge.cache.keys import cache_key
from ragas_ops.judge.cache.local import ResponseCache
from ragas_ops.judge.endpoint import describe_judge
from ragas_ops.judge.engine.accounting import Accounting
from ragas_ops.judge.engine.admission import Admission
from ragas_ops.judge.engine.chat_request import (
    chat_cache_key,
    chat_messages,
    chat_params,
    most_completion_tokens,
    repair_messages,
    schema_tokens,
)
from ragas_ops.judge.engine.request import Attempt, Request
from ragas_ops.judge.engine.retry import RetryPolicy
from ragas_ops.judge.engine.stopping import STOP_GATE
from ragas_ops.judge.engine.wire import (
    BadReplyError,
    ChatReply,
    ChatWire,
    EmbeddingReply,
    EmbeddingWire,
    Failure,
    JudgeRuntime,
)
from ragas_ops.judge.limits.budget import Budget, Spend
from ragas_ops.judge.limits.shared_budget import SharedBudget
from ragas_ops.judge.tokens import (
    MAX_EMBEDDING_TOKENS_PER_REQUEST,
    REQUEST_OVERHEAD_TOKENS,
    estimate_chat_tokens,
)
from ragas_ops.pricing import Price
from ragas_ops.prompts import OutputParseError, OutputT, Prompt
from ragas_ops.secrets import without_secret
from ragas_ops.text import estimate_tokens

MAX_ROOM_REQUESTS = 3
"""How often one request is asked again with more room after a reply cut short."""

# Failures that come with a reply, and so are stored in the cache with it.
_STORED_OUTCOMES_BY_NAME: dict[str, type[JudgeRowError]] = {
    "output_invalid": JudgeOutputError,
    "rejected": JudgeRejectedError,
}
_STORED_OUTCOMES = tuple(_STORED_OUTCOMES_BY_NAME.values())


def stored_failure(texts: list[str], error: JudgeRowError) -> dict[str, Any]:
    """The cache entry of a reply that arrived but could not be used."""
    outcome = next(
        name for name, kind in _STORED_OUTCOMES_BY_NAME.items() if isinstance(error, kind)
    )
    return {"texts": texts, "outcome": outcome, "reason": str(error)}


@dataclass
class _Call:
    """One `complete` or `embed` call: the ledger its requests are charged to, and its row."""

    spent: Usage
    row: RowTicket | None


class EngineJudge:
    """A remote provider's judge: the engine around the provider's wire. Create one per run;
    `aclose()` it at the end (it closes its wires)."""

    def __init__(
        self,
        settings: JudgeSettings,
        wire: ChatWire,
        runtime: JudgeRuntime,
        prices: Mapping[str, Price],
        *,
        cache: JudgeCache | None = None,
        rng: random.Random | None = None,
        events: Counter[str] | None = None,
        embeddings: EmbeddingWire | None = None,
    ) -> None:
        """`events`: the counter the wire's shape counts in too (one per judge); `embeddings`:
        the wire embeddings are asked of (None: this judge embeds nothing)."""
        self.settings = settings
        self._api_key = runtime.api_key
        self._wire = wire
        self._embeddings = embeddings
        self._embeds_on_chat_wire = embeddings is wire  # type: ignore[comparison-overlap]
        """One wire plays both roles (OpenAI's): closed once."""
        self.endpoint = wire.endpoint
        """Where the judge is (no credentials): part of its name and of every cache key."""
        self.events: Counter[str] = Counter() if events is None else events
        """Counts of what happened on the wire: retries by cause, repairs, cache hits."""
        self._shape = wire.shape
        self._retry = RetryPolicy(
            settings,
            runtime.api_key,
            self.endpoint,
            self.events,
            rng or random.Random(),
            shape=self._shape,
        )
        self._admission = Admission(settings, self.endpoint, self.events, wire.rate_limits)
        self._accounting = Accounting(settings, prices)
        self._cache = cache or ResponseCache(None)
        self._cache.count_in(self.events)
        self._in_flight: dict[str, asyncio.Future[Any]] = {}

    @property
    def description(self) -> str:
        return describe_judge(self.settings.endpoint.model, self.endpoint, self._wire.kind)

    @property
    def embedding_description(self) -> str:
        endpoint = self.endpoint if self._embeddings is None else self._embeddings.endpoint
        return describe_judge(self.settings.endpoint.embedding_model, endpoint, self._wire.kind)

    @property
    def total(self) -> Usage:
        """What the run spent, every attempt of every call."""
        return self._accounting.total

    def usage_total(self) -> Usage:
        return self.total

    @property
    def budget(self) -> Budget:
        return self._accounting.budget

    @property
    def shared_budget(self) -> SharedBudget | None:
        """This process's share of the account, kept up to date with the others (or None)."""
        return self._admission.shared_budget

    @property
    def limits_note(self) -> str | None:
        """With `rpm`/`tpm` not set: the limits the provider stated and the judge paced to, or
        that it stated none and the defaults were kept (the manifest records it)."""
        return self._admission.limits_note()

    @property
    def current_rates(self) -> tuple[float | None, float | None]:
        """The requests and tokens per minute it paces to now (None: unlimited)."""
        return self._admission.limiter.current_rates()

    @property
    def provider_notes(self) -> list[str]:
        """What the provider's answers said that the run's manifest and report should tell
        (a limit stated far below the configured one), once each."""
        return list(self._admission.notes)

    @property
    def rate_limit_wait_seconds(self) -> float:
        """Seconds requests waited for the RPM/TPM budget or a Retry-After."""
        return self._admission.limiter.waited_seconds

    @property
    def rate_limit_slowdowns(self) -> int:
        """How many times sustained 429s halved the request and token rates (AIMD)."""
        return self._admission.limiter.decreases

    async def aclose(self) -> None:
        await self._admission.aclose()
        await self._wire.aclose()
        if self._embeddings is not None and not self._embeds_on_chat_wire:
            await self._embeddings.aclose()

    # -- chat ---------------------------------------------------------------------------------

    async def complete(
        self, prompt: Prompt[OutputT], data: Mapping[str, Any], *, n: int = 1
    ) -> Completion[OutputT]:
        messages = chat_messages(self.settings.endpoint, prompt, data)
        params = chat_params(self.settings.endpoint, prompt, n, data, self._shape)
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
        async with STOP_GATE.sending():  # a stop lets this land in the cache, or never sends
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
            answer = {"texts": [output.model_dump_json() for output in outputs]}
            await self._cache.aput(key, answer)
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
        if self.settings.endpoint.retry_failed:
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
        asked_for_room: int = 0,
    ) -> list[str]:
        max_completion = most_completion_tokens(params)
        counted_prompt = estimate_chat_tokens(messages) + REQUEST_OVERHEAD_TOKENS
        counted_prompt += schema_tokens(params)
        prompt_tokens = round(counted_prompt * (1 + self.settings.limits.admission_margin))
        request = Request(
            what=prompt.id,
            # Fitted at each attempt: a parameter learnt meanwhile is not sent again.
            send=lambda options: self._wire.send_chat(messages, params, options),
            read=self._wire.read_chat,
            tokens=self._admission.tokens_at_admission(prompt.id, prompt_tokens, max_completion),
            counted_besides_usage=schema_tokens(params),
            max_completion=max_completion,
            expected=self._accounting.chat_spend(prompt_tokens, max_completion),
            chat=True,
            row=call.row,
        )
        reply: ChatReply = await self._send(request, call.spent)
        cut = [choice for choice in reply.choices if choice.finish_reason == "length"]
        if not cut:  # a cut reply's reasoning is its room spent, not what a reply needs
            self._shape.saw_reasoning(reply.usage.reasoning_tokens // len(reply.choices))
        roomier = self._roomier(prompt, params, reply, asked_for_room)
        if roomier is not None:
            return await self._chat(
                prompt, messages, roomier, call=call, asked_for_room=asked_for_room + 1
            )
        if cut and all(not choice.content for choice in cut):
            self.events["output_cut"] += 1
            raise JudgeOutputCutError(
                f"{prompt.id}: every reply was cut at its output limit with no visible answer "
                f"({int(params['max_tokens']):,} tokens after {asked_for_room + 1} request(s); "
                f"the most a request of this prompt may get is "
                f"{self._shape.room_ceiling(prompt.max_output_tokens):,})"
            )
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

    def _roomier(
        self, prompt: Prompt[Any], params: dict[str, Any], reply: ChatReply, asked: int
    ) -> dict[str, Any] | None:
        """The request asked again with more room when its reply was cut (None: not cut, or
        asked again enough, or at the ceiling). Cut at the room it was given: all the prompt
        allows, beside the reasoning. Cut with no visible answer after reasoning (a reasoning
        model spends `max_completion_tokens` on hidden reasoning first): room for the most
        reasoning a complete reply took too, never less than twice the room before. Never
        past the shape's `room_ceiling` (4x what the prompt starts with at the typical
        reasoning, at most the model's output limit). A reply cut with no answer even then
        is `JudgeOutputCutError` (the status `judge_output_cut`); one cut with an answer goes
        the way of every unusable reply."""
        cut = [choice for choice in reply.choices if choice.finish_reason == "length"]
        if not cut or asked >= MAX_ROOM_REQUESTS:
            return None
        limit = int(params["max_tokens"])
        ceiling = self._shape.room_ceiling(prompt.max_output_tokens)
        full = min(prompt.max_output_tokens + self._shape.reasoning_allowance(), ceiling)
        if reply.usage.reasoning_tokens and any(not choice.content for choice in cut):
            grown = min(max(full, 2 * limit), ceiling)
            if grown <= limit:
                return None  # at the ceiling: no more room to give
            self.events["reasoning_cut_retry"] += 1
            return {**params, "max_tokens": grown}
        if limit >= full:
            return None
        self.events["length_retry"] += 1
        return {**params, "max_tokens": full}

    # -- embeddings ---------------------------------------------------------------------------

    async def embed(self, texts: Sequence[str]) -> Embeddings:
        distinct = list(dict.fromkeys(texts))
        keys = {
            text: cache_key(
                kind="embedding",
                endpoint=self.endpoint,
                model=self.settings.endpoint.embedding_model,
                text=text,
            )
            for text in distinct
        }
        cached = await self._cache.aget_vectors(keys.values())
        vectors = {text: cached[keys[text]] for text in distinct if keys[text] in cached}
        missing = [text for text in distinct if text not in vectors]
        call = _Call(Usage(cache_hits=len(vectors)), CURRENT_ROW.get())
        self.events["embedding_cache_hit"] += len(vectors)  # the summaries' cache hits
        try:
            for batch in self._embedding_batches(missing):
                async with STOP_GATE.sending():
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
                or len(batches[-1]) >= self.settings.endpoint.embedding_batch_size
                or (tokens + size > MAX_EMBEDDING_TOKENS_PER_REQUEST)
            ):
                batches.append([])
                tokens = 0
            batches[-1].append(text)
            tokens += size
        return batches

    async def _embed_batch(self, texts: list[str], call: _Call) -> dict[str, np.ndarray[Any, Any]]:
        wire, model = self._embeddings, self.settings.endpoint.embedding_model
        if wire is None:
            raise JudgeRejectedError(
                f"{self.description} has no embeddings API: set judge.embedding_kind to a "
                "provider that embeds (the local embedder, openai)"
            )
        estimate = round(
            sum(estimate_tokens(text) for text in texts)
            * (1 + self.settings.limits.admission_margin)
        )

        def read(content_type: str, body: bytes) -> EmbeddingReply:
            reply = wire.read_embeddings(content_type, body)
            if sorted(reply.vectors) != list(range(len(texts))):
                raise BadReplyError(
                    "wrong_shape", f"asked for {len(texts)} vectors, got {len(reply.vectors)}"
                )
            return reply

        request = Request(
            what="embeddings",
            send=lambda options: wire.send_embeddings(model, texts),
            read=read,
            tokens=estimate,
            counted_besides_usage=0,
            max_completion=0,
            expected=self._accounting.embedding_spend(estimate),
            chat=False,
            row=call.row,
        )
        reply: EmbeddingReply = await self._send(request, call.spent)
        return {texts[index]: vector for index, vector in reply.vectors.items()}

    # -- one request, attempt by attempt --------------------------------------------------

    async def _send(self, request: Request, spent: Usage) -> Any:
        """Send one request, retried as the retry policy says; returns its read reply.

        Every attempt that was sent is counted on `spent` as a request (one that never made its
        connection is not: `never_sent`), and its tokens and cost when a reply reports them.
        The budget holds a request's most possible cost from the moment it is sent (not while
        it waits) until its reply says what it cost.
        """
        await self._accounting.start_row(request)

        async def attempt_once(on_tier: Request, sent: int) -> Attempt:
            async with self._admission.slot(on_tier.priority):
                return await self._attempt(on_tier, spent, sent)

        if not request.chat:
            return await self._retry.send(request, attempt_once)
        async with self._shape.first_answer():
            return await self._retry.send(request, attempt_once)

    async def _attempt(self, request: Request, spent: Usage, attempt: int) -> Attempt:
        """One attempt, holding a slot: the budget, admission, the call, and what came back."""
        accounting = self._accounting
        reserved = await accounting.reserve(request)
        try:
            return await self._admitted_attempt(request, spent, attempt, reserved)
        finally:
            self._admission.ended(request)  # answered, failed or cancelled: not in flight

    async def _admitted_attempt(
        self, request: Request, spent: Usage, attempt: int, reserved: Spend
    ) -> Attempt:
        """The attempt from its admission on (`_attempt` ends it in the admission)."""
        accounting = self._accounting
        try:
            admitted = await self._admission.admit(request)
            self._retry.raise_if_fatal()
        except BaseException:
            accounting.settle(request, reserved, Spend())
            raise
        sent = Usage(requests=1) if request.chat else Usage(embedding_requests=1)
        try:
            raw = await request.send(request.options)
            reply = request.read(raw.content_type, raw.body)
        except BaseException as error:
            failure = self._failure_of(error, request)
            if failure is None:  # a cancellation, a bug: it may have been sent
                accounting.charge(spent, sent)
                accounting.settle(request, reserved, Spend())
                raise
            if failure.sent:  # a connection that was never made is no request
                accounting.charge(spent, sent)
            accounting.settle(request, reserved, Spend())  # not answered: no cost said
            return self._failed(failure, request, attempt)
        accounting.charge(spent, sent)
        usage = accounting.usage_of(request, reply)
        accounting.charge(spent, usage)
        accounting.settle(request, reserved, Spend.of(usage))
        self._admission.answered(request, usage, raw.headers, admitted)
        self._retry.answered()
        if request.chat:
            self._shape.confirm()
        return Attempt(reply=reply)

    def _failure_of(self, error: BaseException, request: Request) -> Failure | None:
        """What an attempt's error means: a reply that is no API reply (the engine's own
        error), else as the wire that sent it says; None: not an attempt's failure."""
        if isinstance(error, BadReplyError):
            return Failure("bad_reply", code=error.kind, detail=str(error))
        wire = self._wire if request.chat or self._embeddings is None else self._embeddings
        return wire.failure_of(error)

    def _failed(self, failure: Failure, request: Request, attempt: int) -> Attempt:
        """What the failed attempt means (the retry policy's), and what a 429 does to the
        pace (the admission's)."""
        outcome = self._retry.failed(failure, request, attempt)
        if outcome.capacity or outcome.rate_limited:
            self._admission.refund(request)  # refused before any work
        if outcome.rate_limited:
            return self._admission.rate_limited(request, failure.headers, outcome)
        return outcome
