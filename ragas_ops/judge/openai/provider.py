"""The `openai` judge kind: an OpenAI-compatible endpoint (`judge.providers`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from ragas_ops.judge.base import Judge, JudgeFatalError, JudgeIdentity
from ragas_ops.judge.cache import open_cache
from ragas_ops.judge.providers import Capabilities, Provider, ReasoningEstimate
from ragas_ops.secrets import Secret

if TYPE_CHECKING:
    from ragas_ops.config import JudgeSettings, Settings
    from ragas_ops.storage import S3Options


def build(settings: Settings, environ: Mapping[str, str], s3: S3Options | None) -> Judge:
    from ragas_ops.judge.engine.wire import JudgeRuntime
    from ragas_ops.judge.openai.wire import openai_judge

    endpoint = settings.judge.endpoint
    key = Secret(environ.get(endpoint.api_key_env, ""))
    if not key and endpoint.base_url is None:
        raise JudgeFatalError(
            f"no API key: set ${endpoint.api_key_env}, or point --base-url at an "
            "OpenAI-compatible endpoint (for a local test double: `ragas-ops test-judge`)"
        )
    cache = open_cache(settings.judge.cache, s3)
    runtime = JudgeRuntime(key, endpoint.base_url, f"${endpoint.api_key_env}")
    return openai_judge(settings.judge, runtime, settings.prices, cache=cache)


def identity(settings: JudgeSettings) -> JudgeIdentity:
    return JudgeIdentity(settings.kind, settings.endpoint.model, settings.endpoint.embedding_model)


def reasoning(settings: JudgeSettings) -> ReasoningEstimate:
    """The model's profile, the effort the settings ask of it and the reasoning tokens a
    reply typically takes at it (0 for a model that does not reason)."""
    from ragas_ops.judge.openai.profiles import PROVIDER_DEFAULT_EFFORT, profile_for
    from ragas_ops.judge.openai.shape import resolve_effort

    model = settings.endpoint.model
    profile = profile_for(model, settings.model.profile)
    effort = resolve_effort(profile, model, settings.model.reasoning_effort)
    if not profile.reasoning and effort is None:
        return ReasoningEstimate(profile.name, None, 0)
    tokens = profile.reasoning_tokens.get(effort or PROVIDER_DEFAULT_EFFORT, 0)
    return ReasoningEstimate(profile.name, effort, tokens)


OPENAI = Provider(
    "openai",
    Capabilities(batch=True, endpoint=True, thinking=True, prompt_caching=True, flex_tier=True),
    build,
    identity,
    reasoning=reasoning,
)
