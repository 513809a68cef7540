"""The wire to an OpenAI-compatible endpoint: one place builds the SDK client, and one attempt
is one HTTP request whose raw reply comes back as it arrived (no retries: those are the retry
policy's, paced by the admission; no parsing beyond HTTP: `replies` reads the body).

The request's body goes out as the judge built it, through the SDK's `post`: its typed
`create` would walk the messages and the response_format schema to transform them (about a
quarter of the client's CPU per request) into the very JSON it was given."""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import openai

from ragas_ops.judge.endpoint import effective_base_url
from ragas_ops.judge.openai.replies import BadReplyError
from ragas_ops.judge.spec import EndpointSpec
from ragas_ops.judge.stopping import STOP_GATE
from ragas_ops.secrets import Secret

RETRIED_ERRORS = (openai.APIStatusError, openai.APIConnectionError, BadReplyError)
"""What an attempt may end in and still be worth another (timeouts are connection errors;
the retry policy raises for the status errors that retrying cannot fix)."""
_TRANSPORTS = ("httpx2", "httpx")  # the SDK's HTTP library since openai 2, and before
_UNSENT = ("ConnectError", "ConnectTimeout", "PoolTimeout")


@dataclass(frozen=True)
class RawReply:
    """A status-200 reply as it came: its headers and its body, not yet read."""

    headers: Mapping[str, str]
    content_type: str
    body: bytes


def openai_client(
    endpoint: EndpointSpec, api_key: Secret, *, max_retries: int, base_url: str | None = None
) -> openai.AsyncOpenAI:
    """The SDK client for the judge endpoint (an endpoint without keys still needs a value)."""
    return openai.AsyncOpenAI(
        api_key=api_key.reveal() or "no-key",
        base_url=base_url or effective_base_url(endpoint.base_url),
        timeout=endpoint.timeout_seconds,
        max_retries=max_retries,
    )


class Transport:
    """Sends one request to the judge endpoint; raises the SDK's errors for the others."""

    def __init__(self, endpoint: EndpointSpec, api_key: Secret, base_url: str) -> None:
        # Retries are the judge's: they must go through the rate limiter.
        self._client = openai_client(endpoint, api_key, max_retries=0, base_url=base_url)

    async def chat(
        self,
        messages: Sequence[Mapping[str, str]],
        params: Mapping[str, Any],
        options: Mapping[str, Any],
    ) -> RawReply:
        return await self._post("/chat/completions", {"messages": messages, **params}, options)

    async def embeddings(self, model: str, texts: Sequence[str]) -> RawReply:
        body = {"model": model, "input": list(texts), "encoding_format": "float"}
        return await self._post("/embeddings", body, {})

    async def aclose(self) -> None:
        await self._client.close()

    async def _post(self, path: str, body: dict[str, Any], options: Mapping[str, Any]) -> RawReply:
        """`options`: this attempt's `service_tier` (sent in the body) and `timeout`."""
        await STOP_GATE.before_send()  # a graceful stop sends nothing more (judge/stopping)
        if options.get("service_tier") is not None:
            body = {**body, "service_tier": options["service_tier"]}
        request_options: Any = {"security": {"bearer_auth": True}}
        if "timeout" in options:
            request_options["timeout"] = options["timeout"]
        raw = await self._client.post(
            path, cast_to=_http_response(), body=body, options=request_options
        )
        return RawReply(raw.headers, raw.headers.get("content-type", ""), raw.content)


def never_sent(error: BaseException) -> bool:
    """Whether an attempt failed before its request left this machine: the connection was
    refused, timed out while connecting (also when this process was too busy to see it made),
    or no connection of the pool came free in time. Such an attempt is no request: the
    endpoint never saw it, so the row is not charged for it. A failure after connecting (a
    reset, a read timeout) may have reached the endpoint, which may bill it: that is charged."""
    return isinstance(error, openai.APIConnectionError) and isinstance(
        error.__cause__, _unsent_errors()
    )


def connection_problem(error: Exception) -> str:
    """What failed under the SDK's "Connection error.": refused, DNS, TLS, a reset..."""
    cause = error.__cause__ or error.__context__
    if isinstance(error, openai.APIConnectionError) and cause is not None:
        error = cause if isinstance(cause, Exception) else error
    text = str(error).strip()
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def error_message(error: openai.APIStatusError) -> str:
    """The API's own message of an error reply (its body's `error.message`)."""
    body = error.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])
    return error.message


@lru_cache(maxsize=1)
def _http_response() -> type[Any]:
    """The response class of the SDK's HTTP library: asked for as the cast type, `post` hands
    back the HTTP response itself (the SDK still raises its errors for error statuses)."""
    for name in _TRANSPORTS:
        module = _transport(name)
        if module is not None and issubclass(openai.DefaultAsyncHttpxClient, module.AsyncClient):
            response: type[Any] = module.Response
            return response
    raise RuntimeError("the OpenAI SDK's HTTP library is neither httpx2 nor httpx")


@lru_cache(maxsize=1)
def _unsent_errors() -> tuple[type[BaseException], ...]:
    """The transport's errors of a connection never made, whichever libraries are installed."""
    found: list[type[BaseException]] = []
    for name in _TRANSPORTS:
        module = _transport(name)
        if module is not None:
            found += [getattr(module, error) for error in _UNSENT if hasattr(module, error)]
    return tuple(found)


def _transport(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except ImportError:
        return None
