"""Anthropic's wire (`engine.wire.ChatWire`): the Messages API over HTTP, one attempt at a time.

As Anthropic documents it (docs/judge-providers.md says what was relied on):
- a request: `POST {base}/v1/messages` with `x-api-key` and `anthropic-version: 2023-06-01`;
  the system prompt is a top-level `system` (marked `cache_control: ephemeral` so that the
  static part of a prompt is read from the prompt cache), `max_tokens` is required, there is no
  `n` (the engine asks the samples one by one) and no `seed`;
- structured output as a forced tool (`tools` with the prompt's schema as `input_schema`,
  `tool_choice: {"type": "tool"}`), whose `tool_use` input is the answer; with thinking on,
  Anthropic refuses a forced tool and a temperature, so neither is sent (the schema is then in
  the prompt's text, `judge.structured_output = json_object`);
- thinking: `{"type": "enabled", "budget_tokens": N}` (N >= 1024, below `max_tokens`) on the
  models before 4.6, `{"type": "adaptive"}` with `output_config.effort` from 4.6 on;
- a reply: `content` blocks (`thinking`, `text`, `tool_use`), `stop_reason` (`end_turn`,
  `tool_use`, `stop_sequence`, `max_tokens` -> cut short, `refusal` -> the row's rejection) and
  `usage` (`input_tokens` beside `cache_creation_input_tokens` and `cache_read_input_tokens`,
  `output_tokens` with the thinking in it);
- errors `{"type": "error", "error": {"type": ..., "message": ...}}`: 429 `rate_limit_error`
  (with `retry-after`; `enforced_spend_limit_reached` ends the run), 529 `overloaded_error`
  (Anthropic's capacity, not the account's: retried with backoff), 401/403, 404, 400/413;
- rate limits in `anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-
  {limit,remaining,reset}` (resets as RFC 3339 times).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any

import aiohttp

from ragas_ops.judge.endpoint import endpoint_name
from ragas_ops.judge.engine.stopping import STOP_GATE
from ragas_ops.judge.engine.wire import (
    ROOM_CEILING_FACTOR,
    BadReplyError,
    ChatChoice,
    ChatReply,
    Failure,
    FailureKind,
    RawReply,
    ReportedUsage,
)
from ragas_ops.judge.limits.provider import RateLimitHeaders
from ragas_ops.judge.spec import EndpointSpec
from ragas_ops.secrets import Secret

log = logging.getLogger(__name__)

KIND = "anthropic"
API_VERSION = "2023-06-01"
ADAPTIVE_EFFORTS = ("low", "medium", "high")
"""Adaptive thinking's efforts (`max` only on some models), lowest first."""
_STOP_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "stop",
    "max_tokens": "length",
    "refusal": "content_filter",
}
_UNSENT = (aiohttp.ClientConnectorError, aiohttp.ConnectionTimeoutError)
_SPEND_LIMIT = "enforced_spend_limit_reached"


class AnthropicStatusError(Exception):
    """An error reply of the Messages API: its status, its error's type and message."""

    def __init__(
        self, status: int, kind: str, message: str, headers: Mapping[str, str], code: str | None
    ) -> None:
        super().__init__(f"HTTP {status} {kind}: {message}")
        self.status = status
        self.kind = kind
        self.message = message
        self.headers = headers
        self.code = code
        """`error.details.error_code` when the reply names one."""


class AnthropicConnectionError(Exception):
    """No reply: the connection failed or the reply did not come in time."""

    def __init__(self, detail: str, *, timed_out: bool, sent: bool) -> None:
        super().__init__(detail)
        self.timed_out = timed_out
        self.sent = sent


class AnthropicShape:
    """How the run's requests are fitted to Claude (`engine.wire.Fitting`): thinking and its
    room; nothing is learnt from refusals (Anthropic names no parameter in its errors)."""

    def __init__(self, thinking: str, budget_tokens: int, effort: str | None) -> None:
        self.thinking = thinking
        self.budget_tokens = budget_tokens
        self._effort = effort if thinking == "adaptive" else None
        self._answered = False

    @property
    def effort(self) -> str | None:
        return self._effort

    @property
    def answered(self) -> bool:
        return self._answered

    def reasoning_allowance(self) -> int:
        """The thinking budget, held in `max_tokens` beside the answer (adaptive thinking: the
        least budget, as room for what it decides to think)."""
        return 0 if self.thinking == "off" else self.budget_tokens

    def room_ceiling(self, visible: int) -> int:
        """The most `max_tokens` a request may get: `ROOM_CEILING_FACTOR` x (the answer's room
        and the thinking budget)."""
        return ROOM_CEILING_FACTOR * (visible + self.reasoning_allowance())

    def saw_reasoning(self, tokens_per_reply: int) -> None:
        """Anthropic does not report thinking tokens apart from the output: nothing to learn."""

    def learn(self, param: str | None, code: str | None, message: str) -> bool:
        return False

    def confirm(self) -> None:
        self._answered = True

    @asynccontextmanager
    async def first_answer(self) -> AsyncIterator[None]:
        yield


