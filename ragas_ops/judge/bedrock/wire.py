"""Amazon Bedrock's wire (`engine.wire.ChatWire` and `EmbeddingWire`): the Converse API for
chat and Titan Text Embeddings (`invoke_model`) for embeddings, through boto3, one attempt at
a time.

boto3 blocks: each call runs in a thread of this wire's pool, as many threads as the judge has
requests in flight (`judge.max_concurrency`), so the event loop never waits on a socket.
Bedrock sends no rate-limit headers: `rate_limits` says nothing, and the pace comes from
`judge.rpm`/`tpm` (the account's quota for the model) and from its throttles, which the
engine's congestion control reads as a 429 without headers. `ThrottlingException`,
`ServiceQuotaExceededException`, `ServiceUnavailableException` and `ModelNotReadyException` are
rate signals (asked again after a backoff, using no attempt); an expired or refused credential
stops the run; a `ValidationException` is the request's rejection.
"""

from __future__ import annotations

import asyncio
import json
import random
from collections import Counter
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any

import numpy as np
from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    ConnectionClosedError,
    ConnectTimeoutError,
    EndpointConnectionError,
    NoCredentialsError,
    ReadTimeoutError,
)

from ragas_ops.config import JudgeSettings
from ragas_ops.judge.bedrock.converse import converse_request, read_converse_reply
from ragas_ops.judge.bedrock.shape import ConverseShape
from ragas_ops.judge.cache.base import JudgeCache
from ragas_ops.judge.engine.judge import EngineJudge
from ragas_ops.judge.engine.stopping import STOP_GATE
from ragas_ops.judge.engine.wire import (
    BadReplyError,
    ChatReply,
    EmbeddingReply,
    Failure,
    FailureKind,
    JudgeRuntime,
    RawReply,
    ReportedUsage,
)
from ragas_ops.judge.limits.provider import RateLimitHeaders
from ragas_ops.pricing import Price

KIND = "bedrock"
RATE_SIGNALS = frozenset(
    {
        "ThrottlingException",
        "ServiceQuotaExceededException",
        "ServiceUnavailableException",
        "ModelNotReadyException",
    }
)
"""Bedrock's errors that say "not now": the account's pace, or a model not ready yet."""
CREDENTIAL_ERRORS = frozenset(
    {
        "AccessDeniedException",
        "UnrecognizedClientException",
        "ExpiredTokenException",
        "InvalidSignatureException",
    }
)
SERVER_ERRORS = frozenset(
    {"InternalServerException", "ModelTimeoutException", "ModelErrorException"}
)
TITAN_DIMENSIONS = 1024
"""Titan Text Embeddings v2's default (it takes 256, 512 or 1024)."""


def error_kind(code: str, status: int) -> FailureKind:
    """What a Bedrock error code means."""
    if code in RATE_SIGNALS:
        return "rate_limited"
    if code in CREDENTIAL_ERRORS or status in (401, 403):
        return "credentials"
    if code == "ResourceNotFoundException" or status == 404:
        return "unknown_model"
    if code in SERVER_ERRORS or status >= 500 or status == 408:
        return "server"
    return "refused"  # ValidationException and the other 4xx


def failure_of(error: BaseException) -> Failure | None:
    """What an error boto3 raised means; None: not one of boto3's."""
    if isinstance(error, ClientError):
        details = error.response.get("Error", {})
        meta = error.response.get("ResponseMetadata", {})
        code = str(details.get("Code", ""))
        status = int(meta.get("HTTPStatusCode", 0) or 0)
        return Failure(
            error_kind(code, status),
            status=status or None,
            detail=str(details.get("Message", "")),
            code=code or None,
            headers=dict(meta.get("HTTPHeaders", {})),
        )
    if isinstance(error, NoCredentialsError):
        return Failure("credentials", detail=f"{error} (boto3's credential chain found none)")
    if isinstance(error, ConnectTimeoutError | EndpointConnectionError):
        return Failure("connection", detail=str(error), sent=False)
    if isinstance(error, ReadTimeoutError):
        return Failure("timeout", detail=str(error))
    if isinstance(error, ConnectionClosedError | BotoCoreError):
        return Failure("connection", detail=str(error))
    return None


