"""The `anthropic` judge kind: Claude through Anthropic's Messages API (`judge.providers`),
declared in the `ragas_ops.judge_providers` entry point group."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from ragas_ops.judge.anthropic.spec import ANTHROPIC_BASE_URL, ANTHROPIC_KEY_ENV
from ragas_ops.judge.base import Judge, JudgeFatalError, JudgeIdentity
from ragas_ops.judge.cache import open_cache
from ragas_ops.judge.providers import Capabilities, Provider, ReasoningEstimate
from ragas_ops.judge.spec import EndpointSpec, check_base_url
from ragas_ops.secrets import Secret
from ragas_ops.settings_fields import ConfigError

if TYPE_CHECKING:
    from ragas_ops.config import JudgeSettings, Settings
    from ragas_ops.judge.anthropic.wire import AnthropicShape
    from ragas_ops.storage import S3Options

ADAPTIVE_ONLY = ("claude-opus-4-7", "claude-opus-5", "claude-sonnet-5", "claude-haiku-5")
"""Models that take only adaptive thinking (a budget is refused with a 400)."""
BUDGET_ONLY = ("claude-haiku-4-5", "claude-sonnet-4-5", "claude-opus-4-5", "claude-opus-4-1")
"""Models that take only a thinking budget (adaptive thinking came with 4.6)."""
EFFORTS = {"lowest": "low", "provider": None, "low": "low", "medium": "medium", "high": "high"}
"""`judge.reasoning_effort` as adaptive thinking's `output_config.effort` (None: none sent)."""


def api_key_env(settings: JudgeSettings) -> str:
    """The variable the key is read from: `ANTHROPIC_API_KEY` (the SDK's), unless
    `judge.api_key_env` names another than OpenAI's default."""
    named = settings.endpoint.api_key_env
    return ANTHROPIC_KEY_ENV if named == EndpointSpec().api_key_env else named


def base_url(settings: JudgeSettings, environ: Mapping[str, str]) -> str:
    """`judge.base_url`, else `ANTHROPIC_BASE_URL` (as the SDK reads it), else Anthropic's."""
    url = settings.endpoint.base_url or environ.get("ANTHROPIC_BASE_URL") or ANTHROPIC_BASE_URL
    check_base_url(url, "judge.base_url" if settings.endpoint.base_url else "ANTHROPIC_BASE_URL")
    return url


def shape_for(settings: JudgeSettings) -> AnthropicShape:
    """The request shape the settings ask for; a ConfigError for what Anthropic refuses."""
    from ragas_ops.judge.anthropic.wire import AnthropicShape

    model, spec = settings.endpoint.model, settings.anthropic
    if model == EndpointSpec().model:
        raise ConfigError(
            f"judge.kind = anthropic: judge.model is OpenAI's default ({model!r}); set a "
            "Claude model (--model claude-haiku-5-5)"
        )
    if spec.thinking != "off" and settings.endpoint.structured_output == "json_schema":
        raise ConfigError(
            f"judge.anthropic_thinking = {spec.thinking}: Anthropic refuses a forced tool with "
            "thinking on, and json_schema output is one; set judge.structured_output = "
            "json_object (the schema goes in the prompt's text)"
        )
    if spec.thinking == "budget" and model.startswith(ADAPTIVE_ONLY):
        raise ConfigError(
            f"judge.anthropic_thinking = budget: {model!r} takes only adaptive thinking; set "
            "judge.anthropic_thinking = adaptive"
        )
    if spec.thinking == "adaptive" and model.startswith(BUDGET_ONLY):
        raise ConfigError(
            f"judge.anthropic_thinking = adaptive: {model!r} takes only a thinking budget; "
            "set judge.anthropic_thinking = budget"
        )
    wanted = settings.model.reasoning_effort
    if wanted not in EFFORTS:
        raise ConfigError(
            f"judge.reasoning_effort: {wanted!r} is not an effort of Anthropic's adaptive "
            f"thinking ({', '.join(EFFORTS)})"
        )
    return AnthropicShape(spec.thinking, spec.thinking_budget_tokens, EFFORTS[wanted])


def build(settings: Settings, environ: Mapping[str, str], s3: S3Options | None) -> Judge:
    from ragas_ops.judge.anthropic.wire import AnthropicWire
    from ragas_ops.judge.engine.judge import EngineJudge
    from ragas_ops.judge.engine.wire import JudgeRuntime

    judge = settings.judge
    variable = api_key_env(judge)
    key = Secret(environ.get(variable, ""))
    if not key and judge.endpoint.base_url is None:
        raise JudgeFatalError(f"no API key: set ${variable} (an Anthropic key)")
    url = base_url(judge, environ)
    wire = AnthropicWire(
        judge.endpoint, key, url, shape_for(judge), caching=judge.anthropic.prompt_caching
    )
    runtime = JudgeRuntime(key, url, f"${variable}")
    cache = open_cache(judge.cache, s3)
    return EngineJudge(judge, wire, runtime, settings.prices, cache=cache)


def identity(settings: JudgeSettings) -> JudgeIdentity:
    return JudgeIdentity(settings.kind, settings.endpoint.model, settings.endpoint.embedding_model)


def reasoning(settings: JudgeSettings) -> ReasoningEstimate:
    """Thinking's room per reply: the budget (adaptive thinking: at most as much), 0 off."""
    spec = settings.anthropic
    effort = EFFORTS.get(settings.model.reasoning_effort) if spec.thinking == "adaptive" else None
    tokens = 0 if spec.thinking == "off" else spec.thinking_budget_tokens
    return ReasoningEstimate(f"anthropic-{spec.thinking}", effort, tokens)


ANTHROPIC = Provider(
    "anthropic",
    Capabilities(batch=False, endpoint=True, embeddings=False, thinking=True, prompt_caching=True),
    build,
    identity,
    reasoning=reasoning,
    api_key_env=api_key_env,
)
