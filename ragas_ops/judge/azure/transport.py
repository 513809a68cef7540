"""The HTTP exchange with an Azure OpenAI resource: one attempt is one request, its reply
returned as it arrived (no retries: the engine's), its errors raised as this module's.

The URL is the v1 API's (`{endpoint}/openai/v1/chat/completions`, the deployment in the body's
`model`) or, with `azure_api_version`, the deployments URL
(`{endpoint}/openai/deployments/{deployment}/chat/completions?api-version=...`). The request
carries the `api-key` header, or an Entra ID token as `Authorization: Bearer`."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote

import aiohttp

from ragas_ops.judge.azure.credentials import BearerTokens
from ragas_ops.judge.engine.stopping import STOP_GATE
from ragas_ops.judge.engine.wire import RawReply
from ragas_ops.secrets import Secret

_UNSENT = (aiohttp.ClientConnectorError, aiohttp.ConnectionTimeoutError)
"""aiohttp's errors of a connection never made: refused, DNS, TLS, no connection in time."""


class AzureStatusError(Exception):
    """An error status, with Azure's error body (`{"error": {"code", "message", "param"}}`)."""

    def __init__(self, status: int, headers: Mapping[str, str], content: bytes) -> None:
        body: Any = content.decode("utf-8", errors="replace").strip()
        with contextlib.suppress(ValueError):
            body = json.loads(body)
        error = body.get("error", body) if isinstance(body, dict) else {}
        error = error if isinstance(error, dict) else {}
        self.status = status
        self.headers = dict(headers)
        self.code = _text(error.get("code"))
        self.param = _text(error.get("param"))
        self.message = _text(error.get("message")) or (body if isinstance(body, str) else "")
        super().__init__(f"HTTP {status}: {self.message}")


class AzureConnectionError(Exception):
    """No reply: the connection failed, or the reply did not come in time."""

    def __init__(self, cause: BaseException, *, timeout: bool, sent: bool) -> None:
        text = str(cause).strip()
        super().__init__(f"{type(cause).__name__}: {text}" if text else type(cause).__name__)
        self.timeout = timeout
        self.sent = sent


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


class AzureTransport:
    """Sends one request to the resource's chat or embeddings API."""

    def __init__(
        self,
        resource: str,
        *,
        api_version: str | None,
        api_key: Secret,
        tokens: BearerTokens | None,
        timeout_seconds: float,
    ) -> None:
        self._resource = resource.rstrip("/")
        self._api_version = api_version
        self._api_key = api_key
        self._tokens = tokens
        self._timeout = timeout_seconds
        self._session: aiohttp.ClientSession | None = None
        self._session_loop: asyncio.AbstractEventLoop | None = None

    def url(self, operation: str, deployment: str) -> str:
        """Where a request of `operation` (`chat/completions`, `embeddings`) goes."""
        if self._api_version is None:
            return f"{self._resource}/openai/v1/{operation}"
        version = quote(self._api_version, safe="")
        name = quote(deployment, safe="")
        return f"{self._resource}/openai/deployments/{name}/{operation}?api-version={version}"

    async def chat(
        self,
        messages: Sequence[Mapping[str, str]],
        params: Mapping[str, Any],
        options: Mapping[str, Any],
    ) -> RawReply:
        body = {"messages": list(messages), **params}
        return await self._post("chat/completions", body, options)

    async def embeddings(self, deployment: str, texts: Sequence[str]) -> RawReply:
        body = {"model": deployment, "input": list(texts), "encoding_format": "float"}
        return await self._post("embeddings", body, {})

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    def _pool(self) -> aiohttp.ClientSession:
        """The connection pool of this event loop (a pool belongs to the loop it was made in)."""
        loop = asyncio.get_running_loop()
        session = self._session
        if session is None or session.closed or self._session_loop is not loop:
            connector = aiohttp.TCPConnector(limit=0, keepalive_timeout=30.0)
            session = aiohttp.ClientSession(connector=connector)
            self._session, self._session_loop = session, loop
        return session

    async def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        if self._tokens is not None:
            headers.update(await self._tokens.header())
        elif self._api_key:
            headers["api-key"] = self._api_key.reveal()
        return headers

    async def _post(
        self, operation: str, body: dict[str, Any], options: Mapping[str, Any]
    ) -> RawReply:
        await STOP_GATE.before_send()  # a graceful stop sends nothing more
        url = self.url(operation, str(body.get("model", "")))
        data = json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()
        seconds = options.get("timeout", self._timeout)
        timeout = aiohttp.ClientTimeout(
            total=None, connect=seconds, sock_connect=seconds, sock_read=seconds
        )
        headers = await self._headers()
        try:
            async with self._pool().post(url, data=data, headers=headers, timeout=timeout) as reply:
                content = await reply.read()
                status, reply_headers = reply.status, reply.headers
        except (aiohttp.ClientError, TimeoutError) as error:
            unsent = isinstance(error, _UNSENT)
            timed_out = isinstance(error, TimeoutError) and not unsent
            raise AzureConnectionError(error, timeout=timed_out, sent=not unsent) from error
        if status >= 400:
            raise AzureStatusError(status, reply_headers, content)
        return RawReply(reply_headers, reply_headers.get("content-type", ""), content)