def message_body(
    model: str,
    messages: Sequence[Mapping[str, str]],
    params: Mapping[str, Any],
    shape: AnthropicShape,
    *,
    caching: bool,
) -> dict[str, Any]:
    """The Messages API body of a canonical chat request (`engine.chat_request.chat_params`)."""
    system = [message["content"] for message in messages if message["role"] == "system"]
    turns = [
        {"role": message["role"], "content": message["content"]}
        for message in messages
        if message["role"] != "system"
    ]
    body: dict[str, Any] = {
        "model": model,
        "max_tokens": int(params["max_tokens"]),
        "messages": turns,
    }
    if system:
        block: dict[str, Any] = {"type": "text", "text": "\n\n".join(system)}
        if caching:
            block["cache_control"] = {"type": "ephemeral"}
        body["system"] = [block]
    thinking = shape.thinking != "off"
    if not thinking and "temperature" in params:
        body["temperature"] = params["temperature"]
    if shape.thinking == "budget":
        body["thinking"] = {"type": "enabled", "budget_tokens": shape.budget_tokens}
    elif shape.thinking == "adaptive":
        body["thinking"] = {"type": "adaptive"}
        if shape.effort is not None:
            body["output_config"] = {"effort": shape.effort}
    response_format = params.get("response_format") or {}
    if response_format.get("type") == "json_schema" and not thinking:
        schema = response_format["json_schema"]
        body["tools"] = [
            {
                "name": schema["name"],
                "description": "Record the answer, following the schema.",
                "input_schema": schema["schema"],
            }
        ]
        body["tool_choice"] = {"type": "tool", "name": schema["name"]}
    return body


def read_message(content_type: str, body: bytes) -> ChatReply:
    """A Messages API reply's answer and usage, or `BadReplyError`."""
    try:
        payload = json.loads(body)
    except ValueError:
        media = content_type.split(";", 1)[0].strip() or "no content type"
        raise BadReplyError("not_json", f"a {media} body that is not JSON") from None
    if not isinstance(payload, dict) or payload.get("type") != "message":
        raise BadReplyError("wrong_type", "the reply is not a `message` object")
    content = payload.get("content")
    if not isinstance(content, list):
        raise BadReplyError("missing_field", "the reply has no `content` list")
    texts: list[str] = []
    for block in content:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif kind == "tool_use" and isinstance(block.get("input"), dict):
            texts.append(json.dumps(block["input"], ensure_ascii=False))
        elif kind not in ("thinking", "redacted_thinking"):
            raise BadReplyError("wrong_type", f"a content block of type {kind!r}")
    stop_reason = payload.get("stop_reason")
    if not isinstance(stop_reason, str):
        raise BadReplyError("missing_field", "the reply has no `stop_reason`")
    finish = _STOP_REASONS.get(stop_reason, stop_reason)
    return ChatReply([ChatChoice("".join(texts), finish)], _usage(payload.get("usage")))


def _usage(usage: Any) -> ReportedUsage:
    if not isinstance(usage, dict):
        raise BadReplyError("missing_field", "the reply has no `usage` object")
    counts = {
        name: usage.get(name) or 0
        for name in (
            "input_tokens",
            "output_tokens",
            "cache_creation_input_tokens",
            "cache_read_input_tokens",
        )
    }
    for name, value in counts.items():
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise BadReplyError("wrong_type", f"`usage.{name}` is not a count")
    written, read = counts["cache_creation_input_tokens"], counts["cache_read_input_tokens"]
    return ReportedUsage(
        prompt_tokens=counts["input_tokens"] + written + read,
        completion_tokens=counts["output_tokens"],
        cached_prompt_tokens=read,
        cache_write_tokens=written,
    )


def status_kind(error: AnthropicStatusError) -> FailureKind:
    """What an error reply means, by its status and its error's type."""
    status = error.status
    if status == 429:
        return "quota_exhausted" if error.code == _SPEND_LIMIT else "rate_limited"
    if status == 402 or error.kind == "billing_error":
        return "quota_exhausted"
    if status in (401, 403):
        return "credentials"
    if status == 404:
        return "unknown_model"
    if status < 500 and status != 408:
        return "refused"
    return "server"  # 500 api_error, 529 overloaded_error, 408


def failure_of(error: BaseException) -> Failure | None:
    if isinstance(error, AnthropicStatusError):
        return Failure(
            status_kind(error),
            status=error.status,
            detail=error.message,
            code=error.code or error.kind,
            retry_after=retry_after(error.headers),
            headers=error.headers,
        )
    if isinstance(error, AnthropicConnectionError):
        kind: FailureKind = "timeout" if error.timed_out else "connection"
        return Failure(kind, detail=str(error), sent=error.sent)
    return None


