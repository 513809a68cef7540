"""The `local` judge kind: no LLM, no network (`judge.providers`); its model and the
sentence-embedding libraries are imported only when its judge is built."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from ragas_ops.judge.base import Judge, JudgeIdentity
from ragas_ops.judge.cache import open_cache
from ragas_ops.judge.providers import Capabilities, Provider

if TYPE_CHECKING:
    from ragas_ops.config import JudgeSettings, Settings
    from ragas_ops.storage import S3Options


def build(settings: Settings, environ: Mapping[str, str], s3: S3Options | None) -> Judge:
    from ragas_ops.judge.local.judge import LocalJudge  # heavy: only when asked for

    return LocalJudge(settings.judge.local, cache=open_cache(settings.judge.cache, s3))


def identity(settings: JudgeSettings) -> JudgeIdentity:
    from ragas_ops.judge.local.judge import LOCAL_JUDGE_VERSION, local_model_name
    from ragas_ops.judge.local.limits import LOCAL_JUDGE_LIMITS

    # The local judge answers both kinds of call with its one model; the OpenAI model
    # names in the settings then play no part and would mislead.
    local = f"local:{local_model_name(settings.local.model, settings.local.backend)}"
    return JudgeIdentity(
        kind="local",
        chat_model=local,
        embedding_model=local,
        rules_version=f"local-rules/v{LOCAL_JUDGE_VERSION}",
        caveats=(LOCAL_JUDGE_LIMITS,),
    )


LOCAL = Provider("local", Capabilities(batch=False, endpoint=False), build, identity)
