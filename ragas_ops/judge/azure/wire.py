"""Azure OpenAI's wire (`engine.wire.ChatWire` and `EmbeddingWire`): Chat Completions and
Embeddings on a resource's deployments, one attempt at a time.

It speaks the Chat Completions format (`judge.chat_completions`: the request fitted to the
model's profile, the replies read) and adds what only Azure knows: a deployment as the model,
its URLs (`transport`), keys or Entra ID tokens (`credentials`), its errors (a 400
`content_filter` is the row's rejection; a 429 says how long to wait in `retry-after-ms`) and
its rate-limit headers, `x-ratelimit-remaining-requests/-tokens` with no limit or reset beside
them (the engine reads what they say and paces to `judge.rpm`/`tpm`, the deployment's quota).
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from ragas_ops.config import JudgeSettings
from ragas_ops.judge.azure.credentials import BearerTokens
from ragas_ops.judge.azure.transport import AzureConnectionError, AzureStatusError, AzureTransport
from ragas_ops.judge.cache.base import JudgeCache
from ragas_ops.judge.chat_completions.replies import read_chat_reply, read_embedding_reply
from ragas_ops.judge.chat_completions.shape import RequestShape, shape_for
from ragas_ops.judge.endpoint import endpoint_name
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
from ragas_ops.pricing import Price

KIND = "azure"


def retry_after(headers: Mapping[str, str]) -> float | None:
    """Azure's wait on a 429: `retry-after-ms` (milliseconds), else `retry-after` (seconds)."""
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            return max(0.0, float(value) * scale)
        except ValueError:
            continue  # an HTTP date: the engine's own backoff
    return None


def status_kind(status: int) -> FailureKind:
    """What an error status means at Azure OpenAI (its 429 has no quota-exhausted variant: a
    deployment's quota refills each minute)."""
    if status == 429:
        return "rate_limited"
    if status in (401, 403):
        return "credentials"
    if status == 404:
        return "unknown_model"  # DeploymentNotFound
    if status < 500 and status != 408:
        return "refused"  # a 400 `content_filter` is in the engine's row-content codes
    return "server"


def failure_of(error: BaseException) -> Failure | None:
    """What an error of `transport` means; None: not one."""
    if isinstance(error, AzureStatusError):
        return Failure(
            status_kind(error.status),
            status=error.status,
            detail=error.message,
            code=error.code,
            param=error.param,
            retry_after=retry_after(error.headers),
            headers=error.headers,
        )
    if isinstance(error, AzureConnectionError):
        return Failure(
            "timeout" if error.timeout else "connection", detail=str(error), sent=error.sent
        )
    return None


class AzureWire:
    """Chat Completions and Embeddings on one Azure OpenAI resource."""

    kind = KIND

    def __init__(
        self,
        settings: JudgeSettings,
        runtime: JudgeRuntime,
        events: Counter[str],
        tokens: BearerTokens | None = None,
    ) -> None:
        resource = runtime.base_url or ""
        api = "/openai/v1" if settings.azure.api_version is None else "/openai/deployments"
        self._endpoint = endpoint_name(resource) + api
        self._transport = AzureTransport(
            resource,
            api_version=settings.azure.api_version,
            api_key=runtime.api_key,
            tokens=tokens,
            timeout_seconds=settings.endpoint.timeout_seconds,
        )
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
        # Azure has no flex tier: the options' `service_tier` is never set (no capability).
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


def azure_judge(
    settings: JudgeSettings,
    runtime: JudgeRuntime,
    prices: Mapping[str, Price],
    *,
    cache: JudgeCache | None = None,
    tokens: BearerTokens | None = None,
    rng: random.Random | None = None,
) -> EngineJudge:
    """The judge of an Azure OpenAI resource: the engine around Azure's wire, which answers
    chat and embeddings (`runtime.base_url`: the resource's endpoint; `tokens`: Entra ID's,
    None: the key). Create one per run; `aclose()` it at the end."""
    events: Counter[str] = Counter()
    wire = AzureWire(settings, runtime, events, tokens)
    return EngineJudge(
        settings, wire, runtime, prices, cache=cache, rng=rng, events=events, embeddings=wire
    )
