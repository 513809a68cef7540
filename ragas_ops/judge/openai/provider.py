"""The `openai` judge kind: an OpenAI-compatible endpoint (`judge.providers`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from ragas_ops.judge.base import Judge, JudgeFatalError, JudgeIdentity
from ragas_ops.judge.cache import open_cache
from ragas_ops.judge.providers import Capabilities, Provider, ReasoningEstimate
from ragas_ops.secrets import Secret

OPENAI_KEY_ENV = "OPENAI_API_KEY"

if TYPE_CHECKING:
    from datetime import date

    from ragas_ops.config import JudgeSettings, Settings
    from ragas_ops.judge.batch import BatchMode
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


def batch_mode(settings: Settings, environ: Mapping[str, str], s3: S3Options | None) -> BatchMode:
    """Batch mode on the endpoint's Batch API (`openai.batch_mode`)."""
    from ragas_ops.judge.openai.batch_mode import OpenAIBatchMode

    endpoint = settings.judge.endpoint
    key = Secret(environ.get(endpoint.api_key_env, ""))
    if not key and endpoint.base_url is None:
        raise JudgeFatalError(f"batch mode needs an API key: set ${endpoint.api_key_env}")
    return OpenAIBatchMode(settings.judge, settings.prices, key, s3)


def build_embedder(settings: Settings, environ: Mapping[str, str], s3: S3Options | None) -> Judge:
    """OpenAI's embeddings beside another kind's chat: at `OPENAI_BASE_URL` (else OpenAI's)
    with the key in `OPENAI_API_KEY`, not the chat judge's endpoint and key."""
    from ragas_ops.judge.endpoint import effective_base_url
    from ragas_ops.judge.engine.wire import JudgeRuntime
    from ragas_ops.judge.openai.wire import openai_judge

    key = Secret(environ.get(OPENAI_KEY_ENV, ""))
    runtime = JudgeRuntime(key, effective_base_url(None, environ), f"${OPENAI_KEY_ENV}")
    cache = open_cache(settings.judge.cache, s3)
    return openai_judge(settings.judge, runtime, settings.prices, cache=cache)


def shutdown_lines(settings: Settings, environ: Mapping[str, str], today: date) -> list[str]:
    """The endpoint's own word on the judge's models (`GET /v1/models/{id}`, `lifecycle`)."""
    from ragas_ops.judge.openai.lifecycle import shutdown_notices

    endpoint = settings.judge.endpoint
    notices = shutdown_notices(
        {"judge": endpoint.model, "embedding": endpoint.embedding_model},
        endpoint.base_url,
        Secret(environ.get(endpoint.api_key_env, "")),
        settings.prices,
        warning_days=settings.judge.model.shutdown_warning_days,
        today=today,
    )
    return [notice.line() for notice in notices]


def identity(settings: JudgeSettings) -> JudgeIdentity:
    return JudgeIdentity(settings.kind, settings.endpoint.model, settings.endpoint.embedding_model)


def reasoning(settings: JudgeSettings) -> ReasoningEstimate:
    """The model's profile, the effort the settings ask of it and the reasoning tokens a
    reply typically takes at it (0 for a model that does not reason)."""
    from ragas_ops.judge.chat_completions.profiles import PROVIDER_DEFAULT_EFFORT, profile_for
    from ragas_ops.judge.chat_completions.shape import resolve_effort

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
    shutdown_lines=shutdown_lines,
    batch_mode=batch_mode,
    build_embedder=build_embedder,
)
