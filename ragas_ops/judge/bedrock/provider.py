"""The `bedrock` judge kind: Amazon Bedrock through boto3 (`judge.providers`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING

from ragas_ops.judge.base import Judge, JudgeIdentity
from ragas_ops.judge.cache import open_cache
from ragas_ops.judge.providers import Capabilities, Provider

if TYPE_CHECKING:
    from ragas_ops.config import JudgeSettings, Settings
    from ragas_ops.storage import S3Options


def endpoint_of(settings: JudgeSettings, region: str) -> str:
    """The judge's endpoint, part of its name and of every cache key: bedrock-runtime of the
    region, or the `endpoint_url` given (a VPC endpoint, a test double)."""
    from ragas_ops.judge.endpoint import endpoint_name

    if settings.endpoint.base_url:
        return endpoint_name(settings.endpoint.base_url)
    return f"bedrock-runtime.{region}.amazonaws.com"


def build(settings: Settings, environ: Mapping[str, str], s3: S3Options | None) -> Judge:
    from ragas_ops.judge.bedrock.client import DEFAULT_REGION, bedrock_runtime
    from ragas_ops.judge.bedrock.wire import bedrock_judge

    # Titan embeds one text a request, and Bedrock's quota counts each: one text is one of the
    # engine's requests, paced and retried alone.
    endpoint_spec = dataclasses.replace(settings.judge.endpoint, embedding_batch_size=1)
    judge = dataclasses.replace(settings.judge, endpoint=endpoint_spec)
    environ_region = environ.get("AWS_REGION") or environ.get("AWS_DEFAULT_REGION")
    client = bedrock_runtime(judge, environ_region, s3)
    region = str(client.meta.region_name or DEFAULT_REGION)
    cache = open_cache(judge.cache, s3)
    endpoint = endpoint_of(judge, region)
    return bedrock_judge(judge, client, settings.prices, endpoint=endpoint, cache=cache)


def identity(settings: JudgeSettings) -> JudgeIdentity:
    return JudgeIdentity(settings.kind, settings.endpoint.model, settings.endpoint.embedding_model)


BEDROCK = Provider(
    "bedrock",
    Capabilities(
        batch=False,
        endpoint=True,
        thinking=False,
        prompt_caching=False,
        flex_tier=False,
        key_in_api_key_env=False,
    ),
    build,
    identity,
)
