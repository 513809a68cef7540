"""OpenAI's wire (`engine.wire.ChatWire` and `EmbeddingWire`): Chat Completions and Embeddings
on an OpenAI-compatible endpoint, one attempt at a time.

What only OpenAI's API knows lives here and in the modules it uses: the request's body fitted to
the model (`shape`, from the model's `profiles`), the HTTP exchange (`transport`), reading the
replies (`replies`), what an error status means (a 429 `insufficient_quota`, a flex tier's
"resource unavailable", a 400 naming a parameter), and the `x-ratelimit-*` headers. The
request's life around it is the engine's (`engine.judge.EngineJudge`).
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import openai

from ragas_ops.config import JudgeSettings
from ragas_ops.judge.cache.base import JudgeCache
from ragas_ops.judge.endpoint import effective_base_url, endpoint_name
from ragas_ops.judge.engine.judge import EngineJudge
from ragas_ops.judge.engine.wire import (
    ChatReply,
    EmbeddingReply,
    Failure,
    FailureKind,
    JudgeRuntime,
    RawReply,
)
from ragas_ops.judge.limits.provider import RateLimitHeaders, rate_limit_headers
from ragas_ops.judge.openai.replies import read_chat_reply, read_embedding_reply, retry_after
from ragas_ops.judge.openai.shape import RequestShape, shape_for
from ragas_ops.judge.openai.transport import (
    Transport,
    connection_problem,
    error_message,
    never_sent,
)
from ragas_ops.pricing import Price

KIND = "openai"
CAPACITY_ERROR_CODES = frozenset({"resource_unavailable"})
CAPACITY_ERROR_MESSAGE = "resource unavailable"
QUOTA_ERROR_CODE = "insufficient_quota"


def is_capacity_error(error: openai.RateLimitError) -> bool:
    """A flex capacity 429 ("resource unavailable"), not the account's rate limit."""
    body = error.body if isinstance(error.body, dict) else {}
    inner = body.get("error", body)
    if not isinstance(inner, dict):
        return False
    if inner.get("code") in CAPACITY_ERROR_CODES or inner.get("type") in CAPACITY_ERROR_CODES:
        return True
    return CAPACITY_ERROR_MESSAGE in str(inner.get("message") or "").lower()


def is_quota_exhausted(error: openai.RateLimitError) -> bool:
    """A 429 saying the account has no quota left: no request can succeed."""
    body = error.body if isinstance(error.body, dict) else {}
    return QUOTA_ERROR_CODE in (body.get("code"), body.get("type"))


def status_kind(error: openai.APIStatusError) -> FailureKind:
    """What an error status means, as OpenAI documents its error codes."""
    status = error.status_code
    if isinstance(error, openai.RateLimitError):
        if is_quota_exhausted(error):
            return "quota_exhausted"
        return "capacity" if is_capacity_error(error) else "rate_limited"
    if status in (401, 403):
        return "credentials"
    if status == 404:
        return "unknown_model"
    if status < 500 and status != 408:
        return "refused"
    return "server"


def failure_of(error: BaseException) -> Failure | None:
    """What an error of the OpenAI SDK (as `transport` raises it) means; None: not one."""
    if isinstance(error, openai.APIStatusError):
        headers = error.response.headers
        return Failure(
            status_kind(error),
            status=error.status_code,
            detail=error_message(error),
            code=error.code,
            param=error.param,
            retry_after=retry_after(headers),
            headers=headers,
        )
    if isinstance(error, openai.APITimeoutError):
        return Failure("timeout", detail=connection_problem(error), sent=not never_sent(error))
    if isinstance(error, openai.APIConnectionError):
        return Failure("connection", detail=connection_problem(error), sent=not never_sent(error))
    return None


class OpenAIWire:
    """Chat Completions and Embeddings on one OpenAI-compatible endpoint."""

    kind = KIND

    def __init__(
        self, settings: JudgeSettings, runtime: JudgeRuntime, events: Counter[str]
    ) -> None:
        base_url = effective_base_url(runtime.base_url or settings.endpoint.base_url)
        self._endpoint = endpoint_name(base_url)
        self._transport = Transport(settings.endpoint, runtime.api_key, base_url)
        self._shape = shape_for(settings, events)

    @property
    def endpoint(self) -> str:
        return self._endpoint

    @property
    def shape(self) -> RequestShape:
        return self._shape

    async def send_chat(
        self,
        messages: Sequence[Mapping[str, str]],
        params: Mapping[str, Any],
        options: Mapping[str, Any],
    ) -> RawReply:
        # Fitted at each attempt: a parameter learnt meanwhile is not sent again.
        return await self._transport.chat(messages, self._shape.fit(params), options)

    def read_chat(self, content_type: str, body: bytes) -> ChatReply:
        return read_chat_reply(content_type, body)

    async def send_embeddings(self, model: str, texts: Sequence[str]) -> RawReply:
        return await self._transport.embeddings(model, texts)

    def read_embeddings(self, content_type: str, body: bytes) -> EmbeddingReply:
        return read_embedding_reply(content_type, body)

    def failure_of(self, error: BaseException) -> Failure | None:
        return failure_of(error)

    def rate_limits(self, headers: Mapping[str, str]) -> RateLimitHeaders:
        return rate_limit_headers(headers)

    async def aclose(self) -> None:
        await self._transport.aclose()


def openai_judge(
    settings: JudgeSettings,
    runtime: JudgeRuntime,
    prices: Mapping[str, Price],
    cache: JudgeCache | None = None,
    rng: random.Random | None = None,
) -> EngineJudge:
    """The judge of an OpenAI-compatible endpoint: the engine around OpenAI's wire, which
    answers both chat and embeddings. Create one per run; `aclose()` it at the end."""
    events: Counter[str] = Counter()
    wire = OpenAIWire(settings, runtime, events)
    return EngineJudge(
        settings, wire, runtime, prices, cache=cache, rng=rng, events=events, embeddings=wire
    )
