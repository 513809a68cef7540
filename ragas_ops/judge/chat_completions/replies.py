"""Reading the body of an OpenAI-compatible status-200 reply, trusting nothing about it.

Gateways, proxies and load balancers answer with HTML pages, plain text or bodies cut short, and
an OpenAI-compatible server may leave out or mistype fields. The SDK's own parsing builds
objects without checking them (a page becomes a `str`, a missing field `None`), so the judge
reads the bytes itself: anything that is not a well-formed reply raises `BadReplyError`, which
the transport retries like a dropped connection.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from ragas_ops.judge.engine.wire import (
    BadReplyError,
    ChatChoice,
    ChatReply,
    EmbeddingReply,
    ReportedUsage,
)
from ragas_ops.judge.limits.provider import MAX_WAIT_SECONDS, provider_number

_SNIPPET_CHARS = 80


def read_chat_reply(content_type: str, body: bytes) -> ChatReply:
    """A chat completion's choices and usage, or `BadReplyError`."""
    payload = _json_object(content_type, body)
    choices = payload.get("choices")
    if choices is None:
        raise BadReplyError("missing_field", "the reply has no `choices`")
    if not isinstance(choices, list) or not choices:
        raise BadReplyError("wrong_type", "`choices` is not a non-empty list")
    return ChatReply(
        [_choice(choice) for choice in choices], _usage(payload), _service_tier(payload)
    )


def read_embedding_reply(content_type: str, body: bytes) -> EmbeddingReply:
    """An embeddings reply's vectors by input index, and its usage, or `BadReplyError`."""
    payload = _json_object(content_type, body)
    data = payload.get("data")
    if data is None:
        raise BadReplyError("missing_field", "the reply has no `data`")
    if not isinstance(data, list):
        raise BadReplyError("wrong_type", "`data` is not a list")
    vectors: dict[int, npt.NDArray[np.float64]] = {}
    for item in data:
        index = item.get("index") if isinstance(item, dict) else None
        vector = item.get("embedding") if isinstance(item, dict) else None
        if not isinstance(index, int) or isinstance(index, bool) or not isinstance(vector, list):
            raise BadReplyError("wrong_type", "an item of `data` lacks an int index or a vector")
        if not all(isinstance(x, int | float) and not isinstance(x, bool) for x in vector):
            raise BadReplyError("wrong_type", "an embedding holds something other than numbers")
        vectors[index] = np.asarray(vector, dtype=np.float64)
    return EmbeddingReply(vectors, _usage(payload))


def _json_object(content_type: str, body: bytes) -> Mapping[str, Any]:
    media_type = content_type.split(";", 1)[0].strip().lower()
    try:
        payload = json.loads(body)
    except ValueError:
        raise _not_json(media_type, body) from None
    if not isinstance(payload, dict):
        raise BadReplyError("wrong_type", f"the reply is JSON but not an object ({media_type})")
    return payload


def _not_json(media_type: str, body: bytes) -> BadReplyError:
    text = body.decode("utf-8", errors="replace").strip()
    snippet = " ".join(text.split())[:_SNIPPET_CHARS]
    if media_type == "text/html" or text[:1] == "<":
        return BadReplyError("html", f"an HTML page instead of JSON: {snippet!r}")
    if "json" in media_type and text[:1] in ("{", "["):
        return BadReplyError("truncated", f"a JSON body cut short after {len(body)} bytes")
    if "json" not in media_type:
        shown = media_type or "no content type"
        return BadReplyError("text", f"{shown} instead of JSON: {snippet!r}")
    return BadReplyError("not_json", f"a body that is not JSON: {snippet!r}")


def _choice(choice: Any) -> ChatChoice:
    message = choice.get("message") if isinstance(choice, dict) else None
    if not isinstance(message, dict):
        raise BadReplyError("wrong_type", "a choice has no `message` object")
    content = message.get("content")
    if content is not None and not isinstance(content, str):
        raise BadReplyError("wrong_type", "a message's `content` is not a string")
    finish_reason = choice.get("finish_reason")
    if finish_reason is not None and not isinstance(finish_reason, str):
        raise BadReplyError("wrong_type", "a choice's `finish_reason` is not a string")
    return ChatChoice(content or "", finish_reason)


def _service_tier(payload: Mapping[str, Any]) -> str | None:
    tier = payload.get("service_tier")
    if tier is not None and not isinstance(tier, str):
        raise BadReplyError("wrong_type", "`service_tier` is not a string")
    return tier or None


def _usage(payload: Mapping[str, Any]) -> ReportedUsage:
    usage = payload.get("usage")
    if usage is None:
        return ReportedUsage()  # some compatible servers report none: the estimate stands
    if not isinstance(usage, dict):
        raise BadReplyError("wrong_type", "`usage` is not an object")
    details = usage.get("prompt_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, dict) else None
    completion_details = usage.get("completion_tokens_details")
    reasoning = (
        completion_details.get("reasoning_tokens") if isinstance(completion_details, dict) else None
    )
    return ReportedUsage(
        _count(usage.get("prompt_tokens"), "prompt_tokens"),
        _count(usage.get("completion_tokens"), "completion_tokens"),
        _count(cached, "cached_tokens"),
        _count(reasoning, "reasoning_tokens"),
    )


MAX_USAGE_TOKENS = 100_000_000
"""The most tokens one reply's usage may state (far above any model's context and output):
a larger count, like a negative one, `inf` or `nan`, is a reply the judge cannot account."""


def _count(value: Any, name: str) -> int:
    if value is None:
        return 0
    count = (
        provider_number(value, lowest=0, highest=MAX_USAGE_TOKENS, integer=True)
        if isinstance(value, int)
        else None
    )
    if count is None:
        raise BadReplyError("wrong_type", f"`usage.{name}` is not a count (0 to 100,000,000)")
    return count


def retry_after(headers: Mapping[str, str]) -> float | None:
    """A reply's Retry-After in seconds (`retry-after-ms` first), or None without one."""
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = provider_number(headers.get(name), lowest=0.0, highest=MAX_WAIT_SECONDS / scale)
        if value is not None:
            return value * scale
    return None  # none, an HTTP date or out of range (inf, nan...): our own backoff
