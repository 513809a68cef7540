"""The Anthropic judge's settings (`AnthropicSpec`); `[judge]` keys of the config file (see
`config.JudgeSettings`). A settings module: it imports nothing of ragas_ops but the settings
toolkit."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ragas_ops.settings_fields import setting

ThinkingMode = Literal["off", "budget", "adaptive"]
ANTHROPIC_KEY_ENV = "ANTHROPIC_API_KEY"
"""The variable the key is read from (the SDK's), unless `judge.api_key_env` names another."""
ANTHROPIC_BASE_URL = "https://api.anthropic.com"
"""Where requests go without `judge.base_url` (or `ANTHROPIC_BASE_URL`, as the SDK reads it)."""
MIN_THINKING_BUDGET = 1024
"""Anthropic's least `budget_tokens`."""


@dataclass
class AnthropicSpec:
    """How the Anthropic judge asks Claude: thinking, and the prompt cache."""

    thinking: ThinkingMode = setting("off", key="anthropic_thinking")
    """`off`: no thinking (the judge's prompts need little); `budget`: extended thinking with
    `budget_tokens` (`anthropic_thinking_budget_tokens`; models before 4.6); `adaptive`: Claude
    decides how much, at the effort `judge.reasoning_effort` names (`lowest` sends `low`;
    models from 4.6 on). With thinking on, Anthropic refuses a forced tool and a temperature:
    set `judge.structured_output = json_object` (the schema goes in the prompt's text)."""
    thinking_budget_tokens: int = setting(
        MIN_THINKING_BUDGET, key="anthropic_thinking_budget_tokens", minimum=MIN_THINKING_BUDGET
    )
    """Tokens a reply may spend thinking before its answer (`anthropic_thinking = budget`),
    at least 1024; `max_tokens` holds them beside the answer's room."""
    prompt_caching: bool = setting(True, key="anthropic_prompt_caching")
    """Mark each prompt's static part (its instructions and demonstrations, the system
    prompt) with `cache_control`, so that Anthropic reads it from its prompt cache: cache hits
    cost a tenth of the input price, writes 1.25 times it (docs/judge-providers.md)."""
