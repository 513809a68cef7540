"""A deterministic TEST DOUBLE of an LLM judge: a local, OpenAI-compatible HTTP server.

It is not a language model. It answers the ragas-ops prompts, and only those, with a lexical
heuristic (shared content words, numbers, sentence splits), so that the judge client, its
retries and rate limiting, the caches and the metrics can be tested end to end, offline, with
reproducible results. Its scores mean nothing about real answer quality.

It can also misbehave on purpose, like a real provider on a bad day: added latency, request and
token rate limits (with OpenAI's `x-ratelimit-*` and `retry-after` headers), injected 429s,
500/503 errors, hanging requests and malformed output, all drawn from a seeded random generator.
It plays OpenAI's flex tier too: requests sent with `service_tier: "flex"` are answered more
slowly and a share of them get a 429 "resource unavailable"; replies echo the `service_tier`.

Endpoints: `POST /v1/chat/completions`, `POST /v1/embeddings`, `GET /v1/models`; OpenAI's
Files API (`POST /v1/files`, `GET /v1/files/{id}`, `GET /v1/files/{id}/content`,
`DELETE /v1/files/{id}`) and Batch API (`POST /v1/batches`, `GET /v1/batches`,
`GET /v1/batches/{id}`, `POST /v1/batches/{id}/cancel`), see `batch_api`; and for tests
`GET /stats` and `POST /stats/reset`, and with `request_log` `GET /requests` (every chat and
embeddings request: when it came and ended, its status and body). It listens on the loopback
interface only.

    with JudgeServer(JudgeServerConfig(rpm=600, rate_5xx=0.1)) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="test")
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import hashlib
import hmac
import ipaddress
import itertools
import json
import math
import os
import random
import signal
import socket
import struct
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import FrameType
from typing import Any, Literal, cast

import numpy as np
import numpy.typing as npt

from ragas_ops.prompts import OutputParseError, Prompt, decode_data
from ragas_ops.testing.batch_api import BatchApi, api_of, validate_batch_settings
from ragas_ops.testing.heuristics import (
    MAX_EMBEDDING_DIM,
    PROMPTS_BY_SYSTEM,
    generated_questions,
    hashed_embedding,
    heuristic_reply,
    is_noncommittal,
)
from ragas_ops.text import (
    estimate_tokens,
)

__all__ = [
    "CHAT_MODEL",
    "EMBEDDING_MODEL",
    "JudgeServer",
    "JudgeServerConfig",
    "build_parser",
    "generated_questions",
    "hashed_embedding",
    "heuristic_reply",
    "is_noncommittal",
    "main",
    "parse_config",
]

CHAT_MODEL = "ragas-ops-test-judge"
EMBEDDING_MODEL = "ragas-ops-test-embedding"
DEFAULT_CLI_PORT = 8787


# --------------------------------------------------------------------------------------------
# Configuration
# --------------------------------------------------------------------------------------------


@dataclass
class JudgeServerConfig:
    """How the test double listens and how it misbehaves. Fractions are in [0, 1]."""

    host: str = "127.0.0.1"
    port: int = 0  # 0 = pick a free port
    latency_ms: float = 0.0  # added to every request before answering
    rpm: int | None = None  # requests-per-minute limit (None = unlimited)
    tpm: int | None = None  # tokens-per-minute limit
    burst_seconds: float = 1.0  # bucket capacity = limit/60 * burst_seconds (OpenAI: about 1 s)
    # How the tokens bucket counts a chat request: `max_tokens`, as OpenAI and Azure do (the
    # prompt and max_tokens x n at admission, kept whatever the answer uses), or `usage`, as
    # vLLM-fronting gateways do (the prompt at admission, the completion once it is known).
    admission: Literal["max_tokens", "usage"] = "max_tokens"
    rate_429: float = 0.0  # fraction of requests answered 429 regardless of limits
    rate_5xx: float = 0.0  # fraction answered 500/503
    rate_timeout: float = 0.0  # fraction that hang `hang_seconds` before answering
    hang_seconds: float = 30.0
    rate_malformed: float = 0.0  # fraction of chat replies with malformed/truncated output
    # Replies that are not well-formed API replies at all, as gateways, proxies and load
    # balancers return them (chat and embeddings alike; drawn apart from the faults above):
    rate_html: float = 0.0  # fraction answered 200 with an HTML page
    rate_text_plain: float = 0.0  # fraction answered 200 with a text/plain line
    rate_truncated_body: float = 0.0  # fraction answered 200 JSON cut in half (length matches)
    rate_no_choices: float = 0.0  # fraction answered 200 JSON without `choices` / `data`
    rate_wrong_types: float = 0.0  # fraction answered 200 JSON whose fields have wrong types
    rate_reset: float = 0.0  # fraction whose connection is reset after the headers
    retry_after_seconds: float = 0.05  # Retry-After sent with injected 429s
    api_key: str | None = field(default=None, repr=False)  # required bearer token, if set
    ignore_n: bool = False  # behave like endpoints that ignore the `n` parameter
    # Report cached prompt tokens like OpenAI's prompt caching: a first message of at least this
    # many tokens seen before is cached, in steps of 128 tokens (OpenAI: 1024). None: never.
    prompt_cache_min_tokens: int | None = None
    embedding_dim: int = 256
    seed: int = 0
    # The Batch API (see batch_api.py); a batch keeps the settings it was created with.
    batch_seconds: float = 0.2  # a batch is in progress this long, then done at the next look
    batch_failure_rate: float = 0.0  # fraction of batch lines answered 500 (error file)
    batch_expire_after: float | None = None  # answer this fraction of the lines, then expire
    batch_fail: bool = False  # every batch fails as a whole, with no output
    batch_max_requests: int = 50_000  # more lines in an input file fail the batch
    batch_max_bytes: int = 200 * 1024 * 1024  # a larger input file fails the batch
    # OpenAI's flex tier: requests sent with `service_tier: "flex"` (or "auto" served on flex).
    flex_latency_ms: float = 0.0  # added to each flex request, on top of latency_ms
    rate_flex_unavailable: float = 0.0  # fraction of flex requests answered 429 (no capacity)
    auto_tier: str = "default"  # the tier `service_tier: "auto"` is served on (the project's)
    # Keep every chat and embeddings request for `GET /requests` (arrival, end, status, body):
    # which rows were asked how often, and when, across all the clients (kept in memory).
    request_log: bool = False


# The kinds of replies that are not API replies, by the setting that makes them (one draw
# per request picks at most one of them).
_BAD_REPLY_RATES = {
    "rate_html": "html",
    "rate_text_plain": "text_plain",
    "rate_truncated_body": "truncated_body",
    "rate_no_choices": "no_choices",
    "rate_wrong_types": "wrong_types",
    "rate_reset": "reset",
}

# The tiers a request may name; a reply names the one that served it ("auto" resolved).
SERVICE_TIERS = ("auto", "default", "flex", "scale", "priority")
_AUTO_TIERS = ("default", "flex")
FLEX_UNAVAILABLE_MESSAGE = (
    "Resource Unavailable: the flex service tier has no capacity for this request right now "
    "(injected by the test double). Please retry later, or send it with service_tier 'default'."
)

# Settings that `JudgeServer.update` may not change: the socket is already bound.
_FIXED_SETTINGS = frozenset({"host", "port"})


def _validate(config: JudgeServerConfig) -> None:
    """Refuse settings that would make the double behave in an undefined way."""
    rates = ("rate_429", "rate_5xx", "rate_timeout", "rate_malformed", "rate_flex_unavailable")
    for name in (*rates, *_BAD_REPLY_RATES):
        value = getattr(config, name)
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"{name} must be a fraction in [0, 1], not {value}")
    if sum(getattr(config, name) for name in _BAD_REPLY_RATES) > 1.0:
        raise ValueError(f"the rates {list(_BAD_REPLY_RATES)} must add up to at most 1")
    for name in ("rpm", "tpm", "prompt_cache_min_tokens"):
        value = getattr(config, name)
        if value is not None and value <= 0:
            raise ValueError(f"{name} must be positive or None, not {value}")
    if config.auto_tier not in _AUTO_TIERS:
        raise ValueError(f"auto_tier must be one of {list(_AUTO_TIERS)}, not {config.auto_tier!r}")
    for name in ("latency_ms", "hang_seconds", "retry_after_seconds", "flex_latency_ms"):
        if getattr(config, name) < 0:
            raise ValueError(f"{name} must not be negative")
    if config.burst_seconds <= 0:
        raise ValueError("burst_seconds must be positive")
    if config.admission not in ("max_tokens", "usage"):
        raise ValueError(f"admission must be max_tokens or usage, not {config.admission!r}")
    if not 1 <= config.embedding_dim <= MAX_EMBEDDING_DIM:
        raise ValueError(f"embedding_dim must be in [1, {MAX_EMBEDDING_DIM}]")
    validate_batch_settings(config)


def _loopback_host(host: str) -> str:
    """The address to bind: an IPv4 loopback address, never a public interface."""
    if host == "localhost":
        return "127.0.0.1"
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        raise ValueError(f"host must be a loopback IPv4 address, not {host!r}") from None
    if address.version != 4 or not address.is_loopback:
        raise ValueError(f"the test judge listens on loopback only, not on {host!r}")
    return host


# --------------------------------------------------------------------------------------------
# Rate limits
# --------------------------------------------------------------------------------------------


def _duration(seconds: float) -> str:
    """OpenAI's (Go's) duration format for `x-ratelimit-reset-*`: "120ms", "1s", "6m0s"."""
    millis = math.ceil(max(0.0, seconds) * 1000)
    if millis == 0:
        return "0s"
    if millis < 1000:
        return f"{millis}ms"
    hours, rest = divmod(millis, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    secs = f"{rest // 1000}.{rest % 1000:03d}".rstrip("0").rstrip(".") + "s"
    if hours:
        return f"{hours}h{minutes}m{secs}"
    return f"{minutes}m{secs}" if minutes else secs


class _Bucket:
    """A token bucket refilled continuously at `limit / 60` per second, starting full."""

    def __init__(self, kind: str, limit: int, burst_seconds: float, now: float) -> None:
        self.kind = kind  # "requests" or "tokens", as in OpenAI's headers and error types
        self.limit = limit
        self.rate = limit / 60.0
        self.capacity = self.rate * burst_seconds
        self.level = self.capacity
        self._updated = now

    def refill(self, now: float) -> None:
        self.level = min(self.capacity, self.level + (now - self._updated) * self.rate)
        self._updated = now

    def wait_for(self, amount: float) -> float:
        """Seconds until the bucket holds `amount`.

        A request larger than the whole bucket waits for a full bucket (and then drives it
        negative) instead of being refused forever.
        """
        return max(0.0, (min(amount, self.capacity) - self.level) / self.rate)

    def headers(self) -> dict[str, str]:
        return {
            f"x-ratelimit-limit-{self.kind}": str(self.limit),
            f"x-ratelimit-remaining-{self.kind}": str(max(0, math.floor(self.level))),
            f"x-ratelimit-reset-{self.kind}": _duration((self.capacity - self.level) / self.rate),
        }


def _buckets(config: JudgeServerConfig, now: float) -> list[_Bucket]:
    limits = (("requests", config.rpm), ("tokens", config.tpm))
    return [
        _Bucket(kind, limit, config.burst_seconds, now)
        for kind, limit in limits
        if limit is not None
    ]


# --------------------------------------------------------------------------------------------
# Requests, replies, faults
# --------------------------------------------------------------------------------------------

_MAX_BODY_BYTES = 64 * 1024 * 1024
_MAX_N = 128
_MALFORMED_KINDS = ("truncated", "prose", "wrong_shape")
_PROSE = (
    "I have read the input carefully. On the whole it seems reasonable to me, but I would "
    "rather explain my view in plain words than fill in a format."
)


@dataclass
class _Reply:
    """An HTTP reply: status, JSON payload (or bytes: a file's content) and extra headers."""

    status: int
    payload: Any
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str = "application/json"
    reset_after_headers: bool = False
    """Send the headers and part of the body, then reset the connection."""

    def body(self) -> bytes:
        if isinstance(self.payload, bytes):
            return self.payload
        return json.dumps(self.payload, ensure_ascii=False).encode("utf-8")


class _BadRequest(Exception):
    """A request the double refuses with HTTP 400 (OpenAI's `invalid_request_error`)."""

    def __init__(self, message: str, code: str | None = None) -> None:
        super().__init__(message)
        self.code = code


def _error(
    status: int,
    message: str,
    kind: str,
    code: str | None = None,
    headers: Mapping[str, str] | None = None,
) -> _Reply:
    """An OpenAI-style error reply."""
    body = {"error": {"message": message, "type": kind, "param": None, "code": code}}
    return _Reply(status, body, dict(headers or {}))


def _retry_headers(seconds: float) -> dict[str, str]:
    """Retry-After in whole seconds (rounded up) and OpenAI's finer `retry-after-ms`."""
    return {
        "retry-after": str(math.ceil(seconds)),
        "retry-after-ms": str(math.ceil(seconds * 1000)),
    }


@dataclass(frozen=True)
class _Faults:
    """What goes wrong with one request, decided before it is served."""

    timeout: bool = False
    rate_429: bool = False
    server_error: int | None = None
    malformed: str | None = None
    bad_reply: str | None = None
    """A reply that is no API reply (a value of `_BAD_REPLY_RATES`), or None."""


@dataclass
class _ChatJob:
    """A validated chat request with its answers already computed (they are cheap)."""

    model: str
    prompt: Prompt[Any]
    contents: list[str]
    prompt_tokens: int
    prefix: str = ""
    """The first message: the part a provider's prompt cache can reuse."""
    schema_tokens: int = 0
    """The `response_format` sent: counted at admission, as OpenAI's limiter does."""
    max_tokens: int | None = None
    """`max_tokens` (or `max_completion_tokens`) per choice; a longer answer is cut there."""
    choices: int = 1
    cut_short: bool = False
    """An answer was longer than `max_tokens`: it stops there (`finish_reason: length`)."""
    service_tier: str | None = None
    """The `service_tier` the request named (None: none)."""

    @property
    def reserved_completion(self) -> int:
        """Completion tokens counted at admission, whatever the reply then uses."""
        return (self.max_tokens or 0) * self.choices

    def admission_cost(self, admission: str) -> int:
        """What the tokens bucket is charged at admission: the messages and the schema in
        `response_format`, and, as OpenAI counts, `max_tokens` for each choice (kept, not
        given back when the answer is shorter)."""
        reserved = self.reserved_completion if admission == "max_tokens" else 0
        return self.prompt_tokens + self.schema_tokens + reserved


@dataclass
class _EmbeddingJob:
    model: str
    vectors: list[npt.NDArray[np.float64]]
    base64: bool
    tokens: int

    def admission_cost(self, admission: str) -> int:
        return self.tokens


def _message_text(message: Mapping[str, Any]) -> str:
    """A message's content: a string, or the text of its parts."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


def _chat_job(request: Mapping[str, Any], ignore_n: bool) -> _ChatJob:
    """Validate a chat request, recognise its prompt and compute the answers for its choices."""
    messages = request.get("messages")
    if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
        raise _BadRequest("'messages' must be a list of message objects")
    if request.get("stream"):
        raise _BadRequest("this test double does not stream; send stream=false")
    n = request.get("n") or 1
    if not isinstance(n, int) or not 1 <= n <= _MAX_N:
        raise _BadRequest(f"'n' must be an integer in [1, {_MAX_N}]")
    # Like a sampling model, a request with a different `seed` gets different samples.
    seed = request.get("seed")
    first = seed if isinstance(seed, int) else 0
    choices = range(first, first + (1 if ignore_n else n))
    try:
        prompt = _recognise(messages)
    except _BadRequest:  # not ours: perhaps the reference library's (side-by-side benchmarks)
        foreign = _foreign_chat(messages, choices)
        if foreign is None:
            raise
        prompt, contents = foreign
    else:
        data = _first_user_data(messages)
        contents = [_answer(prompt, data, sample) for sample in choices]
    prompt_tokens = sum(estimate_tokens(_message_text(message)) + 4 for message in messages)
    prefix = _message_text(messages[0]) if messages else ""
    model = str(request.get("model") or CHAT_MODEL)
    response_format = request.get("response_format")
    schema_tokens = 0 if response_format is None else estimate_tokens(json.dumps(response_format))
    max_tokens = _max_tokens(request)
    service_tier = request.get("service_tier")
    if service_tier is not None and service_tier not in SERVICE_TIERS:
        raise _BadRequest(f"'service_tier' must be one of {list(SERVICE_TIERS)}", "invalid_value")
    whole = contents
    if max_tokens is not None:
        contents = [_cut_to(content, max_tokens) for content in contents]
    return _ChatJob(
        model,
        prompt,
        contents,
        prompt_tokens,
        prefix,
        schema_tokens,
        max_tokens,
        len(contents),
        cut_short=contents != whole,
        service_tier=service_tier,
    )


def _max_tokens(request: Mapping[str, Any]) -> int | None:
    value = request.get("max_completion_tokens", request.get("max_tokens"))
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise _BadRequest("'max_tokens' must be a positive integer")
    return value


def _cut_to(content: str, max_tokens: int) -> str:
    """An answer longer than `max_tokens` stops there, as a model's does (and is then not
    valid JSON: the client sees `finish_reason: length` and a cut reply)."""
    if estimate_tokens(content) <= max_tokens:
        return content
    cut = content
    while cut and estimate_tokens(cut) > max_tokens:
        cut = cut[: int(len(cut) * 0.9)]
    return cut


def _recognise(messages: list[dict[str, Any]]) -> Prompt[Any]:
    system = next((m for m in messages if m.get("role") in ("system", "developer")), None)
    prompt = PROMPTS_BY_SYSTEM.get(_message_text(system)) if system is not None else None
    if prompt is None:
        raise _BadRequest(
            "This is a deterministic test double of an LLM judge: it only answers ragas-ops "
            "prompts, and the system message matches none of them.",
            "unknown_prompt",
        )
    return prompt


def _foreign_chat(
    messages: list[dict[str, Any]], choices: range
) -> tuple[Prompt[Any], list[str]] | None:
    """The reference library's prompt and its answers, or None (see `foreign_prompts`)."""
    # Imported here: that module reuses this one's heuristics.
    from ragas_ops.testing.foreign_prompts import answer_foreign_prompt

    try:
        return answer_foreign_prompt(messages, choices)
    except ValueError as error:
        raise _BadRequest(f"the test double cannot read this ragas prompt: {error}") from None


