"""The `azure` judge against the Azure OpenAI double (`ragas_ops_testing.azure_double`): the
v1 and the api-version URLs, keys and Entra ID tokens refreshed before they expire, a content
filter's 400 as the row's status, and the pace to the deployment's quota."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from ragas_ops_testing.azure_double import AzureDouble, AzureDoubleConfig

from ragas_ops.config import Settings, apply_mapping
from ragas_ops.judge.azure.credentials import REFRESH_BEFORE_SECONDS, BearerTokens
from ragas_ops.judge.base import JudgeFatalError
from ragas_ops.judge.factory import build_judge
from ragas_ops.samples import sample_interactions
from ragas_ops.scoring.run import scorer_for

KEY = "azure-test-key"


def azure_settings(double: AzureDouble, tmp_path: Path, **judge: Any) -> Settings:
    settings = Settings()
    apply_mapping(
        settings,
        {
            "judge": {
                "kind": "azure",
                "base_url": double.endpoint,
                "model": "judge-chat",
                "embedding_model": "judge-embed",
                "cache_path": str(tmp_path / "judge.sqlite"),
                "rpm": None,
                "tpm": None,
                **judge,
            }
        },
        source="test",
    )
    return settings


def score(settings: Settings, rows: int = 12, environ: dict[str, str] | None = None) -> Any:
    environ = {"AZURE_OPENAI_API_KEY": KEY} if environ is None else environ
    table = sample_interactions(rows, seed=5)

    async def run() -> Any:
        judge = build_judge(settings, environ)
        try:
            return await scorer_for(settings, judge).score_table(table), judge.total
        finally:
            await judge.aclose()

    return asyncio.run(run())


METRICS = ("faithfulness", "answer_relevance", "context_relevance")
OK = {"ok", "not_applicable", "invalid_input"}
"""A row's statuses when nothing went wrong (the samples hold rows that break the contract)."""


def statuses(scored: Any) -> set[str]:
    return {s for m in METRICS for s in scored.column(f"{m}_status").to_pylist()}


@pytest.mark.parametrize("api_version", [None, "2024-10-21"])
def test_every_row_is_scored_on_the_v1_and_the_deployments_api(
    tmp_path: Path, api_version: str | None
) -> None:
    with AzureDouble() as double:
        settings = azure_settings(double, tmp_path, azure_api_version=api_version)
        scored, total = score(settings)
        stats = double.stats()
    assert statuses(scored) <= OK
    assert double.counts["by_key"] == double.counts["requests"] > 0
    assert total.prompt_tokens == stats["prompt_tokens"]
    assert total.embedding_tokens == stats["embedding_tokens"]
    assert total.completion_tokens == stats["completion_tokens"]


def test_an_unknown_deployment_stops_the_run(tmp_path: Path) -> None:
    with AzureDouble() as double:
        settings = azure_settings(double, tmp_path, model="no-such-deployment")
        with pytest.raises(JudgeFatalError):
            score(settings, rows=2)


def test_no_key_says_where_it_is_read_from(tmp_path: Path) -> None:
    with AzureDouble() as double:
        settings = azure_settings(double, tmp_path)
        with pytest.raises(JudgeFatalError, match=r"AZURE_OPENAI_API_KEY"):
            build_judge(settings, {"OPENAI_API_KEY": "sk-not-for-azure"})


def test_a_content_filter_400_is_the_rows_status_not_the_runs_end(tmp_path: Path) -> None:
    table = sample_interactions(12, seed=5)
    marker = table.column("question").to_pylist()[3]
    with AzureDouble(AzureDoubleConfig(content_filter_marker=marker)) as double:
        scored, _ = score(azure_settings(double, tmp_path))
    assert double.counts["content_filtered"] > 0
    rows = [{m: scored.column(f"{m}_status")[i].as_py() for m in METRICS} for i in range(12)]
    questions = table.column("question").to_pylist()
    filtered = [i for i, question in enumerate(questions) if question == marker]
    assert 3 in filtered
    for i, row in enumerate(rows):
        if i in filtered:  # answer relevance's prompt holds the answer, not the question
            assert row["faithfulness"] == row["context_relevance"] == "judge_rejected", row
        else:
            assert set(row.values()) <= OK, row


@dataclass
class FakeToken:
    token: str
    expires_on: float


def test_entra_tokens_are_sent_as_bearer_and_refreshed_before_they_expire(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with AzureDouble() as double:
        issued: list[str] = []

        def source(scope: str) -> FakeToken:
            assert scope == "https://cognitiveservices.azure.com/.default"
            # Each token lives just past the refresh margin: it is renewed within the run.
            token, expires_on = double.issue_token(REFRESH_BEFORE_SECONDS + 0.4)
            issued.append(token)
            return FakeToken(token, expires_on)

        monkeypatch.setattr(
            "ragas_ops.judge.azure.credentials.token_source", lambda provider: source
        )
        settings = azure_settings(double, tmp_path, azure_auth="entra")
        scored, _ = score(settings, rows=12, environ={})
    assert statuses(scored) <= OK
    assert double.counts["unauthorized"] == 0
    assert double.counts["by_bearer"] == double.counts["requests"] > 0
    assert set(double.bearers_seen) <= set(issued)
    assert len(issued) >= 1


def test_a_token_is_asked_for_again_before_it_expires() -> None:
    now = [1000.0]
    made: list[str] = []

    def source(scope: str) -> FakeToken:
        made.append(f"t{len(made)}")
        return FakeToken(made[-1], now[0] + 3600)

    tokens = BearerTokens(source, "scope", clock=lambda: now[0])

    async def run() -> list[str]:
        seen = [(await tokens.token()).reveal()]
        now[0] += 3600 - REFRESH_BEFORE_SECONDS - 1  # still fresh
        seen.append((await tokens.token()).reveal())
        now[0] += 2  # inside the margin: a new one
        seen.append((await tokens.token()).reveal())
        return seen

    assert asyncio.run(run()) == ["t0", "t0", "t1"]
    assert "t1" not in repr(tokens.__dict__)


def test_the_pace_holds_the_deployments_quota_with_few_429s(tmp_path: Path) -> None:
    """Azure's headers say only what remains; the judge paces to judge.rpm/tpm (the
    deployment's quota) and reads them: 429s stay a small share of the attempts."""
    rpm = 600
    with AzureDouble(AzureDoubleConfig(rpm=rpm, tpm=400_000)) as double:
        settings = azure_settings(double, tmp_path, rpm=rpm, tpm=400_000)
        scored, _ = score(settings, rows=40)
        stats = double.stats()
    assert statuses(scored) <= OK
    attempts = double.counts["requests"]
    assert double.counts["rate_limited"] <= max(1, round(0.02 * attempts)), (
        double.counts,
        stats["rate_limited"],
    )
