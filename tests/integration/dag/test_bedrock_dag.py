"""The nightly DAG (`dag.test()`) scoring a day through the Amazon Bedrock double, boto3
signing with the credentials of its chain: every row complete, and the rows' tokens and cost
exact against the double's own count."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from ragas_ops_testing.bedrock_double import BedrockDouble

from ragas_ops.pricing import Price
from ragas_ops.samples import sample_interactions
from tests.integration.dag import test_pipeline_dag as dag_tests
from tests.integration.dag.test_pipeline_dag import DAY, run_dag, state, warehouse, write_logs

airflow_database = dag_tests.airflow_database
lake = dag_tests.lake

METRICS = ("faithfulness", "answer_relevance", "context_relevance")
CHAT = "anthropic.claude-3-5-haiku-20241022-v1:0"
EMBEDDING = "amazon.titan-embed-text-v2:0"
CHAT_PRICE = Price(input_per_million=0.80, output_per_million=4.00)
EMBEDDING_PRICE = Price(input_per_million=0.02)
ROWS = 30


@pytest.fixture
def bedrock(lake: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[BedrockDouble]:
    config = tmp_path / "ragas-ops.toml"
    config.write_text(
        "[prices]\n"
        f'"{CHAT}" = {{ input_per_million = 0.80, output_per_million = 4.00 }}\n'
        f'"{EMBEDDING}" = {{ input_per_million = 0.02 }}\n'
    )
    with BedrockDouble() as double:
        for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL"):
            monkeypatch.delenv(name, raising=False)
        for name, value in {
            "RAGAS_OPS_CONFIG": str(config),
            "RAGAS_OPS_JUDGE_KIND": "bedrock",
            "RAGAS_OPS_JUDGE_BASE_URL": double.endpoint,
            "RAGAS_OPS_JUDGE_MODEL": CHAT,
            "RAGAS_OPS_JUDGE_EMBEDDING_MODEL": EMBEDDING,
            "AWS_ACCESS_KEY_ID": double.config.access_key_id,
            "AWS_SECRET_ACCESS_KEY": "bedrock-test-secret",
            "AWS_REGION": "us-east-1",
        }.items():
            monkeypatch.setenv(name, value)
        yield double


def test_the_nightly_dag_scores_a_day_through_bedrock(lake: Path, bedrock: BedrockDouble) -> None:
    logs = sample_interactions(ROWS, seed=9, day=DAY)
    write_logs(lake, DAY, logs)

    run = run_dag()

    assert state(run) == "success"
    scored = pq.read_table(warehouse(lake, "scored", f"dt={DAY}", "scored.parquet"))
    assert scored.column("id").to_pylist() == logs.column("id").to_pylist()
    for metric in METRICS:
        found = set(scored.column(f"{metric}_status").to_pylist())
        assert found <= {"ok", "not_applicable", "invalid_input"}, (metric, found)
    counts = bedrock.counts
    assert counts["throttled"] == counts["refused"] == 0
    assert sum(scored.column("prompt_tokens").to_pylist()) == counts["input_tokens"]
    assert sum(scored.column("completion_tokens").to_pylist()) == counts["output_tokens"]
    cost = CHAT_PRICE.cost(counts["input_tokens"], counts["output_tokens"])
    cost += EMBEDDING_PRICE.cost(counts["embedding_tokens"], 0)
    assert sum(scored.column("cost_usd").to_pylist()) == pytest.approx(cost)
