"""The nightly DAG (`dag.test()`) scoring a day through the Azure OpenAI double, its key from
the environment or from the Airflow judge connection: every row complete, and the rows' tokens
and cost exact against the double's own count."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from ragas_ops_testing.azure_double import AzureDouble

from ragas_ops.pricing import Price
from ragas_ops.samples import sample_interactions
from tests.integration.dag import test_pipeline_dag as dag_tests
from tests.integration.dag.test_pipeline_dag import DAY, run_dag, state, warehouse, write_logs

airflow_database = dag_tests.airflow_database
lake = dag_tests.lake

METRICS = ("faithfulness", "answer_relevance", "context_relevance")
CHAT_PRICE = Price(input_per_million=0.15, output_per_million=0.60)
EMBEDDING_PRICE = Price(input_per_million=0.02)
ROWS = 30


@pytest.fixture
def azure(lake: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[AzureDouble]:
    config = tmp_path / "ragas-ops.toml"
    config.write_text(
        "[prices]\n"
        "judge-chat = { input_per_million = 0.15, output_per_million = 0.60 }\n"
        "judge-embed = { input_per_million = 0.02 }\n"
    )
    with AzureDouble() as double:
        for name, value in {
            "RAGAS_OPS_CONFIG": str(config),
            "RAGAS_OPS_JUDGE_KIND": "azure",
            "RAGAS_OPS_JUDGE_BASE_URL": double.endpoint,
            "RAGAS_OPS_JUDGE_MODEL": "judge-chat",
            "RAGAS_OPS_JUDGE_EMBEDDING_MODEL": "judge-embed",
            "RAGAS_OPS_JUDGE_MODEL_PROFILE": "classic",
            "AZURE_OPENAI_API_KEY": double.config.api_key,
        }.items():
            monkeypatch.setenv(name, value)
        yield double


@pytest.mark.parametrize("key_from", ["environment", "connection"])
def test_the_nightly_dag_scores_a_day_through_azure(
    lake: Path, azure: AzureDouble, monkeypatch: pytest.MonkeyPatch, key_from: str
) -> None:
    if key_from == "connection":
        # The judge connection, generic as OpenAI's: host = the resource, password = the key,
        # read by the Azure judge under the variable judge.api_key_env names.
        connection = {
            "conn_type": "openai",
            "host": azure.endpoint,
            "password": azure.config.api_key,
        }
        monkeypatch.setenv("AIRFLOW_CONN_RAGAS_OPS_JUDGE", json.dumps(connection))
        monkeypatch.setenv("RAGAS_OPS_JUDGE_API_KEY_ENV", "AZURE_OPENAI_API_KEY")
        monkeypatch.delenv("AZURE_OPENAI_API_KEY")
        monkeypatch.delenv("RAGAS_OPS_JUDGE_BASE_URL")
    logs = sample_interactions(ROWS, seed=9, day=DAY)
    write_logs(lake, DAY, logs)

    run = run_dag()

    assert state(run) == "success"
    scored = pq.read_table(warehouse(lake, "scored", f"dt={DAY}", "scored.parquet"))
    assert scored.column("id").to_pylist() == logs.column("id").to_pylist()
    for metric in METRICS:
        found = set(scored.column(f"{metric}_status").to_pylist())
        assert found <= {"ok", "not_applicable", "invalid_input"}, (metric, found)
    stats = azure.stats()
    assert azure.counts["by_key"] == azure.counts["requests"] > 0
    assert stats["rate_limited"] == 0
    assert sum(scored.column("prompt_tokens").to_pylist()) == stats["prompt_tokens"]
    assert sum(scored.column("completion_tokens").to_pylist()) == stats["completion_tokens"]
    cost = CHAT_PRICE.cost(stats["prompt_tokens"], stats["completion_tokens"])
    cost += EMBEDDING_PRICE.cost(stats["embedding_tokens"], 0)
    assert sum(scored.column("cost_usd").to_pylist()) == pytest.approx(cost)
