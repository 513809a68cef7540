"""What the test judge counts (its GET /stats)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, fields
from typing import Any

from ragas_ops_testing.judge_server.config import BAD_REPLY_RATES
from ragas_ops_testing.judge_server.replies import MALFORMED_KINDS


def _counter(*keys: str) -> Counter[str]:
    return Counter(dict.fromkeys(keys, 0))


@dataclass
class Stats:
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
            "timeout", "429", "5xx", "malformed", "flex_unavailable", *BAD_REPLY_RATES.values()
        )
    )
    malformed_kinds: Counter[str] = field(default_factory=lambda: _counter(*MALFORMED_KINDS))
    rate_limited: int = 0  # 429s from the rpm/tpm limits, not the injected ones
    rate_limited_by: Counter[str] = field(default_factory=lambda: _counter("requests", "tokens"))
    auth_failures: int = 0
    dropped: int = 0  # requests left unanswered because the server stopped
    prompt_tokens: int = 0
    completion_tokens: int = 0  # reasoning tokens included, as OpenAI reports and bills them
    reasoning_tokens: int = 0
    refused_by_param: Counter[str] = field(default_factory=Counter)  # a model's 400s/404s
    model_lookups: Counter[str] = field(default_factory=Counter)  # GET /v1/models/{id}, by id
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
