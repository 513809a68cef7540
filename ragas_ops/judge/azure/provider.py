"""The `azure` judge kind: Azure OpenAI (`judge.providers`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from ragas_ops.judge.base import Judge, JudgeFatalError, JudgeIdentity
from ragas_ops.judge.cache import open_cache
from ragas_ops.judge.providers import Capabilities, Provider, ReasoningEstimate
from ragas_ops.judge.spec import check_base_url
from ragas_ops.secrets import Secret

if TYPE_CHECKING:
    from ragas_ops.config import JudgeSettings, Settings
    from ragas_ops.storage import S3Options

AZURE_KEY_ENV = "AZURE_OPENAI_API_KEY"
AZURE_ENDPOINT_ENV = "AZURE_OPENAI_ENDPOINT"
OPENAI_KEY_ENV = "OPENAI_API_KEY"
_V1_SUFFIX = "/openai/v1"


def key_env(settings: JudgeSettings) -> str:
    """The variable the key is read from: `judge.api_key_env` when set to another than
    OpenAI's (in Airflow, the judge connection's key is put there), else Azure's own."""
    named = settings.endpoint.api_key_env
    return AZURE_KEY_ENV if named == OPENAI_KEY_ENV else named


def resource_url(settings: JudgeSettings, environ: Mapping[str, str]) -> str:
    """The resource's endpoint: `judge.base_url`, else `$AZURE_OPENAI_ENDPOINT`; as the
    `AzureOpenAI` client takes it (`https://<resource>.openai.azure.com`) or as the OpenAI
    client takes the v1 API (`.../openai/v1`, cut here)."""
    url = settings.endpoint.base_url or environ.get(AZURE_ENDPOINT_ENV, "")
    if not url:
        raise JudgeFatalError(
            "judge.kind = azure needs the resource's endpoint: --base-url "
            f"https://<resource>.openai.azure.com (judge.base_url) or ${AZURE_ENDPOINT_ENV}"
        )
    check_base_url(url, "judge.base_url" if settings.endpoint.base_url else AZURE_ENDPOINT_ENV)
    url = url.rstrip("/")
    return url[: -len(_V1_SUFFIX)] if url.endswith(_V1_SUFFIX) else url


def build(settings: Settings, environ: Mapping[str, str], s3: S3Options | None) -> Judge:
    from ragas_ops.judge.azure.credentials import BearerTokens, token_source
    from ragas_ops.judge.azure.wire import azure_judge
    from ragas_ops.judge.engine.wire import JudgeRuntime

    judge = settings.judge
    url = resource_url(judge, environ)
    tokens = None
    key = Secret("")
    if judge.azure.auth == "entra":
        tokens = BearerTokens(token_source(judge.azure.token_provider), judge.azure.token_scope)
        source = "Entra ID"
    else:
        variable = key_env(judge)
        key = Secret(environ.get(variable, ""))
        source = f"${variable}"
        if not key:
            raise JudgeFatalError(
                f"judge.kind = azure: no API key in ${variable}; set it, or use Entra ID "
                "(judge.azure_auth = entra). In Airflow, the judge connection's password is "
                f"read when judge.api_key_env = {AZURE_KEY_ENV}"
            )
    cache = open_cache(judge.cache, s3)
    runtime = JudgeRuntime(key, url, source)
    return azure_judge(judge, runtime, settings.prices, cache=cache, tokens=tokens)


def identity(settings: JudgeSettings) -> JudgeIdentity:
    return JudgeIdentity(settings.kind, settings.endpoint.model, settings.endpoint.embedding_model)


def reasoning(settings: JudgeSettings) -> ReasoningEstimate:
    """The deployment's profile (`judge.model_profile`: a deployment's name is its own, so
    name the model's profile for a reasoning model), its effort and reasoning tokens."""
    from ragas_ops.judge.chat_completions.profiles import PROVIDER_DEFAULT_EFFORT, profile_for
    from ragas_ops.judge.chat_completions.shape import resolve_effort

    model = settings.endpoint.model
    profile = profile_for(model, settings.model.profile)
    effort = resolve_effort(profile, model, settings.model.reasoning_effort)
    if not profile.reasoning and effort is None:
        return ReasoningEstimate(profile.name, None, 0)
    tokens = profile.reasoning_tokens.get(effort or PROVIDER_DEFAULT_EFFORT, 0)
    return ReasoningEstimate(profile.name, effort, tokens)


AZURE = Provider(
    "azure",
    Capabilities(
        batch=False,
        endpoint=True,
        thinking=True,
        prompt_caching=True,
        flex_tier=False,
        key_in_api_key_env=False,
    ),
    build,
    identity,
    reasoning=reasoning,
)
