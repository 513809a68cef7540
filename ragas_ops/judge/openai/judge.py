"""The judge for OpenAI and OpenAI-compatible endpoints (Azure OpenAI, vLLM, Ollama...).

It owns what metrics must not know: rate limits, timeouts, retries, error classes, parsing with
one repair attempt, the response cache, and the accounting of tokens and cost.

Error classes: 401/403 (bad key, no permission), 404 (unknown model) and a 429 saying the quota
is exhausted end the run (`JudgeFatalError`): nothing else can succeed. 400/422 and content
filters reject one request (`JudgeRejectedError`): the row gets a status. 429s, 5xx errors,
timeouts and dropped connections are retried with jittered exponential backoff (429s after
their Retry-After), up to `max_attempts`, then `JudgeUnavailableError`.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import openai

from ragas_ops.config import JudgeSettings
from ragas_ops.judge.base import (
    Completion,
    Embeddings,
    JudgeFatalError,
    JudgeOutputError,
    JudgeRejectedError,
    JudgeUnavailableError,
    Usage,
)
from ragas_ops.judge.budget import Budget, Spend
from ragas_ops.judge.cache import ResponseCache, cache_key
from ragas_ops.judge.rate_limit import RateLimiter
from ragas_ops.pricing import Price, price_for
from ragas_ops.prompts import OutputParseError, OutputT, Prompt
from ragas_ops.secrets import Secret, redact
from ragas_ops.text import estimate_tokens

log = logging.getLogger(__name__)

MESSAGE_OVERHEAD_TOKENS = 4
BACKOFF_BASE_SECONDS = 0.5
BACKOFF_CAP_SECONDS = 30.0
MAX_EMBEDDING_TOKENS_PER_REQUEST = 250_000  # OpenAI refuses more than 300k per request
REPAIR_INSTRUCTION = (
    "Your reply cannot be used: {problem}. Reply again with only the JSON object, following "
    "the schema and the instructions."
)


def estimate_chat_tokens(messages: Sequence[Mapping[str, str]]) -> int:
    """Prompt tokens of a chat request, estimated before sending it."""
    return sum(estimate_tokens(m["content"]) + MESSAGE_OVERHEAD_TOKENS for m in messages)


def openai_client(
    settings: JudgeSettings, api_key: Secret, *, max_retries: int
) -> openai.AsyncOpenAI:
    """The SDK client for the judge endpoint (an endpoint without keys still needs a value)."""
    return openai.AsyncOpenAI(
        api_key=api_key.reveal() or "no-key",
        base_url=settings.base_url,
        timeout=settings.timeout_seconds,
        max_retries=max_retries,
    )


def describe_model(model: str) -> str:
    """How output rows name an OpenAI-compatible model, e.g. `openai:gpt-4o-mini`."""
    return f"openai:{model}"


def chat_params(settings: JudgeSettings, prompt: Prompt[Any], n: int) -> dict[str, Any]:
    """The request parameters besides the messages (sync and batch requests alike)."""
    params: dict[str, Any] = {
        "model": settings.model,
        "temperature": prompt.temperature,
        "max_tokens": prompt.max_output_tokens,
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


def chat_cache_key(prompt: Prompt[Any], params: Mapping[str, Any], messages: Any) -> str:
    """The key of a chat request in the response cache; batch requests use it as custom_id."""
    return cache_key(kind="chat", prompt=prompt.id, params=params, messages=messages)


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


@dataclass
class _Reply:
    texts: list[str]
    usage: Usage


class OpenAIJudge:
    """An OpenAI-compatible judge. Create one per run; `aclose()` it at the end."""

    def __init__(
        self,
        settings: JudgeSettings,
        api_key: Secret,
        prices: Mapping[str, Price],
        cache: ResponseCache | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.settings = settings
        self._api_key = api_key
        # Retries are ours: they must go through the rate limiter.
        self._client = openai_client(settings, api_key, max_retries=0)
        self._chat_price = price_for(settings.model, prices)
        self._embedding_price = price_for(settings.embedding_model, prices)
        self._cache = cache or ResponseCache(None)
        self._limiter = RateLimiter(settings.rpm, settings.tpm)
        self._slots = asyncio.Semaphore(settings.max_concurrency)
        self._in_flight: dict[str, asyncio.Future[_Reply]] = {}
        self._completion_tokens_seen: dict[str, float] = {}
        self._rng = rng or random.Random()
        self._fatal: JudgeFatalError | None = None
        self.budget = budget_for(settings, self._chat_price)
        self.total = Usage()
        self.events: Counter[str] = Counter()
        """Counts of what happened on the wire: retries by cause, repairs, cache hits."""

    @property
    def description(self) -> str:
        return describe_model(self.settings.model)

    @property
    def embedding_description(self) -> str:
        return describe_model(self.settings.embedding_model)

    def usage_total(self) -> Usage:
        return self.total

    @property
    def rate_limit_wait_seconds(self) -> float:
        """Seconds requests waited for the RPM/TPM budget or a Retry-After."""
        return self._limiter.waited_seconds

    async def aclose(self) -> None:
        await self._client.close()

    # -- chat ---------------------------------------------------------------------------------

    async def complete(
        self, prompt: Prompt[OutputT], data: Mapping[str, Any], *, n: int = 1
    ) -> Completion[OutputT]:
        messages = chat_messages(self.settings, prompt, data)
        params = chat_params(self.settings, prompt, n)
        key = chat_cache_key(prompt, params, messages)
        cached = self._cache.get(key)
        if cached is not None:
            outputs = self._parse_cached(prompt, data, cached["texts"])
            if outputs is not None:
                self.events["cache_hit"] += 1
                return Completion(outputs, Usage(cache_hits=1))
        reply = await self._single_flight(key, lambda: self._chat_n(prompt, messages, params, n))
        usage = reply.usage
        outputs = []
        for text in reply.texts:
            output, repair_usage = await self._parse_or_repair(prompt, data, messages, params, text)
            usage.add(repair_usage)
            outputs.append(output)
        self._cache.put(key, {"texts": [o.model_dump_json() for o in outputs]})
        return Completion(outputs, usage)

    async def send_chat(
        self, prompt: Prompt[Any], messages: list[dict[str, str]], params: dict[str, Any]
    ) -> tuple[list[str], Usage]:
        """Send one prepared chat request (no cache, no parsing): the reply texts and their
        cost. Batch mode uses it for the requests its batches did not answer."""
        reply = await self._chat(prompt, messages, params)
        return reply.texts, reply.usage

    def _parse_cached(
        self, prompt: Prompt[OutputT], data: Mapping[str, Any], texts: list[str]
    ) -> list[OutputT] | None:
        try:
            return [prompt.parse(data, text) for text in texts]
        except OutputParseError:
            return None  # stored under an older check: ask again

    async def _single_flight(self, key: str, call: Any) -> _Reply:
        """Identical requests in flight at once are sent once; the others wait for its reply."""
        if key in self._in_flight:
            self.events["deduplicated"] += 1
            shared = await asyncio.shield(self._in_flight[key])
            return _Reply(list(shared.texts), Usage())
        future: asyncio.Future[_Reply] = asyncio.get_running_loop().create_future()
        self._in_flight[key] = future
        try:
            reply: _Reply = await call()
        except BaseException as error:
            future.set_exception(error)
            future.exception()  # mark retrieved: waiters, if any, re-raise it
            raise
        else:
            future.set_result(reply)
            return reply
        finally:
            del self._in_flight[key]

    async def _chat_n(
        self, prompt: Prompt[Any], messages: list[dict[str, str]], params: dict[str, Any], n: int
    ) -> _Reply:
        """Ask for n samples; endpoints that ignore `n` are topped up with single requests."""
        reply = await self._chat(prompt, messages, params)
        single = {key: value for key, value in params.items() if key != "n"}
        while len(reply.texts) < n:
            self.events["n_top_up"] += 1
            # A seed per top-up: reproducible samples that differ from each other.
            more = await self._chat(prompt, messages, {**single, "seed": len(reply.texts)})
            reply.texts.extend(more.texts)
            reply.usage.add(more.usage)
        del reply.texts[n:]
        return reply

    async def _parse_or_repair(
        self,
        prompt: Prompt[OutputT],
        data: Mapping[str, Any],
        messages: list[dict[str, str]],
        params: dict[str, Any],
        text: str,
    ) -> tuple[OutputT, Usage]:
        try:
            return prompt.parse(data, text), Usage()
        except OutputParseError as first_problem:
            self.events["repair"] += 1
            single = {key: value for key, value in params.items() if key != "n"}
            repaired = await self._chat(
                prompt, repair_messages(messages, text, first_problem), single
            )
            try:
                return prompt.parse(data, repaired.texts[0]), repaired.usage
            except OutputParseError as second_problem:
                raise JudgeOutputError(
                    f"{prompt.id}: the judge's output did not follow the format after one "
                    f"repair attempt ({second_problem})",
                    repaired.usage,
                ) from None

    async def _chat(
        self, prompt: Prompt[Any], messages: list[dict[str, str]], params: dict[str, Any]
    ) -> _Reply:
        n = int(params.get("n", 1))
        prompt_tokens = estimate_chat_tokens(messages)
        expected_completion = self._completion_tokens_seen.get(
            prompt.id, prompt.max_output_tokens / 4
        )
        estimate = prompt_tokens + round(expected_completion * n)
        expected_cost = (
            0.0
            if self._chat_price is None
            else self._chat_price.cost(prompt_tokens, round(expected_completion * n))
        )
        reserved = self.budget.reserve(Spend(expected_cost, estimate), prompt.id)
        try:
            response = await self._send(
                lambda: self._client.chat.completions.with_raw_response.create(
                    messages=messages,  # type: ignore[arg-type]
                    **params,
                ),
                estimate,
                what=prompt.id,
            )
        except BaseException:
            self.budget.settle(reserved, Spend())
            raise
        completion = response.parse()
        usage = self._chat_usage(completion.usage)
        self.budget.settle(reserved, Spend.of(usage))
        self._limiter.settle(estimate, usage.prompt_tokens + usage.completion_tokens)
        self._remember_completion_size(prompt.id, usage.completion_tokens / max(1, n))
        texts = []
        for choice in completion.choices:
            if choice.finish_reason == "content_filter":
                raise JudgeRejectedError(
                    f"{prompt.id}: the provider's content filter refused the reply", usage
                )
            texts.append(choice.message.content or "")
        if not texts:
            raise JudgeOutputError(f"{prompt.id}: the reply had no choices", usage)
        return _Reply(texts, usage)

    def _remember_completion_size(self, prompt_id: str, tokens: float) -> None:
        previous = self._completion_tokens_seen.get(prompt_id)
        self._completion_tokens_seen[prompt_id] = (
            tokens if previous is None else 0.8 * previous + 0.2 * tokens
        )

    def _chat_usage(self, reported: Any) -> Usage:
        prompt_tokens = int(getattr(reported, "prompt_tokens", 0) or 0)
        completion_tokens = int(getattr(reported, "completion_tokens", 0) or 0)
        details = getattr(reported, "prompt_tokens_details", None)
        cached = int(getattr(details, "cached_tokens", 0) or 0)
        usage = Usage(
            requests=1,
            prompt_tokens=prompt_tokens,
            cached_prompt_tokens=cached,
            completion_tokens=completion_tokens,
            cost_usd=None
            if self._chat_price is None
            else self._chat_price.cost(prompt_tokens, completion_tokens, cached),
        )
        self.total.add(usage)
        return usage

    # -- embeddings ---------------------------------------------------------------------------

    async def embed(self, texts: Sequence[str]) -> Embeddings:
        distinct = list(dict.fromkeys(texts))
        keys = {
            text: cache_key(kind="embedding", model=self.settings.embedding_model, text=text)
            for text in distinct
        }
        cached = self._cache.get_vectors(keys.values())
        vectors = {text: cached[keys[text]] for text in distinct if keys[text] in cached}
        missing = [text for text in distinct if text not in vectors]
        usage = Usage(cache_hits=len(vectors))
        for batch in self._embedding_batches(missing):
            fresh, batch_usage = await self._embed_batch(batch)
            usage.add(batch_usage)
            vectors.update(fresh)
            self._cache.put_vectors({keys[text]: vector for text, vector in fresh.items()})
        return Embeddings(vectors, usage)

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

    async def _embed_batch(self, texts: list[str]) -> tuple[dict[str, np.ndarray[Any, Any]], Usage]:
        estimate = sum(estimate_tokens(text) for text in texts)
        expected_cost = (
            0.0 if self._embedding_price is None else self._embedding_price.cost(estimate, 0)
        )
        reserved = self.budget.reserve(Spend(expected_cost, estimate), "embeddings")
        try:
            response = await self._send(
                lambda: self._client.embeddings.with_raw_response.create(
                    model=self.settings.embedding_model, input=texts
                ),
                estimate,
                what="embeddings",
            )
        except BaseException:
            self.budget.settle(reserved, Spend())
            raise
        result = response.parse()
        tokens = int(getattr(result.usage, "prompt_tokens", 0) or 0)
        self._limiter.settle(estimate, tokens)
        usage = Usage(
            embedding_requests=1,
            embedding_tokens=tokens,
            cost_usd=None
            if self._embedding_price is None
            else self._embedding_price.cost(tokens, 0),
        )
        self.budget.settle(reserved, Spend.of(usage))
        self.total.add(usage)
        if len(result.data) != len(texts):
            raise JudgeUnavailableError(
                f"embeddings: asked for {len(texts)} vectors, got {len(result.data)}", usage
            )
        vectors = {
            texts[item.index]: np.asarray(item.embedding, dtype=np.float64) for item in result.data
        }
        return vectors, usage

    # -- transport ----------------------------------------------------------------------------

    async def _send(self, call: Any, estimate: int, what: str) -> Any:
        """Send one request through the limiter, with retries; returns the raw response."""
        last_problem = ""
        for attempt in range(1, self.settings.max_attempts + 1):
            async with self._slots:
                await self._limiter.acquire(estimate)
                if self._fatal is not None:  # another request found the judge unusable
                    raise self._fatal
                try:
                    response = await call()
                except openai.RateLimitError as error:
                    self._limiter.refund(estimate)
                    self._stop_if_fatal(self._raise_if_quota_exhausted, error)
                    self.events["retry_429"] += 1
                    last_problem = "rate limited (429)"
                    wait = self._retry_after(error.response.headers, attempt)
                    self._limiter.pause_for(wait)
                    log.debug(
                        "%s: 429, every request waits %.2f s (attempt %d)", what, wait, attempt
                    )
                    continue  # the limiter holds this request (and all others) for Retry-After
                except openai.APIStatusError as error:
                    self._stop_if_fatal(self._classify_status_error, error, what)
                    self.events[f"retry_{error.status_code}"] += 1
                    last_problem = f"server error ({error.status_code})"
                except openai.APITimeoutError:
                    self.events["retry_timeout"] += 1
                    last_problem = f"timed out after {self.settings.timeout_seconds:g}s"
                except openai.APIConnectionError as error:
                    self.events["retry_connection"] += 1
                    last_problem = f"connection failed ({self._safe(str(error))})"
                else:
                    self._observe_headers(response.headers)
                    return response
            log.debug(
                "%s: %s (attempt %d of %d)", what, last_problem, attempt, self.settings.max_attempts
            )
            if attempt < self.settings.max_attempts:
                await asyncio.sleep(self._backoff(attempt))
        raise JudgeUnavailableError(
            f"{what}: gave up after {self.settings.max_attempts} attempts; last: {last_problem}"
        )

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
        for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
            value = headers.get(name)
            if value is None:
                continue
            try:
                return max(0.0, float(value) * scale)
            except ValueError:
                continue  # an HTTP date: fall back to our own backoff
        return self._backoff(attempt)

    def _backoff(self, attempt: int) -> float:
        """Equal jitter: half the exponential delay for sure, the other half at random."""
        delay = min(BACKOFF_CAP_SECONDS, BACKOFF_BASE_SECONDS * 2 ** (attempt - 1))
        return float(delay / 2 + self._rng.uniform(0, delay / 2))

    def _observe_headers(self, headers: Mapping[str, str]) -> None:
        self._limiter.observe_remaining(
            _int_header(headers, "x-ratelimit-remaining-requests"),
            _int_header(headers, "x-ratelimit-remaining-tokens"),
        )

    def _safe(self, text: str) -> str:
        return redact(text, self._api_key)


def open_cache(settings: JudgeSettings) -> ResponseCache:
    return ResponseCache(Path(settings.cache_path) if settings.cache_path else None)


def _error_message(error: openai.APIStatusError) -> str:
    body = error.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])
    return error.message


def _int_header(headers: Mapping[str, str], name: str) -> int | None:
    value = headers.get(name)
    try:
        return None if value is None else int(float(value))
    except ValueError:
        return None