def _first_user_data(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The row data, from the first user message (later ones are repair requests)."""
    user = next((m for m in messages if m.get("role") == "user"), None)
    if user is None:
        raise _BadRequest("the conversation has no user message with the prompt's input")
    try:
        return decode_data(_message_text(user))
    except ValueError as error:
        raise _BadRequest(
            f"the first user message is not 'Input: <JSON object>': {error}"
        ) from None


def _answer(prompt: Prompt[Any], data: Mapping[str, Any], sample: int) -> str:
    """The heuristic's reply, checked with the prompt's own parser before it is sent."""
    try:
        content = heuristic_reply(prompt, data, sample)
        prompt.parse(data, content)
    except (KeyError, TypeError, ValueError) as error:  # OutputParseError is a ValueError
        reason = "cannot answer" if isinstance(error, OutputParseError) else "bad input for"
        raise _BadRequest(f"the test double {reason} prompt {prompt.id}: {error}") from None
    return content


def _embedding_job(request: Mapping[str, Any], default_dim: int) -> _EmbeddingJob:
    raw = request.get("input")
    texts = [raw] if isinstance(raw, str) else raw
    if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
        raise _BadRequest("'input' must be a non-empty string or list of strings")
    if not all(texts):
        raise _BadRequest("'$.input' is invalid: an input is an empty string")
    dim = request.get("dimensions") or default_dim
    if not isinstance(dim, int) or not 1 <= dim <= MAX_EMBEDDING_DIM:
        raise _BadRequest(f"'dimensions' must be an integer in [1, {MAX_EMBEDDING_DIM}]")
    encoding = request.get("encoding_format") or "float"
    if encoding not in ("float", "base64"):
        raise _BadRequest("'encoding_format' must be 'float' or 'base64'")
    return _EmbeddingJob(
        str(request.get("model") or EMBEDDING_MODEL),
        [hashed_embedding(text, dim) for text in texts],
        encoding == "base64",
        sum(estimate_tokens(text) for text in texts),
    )


def _malform(content: str, kind: str) -> str:
    """Broken output of the given kind, as weak models and cut-off replies produce."""
    if kind == "truncated":
        return content[: len(content) // 2]
    if kind == "prose":
        return _PROSE
    return json.dumps({"result": json.loads(content)})  # valid JSON, wrong shape


def _served_tier(job: _ChatJob, settings: JudgeServerConfig) -> str | None:
    """The tier that serves a request: the one it named, `auto` as the project's; None when
    it named none (the reply then says nothing, as many compatible servers do)."""
    if job.service_tier == "auto":
        return settings.auto_tier
    return job.service_tier


def _chat_payload(
    job: _ChatJob,
    contents: list[str],
    truncated: bool,
    number: int,
    cached_tokens: int = 0,
    *,
    service_tier: str | None = None,
) -> Any:
    completion_tokens = sum(estimate_tokens(content) for content in contents)
    choices = [
        {
            "index": index,
            "message": {"role": "assistant", "content": content, "refusal": None},
            "logprobs": None,
            "finish_reason": "length" if truncated else "stop",
        }
        for index, content in enumerate(contents)
    ]
    payload = {
        "id": f"chatcmpl-testdouble{number:08d}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": job.model,
        "system_fingerprint": "fp_ragas_ops_test_double",
        "choices": choices,
        "usage": {
            "prompt_tokens": job.prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": job.prompt_tokens + completion_tokens,
            "prompt_tokens_details": {"cached_tokens": cached_tokens},
        },
    }
    if service_tier is not None:
        payload["service_tier"] = service_tier
    return payload


def _embedding_payload(job: _EmbeddingJob) -> Any:
    def encode(vector: npt.NDArray[np.float64]) -> Any:
        if job.base64:
            return base64.b64encode(vector.astype("<f4").tobytes()).decode("ascii")
        return [float(value) for value in vector]

    return {
        "object": "list",
        "data": [
            {"object": "embedding", "index": index, "embedding": encode(vector)}
            for index, vector in enumerate(job.vectors)
        ],
        "model": job.model,
        "usage": {"prompt_tokens": job.tokens, "total_tokens": job.tokens},
    }


def _models_payload() -> Any:
    return {
        "object": "list",
        "data": [
            {"id": model, "object": "model", "created": 0, "owned_by": "ragas-ops-test-double"}
            for model in (CHAT_MODEL, EMBEDDING_MODEL)
        ],
    }


def _mask(key: str) -> str:
    """OpenAI's way of echoing a wrong key: first 3 and last 4 characters, stars between."""
    if len(key) <= 7:
        return "*" * len(key)
    return key[:3] + "*" * (len(key) - 7) + key[-4:]


def _check_auth(expected: str | None, authorization: str | None) -> _Reply | None:
    if expected is None:
        return None
    scheme, _, provided = (authorization or "").partition(" ")
    provided = provided.strip() if scheme.lower() == "bearer" else ""
    if hmac.compare_digest(provided.encode(), expected.encode()):
        return None
    if not provided:
        message = (
            "You didn't provide an API key. You need to provide your API key in an "
            "Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY)."
        )
        return _error(401, message, "invalid_request_error")
    message = (
        f"Incorrect API key provided: {_mask(provided)}. This is a test double; use the key "
        "it was started with."
    )
    return _error(401, message, "invalid_request_error", "invalid_api_key")


# --------------------------------------------------------------------------------------------
# Statistics
# --------------------------------------------------------------------------------------------


def _counter(*keys: str) -> Counter[str]:
    return Counter(dict.fromkeys(keys, 0))


@dataclass
class _Stats:
    """What the server saw. Status codes are string keys, as they are in the JSON of /stats."""

    requests: int = 0
    requests_by_endpoint: Counter[str] = field(
        default_factory=lambda: _counter("chat", "embeddings", "models")
    )
    requests_by_prompt: Counter[str] = field(default_factory=Counter)
    answered_by_endpoint: Counter[str] = field(  # 200s: what the rpm bucket was charged for
        default_factory=lambda: _counter("chat", "embeddings")
    )
    answered_by_tier: Counter[str] = field(  # chat 200s by the tier that served them
        default_factory=lambda: _counter("default", "flex", "none")
    )
    responses: Counter[str] = field(default_factory=Counter)
    injected: Counter[str] = field(
        default_factory=lambda: _counter(
            "timeout", "429", "5xx", "malformed", "flex_unavailable", *_BAD_REPLY_RATES.values()
        )
    )
    malformed_kinds: Counter[str] = field(default_factory=lambda: _counter(*_MALFORMED_KINDS))
    rate_limited: int = 0  # 429s from the rpm/tpm limits, not the injected ones
    rate_limited_by: Counter[str] = field(default_factory=lambda: _counter("requests", "tokens"))
    auth_failures: int = 0
    dropped: int = 0  # requests left unanswered because the server stopped
    prompt_tokens: int = 0
    completion_tokens: int = 0
    limiter_tokens: int = 0  # what the tokens bucket was charged (reservations included)
    hung_prompt_tokens: int = 0  # of chat replies sent after a hang: billed, the client may be gone
    hung_completion_tokens: int = 0
    embedding_tokens: int = 0
    embedding_inputs: int = 0
    in_flight: int = 0
    max_in_flight: int = 0
    first_request_at: float | None = None  # time.time() of the first API request
    last_request_at: float | None = None

    def snapshot(self) -> dict[str, Any]:
        snapshot: dict[str, Any] = {}
        for item in fields(self):
            value = getattr(self, item.name)
            snapshot[item.name] = dict(value) if isinstance(value, Counter) else value
        return snapshot


# --------------------------------------------------------------------------------------------
# The application: everything but the sockets
# --------------------------------------------------------------------------------------------

_ENDPOINTS = {
    ("POST", "/v1/chat/completions"): "chat",
    ("POST", "/v1/embeddings"): "embeddings",
    ("GET", "/v1/models"): "models",
}
# The Files and Batch APIs ("files", "batches") have ids in their paths: see `api_of`.


class _App:
    """The double's behaviour, independent of HTTP plumbing. Thread-safe: one lock guards the
    settings, the buckets, the random generator and the statistics (files and batches have
    their own)."""

    def __init__(self, config: JudgeServerConfig) -> None:
        _validate(config)
        self._lock = threading.Lock()
        self._config = replace(config)
        self._rng = random.Random(config.seed)
        self._bad_reply_rng = _bad_reply_rng(config.seed)
        self._flex_rng = _flex_rng(config.seed)
        self._buckets = _buckets(config, time.monotonic())
        self._stats = _Stats()
        self._request_log: list[dict[str, Any]] = []
        self._replies = itertools.count(1)
        self._cached_prefixes: set[str] = set()
        self._batch_api = BatchApi(self._answer_batch_line)
        self.stopping = threading.Event()

    # -- settings and statistics -------------------------------------------------------------

    def settings(self) -> JudgeServerConfig:
        with self._lock:
            return replace(self._config)

    def update(self, changes: Mapping[str, Any]) -> None:
        known = {item.name for item in fields(JudgeServerConfig)}
        unknown = sorted(set(changes) - known)
        if unknown:
            raise TypeError(f"unknown setting(s) {unknown}")
        fixed = sorted(set(changes) & _FIXED_SETTINGS)
        if fixed:
            raise ValueError(f"{fixed} cannot change while the server runs")
        with self._lock:
            updated = replace(self._config, **changes)
            _validate(updated)
            if {"rpm", "tpm", "burst_seconds"} & set(changes):
                self._buckets = _buckets(updated, time.monotonic())  # new limits start full
            if "seed" in changes:
                self._rng = random.Random(updated.seed)
                self._bad_reply_rng = _bad_reply_rng(updated.seed)
                self._flex_rng = _flex_rng(updated.seed)
            self._config = updated

    def stats(self) -> dict[str, Any]:
        with self._lock:
            snapshot = self._stats.snapshot()
        snapshot["batches"] = self._batch_api.stats()
        return snapshot

    def reset_stats(self) -> None:
        with self._lock:
            in_flight = self._stats.in_flight  # requests being served still finish and count
            self._stats = _Stats(in_flight=in_flight, max_in_flight=in_flight)
            self._request_log = []
        self._batch_api.reset_stats()

    # -- serving -----------------------------------------------------------------------------

    def handle(
        self, method: str, path: str, authorization: str | None, body: bytes, content_type: str = ""
    ) -> _Reply | None:
        """Serve one request; None means: close the connection without a reply (stopping)."""
        route = path.split("?", 1)[0].rstrip("/")
        if route == "/stats" and method == "GET":
            return _Reply(200, self.stats())
        if route == "/stats/reset" and method == "POST":
            self.reset_stats()
            return _Reply(200, {"reset": True})
        if route == "/requests" and method == "GET":
            with self._lock:
                return _Reply(200, {"requests": list(self._request_log)})
        endpoint = _ENDPOINTS.get((method, route)) or api_of(route)
        self._begin(endpoint or "other")
        started_at = time.time()
        reply: _Reply | None = None
        try:
            if endpoint in ("files", "batches"):
                reply = self._serve_batch_api(method, path, authorization, body, content_type)
            else:
                reply = self._serve(endpoint, f"{method} {route}", authorization, body)
        finally:
            self._end(reply)
            if endpoint in ("chat", "embeddings") and self.settings().request_log:
                self._log_request(endpoint, started_at, reply, body)
        return reply

    def _log_request(
        self, endpoint: str, started_at: float, reply: _Reply | None, body: bytes
    ) -> None:
        entry = {
            "endpoint": endpoint,
            "started_at": started_at,
            "ended_at": time.time(),
            "status": None if reply is None else reply.status,  # None: dropped at a stop
            "body": body.decode("utf-8", "replace"),
        }
        with self._lock:
            self._request_log.append(entry)

    def _serve(
        self, endpoint: str | None, what: str, authorization: str | None, body: bytes
    ) -> _Reply | None:
        settings = self.settings()
        if settings.latency_ms > 0 and self.stopping.wait(settings.latency_ms / 1000):
            return None
        if endpoint is None:
            return _error(
                404, f"Unknown request URL: {what}.", "invalid_request_error", "unknown_url"
            )
        denied = _check_auth(settings.api_key, authorization)
        if denied is not None:
            return denied
        if endpoint == "models":
            return _Reply(200, _models_payload())
        try:
            job = self._job(endpoint, body, settings)
            reply = self._run(job, settings)
        except _BadRequest as error:
            reply = _error(400, str(error), "invalid_request_error", error.code)
        if reply is not None:
            reply.headers.update(self._ratelimit_headers())
        return reply

    def _serve_batch_api(
        self, method: str, path: str, authorization: str | None, body: bytes, content_type: str
    ) -> _Reply:
        """Files and batches: managed at once, with no latency, faults or rate limits."""
        settings = self.settings()
        denied = _check_auth(settings.api_key, authorization)
        if denied is not None:
            return denied
        response = self._batch_api.serve(method, path, body, content_type, settings)
        return _Reply(response.status, response.payload, content_type=response.content_type)

    def _answer_batch_line(self, url: str, body: Mapping[str, Any]) -> tuple[int, Any]:
        """A batch line, answered as a request to `url` would be (counted in
        `requests_by_prompt`), but with no latency or rate limits and, of the faults, only
        malformed output. Its tokens are not counted: they are the batch's usage."""
        settings = self.settings()
        try:
            job = self._job(_ENDPOINTS[("POST", url)], json.dumps(body).encode(), settings)
        except _BadRequest as error:
            return 400, _error(400, str(error), "invalid_request_error", error.code).payload
        if isinstance(job, _EmbeddingJob):
            return 200, _embedding_payload(job)
        malformed = self._draw_faults(settings).malformed
        contents = job.contents
        if malformed is not None:
            self._count_fault("malformed", malformed)
            contents = [_malform(content, malformed) for content in contents]
        number = next(self._replies)
        cached = self._cached_tokens(job, settings)
        return 200, _chat_payload(job, contents, malformed == "truncated", number, cached)

    def _job(
        self, endpoint: str, body: bytes, settings: JudgeServerConfig
    ) -> _ChatJob | _EmbeddingJob:
        try:
            request = json.loads(body or b"null")
        except ValueError:
            raise _BadRequest("the request body is not valid JSON") from None
        if not isinstance(request, dict):
            raise _BadRequest("the request body must be a JSON object")
        if endpoint == "embeddings":
            return _embedding_job(request, settings.embedding_dim)
        job = _chat_job(request, settings.ignore_n)
        with self._lock:
            self._stats.requests_by_prompt[job.prompt.name] += 1
        return job

    def _run(self, job: _ChatJob | _EmbeddingJob, settings: JudgeServerConfig) -> _Reply | None:
        """Apply the faults drawn for this request, the rate limits, then answer."""
        faults = self._draw_faults(settings)
        if isinstance(job, _ChatJob) and _served_tier(job, settings) == "flex":
            unavailable = self._serve_flex(settings)
            if unavailable is not None or self.stopping.is_set():
                return unavailable
        if faults.timeout:
            self._count_fault("timeout")
            if self.stopping.wait(settings.hang_seconds):
                return None
        injected = self._injected_reply(faults, job, settings)
        if injected is not None:
            return injected
        limited = self._admit(job.admission_cost(settings.admission))
        if limited is not None:
            return limited
        if isinstance(job, _EmbeddingJob):
            return self._embeddings_reply(job)
        return self._chat_reply(job, faults.malformed, hung=faults.timeout)

    def _serve_flex(self, settings: JudgeServerConfig) -> _Reply | None:
        """A flex request: slower (`flex_latency_ms`), and now and then no capacity for it:
        OpenAI's 429 "resource unavailable", before any rate-limit bucket is charged."""
        with self._lock:
            draw = self._flex_rng.random()
        if settings.flex_latency_ms > 0 and self.stopping.wait(settings.flex_latency_ms / 1000):
            return None
        if draw >= settings.rate_flex_unavailable:
            return None
        self._count_fault("flex_unavailable")
        code = "resource_unavailable"
        headers = _retry_headers(settings.retry_after_seconds)
        return _error(429, FLEX_UNAVAILABLE_MESSAGE, code, code, headers)

    def _injected_reply(
        self, faults: _Faults, job: _ChatJob | _EmbeddingJob, settings: JudgeServerConfig
    ) -> _Reply | None:
        """The reply an injected 429, 5xx or bad reply gives instead of an answer, or None."""
        if faults.rate_429:
            self._count_fault("429")
            message = "Rate limit reached (injected by the test double). Please try again later."
            headers = _retry_headers(settings.retry_after_seconds)
            return _error(429, message, "requests", "rate_limit_exceeded", headers)
        if faults.server_error is not None:
            self._count_fault("5xx")
            return _server_error(faults.server_error)
        if faults.bad_reply is not None:
            # A gateway's page: the provider never saw the request, nothing is billed.
            self._count_fault(faults.bad_reply)
            return _bad_reply(faults.bad_reply, isinstance(job, _ChatJob))
        return None

    def _cached_tokens(self, job: _ChatJob, settings: JudgeServerConfig) -> int:
        """The prompt tokens a provider's prompt cache would serve: the first message, in
        steps of 128 tokens, when it is long enough and was seen before (then remembered)."""
        minimum = settings.prompt_cache_min_tokens
        if minimum is None:
            return 0
        tokens = estimate_tokens(job.prefix)
        if tokens < minimum:
            return 0
        key = hashlib.sha256(f"{job.model}\0{job.prefix}".encode()).hexdigest()
        with self._lock:
            seen = key in self._cached_prefixes
            self._cached_prefixes.add(key)
        return tokens // 128 * 128 if seen else 0

    def _chat_reply(self, job: _ChatJob, malformed: str | None, hung: bool = False) -> _Reply:
        contents = job.contents
        if malformed is not None:
            self._count_fault("malformed", malformed)
            contents = [_malform(content, malformed) for content in contents]
        number = next(self._replies)  # itertools.count is atomic under the GIL
        cached = self._cached_tokens(job, self.settings())
        cut = malformed == "truncated" or job.cut_short
        tier = _served_tier(job, self.settings())
        payload = _chat_payload(job, contents, cut, number, cached, service_tier=tier)
        completion_tokens = payload["usage"]["completion_tokens"]
        # `max_tokens` admission keeps what it reserved; only a completion longer than the
        # reservation (none was asked for) costs more. `usage` admission counts the whole
        # completion now. The level may go negative, as a provider's does.
        reserved = job.reserved_completion if self.settings().admission == "max_tokens" else 0
        beyond_reserved = max(0, completion_tokens - reserved)
        with self._lock:
            for bucket in self._buckets:
                if bucket.kind == "tokens":
                    bucket.level -= beyond_reserved
            self._stats.limiter_tokens += beyond_reserved
            self._stats.prompt_tokens += job.prompt_tokens
            if hung:
                self._stats.hung_prompt_tokens += job.prompt_tokens
                self._stats.hung_completion_tokens += completion_tokens
            self._stats.completion_tokens += completion_tokens
            self._stats.answered_by_endpoint["chat"] += 1
            self._stats.answered_by_tier[tier or "none"] += 1
        return _Reply(200, payload, {"x-request-id": payload["id"]})

    def _embeddings_reply(self, job: _EmbeddingJob) -> _Reply:
        with self._lock:
            self._stats.embedding_tokens += job.tokens
            self._stats.embedding_inputs += len(job.vectors)
            self._stats.answered_by_endpoint["embeddings"] += 1
        return _Reply(200, _embedding_payload(job))

    def _draw_faults(self, settings: JudgeServerConfig) -> _Faults:
        # Always six draws per request, so the fault sequence depends only on the request
        # order and the seed, not on which faults are switched on or on the rate limits.
        with self._lock:
            draws = [self._rng.random() for _ in range(6)]
            bad_reply_draw = self._bad_reply_rng.random()
        return _Faults(
            bad_reply=_pick_bad_reply(bad_reply_draw, settings),
            timeout=draws[0] < settings.rate_timeout,
            rate_429=draws[1] < settings.rate_429,
            server_error=(500 if draws[3] < 0.5 else 503) if draws[2] < settings.rate_5xx else None,
            malformed=(
                _MALFORMED_KINDS[int(draws[5] * len(_MALFORMED_KINDS))]
                if draws[4] < settings.rate_malformed
                else None
            ),
        )

    def _admit(self, tokens: int) -> _Reply | None:
        """Debit one request and `tokens` if both buckets hold them; else a 429 reply."""
        with self._lock:
            now = time.monotonic()
            waits: dict[str, float] = {}
            for bucket in self._buckets:
                bucket.refill(now)
                waits[bucket.kind] = bucket.wait_for(1 if bucket.kind == "requests" else tokens)
            blocked = next((b for b in self._buckets if waits[b.kind] > 0), None)
            if blocked is None:
                for bucket in self._buckets:
                    bucket.level -= 1 if bucket.kind == "requests" else tokens
                self._stats.limiter_tokens += tokens
                return None
            self._stats.rate_limited += 1
            self._stats.rate_limited_by[blocked.kind] += 1
            wait = max(waits.values())
            requested = 1 if blocked.kind == "requests" else tokens
            message = (
                f"Rate limit reached for {blocked.kind} per min: Limit {blocked.limit}, "
                f"Remaining {max(0, math.floor(blocked.level))}, Requested {requested}. "
                f"Please try again in {_duration(wait)}."
            )
            return _error(429, message, blocked.kind, "rate_limit_exceeded", _retry_headers(wait))

    def _ratelimit_headers(self) -> dict[str, str]:
        with self._lock:
            now = time.monotonic()
            headers: dict[str, str] = {}
            for bucket in self._buckets:
                bucket.refill(now)
                headers.update(bucket.headers())
            return headers

    def _begin(self, endpoint: str) -> None:
        with self._lock:
            stats = self._stats
            stats.requests += 1
            stats.requests_by_endpoint[endpoint] += 1
            stats.in_flight += 1
            stats.max_in_flight = max(stats.max_in_flight, stats.in_flight)
            stats.last_request_at = time.time()
            if stats.first_request_at is None:
                stats.first_request_at = stats.last_request_at

    def _end(self, reply: _Reply | None) -> None:
        with self._lock:
            stats = self._stats
            stats.in_flight -= 1
            if reply is None:
                stats.dropped += 1
                return
            stats.responses[str(reply.status)] += 1
            if reply.status == 401:
                stats.auth_failures += 1

    def _count_fault(self, kind: str, malformed: str | None = None) -> None:
        with self._lock:
            self._stats.injected[kind] += 1
            if malformed is not None:
                self._stats.malformed_kinds[malformed] += 1


def _bad_reply_rng(seed: int) -> random.Random:
    """The generator of bad replies, apart from the other faults' so that switching them on
    leaves the sequence of the others unchanged."""
    return random.Random(f"bad-reply:{seed}")


def _flex_rng(seed: int) -> random.Random:
    """The generator of flex capacity 429s, apart from the others' (as `_bad_reply_rng`)."""
    return random.Random(f"flex:{seed}")


def _pick_bad_reply(draw: float, settings: JudgeServerConfig) -> str | None:
    threshold = 0.0
    for name, kind in _BAD_REPLY_RATES.items():
        threshold += getattr(settings, name)
        if draw < threshold:
            return kind
    return None


_GATEWAY_PAGE = (
    "<html><head><title>502 Bad Gateway</title></head><body><center><h1>502 Bad Gateway"
    "</h1></center><hr><center>nginx (injected by the test double)</center></body></html>\n"
)


_GATEWAY_LINE = b"upstream connect error or disconnect/reset before headers (injected)\n"


def _bad_reply(kind: str, chat: bool) -> _Reply:
    """A status-200 reply that is not a well-formed API reply, of the given kind."""
    usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    wrong_types = (
        {"choices": "none", "usage": {**usage, "prompt_tokens": "many"}}
        if chat
        else {"object": "list", "data": {"embedding": "none"}, "usage": usage}
    )
    fixed = {
        "html": _Reply(200, _GATEWAY_PAGE.encode(), content_type="text/html; charset=utf-8"),
        "text_plain": _Reply(200, _GATEWAY_LINE, content_type="text/plain"),
        "no_choices": _Reply(200, {"id": "chatcmpl-testdouble-empty", "object": "list"}),
        "wrong_types": _Reply(200, wrong_types),
    }
    if kind in fixed:
        return fixed[kind]
    whole: dict[str, Any] = {
        "object": "chat.completion" if chat else "list",
        "choices" if chat else "data": [],
        "usage": usage,
        "padding": "x" * 200,
    }
    body = json.dumps(whole).encode()
    if kind == "truncated_body":
        return _Reply(200, body[: len(body) // 2])
    return _Reply(200, body, reset_after_headers=True)  # "reset"


def _server_error(status: int) -> _Reply:
    if status == 503:
        message = "The engine is currently overloaded (injected by the test double)."
    else:
        message = (
            "The server had an error while processing your request (injected by the test double)."
        )
    return _error(status, message, "server_error")


# --------------------------------------------------------------------------------------------
# HTTP plumbing and lifecycle
# --------------------------------------------------------------------------------------------


class _HTTPServer(ThreadingHTTPServer):
    """A threading HTTP server that knows its app and its open connections."""

    daemon_threads = True  # a hanging request must never keep the process alive
    # socketserver's listen backlog is 5: a burst of new connections (32 clients opening at
    # once) overflowed it and the kernel reset some of them, which clients saw as errors.
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], app: _App) -> None:
        self.app = app
        self._connections: set[socket.socket] = set()
        self._connections_lock = threading.Lock()
        super().__init__(address, _Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._connections_lock:
            self._connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._connections_lock:
            self._connections.discard(request)
        super().shutdown_request(request)

    def close_connections(self) -> None:
        """End idle keep-alive connections, so that a stopped server answers nothing more."""
        with self._connections_lock:
            connections = list(self._connections)
        for connection in connections:
            with contextlib.suppress(OSError):  # already closed by the client
                connection.shutdown(socket.SHUT_RDWR)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive; every reply carries a Content-Length
    server_version = "ragas-ops-test-judge/1"

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: tests and users read /stats instead of a line per request."""

    def _dispatch(self, method: str) -> None:
        body = self._read_body()
        if body is None:
            return
        app = cast(_HTTPServer, self.server).app
        try:
            reply = app.handle(
                method,
                self.path,
                self.headers.get("Authorization"),
                body,
                self.headers.get("Content-Type") or "",
            )
        except Exception as error:  # a bug in the double: say so rather than drop the connection
            reply = _error(
                500, f"test double internal error: {error!r}", "server_error", "test_double_bug"
            )
        if reply is None:
            self.close_connection = True
            return
        self._send(reply)

    def _read_body(self) -> bytes | None:
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            self.close_connection = True
            self._send(
                _error(
                    411,
                    "send a Content-Length; chunked bodies are not supported",
                    "invalid_request_error",
                )
            )
            return None
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = -1
        if not 0 <= length <= _MAX_BODY_BYTES:
            self.close_connection = True
            self._send(
                _error(413, "missing, invalid or too large Content-Length", "invalid_request_error")
            )
            return None
        return self.rfile.read(length) if length else b""

    def _send(self, reply: _Reply) -> None:
        body = reply.body()
        try:
            self.send_response(reply.status)
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.send_header("Content-Type", reply.content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if reply.reset_after_headers:
                self._reset(body[: len(body) // 3])
                return
            self.wfile.write(body)
        except ConnectionError:  # the client gave up, e.g. its timeout passed during a hang
            self.close_connection = True

    def _reset(self, part: bytes) -> None:
        """Send `part` of a body, then reset the connection (SO_LINGER 0: a TCP RST)."""
        self.wfile.write(part)
        self.wfile.flush()
        self.close_connection = True
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)


class JudgeServer:
    """The test double, served from a daemon thread: `with JudgeServer(config) as server:`."""

    def __init__(self, config: JudgeServerConfig | None = None) -> None:
        self._initial = replace(config) if config is not None else JudgeServerConfig()
        self._host = _loopback_host(self._initial.host)
        self._app = _App(self._initial)
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> JudgeServer:
        """Bind the port and serve in a daemon thread; returns self."""
        if self._httpd is not None:
            raise RuntimeError("the test judge server was already started")
        self._httpd = _HTTPServer((self._host, self._initial.port), self._app)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"judge-server-{self.port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving: hanging requests are abandoned, open connections closed. Idempotent."""
        if self._httpd is None or self._app.stopping.is_set():
            return
        self._app.stopping.set()
        self._httpd.shutdown()
        self._httpd.close_connections()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> JudgeServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        """The bound port (the free one picked when the config said 0)."""
        if self._httpd is None:
            raise RuntimeError("the test judge server is not started")
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        """The OpenAI base URL, e.g. `http://127.0.0.1:8787/v1`."""
        return f"http://{self._host}:{self.port}/v1"

    @property
    def config(self) -> JudgeServerConfig:
        """A copy of the current settings (after any `update`)."""
        return self._app.settings()

    def stats(self) -> dict[str, Any]:
        """A snapshot of what the server has seen and done (see `_Stats`); thread-safe."""
        return self._app.stats()

    def reset_stats(self) -> None:
        """Start counting afresh (rate-limit buckets are left as they are)."""
        self._app.reset_stats()

    def update(self, **changes: Any) -> None:
        """Change settings of a running server, e.g. `update(rate_5xx=0.5, rpm=None)`.

        New rpm/tpm/burst settings start with full buckets; a new seed restarts the fault
        sequence. `host` and `port` cannot change.
        """
        self._app.update(changes)


# --------------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------------


def _fraction(text: str) -> float:
    value = float(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"{text} is not a fraction in [0, 1]")
    return value


def _positive_int(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text} is not a positive integer")
    return value


def build_parser() -> argparse.ArgumentParser:
    """The `ragas-ops test-judge` argument parser."""
    parser = argparse.ArgumentParser(
        prog="ragas-ops test-judge",
        description="Serve a deterministic TEST DOUBLE of an LLM judge (OpenAI-compatible, "
        "lexical heuristics, not a real LLM) on 127.0.0.1, with optional injected faults.",
    )
    add = parser.add_argument
    add("--port", type=int, default=DEFAULT_CLI_PORT, help="port on 127.0.0.1; 0 picks a free one")
    add("--latency-ms", type=float, default=0.0, help="added to every request")
    add("--rpm", type=_positive_int, help="requests-per-minute limit")
    add("--tpm", type=_positive_int, help="tokens-per-minute limit")
    add("--burst-seconds", type=float, default=1.0, help="bucket capacity, in seconds of limit")
    add(
        "--admission",
        choices=("max_tokens", "usage"),
        default="max_tokens",
        help="tokens counted at admission: prompt + max_tokens (OpenAI) or the prompt, then usage",
    )
    add("--rate-429", type=_fraction, default=0.0, help="fraction answered 429 anyway")
    add("--rate-5xx", type=_fraction, default=0.0, help="fraction answered 500/503")
    add("--rate-timeout", type=_fraction, default=0.0, help="fraction that hang first")
    add("--hang-seconds", type=float, default=30.0, help="how long a hanging request hangs")
    add("--rate-malformed", type=_fraction, default=0.0, help="fraction of malformed chat replies")
    add("--rate-html", type=_fraction, default=0.0, help="fraction answered 200 with HTML")
    add("--rate-text-plain", type=_fraction, default=0.0, help="fraction answered 200 text/plain")
    add("--rate-truncated-body", type=_fraction, default=0.0, help="fraction of cut JSON bodies")
    add("--rate-no-choices", type=_fraction, default=0.0, help="fraction of JSON with no choices")
    add("--rate-wrong-types", type=_fraction, default=0.0, help="fraction of JSON of wrong types")
    add("--rate-reset", type=_fraction, default=0.0, help="fraction reset after the headers")
    add("--retry-after", type=float, default=0.05, help="Retry-After of injected 429s, seconds")
    add(
        "--require-api-key-env",
        metavar="NAME",
        help="require `Authorization: Bearer <key>`, the key read from this environment variable",
    )
    add("--ignore-n", action="store_true", help="answer one choice whatever `n` asks")
    add(
        "--request-log",
        action="store_true",
        help="keep every chat and embeddings request (times, status, body) for GET /requests",
    )
    add(
        "--prompt-cache-min-tokens",
        type=_positive_int,
        help="report cached prompt tokens for first messages this long, seen before (OpenAI: 1024)",
    )
    add("--seed", type=int, default=0, help="seed of the fault generator")
    add("--batch-seconds", type=float, default=0.2, help="how long a batch stays in progress")
    add("--batch-failure-rate", type=_fraction, default=0.0, help="fraction of batch lines 500")
    add("--batch-expire-after", type=_fraction, help="answer this fraction of a batch, expire")
    add("--batch-fail", action="store_true", help="every batch fails as a whole")
    add("--batch-max-requests", type=_positive_int, default=50_000, help="more lines fail a batch")
    add("--batch-max-bytes", type=_positive_int, default=200 * 1024 * 1024, help="larger fails")
    add("--flex-latency-ms", type=float, default=0.0, help="added to each flex-tier request")
    add(
        "--rate-flex-unavailable",
        type=_fraction,
        default=0.0,
        help="fraction of flex-tier requests answered 429 resource unavailable",
    )
    add(
        "--auto-tier",
        choices=_AUTO_TIERS,
        default="default",
        help="the tier that serves service_tier=auto (the project's setting)",
    )
    return parser


def parse_config(argv: list[str] | None = None) -> JudgeServerConfig:
    """The server settings from command-line arguments (exits on bad arguments, like argparse)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    api_key = None
    if args.require_api_key_env:
        api_key = os.environ.get(args.require_api_key_env)
        if not api_key:
            parser.error(f"environment variable {args.require_api_key_env} is not set or empty")
    config = JudgeServerConfig(
        port=args.port,
        latency_ms=args.latency_ms,
        rpm=args.rpm,
        tpm=args.tpm,
        burst_seconds=args.burst_seconds,
        admission=args.admission,
        rate_429=args.rate_429,
        rate_5xx=args.rate_5xx,
        rate_timeout=args.rate_timeout,
        hang_seconds=args.hang_seconds,
        rate_malformed=args.rate_malformed,
        rate_html=args.rate_html,
        rate_text_plain=args.rate_text_plain,
        rate_truncated_body=args.rate_truncated_body,
        rate_no_choices=args.rate_no_choices,
        rate_wrong_types=args.rate_wrong_types,
        rate_reset=args.rate_reset,
        retry_after_seconds=args.retry_after,
        api_key=api_key,
        ignore_n=args.ignore_n,
        request_log=args.request_log,
        prompt_cache_min_tokens=args.prompt_cache_min_tokens,
        seed=args.seed,
        batch_seconds=args.batch_seconds,
        batch_failure_rate=args.batch_failure_rate,
        batch_expire_after=args.batch_expire_after,
        batch_fail=args.batch_fail,
        batch_max_requests=args.batch_max_requests,
        batch_max_bytes=args.batch_max_bytes,
        flex_latency_ms=args.flex_latency_ms,
        rate_flex_unavailable=args.rate_flex_unavailable,
        auto_tier=args.auto_tier,
    )
    try:
        _validate(config)
    except ValueError as error:
        parser.error(str(error))
    return config


def main(argv: list[str] | None = None) -> int:
    """Serve the test double until Ctrl-C or SIGTERM; returns the exit code."""
    config = parse_config(argv)
    server = JudgeServer(config)
    # Before the banner: whoever reads it may send SIGTERM at once (it was handled only once
    # the main thread got past the banner, and a quick SIGTERM killed the process instead).
    stop = threading.Event()
    restore = _stop_on_sigterm(stop)
    try:
        server.start()
    except OSError as error:
        restore()
        print(f"test judge: cannot listen on 127.0.0.1:{config.port}: {error}", file=sys.stderr)
        return 1
    print(
        "test judge: a deterministic TEST DOUBLE (lexical heuristics), not a real LLM, "
        f"serving {server.base_url}",
        file=sys.stderr,
        flush=True,
    )
    try:
        while not stop.wait(0.5):  # a timeout, so that Ctrl-C is noticed promptly
            pass
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
        restore()
    return 0


def _stop_on_sigterm(stop: threading.Event) -> Callable[[], None]:
    """Turn SIGTERM into a clean stop; returns what puts the previous handler back.

    Signal handlers can only be set from the main thread; elsewhere this does nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def on_sigterm(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous = signal.signal(signal.SIGTERM, on_sigterm)

    def restore() -> None:
        signal.signal(signal.SIGTERM, previous)

    return restore


if __name__ == "__main__":
    sys.exit(main())
