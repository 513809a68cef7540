"""The test judge's settings: how it listens and how it misbehaves, and their checks."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import Literal

from ragas_ops_testing.batch_api import validate_batch_settings
from ragas_ops_testing.heuristics import (
    MAX_EMBEDDING_DIM,
)
from ragas_ops_testing.judge_server.models import check_aliases

CHAT_MODEL = "ragas-ops-test-judge"
EMBEDDING_MODEL = "ragas-ops-test-embedding"
DEFAULT_CLI_PORT = 8787


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
    # What the `x-ratelimit-*` headers describe: `burst`, the bucket that refuses (its
    # `burst_seconds`); `minute`, as OpenAI's do, a window of a minute's limit charged alike
    # (remaining 149,984 of 150,000, reset 6m0s) while the burst bucket still refuses.
    headers_window: Literal["burst", "minute"] = "burst"
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
    # The models it plays (see `models`): a name it does not know played as a model it knows
    # (an unknown gateway's model that behaves as one), and shutdown dates to report in
    # `GET /v1/models/{id}` besides the table's.
    model_aliases: dict[str, str] = field(default_factory=dict)
    shutdown_dates: dict[str, str] = field(default_factory=dict)
    # Behave like a gateway that passes OpenAI's refusals on with `"param": null` (and
    # `"code": null`): the refused parameter is named only in the message ("Unsupported
    # parameter: 'max_tokens' is not supported with this model...").
    refusal_param_null: bool = False
    # Behave like a gateway that reflects the caller's credential (seen in the wild: debug
    # headers, "invalid key sk-..." errors): every reply carries the Authorization header it
    # was sent in `x-echo-authorization` and its bare key in `x-echo-key`, and a JSON reply
    # repeats both in its body (an error reply: in its message too).
    echo_key: bool = False
    # Behave like a gateway that rewrites the rate-limit headers: every answer carries these
    # headers with these values (over the buckets' own, and without any bucket), e.g.
    # {"x-ratelimit-remaining-tokens": "inf"}: odd numbers a client must not trip on.
    header_overrides: dict[str, str] = field(default_factory=dict)
    # Play a reasoning model that reasons to its limit: every reply of a reasoning model
    # spends all of its `max_completion_tokens` on hidden reasoning, billed as output, and
    # comes back `finish_reason: length` with no visible answer, however much room it gets.
    reason_to_limit: bool = False


# The kinds of replies that are not API replies, by the setting that makes them (one draw
# per request picks at most one of them).
BAD_REPLY_RATES = {
    "rate_html": "html",
    "rate_text_plain": "text_plain",
    "rate_truncated_body": "truncated_body",
    "rate_no_choices": "no_choices",
    "rate_wrong_types": "wrong_types",
    "rate_reset": "reset",
}

# The tiers a request may name; a reply names the one that served it ("auto" resolved).
SERVICE_TIERS = ("auto", "default", "flex", "scale", "priority")
AUTO_TIERS = ("default", "flex")
FLEX_UNAVAILABLE_MESSAGE = (
    "Resource Unavailable: the flex service tier has no capacity for this request right now "
    "(injected by the test double). Please retry later, or send it with service_tier 'default'."
)

# What the `x-ratelimit-*` headers may describe (`headers_window`).
WINDOWS = ("burst", "minute")

# Settings that `JudgeServer.update` may not change: the socket is already bound.
FIXED_SETTINGS = frozenset({"host", "port"})


def validate_config(config: JudgeServerConfig) -> None:
    """Refuse settings that would make the double behave in an undefined way."""
    rates = ("rate_429", "rate_5xx", "rate_timeout", "rate_malformed", "rate_flex_unavailable")
    for name in (*rates, *BAD_REPLY_RATES):
        value = getattr(config, name)
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"{name} must be a fraction in [0, 1], not {value}")
    if sum(getattr(config, name) for name in BAD_REPLY_RATES) > 1.0:
        raise ValueError(f"the rates {list(BAD_REPLY_RATES)} must add up to at most 1")
    for name in ("rpm", "tpm", "prompt_cache_min_tokens"):
        value = getattr(config, name)
        if value is not None and value <= 0:
            raise ValueError(f"{name} must be positive or None, not {value}")
    for name in ("latency_ms", "hang_seconds", "retry_after_seconds", "flex_latency_ms"):
        if getattr(config, name) < 0:
            raise ValueError(f"{name} must not be negative")
    if config.burst_seconds <= 0:
        raise ValueError("burst_seconds must be positive")
    _check_choices(config)
    if not 1 <= config.embedding_dim <= MAX_EMBEDDING_DIM:
        raise ValueError(f"embedding_dim must be in [1, {MAX_EMBEDDING_DIM}]")
    check_aliases(config.model_aliases)
    validate_batch_settings(config)


def loopback_host(host: str) -> str:
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


def _check_choices(config: JudgeServerConfig) -> None:
    """Settings with a few allowed values."""
    allowed = {
        "auto_tier": AUTO_TIERS,
        "admission": ("max_tokens", "usage"),
        "headers_window": WINDOWS,
    }
    for name, choices in allowed.items():
        value = getattr(config, name)
        if value not in choices:
            raise ValueError(f"{name} must be one of {list(choices)}, not {value!r}")
