"""Amazon Bedrock's settings (`BedrockSpec`); `[judge]` keys of the config file (see
`config.JudgeSettings`). A settings module: it imports nothing of ragas_ops but the settings
toolkit."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ragas_ops.settings_fields import setting

BedrockCredentials = Literal["chain", "pipeline"]


@dataclass
class BedrockSpec:
    """Where the `bedrock` judge's requests go and with which AWS credentials. Its `model` is a
    Bedrock model id or inference profile (`anthropic.claude-...`, `us.amazon.nova-lite-v1:0`),
    its `embedding_model` Titan Text Embeddings' id; `base_url` is bedrock-runtime's
    `endpoint_url` (a VPC endpoint's, or a test double's); none: the region's own."""

    region: str | None = setting(None, key="bedrock_region")
    """The AWS region (None: boto3's chain, `$AWS_REGION` or `$AWS_DEFAULT_REGION`, else
    us-east-1)."""
    credentials: BedrockCredentials = setting("chain", key="bedrock_credentials")
    """`chain`: boto3's credential chain (environment, profile, the task's or instance's IAM
    role, web identity); `pipeline`: the key pair of the AWS connection `pipeline.aws_conn_id`
    (in Airflow, the lake's, else the chain). No key is ever a setting."""
