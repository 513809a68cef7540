"""The `bedrock` judge through boto3 against the Bedrock double
(`ragas_ops_testing.bedrock_double`): the Converse API with a forced tool or JSON
instructions, Titan embeddings, credentials from boto3's chain, botocore's retries off, and
the pace from the stated quota and the throttles (Bedrock sends no rate-limit headers)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from ragas_ops_testing.bedrock_double import BedrockDouble, BedrockDoubleConfig

from ragas_ops.config import Settings, apply_mapping
from ragas_ops.judge.base import JudgeFatalError
from ragas_ops.judge.factory import build_judge
from ragas_ops.samples import sample_interactions
from ragas_ops.scoring.run import scorer_for

CHAT = "anthropic.claude-3-5-haiku-20241022-v1:0"
EMBEDDING = "amazon.titan-embed-text-v2:0"
METRICS = ("faithfulness", "answer_relevance", "context_relevance")
OK = {"ok", "not_applicable", "invalid_input"}
"""A row's statuses when nothing went wrong (the samples hold rows that break the contract)."""


@pytest.fixture(autouse=True)
def aws_chain(monkeypatch: pytest.MonkeyPatch) -> None:
    """The credentials boto3's chain finds: the environment's, the double's key id."""
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", BedrockDoubleConfig().access_key_id)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "bedrock-test-secret")
    monkeypatch.setenv("AWS_REGION", "us-east-1")


def bedrock_settings(double: BedrockDouble, tmp_path: Path, **judge: Any) -> Settings:
    settings = Settings()
    apply_mapping(
        settings,
        {
            "judge": {
                "kind": "bedrock",
                "base_url": double.endpoint,
                "model": CHAT,
                "embedding_model": EMBEDDING,
                "cache_path": str(tmp_path / "judge.sqlite"),
                "rpm": None,
                "tpm": None,
                **judge,
            }
        },
        source="test",
    )
    return settings


def score(settings: Settings, rows: int = 12) -> Any:
    table = sample_interactions(rows, seed=5)

    async def run() -> Any:
        judge = build_judge(settings, {})
        try:
            return await scorer_for(settings, judge).score_table(table), judge
        finally:
            await judge.aclose()

    return asyncio.run(run())


def statuses(scored: Any) -> set[str]:
    return {s for m in METRICS for s in scored.column(f"{m}_status").to_pylist()}


@pytest.mark.parametrize("structured_output", ["json_schema", "none"])
def test_every_row_is_scored_through_converse_with_usage_exact(
    tmp_path: Path, structured_output: str
) -> None:
    """`json_schema`: a forced tool; `none`: the schema in the prompt, the answer in text."""
    with BedrockDouble() as double:
        settings = bedrock_settings(double, tmp_path, structured_output=structured_output)
        scored, judge = score(settings)
        endpoint = double.endpoint.removeprefix("http://")
    assert statuses(scored) <= OK
    assert double.counts["refused"] == 0
    assert judge.total.prompt_tokens == double.counts["input_tokens"]
    assert judge.total.completion_tokens == double.counts["output_tokens"]
    assert judge.total.embedding_tokens == double.counts["embedding_tokens"] > 0
    assert judge.description == f"bedrock:{CHAT}@{endpoint}"


def test_a_model_the_account_lacks_stops_the_run(tmp_path: Path) -> None:
    with BedrockDouble() as double:
        settings = bedrock_settings(double, tmp_path, model="anthropic.no-such-model-v1:0")
        with pytest.raises(JudgeFatalError):
            score(settings, rows=2)


def test_credentials_the_account_does_not_know_stop_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIASOMEONEELSE")
    with (
        BedrockDouble() as double,
        pytest.raises(JudgeFatalError, match=r"UnrecognizedClientException|credentials"),
    ):
        score(bedrock_settings(double, tmp_path), rows=2)
    assert double.counts["converse"] == 0


def test_botocore_retries_nothing_itself(tmp_path: Path) -> None:
    """Every throttle reaches the engine, which asks again through its admission: botocore's
    standard mode would retry each 3 times at once, unseen. With no pacing (rpm none) and a
    quota of 60 a minute, the double throttles; each throttle it sent is one the engine saw."""
    with BedrockDouble(BedrockDoubleConfig(rpm=60, burst_seconds=2.0)) as double:
        scored, judge = score(bedrock_settings(double, tmp_path), rows=3)
    assert statuses(scored) <= OK
    assert double.counts["throttled"] > 0
    assert judge.events["retry_429"] == double.counts["throttled"]


def test_the_pace_holds_the_stated_quota_with_few_throttles(tmp_path: Path) -> None:
    """No headers: the judge paces to judge.rpm (the account's quota) and reads throttles as a
    429 without headers; 0-2% of the attempts are throttled."""
    rpm = 600
    with BedrockDouble(BedrockDoubleConfig(rpm=rpm)) as double:
        settings = bedrock_settings(double, tmp_path, rpm=rpm)
        scored, _ = score(settings, rows=30)
    assert statuses(scored) <= OK
    attempts = double.counts["requests"]
    assert double.counts["throttled"] <= max(1, round(0.02 * attempts)), dict(double.counts)
