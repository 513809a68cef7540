"""The boto3 client of bedrock-runtime: the one place it is made.

Its retries are off (`total_max_attempts = 1`): the engine retries, through its admission, so that a
throttle slows the pace instead of being retried at once by botocore. Credentials come from
boto3's chain (environment, profile, the task's or instance's IAM role, web identity) or, with
`bedrock_credentials = pipeline`, from the key pair of the lake's AWS connection; no key is a
setting."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import boto3
from botocore.config import Config

if TYPE_CHECKING:
    from ragas_ops.config import JudgeSettings
    from ragas_ops.storage import S3Options

DEFAULT_REGION = "us-east-1"


def bedrock_runtime(settings: JudgeSettings, region: str | None, s3: S3Options | None) -> Any:
    """The bedrock-runtime client the settings describe (`base_url`: its `endpoint_url`)."""
    session_options: dict[str, Any] = {}
    if settings.bedrock.credentials == "pipeline" and s3 is not None and s3.access_key:
        session_options = {
            "aws_access_key_id": s3.access_key.reveal(),
            "aws_secret_access_key": s3.secret_key.reveal() if s3.secret_key else None,
            "aws_session_token": s3.session_token.reveal() if s3.session_token else None,
        }
    session = boto3.session.Session(**session_options)
    config = Config(
        # `total_max_attempts`, not `max_attempts`: botocore reads the latter as retries after
        # the first (1 = one retry of each throttle, unseen by the engine; the double showed it).
        retries={"total_max_attempts": 1, "mode": "standard"},
        max_pool_connections=settings.limits.max_concurrency,
        connect_timeout=settings.endpoint.timeout_seconds,
        read_timeout=settings.endpoint.timeout_seconds,
    )
    return session.client(
        "bedrock-runtime",
        region_name=settings.bedrock.region or region or session.region_name or DEFAULT_REGION,
        endpoint_url=settings.endpoint.base_url,
        config=config,
    )