class BedrockWire:
    """Converse and Titan embeddings on one account's bedrock-runtime."""

    kind = KIND

    def __init__(self, settings: JudgeSettings, client: Any, endpoint: str) -> None:
        self._client = client
        self._model = settings.endpoint.model
        self._endpoint = endpoint
        self._shape = ConverseShape()
        self._pool = ThreadPoolExecutor(
            max_workers=settings.limits.max_concurrency, thread_name_prefix="bedrock"
        )

    @property
    def endpoint(self) -> str:
        return self._endpoint

    @property
    def shape(self) -> ConverseShape:
        return self._shape

    async def _call(self, operation: str, **request: Any) -> dict[str, Any]:
        await STOP_GATE.before_send()  # a graceful stop sends nothing more
        loop = asyncio.get_running_loop()
        method = getattr(self._client, operation)
        reply: dict[str, Any] = await loop.run_in_executor(self._pool, partial(method, **request))
        return reply

    async def send_chat(
        self,
        messages: Sequence[Mapping[str, str]],
        params: Mapping[str, Any],
        options: Mapping[str, Any],
    ) -> RawReply:
        reply = await self._call("converse", **converse_request(self._model, messages, params))
        meta = reply.pop("ResponseMetadata", {})
        return RawReply(
            dict(meta.get("HTTPHeaders", {})), "application/json", json.dumps(reply).encode()
        )

    def read_chat(self, content_type: str, body: bytes) -> ChatReply:
        return read_converse_reply(body)

    async def send_embeddings(self, model: str, texts: Sequence[str]) -> RawReply:
        """Titan takes one text a request (the provider asks the engine for one at a time)."""
        replies = await asyncio.gather(*(self._embed_one(model, text) for text in texts))
        return RawReply({}, "application/json", json.dumps(replies).encode())

    async def _embed_one(self, model: str, text: str) -> dict[str, Any]:
        body = json.dumps({"inputText": text, "dimensions": TITAN_DIMENSIONS, "normalize": True})
        reply = await self._call(
            "invoke_model",
            modelId=model,
            body=body,
            contentType="application/json",
            accept="application/json",
        )
        payload: dict[str, Any] = json.loads(reply["body"].read())
        return payload

    def read_embeddings(self, content_type: str, body: bytes) -> EmbeddingReply:
        try:
            replies = json.loads(body)
            vectors = {
                index: np.asarray(reply["embedding"], dtype=np.float64)
                for index, reply in enumerate(replies)
            }
            tokens = sum(int(reply["inputTextTokenCount"]) for reply in replies)
        except (ValueError, KeyError, TypeError) as error:
            raise BadReplyError(
                "wrong_shape", f"a Titan reply is not as documented: {error}"
            ) from None
        return EmbeddingReply(vectors, ReportedUsage(prompt_tokens=tokens))

    def failure_of(self, error: BaseException) -> Failure | None:
        return failure_of(error)

    def rate_limits(self, headers: Mapping[str, str]) -> RateLimitHeaders:
        return RateLimitHeaders()  # Bedrock sends none

    async def aclose(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
        self._client.close()


def bedrock_judge(
    settings: JudgeSettings,
    client: Any,
    prices: Mapping[str, Price],
    *,
    endpoint: str,
    cache: JudgeCache | None = None,
    rng: random.Random | None = None,
) -> EngineJudge:
    """The judge of Amazon Bedrock: the engine around the Converse wire, which embeds with
    Titan too. Create one per run; `aclose()` it at the end."""
    events: Counter[str] = Counter()
    wire = BedrockWire(settings, client, endpoint)
    # No key: boto3 signs each request with the chain's credentials, which never reach here.
    runtime = JudgeRuntime(key_source="boto3's credentials")
    return EngineJudge(
        settings, wire, runtime, prices, cache=cache, rng=rng, events=events, embeddings=wire
    )