def retry_after(headers: Mapping[str, str]) -> float | None:
    """`retry-after` in seconds (Anthropic sends whole seconds), or None."""
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


def rate_limits(headers: Mapping[str, str], now: datetime | None = None) -> RateLimitHeaders:
    """Anthropic's rate-limit headers as the admission reads them: the requests, and the
    tokens limit most restrictive now (`anthropic-ratelimit-tokens-*`, else the input
    tokens', which is what a judge's prompts spend most)."""
    now = now or datetime.now(UTC)

    def number(name: str) -> int | None:
        for family in (name, name.replace("tokens-", "input-tokens-")):
            value = headers.get(f"anthropic-ratelimit-{family}")
            if value is not None:
                with contextlib.suppress(ValueError):
                    return int(value)
        return None

    def reset(name: str) -> float | None:
        for family in (name, name.replace("tokens-", "input-tokens-")):
            value = headers.get(f"anthropic-ratelimit-{family}")
            if value is not None:
                with contextlib.suppress(ValueError):
                    at = datetime.fromisoformat(value.replace("Z", "+00:00"))
                    return max(0.0, (at - now).total_seconds())
        return None

    return RateLimitHeaders(
        remaining_requests=number("requests-remaining"),
        remaining_tokens=number("tokens-remaining"),
        reset_requests_seconds=reset("requests-reset"),
        reset_tokens_seconds=reset("tokens-reset"),
        limit_tokens=number("tokens-limit"),
        limit_requests=number("requests-limit"),
    )


class AnthropicWire:
    """The Messages API of one endpoint, for one model."""

    kind = KIND

    def __init__(
        self,
        endpoint: EndpointSpec,
        api_key: Secret,
        base_url: str,
        shape: AnthropicShape,
        *,
        caching: bool,
    ) -> None:
        self._url = base_url.rstrip("/") + "/v1/messages"
        self._endpoint = endpoint_name(base_url)
        self._model = endpoint.model
        self._timeout = endpoint.timeout_seconds
        self._headers = {
            "x-api-key": api_key.reveal(),
            "anthropic-version": API_VERSION,
            "content-type": "application/json",
        }
        self._shape = shape
        self._caching = caching
        self._session: aiohttp.ClientSession | None = None
        self._session_loop: asyncio.AbstractEventLoop | None = None

    @property
    def endpoint(self) -> str:
        return self._endpoint

    @property
    def shape(self) -> AnthropicShape:
        return self._shape

    async def send_chat(
        self,
        messages: Sequence[Mapping[str, str]],
        params: Mapping[str, Any],
        options: Mapping[str, Any],
    ) -> RawReply:
        await STOP_GATE.before_send()  # a graceful stop sends nothing more
        body = message_body(self._model, messages, params, self._shape, caching=self._caching)
        data = json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()
        seconds = options.get("timeout", self._timeout)
        timeout = aiohttp.ClientTimeout(
            total=None, connect=seconds, sock_connect=seconds, sock_read=seconds
        )
        try:
            async with self._pool().post(self._url, data=data, timeout=timeout) as response:
                content = await response.read()
                status, headers = response.status, response.headers
        except (aiohttp.ClientError, TimeoutError) as error:
            sent = not isinstance(error, _UNSENT)
            timed_out = isinstance(error, TimeoutError) and sent
            detail = f"{type(error).__name__}: {error}".rstrip(": ")
            raise AnthropicConnectionError(detail, timed_out=timed_out, sent=sent) from error
        if status >= 400:
            raise _status_error(status, headers, content)
        return RawReply(headers, headers.get("content-type", ""), content)

    def read_chat(self, content_type: str, body: bytes) -> ChatReply:
        return read_message(content_type, body)

    def failure_of(self, error: BaseException) -> Failure | None:
        return failure_of(error)

    def rate_limits(self, headers: Mapping[str, str]) -> RateLimitHeaders:
        return rate_limits(headers)

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
            session = aiohttp.ClientSession(connector=connector, headers=self._headers)
            self._session, self._session_loop = session, loop
        return session


def _status_error(status: int, headers: Mapping[str, str], content: bytes) -> AnthropicStatusError:
    """The error of an error reply, read as Anthropic shapes it (anything else: its text)."""
    text = content.decode("utf-8", errors="replace").strip()
    kind, message, code = "error", text[:200] or f"HTTP {status}", None
    with contextlib.suppress(ValueError):
        payload = json.loads(text)
        error = payload.get("error") if isinstance(payload, dict) else None
        if isinstance(error, dict):
            kind = str(error.get("type") or kind)
            message = str(error.get("message") or message)
            details = error.get("details")
            if isinstance(details, dict) and details.get("error_code"):
                code = str(details["error_code"])
    return AnthropicStatusError(status, kind, message, headers, code)
