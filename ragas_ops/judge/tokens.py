"""How a chat or embeddings request is counted in tokens before it is sent: the judge's
admission and the cost estimator count alike."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ragas_ops.text import estimate_tokens

MESSAGE_OVERHEAD_TOKENS = 4
"""Tokens a provider adds to every message of a chat request (its role and separators)."""
REQUEST_OVERHEAD_TOKENS = 3
"""Tokens a provider adds to every chat request (the reply's priming)."""
MAX_EMBEDDING_TOKENS_PER_REQUEST = 250_000  # OpenAI refuses more than 300k per request


def estimate_chat_tokens(messages: Sequence[Mapping[str, str]]) -> int:
    """Prompt tokens of a chat request, estimated before sending it."""
    return sum(estimate_tokens(m["content"]) + MESSAGE_OVERHEAD_TOKENS for m in messages)
