"""The wire to an OpenAI-compatible endpoint: one place builds the SDK client, and one attempt
is one HTTP request whose raw reply comes back as it arrived (no retries: those are the retry
policy's, paced by the admission; no parsing beyond HTTP: `replies` reads the body).

The request's body goes out as the judge built it, in one persistent aiohttp connection pool
(the HTTP library of the SDK's own `DefaultAioHttpClient`), with the SDK's headers (its
`default_headers` and `auth_headers`: the key, the organisation and project, the user agent).
The SDK's `post` spent about three quarters of the client's CPU per request building the
request's and the reply's models and walking its connection pool (docs/benchmarks.md); what
the SDK says of a failure is kept: an error status raises the SDK's error of that status (its
`RateLimitError`, `InternalServerError`...), with its body and headers; a connection that
failed, or a reply that did not come in time, raises its `APIConnectionError` /
`APITimeoutError`, whose cause tells whether the request ever left (`never_sent`)."""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import json
import logging
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

import aiohttp
import openai

from ragas_ops.judge.endpoint import effective_base_url
from ragas_ops.judge.engine.stopping import STOP_GATE
from ragas_ops.judge.engine.wire import BadReplyError, RawReply
from ragas_ops.judge.spec import EndpointSpec
from ragas_ops.secrets import Secret

log = logging.getLogger(__name__)

RETRIED_ERRORS = (openai.APIStatusError, openai.APIConnectionError, BadReplyError)
"""What an attempt may end in and still be worth another (timeouts are connection errors;
the retry policy raises for the status errors that retrying cannot fix)."""
_TRANSPORTS = ("httpx2", "httpx")  # the SDK's HTTP library since openai 2, and before
_UNSENT = ("ConnectError", "ConnectTimeout", "PoolTimeout")
_UNSENT_AIOHTTP = (aiohttp.ClientConnectorError, aiohttp.ConnectionTimeoutError)
"""aiohttp's errors of a connection never made: refused, DNS, TLS, no connection in time."""
_STATUS_ERRORS: dict[int, type[openai.APIStatusError]] = {
    400: openai.BadRequestError,
    401: openai.AuthenticationError,
    403: openai.PermissionDeniedError,
    404: openai.NotFoundError,
    409: openai.ConflictError,
    422: openai.UnprocessableEntityError,
    429: openai.RateLimitError,
}
"""The SDK's error of each status (500 and above: `InternalServerError`), as it maps them."""


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
        self._base = str(self._client.base_url).rstrip("/")
        self._timeout = endpoint.timeout_seconds
        self._session: aiohttp.ClientSession | None = None
        self._session_loop: asyncio.AbstractEventLoop | None = None

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
        if self._session is not None:
            await self._session.close()
            self._session = None
        await self._client.close()

    def _pool(self) -> aiohttp.ClientSession:
        """The connection pool of this event loop (`ragas-ops score` runs one loop per file
        part: a pool belongs to the loop it was made in)."""
        loop = asyncio.get_running_loop()
        session = self._session
        if session is None or session.closed or self._session_loop is not loop:
            headers = {
                name: value
                for name, value in {
                    **self._client.default_headers,
                    **self._client.auth_headers,
                }.items()
                if isinstance(value, str)  # the SDK's Omit: a header it does not send
            }
            # keep-alive connections for every request the judge may have in flight
            connector = aiohttp.TCPConnector(limit=0, keepalive_timeout=30.0)
            session = aiohttp.ClientSession(connector=connector, headers=headers)
            self._session, self._session_loop = session, loop
        return session

    async def _post(self, path: str, body: dict[str, Any], options: Mapping[str, Any]) -> RawReply:
        """`options`: this attempt's `service_tier` (sent in the body) and `timeout`."""
        await STOP_GATE.before_send()  # a graceful stop sends nothing more (judge/engine/stopping)
        if options.get("service_tier") is not None:
            body = {**body, "service_tier": options["service_tier"]}
        url = self._base + path
        data = json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()
        # As the SDK's (httpx's) timeout: each wait (a connection, a read) at most this long,
        # not the whole exchange, so a long reply that keeps coming is not cut.
        seconds = options.get("timeout", self._timeout)
        timeout = aiohttp.ClientTimeout(
            total=None, connect=seconds, sock_connect=seconds, sock_read=seconds
        )
        try:
            async with self._pool().post(url, data=data, timeout=timeout) as response:
                content = await response.read()
                status, headers = response.status, response.headers
        except (aiohttp.ClientError, TimeoutError) as error:
            raise _connection_error(error, url) from error
        if log.isEnabledFor(logging.DEBUG):  # what the gateway answered, as the SDK's DEBUG line
            log.debug('HTTP Response: POST %s "%d" %s', url, status, dict(headers))
        if status >= 400:
            raise _status_error(url, status, headers, content)
        return RawReply(headers, headers.get("content-type", ""), content)


def _connection_error(error: BaseException, url: str) -> openai.APIConnectionError:
    """The SDK's error of a request that got no reply: timed out, or its connection failed."""
    request = _http().Request("POST", url)
    if isinstance(error, TimeoutError) and not isinstance(error, _UNSENT_AIOHTTP):
        return openai.APITimeoutError(request=request)
    return openai.APIConnectionError(request=request)


def _status_error(
    url: str, status: int, headers: Mapping[str, str], content: bytes
) -> openai.APIStatusError:
    """The SDK's error of an error status, as its client makes it (message, body, headers)."""
    http = _http()
    response = http.Response(
        status,
        headers=list(headers.items()),
        content=content,
        request=http.Request("POST", url),
    )
    message = f"Error code: {status}"
    body: Any = content.decode("utf-8", errors="replace").strip()
    with contextlib.suppress(ValueError):  # not JSON: the body is its text
        body = json.loads(body)
    data = body.get("error", body) if isinstance(body, dict) else body
    if isinstance(data, dict) and isinstance(data.get("message"), str) and data["message"]:
        message += f" - {data['message']}"
    kind = _STATUS_ERRORS.get(status)
    if kind is None:
        kind = openai.InternalServerError if status >= 500 else openai.APIStatusError
    return kind(message, response=response, body=data)


def never_sent(error: BaseException) -> bool:
    """Whether an attempt failed before its request left this machine: the connection was
    refused, timed out while connecting (also when this process was too busy to see it made),
    or no connection of the pool came free in time. Such an attempt is no request: the
    endpoint never saw it, so the row is not charged for it. A failure after connecting (a
    reset, a read timeout) may have reached the endpoint, which may bill it: that is charged."""
    return isinstance(error, openai.APIConnectionError) and isinstance(
        error.__cause__, (*_unsent_errors(), *_UNSENT_AIOHTTP)
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
def _http() -> Any:
    """The SDK's HTTP library (its errors carry that library's request and response)."""
    for name in _TRANSPORTS:
        module = _transport(name)
        if module is not None and issubclass(openai.DefaultAsyncHttpxClient, module.AsyncClient):
            return module
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
