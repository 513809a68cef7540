"""Building the judge that the settings describe."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from ragas_ops.config import ConfigError, Settings
from ragas_ops.judge.base import Judge, JudgeFatalError
from ragas_ops.judge.cache import open_cache
from ragas_ops.judge.openai.judge import OpenAIJudge
from ragas_ops.secrets import Secret

if TYPE_CHECKING:
    from ragas_ops.storage import S3Options


def build_judge(
    settings: Settings, environ: Mapping[str, str] | None = None, s3: S3Options | None = None
) -> Judge:
    """The judge the settings describe, with its API key read from the environment; `s3`
    reaches a shared cache on S3 (the lake's options; None: the AWS environment)."""
    if settings.judge.mode == "batch":
        raise ConfigError(
            "judge.mode = batch runs in the Airflow pipeline, which waits for the batches "
            "without holding a worker; here, set judge.mode = sync (RAGAS_OPS_JUDGE_MODE=sync)"
        )
    if settings.judge.kind == "local":
        from ragas_ops.judge.local.judge import LocalJudge  # heavy: only when asked for

        return LocalJudge(
            settings.judge.local_model,
            cache=open_cache(settings.judge, s3),
            backend=settings.judge.local_backend,
        )
    environ = os.environ if environ is None else environ
    key = Secret(environ.get(settings.judge.api_key_env, ""))
    if not key and settings.judge.base_url is None:
        raise JudgeFatalError(
            f"no API key: set ${settings.judge.api_key_env}, or point --base-url at an "
            "OpenAI-compatible endpoint (for a local test double: `ragas-ops test-judge`)"
        )
    return OpenAIJudge(settings.judge, key, settings.prices, cache=open_cache(settings.judge, s3))
