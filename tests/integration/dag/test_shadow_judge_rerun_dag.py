"""The shadow judge keeps to its own lane (issue 49, finding 4), through the real DAG
(`dag.test()`): a rerun of a day replaces that day's candidate rows (one row per id, as in the
scored table); `compare-judges` names both judges; a candidate whose endpoint is down is shown
as failed in the manifest, the report and the quality page."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from ragas_ops_testing.judge_process import free_port
from ragas_ops_testing.judge_server import JudgeServer

from ragas_ops.cli.main import main
from ragas_ops.config import settings_from_environment
from ragas_ops.quality.view import load_overview, render_page
from ragas_ops.samples import sample_interactions
from ragas_ops.scoring.shadow import candidate_mask
from ragas_ops.storage import locate
from tests.integration.dag import test_pipeline_dag as dag_tests
from tests.integration.dag.test_pipeline_dag import (
    DAY,
    manifest_of,
    run_dag,
    state,
    warehouse,
    write_logs,
)

airflow_database = dag_tests.airflow_database
lake = dag_tests.lake

ROWS = 40
SHARE = 0.5


@pytest.fixture
def shadowed(lake: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("RAGAS_OPS_JUDGE_CANDIDATE_KIND", "local")
    monkeypatch.setenv("RAGAS_OPS_JUDGE_CANDIDATE_SAMPLE", str(SHARE))
    return lake


def day_table(root: Path, table: str, day: str = DAY) -> Path:
    return warehouse(root, table, f"dt={day}", f"{table}.parquet")


def test_a_rerun_day_replaces_its_candidate_rows_and_compare_judges_names_the_judges(
    shadowed: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    logs = sample_interactions(ROWS, seed=71, day=DAY)
    write_logs(shadowed, DAY, logs)
    ids = logs.column("id").to_pylist()
    chosen = [row_id for row_id, keep in zip(ids, candidate_mask(ids, SHARE), strict=True) if keep]

    for _ in range(2):
        assert state(run_dag(DAY)) == "success"

    candidate = pq.read_table(day_table(shadowed, "candidate_scored")).column("id").to_pylist()
    assert sorted(candidate) == sorted(chosen), "one candidate row per id after the rerun"
    capsys.readouterr()
    assert main(["compare-judges", "--from", DAY, "--to", DAY]) == 0
    out = capsys.readouterr().out
    assert f"{DAY}: candidate local:" in out
    assert " vs judge openai:test-judge@" in out
    assert "None" not in out


def test_a_candidate_whose_endpoint_is_down_is_shown_failed_in_manifest_report_and_page(
    lake: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAGAS_OPS_JUDGE_CANDIDATE_MODEL", "test-judge-shadow")
    monkeypatch.setenv("RAGAS_OPS_JUDGE_CANDIDATE_BASE_URL", f"http://127.0.0.1:{free_port()}/v1")
    monkeypatch.setenv("RAGAS_OPS_JUDGE_CANDIDATE_SAMPLE", str(SHARE))
    monkeypatch.setenv("RAGAS_OPS_JUDGE_CANDIDATE_MAX_SECONDS", "5")
    write_logs(lake, DAY, sample_interactions(ROWS, seed=72, day=DAY))

    assert state(run_dag(DAY)) == "success", "the published scores never wait on it"

    candidate = manifest_of(lake, DAY)["candidate"]
    assert candidate["status"] == "failed"
    assert candidate["rows"] == 0
    assert len(candidate["failed_chunks"]) == candidate["chunks"] == 2
    assert not day_table(lake, "candidate_scored").exists()
    for name in ("report.md", "report.html"):
        text = warehouse(lake, "reports", f"dt={DAY}", name).read_text()
        assert "The shadow judge failed on 2 of 2 chunk(s)" in text, name
    settings = settings_from_environment()
    page = render_page(load_overview(locate(str(warehouse(lake))), settings, selected=DAY), "/rag")
    assert "shadow judge failed</span> The shadow judge failed on 2 of 2 chunk(s)" in page


def test_a_slow_candidate_is_cut_at_its_bound_and_shown_failed(
    lake: Path, monkeypatch: pytest.MonkeyPatch, start_judge_server: Callable[..., JudgeServer]
) -> None:
    """A candidate answering each request after 30 s (its retries and repairs would hold the
    chunk's task for minutes): its part of the task ends at candidate_max_seconds."""
    slow = start_judge_server(latency_ms=30_000)
    monkeypatch.setenv("RAGAS_OPS_JUDGE_CANDIDATE_MODEL", "test-judge-shadow")
    monkeypatch.setenv("RAGAS_OPS_JUDGE_CANDIDATE_BASE_URL", slow.base_url)
    monkeypatch.setenv("RAGAS_OPS_JUDGE_CANDIDATE_SAMPLE", str(SHARE))
    monkeypatch.setenv("RAGAS_OPS_JUDGE_CANDIDATE_MAX_SECONDS", "2")
    write_logs(lake, DAY, sample_interactions(ROWS, seed=73, day=DAY))

    assert state(run_dag(DAY)) == "success"

    candidate = manifest_of(lake, DAY)["candidate"]
    assert candidate["status"] == "failed"
    for failed in candidate["failed_chunks"]:
        assert "not done within judge.candidate_max_seconds (2 s)" in failed["error"]
