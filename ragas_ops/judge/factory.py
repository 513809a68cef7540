"""Building the judge that the settings describe."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Mapping
from datetime import UTC, date, datetime
from typing import TYPE_CHECKING

from ragas_ops.config import ConfigError, JudgeSettings, Settings
from ragas_ops.judge.base import Judge, JudgeIdentity
from ragas_ops.judge.batch import BatchMode
from ragas_ops.judge.engine.roles import RoleJudge
from ragas_ops.judge.providers import (
    Capabilities as Capabilities,  # noqa: PLC0414 (re-exported: callers ask the factory)
)
from ragas_ops.judge.providers import (
    ReasoningEstimate as ReasoningEstimate,  # noqa: PLC0414 (re-exported)
)
from ragas_ops.judge.providers import provider_for
from ragas_ops.judge.spec import EndpointSpec
from ragas_ops.secrets import Secret

if TYPE_CHECKING:
    from ragas_ops.storage import S3Options


def capabilities(settings: JudgeSettings) -> Capabilities:
    """The capabilities of the judge the settings name."""
    return provider_for(settings.kind).capabilities


def capabilities_of(kind: str) -> Capabilities:
    """The capabilities of judge kind `kind`."""
    return provider_for(kind).capabilities


BATCH_POLL_ATTEMPTS = 3
"""A batch watcher's attempts per question (the SDK's own backoff between them): it asks again
at its next poll anyway."""


def build_judge(
    settings: Settings, environ: Mapping[str, str] | None = None, s3: S3Options | None = None
) -> Judge:
    """The judge the settings describe, with its API key read from the environment; `s3`
    reaches a shared cache on S3 (the lake's options; None: the AWS environment)."""
    if settings.judge.batch.mode == "batch":
        raise ConfigError(
            "judge.mode = batch runs in the Airflow pipeline, which waits for the batches "
            "without holding a worker; here, set judge.mode = sync (RAGAS_OPS_JUDGE_MODE=sync)"
        )
    environ = os.environ if environ is None else environ
    provider = provider_for(settings.judge.kind)
    embedding_kind = settings.judge.endpoint.embedding_kind or provider.name
    embedder = provider_for(embedding_kind)
    if not embedder.capabilities.embeddings:
        raise ConfigError(
            f"judge.embedding_kind: the {embedder.name} judge has no embeddings API; set "
            "judge.embedding_kind to a provider that embeds (openai, local)"
        )
    judge = provider.build(settings, environ, s3)
    if embedder is provider:
        return judge
    build_embedder = embedder.build_embedder or embedder.build
    return RoleJudge(judge, build_embedder(settings, environ, s3))


def batch_mode(
    settings: Settings, environ: Mapping[str, str] | None = None, s3: S3Options | None = None
) -> BatchMode:
    """The judge's batch capability (`judge.mode = batch`), its key from the environment: its
    provider's (`Provider.batch_mode`)."""
    provider = provider_for(settings.judge.kind)
    if provider.batch_mode is None:
        raise ConfigError(
            f"batch mode needs a judge with a Batch API; the {provider.name} judge has none"
        )
    return provider.batch_mode(settings, os.environ if environ is None else environ, s3)


def batch_watcher(base_url: str | None, api_key: Secret) -> BatchMode:
    """A batch capability that only watches batches (a trigger's): endpoint and key given."""
    from ragas_ops.judge.openai.batch_mode import OpenAIBatchMode

    endpoint = EndpointSpec(base_url=base_url, max_attempts=BATCH_POLL_ATTEMPTS)
    return OpenAIBatchMode(JudgeSettings(endpoint=endpoint), {}, api_key)


def judge_identity(settings: JudgeSettings) -> JudgeIdentity:
    """Who the judge the settings describe is, as its results should record it, and what a
    reader of its scores must know; without building it (no model is loaded)."""
    return provider_for(settings.kind).identity(settings)


def shutdown_warnings(
    settings: Settings, environ: Mapping[str, str] | None = None, today: date | None = None
) -> list[str]:
    """Once per run: a line for each of the judge's models that its endpoint says shuts down
    within `judge.shutdown_warning_days`, with the date and the successor the price table
    knows; none for a judge that asks no endpoint, or an endpoint that does not say."""
    provider = provider_for(settings.judge.kind)
    if not provider.capabilities.endpoint or provider.shutdown_lines is None:
        return []
    environ = os.environ if environ is None else environ
    return provider.shutdown_lines(settings, environ, today or datetime.now(UTC).date())


def api_key_env(settings: JudgeSettings) -> str:
    """The environment variable the judge's key is read from (its provider's convention:
    `judge.api_key_env`, or e.g. `ANTHROPIC_API_KEY`)."""
    return provider_for(settings.kind).api_key_env(settings)


def reasoning_estimate(settings: JudgeSettings) -> ReasoningEstimate:
    """The model's profile, the effort the settings ask of it and the reasoning tokens a
    reply typically takes at it (0 for a judge that does not reason, such as the local one)."""
    provider = provider_for(settings.kind)
    if provider.reasoning is None:
        return ReasoningEstimate(provider.name, None, 0)
    return provider.reasoning(settings)


def local_judge_installed() -> bool:
    """Whether the local judge can run: its ONNX build (the `[local]` extra) or
    sentence-transformers (`[local-torch]`)."""
    from ragas_ops.judge.local.onnx_embedder import onnx_available

    return onnx_available() or importlib.util.find_spec("sentence_transformers") is not None


def recently_stated_limits(
    settings: JudgeSettings,
) -> tuple[int | None, int | None, str] | None:
    """The limits (rpm, tpm) the provider stated to a recent run on this judge's account, and
    the file that keeps them (`limits.stated`); None when no run kept them within
    `stated.RECENT_DAYS`, or the base URL is not valid."""
    from ragas_ops.judge.endpoint import effective_base_url, endpoint_name
    from ragas_ops.judge.limits.stated import RECENT_DAYS, read_stated, stated_file

    try:
        account = f"{endpoint_name(effective_base_url(settings.endpoint.base_url))} "
    except ConfigError:
        return None
    known = read_stated(settings.cache.path, account + settings.endpoint.model)
    if known is None or not known.learnt_within(RECENT_DAYS):
        return None
    return known.rpm, known.tpm, str(stated_file(settings.cache.path))
