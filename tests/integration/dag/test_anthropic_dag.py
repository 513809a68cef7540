"""The nightly DAG (`dag.test()`) scoring a day through the Anthropic judge: Claude's answers
from the Messages API double (`ragas_ops_testing.anthropic_server`, as strict as Anthropic
documents itself), answer relevance's embeddings from another provider (OpenAI's, the
OpenAI-compatible double: `judge.embedding_kind = openai`). Every row is scored, and its
tokens and cost are exactly what each double counted."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from ragas_ops_testing.anthropic_server import AnthropicServer, AnthropicServerConfig
from ragas_ops_testing.judge_server import JudgeServer

from ragas_ops.pricing import DEFAULT_PRICES
from ragas_ops.samples import sample_interactions
from tests.integration.dag import test_pipeline_dag as dag_tests
from tests.integration.dag.test_pipeline_dag import DAY, run_dag, state, warehouse, write_logs

airflow_database = dag_tests.airflow_database
lake = dag_tests.lake

MODEL = "claude-haiku-5-5"
EMBEDDING_MODEL = "text-embedding-3-small"
METRICS = ("faithfulness", "answer_relevance", "context_relevance")
ROWS = 30


@pytest.fixture
def anthropic() -> Iterator[AnthropicServer]:
    # Limits well above the day's need; a low cache minimum, so the prompts' static parts
    # (a few hundred tokens each) are cached as a long prompt's would be.
    config = AnthropicServerConfig(
        rpm=4000, input_tpm=2_000_000, output_tpm=400_000, cache_min_tokens=100
    )
    with AnthropicServer(config) as server:
        yield server


@pytest.fixture
def anthropic_judge(
    lake: Path,
    anthropic: AnthropicServer,
    judge_server: JudgeServer,
    monkeypatch: pytest.MonkeyPatch,
) -> AnthropicServer:
    for name, value in {
        "RAGAS_OPS_JUDGE_KIND": "anthropic",
        "RAGAS_OPS_JUDGE_BASE_URL": anthropic.url,
        "RAGAS_OPS_JUDGE_MODEL": MODEL,
        "ANTHROPIC_API_KEY": anthropic.config.api_key,
        "RAGAS_OPS_JUDGE_EMBEDDING_KIND": "openai",
        "RAGAS_OPS_JUDGE_EMBEDDING_MODEL": EMBEDDING_MODEL,
        "OPENAI_BASE_URL": judge_server.base_url,
    }.items():
        monkeypatch.setenv(name, value)
    return anthropic


def test_the_nightly_dag_scores_a_day_through_anthropic_with_tokens_and_cost_exact(
    lake: Path, anthropic_judge: AnthropicServer, judge_server: JudgeServer
) -> None:
    logs = sample_interactions(ROWS, seed=11, day=DAY)
    write_logs(lake, DAY, logs)

    run = run_dag()

    assert state(run) == "success"
    scored = pq.read_table(warehouse(lake, "scored", f"dt={DAY}", "scored.parquet"))
    assert scored.column("id").to_pylist() == logs.column("id").to_pylist()
    for metric in METRICS:
        found = set(scored.column(f"{metric}_status").to_pylist())
        assert found <= {"ok", "not_applicable", "invalid_input"}, (metric, found)
        assert "ok" in found, metric
    assert set(scored.column("judge").to_pylist()) == {
        f"anthropic:{MODEL}@{anthropic_judge.url.removeprefix('http://')}"
    }
    claude = anthropic_judge.stats()
    assert claude["refused_429"] == claude["rejected_400"] == claude["overloaded_529"] == 0
    assert claude["cache_read_input_tokens"] > 0  # the static prompt parts, read back
    billed_input = (
        claude["input_tokens"]
        + claude["cache_creation_input_tokens"]
        + claude["cache_read_input_tokens"]
    )
    assert sum(scored.column("prompt_tokens").to_pylist()) == billed_input
    assert sum(scored.column("completion_tokens").to_pylist()) == claude["output_tokens"]
    cached = sum(scored.column("cached_prompt_tokens").to_pylist())
    assert cached == claude["cache_read_input_tokens"]
    openai = judge_server.stats()
    assert sum(scored.column("judge_requests").to_pylist()) == claude["answered"]
    assert openai["requests_by_endpoint"]["embeddings"] > 0
    assert openai["requests_by_endpoint"]["chat"] == 0  # only embeddings went to OpenAI
    assert sum(scored.column("embedding_tokens").to_pylist()) == openai["embedding_tokens"]
    price = DEFAULT_PRICES[MODEL]
    chat_cost = price.cost(
        billed_input,
        claude["output_tokens"],
        claude["cache_read_input_tokens"],
        cache_write_tokens=claude["cache_creation_input_tokens"],
    )
    embedding_cost = DEFAULT_PRICES[EMBEDDING_MODEL].cost(openai["embedding_tokens"], 0)
    assert sum(scored.column("cost_usd").to_pylist()) == pytest.approx(chat_cost + embedding_cost)
    # By hand, from the double's counts and the list prices (USD per million tokens).
    by_hand = (
        claude["input_tokens"] * 0.10
        + claude["cache_creation_input_tokens"] * 0.125
        + claude["cache_read_input_tokens"] * 0.01
        + claude["output_tokens"] * 0.50
    ) / 1e6
    assert chat_cost == pytest.approx(by_hand)
