"""Building the judge that the settings describe."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Mapping
from datetime import UTC, date, datetime
from typing import TYPE_CHECKING

from ragas_ops.config import ConfigError, JudgeSettings, Settings
from ragas_ops.judge.base import Judge, JudgeFatalError, JudgeIdentity
from ragas_ops.judge.batch import BatchMode
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
    return provider_for(settings.judge.kind).build(settings, environ, s3)


def batch_mode(
    settings: Settings, environ: Mapping[str, str] | None = None, s3: S3Options | None = None
) -> BatchMode:
    """The judge's batch capability (`judge.mode = batch`), its key from the environment."""
    from ragas_ops.judge.openai.batch_mode import OpenAIBatchMode

    environ = os.environ if environ is None else environ
    endpoint = settings.judge.endpoint
    key = Secret(environ.get(endpoint.api_key_env, ""))
    if not key and endpoint.base_url is None:
        raise JudgeFatalError(f"batch mode needs an API key: set ${endpoint.api_key_env}")
    return OpenAIBatchMode(settings.judge, settings.prices, key, s3)


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
    if not capabilities(settings.judge).endpoint:
        return []
    from ragas_ops.judge.openai.lifecycle import shutdown_notices

    environ = os.environ if environ is None else environ
    endpoint = settings.judge.endpoint
    notices = shutdown_notices(
        {"judge": endpoint.model, "embedding": endpoint.embedding_model},
        endpoint.base_url,
        Secret(environ.get(endpoint.api_key_env, "")),
        settings.prices,
        warning_days=settings.judge.model.shutdown_warning_days,
        today=today or datetime.now(UTC).date(),
    )
    return [notice.line() for notice in notices]


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
