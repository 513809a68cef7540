"""The demo's two criteria through the nightly DAG (`dag.test()`): `cites_source` (pass/fail,
reading the pass-through column `citations`) and `completeness` (1-5), scored by the test judge
over HTTP beside the paper's metrics, shadow-judged by a second model, aggregated with CIs and
reported; a criterion edited between two nights is a new version, and the regression check
says "criterion completeness changed" rather than reporting its drop; in batch mode too."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from ragas_ops_testing.local_airflow.demo import DEMO_CRITERIA

from ragas_ops.config import load_settings, settings_from_environment
from ragas_ops.contract.layout import Lake
from ragas_ops.quality.bi_database import write_bi_database
from ragas_ops.quality.view import load_overview, render_page
from ragas_ops.samples import sample_interactions
from ragas_ops.storage import locate
from tests.integration.dag import test_pipeline_dag as dag_tests
from tests.integration.dag.test_pipeline_dag import (
    manifest_of,
    run_dag,
    state,
    warehouse,
    write_logs,
)

airflow_database = dag_tests.airflow_database
lake = dag_tests.lake

CRITERIA = ("cites_source", "completeness")
NIGHTS = ("2026-11-20", "2026-11-21", "2026-11-22", "2026-11-23")
ROWS = 20
EDITED = DEMO_CRITERIA.replace(
    'criterion = "The answer addresses every part of the question, from the contexts."\n'
    'reads = ["question", "answer"]',
    'criterion = "The answer addresses every part of the question and of its contexts."\n'
    'reads = ["question", "contexts", "answer"]',
).replace(
    'answer = "It opened in 2004."',
    'contexts = ["The Millau Viaduct opened to traffic on 16 December 2004."]\n'
    'answer = "It opened in 2004."',
)


@pytest.fixture
def with_criteria(lake: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    config = tmp_path / "ragas-ops.toml"
    config.write_text(DEMO_CRITERIA)
    monkeypatch.setenv("RAGAS_OPS_CONFIG", str(config))
    monkeypatch.setenv("RAGAS_OPS_PIPELINE_CHUNK_ROWS", str(ROWS))
    return config


def day_table(root: Path, table: str, day: str) -> Path:
    return warehouse(root, table, f"dt={day}", f"{table}.parquet")


def test_two_criteria_are_scored_shadowed_and_their_edit_is_no_regression(
    lake: Path, with_criteria: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAGAS_OPS_JUDGE_CANDIDATE_MODEL", "test-judge-lenient")
    monkeypatch.setenv("RAGAS_OPS_JUDGE_CANDIDATE_SAMPLE", "0.5")
    for seed, night in enumerate(NIGHTS, start=20):
        if night == NIGHTS[-1]:
            assert EDITED != DEMO_CRITERIA
            with_criteria.write_text(EDITED)
        write_logs(lake, night, sample_interactions(ROWS, seed=seed, day=night, citations=True))
        assert state(run_dag(night)) == "success"

    versions = {}
    for night in NIGHTS:
        scored = pq.read_table(day_table(lake, "scored", night)).to_pylist()
        assert len(scored) == ROWS
        for name in CRITERIA:
            statuses = {row[f"{name}_status"] for row in scored}
            assert statuses <= {"ok", "invalid_input"}, (night, name, statuses)
            assert (
                sum(row[f"{name}_status"] == "ok" for row in scored) >= ROWS // 2
            )  # contract breaks aside
        versions[night] = {row["completeness_version"] for row in scored}
        daily = pq.read_table(day_table(lake, "daily_metrics", night)).to_pylist()
        overall = {row["metric"]: row for row in daily if row["segment_column"] == "all"}
        for name in CRITERIA:
            assert overall[name]["ci_low"] <= overall[name]["mean"] <= overall[name]["ci_high"]
        comparison = pq.read_table(day_table(lake, "judge_comparison", night)).to_pylist()
        assert set(CRITERIA) <= {row["metric"] for row in comparison}

    first, *_, last = NIGHTS
    assert len(versions[first]) == 1
    assert versions[first] == versions[NIGHTS[1]] == versions[NIGHTS[2]]
    assert versions[last] != versions[first]
    before = load_settings(with_criteria).criteria["completeness"].version
    (after_label,) = versions[last]
    assert f"/criterion-{before} " in after_label

    def mean(night: str) -> float:
        daily = pq.read_table(day_table(lake, "daily_metrics", night)).to_pylist()
        (row,) = [
            r for r in daily if r["segment_column"] == "all" and r["metric"] == "completeness"
        ]
        return float(row["mean"])

    # Reading the contexts too, the stricter criterion scores lower, by more than the check's
    # threshold (0.05): compared with the nights before, it would be a regression.
    baseline = sum(mean(night) for night in NIGHTS[:-1]) / len(NIGHTS[:-1])
    assert mean(last) < baseline - 0.05
    findings = manifest_of(lake, last)["regression"]["findings"]
    (completeness,) = [
        f for f in findings if f["segment_column"] == "all" and f["metric"] == "completeness"
    ]
    assert completeness["outcome"] != "regression"
    assert completeness["change"].startswith("criterion completeness changed (version ")
    assert completeness["change"].endswith(f"to {before}) on {last}")
    report = warehouse(lake, "reports", f"dt={last}", "report.html").read_text()
    markdown = warehouse(lake, "reports", f"dt={last}", "report.md").read_text()
    for text in (report, markdown):
        assert "criterion completeness changed" in text
        assert "Cites source" in text
        assert "Completeness" in text
    manifest = manifest_of(lake, last)
    assert set(CRITERIA) <= set(manifest["metrics"])
    print(json.dumps({night: mean(night) for night in NIGHTS}))

    # The quality page and the dashboard's views (the datasets its charts read) show them.
    settings = settings_from_environment()
    overview = load_overview(locate(str(lake / "warehouse")), settings, days=len(NIGHTS))
    page = render_page(overview, "/rag-quality", days=len(NIGHTS))
    assert "cites_source (all rows)" in page
    assert "criterion completeness changed (version " in page
    database = lake.parent / "bi.duckdb"
    write_bi_database(database, Lake(settings.pipeline), settings)
    import duckdb

    with duckdb.connect(str(database), read_only=True) as connection:
        shown = {
            metric
            for (metric,) in connection.execute(
                "SELECT DISTINCT metric FROM rq_daily_metrics"
            ).fetchall()
        }
        worst = {
            metric
            for (metric,) in connection.execute(
                "SELECT DISTINCT metric FROM rq_worst_examples"
            ).fetchall()
        }
    assert set(CRITERIA) <= shown
    assert set(CRITERIA) <= worst


def test_the_criteria_are_scored_in_batch_mode(lake: Path, with_criteria: Path) -> None:
    night = NIGHTS[0]
    write_logs(lake, night, sample_interactions(ROWS, seed=7, day=night, citations=True))
    assert state(run_dag(night, judge_mode="batch")) == "success"
    scored = pq.read_table(day_table(lake, "scored", night)).to_pylist()
    assert len(scored) == ROWS
    for name in CRITERIA:
        assert sum(row[f"{name}_status"] == "ok" for row in scored) >= ROWS // 2
    manifest = manifest_of(lake, night)
    assert "batch" in json.dumps(manifest)
