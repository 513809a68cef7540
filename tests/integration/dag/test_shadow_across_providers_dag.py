"""A shadow judge across providers, through the real DAG (`dag.test()`): OpenAI is the judge of
record (the OpenAI-compatible double), Claude the candidate (the Messages API double). The
candidate's sample is scored by Anthropic's wire with the record's provider's embeddings (it
has none of its own), lands in `candidate_scored/`, and the day's comparison table pairs the
two judges' scores."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from ragas_ops_testing.anthropic_server import AnthropicServer, AnthropicServerConfig
from ragas_ops_testing.judge_server import JudgeServer

from ragas_ops.samples import sample_interactions
from ragas_ops.scoring.shadow import candidate_mask
from tests.integration.dag import test_pipeline_dag as dag_tests
from tests.integration.dag.test_pipeline_dag import DAY, run_dag, state, warehouse, write_logs

airflow_database = dag_tests.airflow_database
lake = dag_tests.lake

CANDIDATE = "claude-haiku-5-5"
ROWS = 40
SHARE = 0.3
METRICS = ("faithfulness", "answer_relevance", "context_relevance")


@pytest.fixture
def anthropic() -> Iterator[AnthropicServer]:
    with AnthropicServer(AnthropicServerConfig(rpm=4000, input_tpm=2_000_000)) as server:
        yield server


def test_claude_shadows_openai_and_the_day_is_compared(
    lake: Path,
    anthropic: AnthropicServer,
    judge_server: JudgeServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name, value in {
        "RAGAS_OPS_JUDGE_CANDIDATE_KIND": "anthropic",
        "RAGAS_OPS_JUDGE_CANDIDATE_MODEL": CANDIDATE,
        "RAGAS_OPS_JUDGE_CANDIDATE_BASE_URL": anthropic.url,
        "RAGAS_OPS_JUDGE_CANDIDATE_SAMPLE": str(SHARE),
        "RAGAS_OPS_PIPELINE_CHUNK_ROWS": str(ROWS),
        "ANTHROPIC_API_KEY": anthropic.config.api_key,
        "OPENAI_BASE_URL": judge_server.base_url,  # the candidate's embeddings: OpenAI's
    }.items():
        monkeypatch.setenv(name, value)
    write_logs(lake, DAY, sample_interactions(ROWS, seed=21, day=DAY))

    assert state(run_dag()) == "success"

    scored = pq.read_table(warehouse(lake, "scored", f"dt={DAY}", "scored.parquet"))
    candidate = pq.read_table(
        warehouse(lake, "candidate_scored", f"dt={DAY}", "candidate_scored.parquet")
    )
    ids = scored.column("id").to_pylist()
    chosen = [row for row, keep in zip(ids, candidate_mask(ids, SHARE), strict=True) if keep]
    assert candidate.column("id").to_pylist() == chosen
    assert {judge.split(":")[0] for judge in scored.column("judge").to_pylist()} == {"openai"}
    assert set(candidate.column("judge").to_pylist()) == {
        f"anthropic:{CANDIDATE}@{anthropic.url.removeprefix('http://')}"
    }
    for metric in METRICS:
        assert "ok" in set(candidate.column(f"{metric}_status").to_pylist()), metric
    claude = anthropic.stats()
    assert claude["rejected_400"] == 0
    assert sum(candidate.column("judge_requests").to_pylist()) == claude["answered"] > 0
    assert sum(candidate.column("completion_tokens").to_pylist()) == claude["output_tokens"]

    comparison = pq.read_table(
        warehouse(lake, "judge_comparison", f"dt={DAY}", "judge_comparison.parquet")
    ).to_pylist()
    assert [row["metric"] for row in comparison] == list(METRICS)
    for row in comparison:
        assert row["candidate"].startswith("anthropic:")
        assert row["pairs"] >= 2
        assert row["difference_ci_low"] <= row["difference"] <= row["difference_ci_high"]
