"""A shadow judge over three days of a demo-like lake, through the real DAG (`dag.test()`):
the judge of record is the test judge over HTTP, the candidate the local judge; the
candidate's rows land in `candidate_scored/` (never in the published scores or the daily
means), and the day's comparison in `judge_comparison/`, the report and the quality page."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from ragas_ops_testing.judge_process import free_port
from ragas_ops_testing.judge_server import JudgeServer

from ragas_ops.cli.main import main
from ragas_ops.config import settings_from_environment
from ragas_ops.quality.judge_comparison import (
    COMPARISON_HEADER,
    comparison_cells,
    switch_offset,
)
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
from tests.support import TEST_KEY

airflow_database = dag_tests.airflow_database
lake = dag_tests.lake

DAYS = ("2026-11-20", "2026-11-21", "2026-11-22")
SWITCH = "2026-11-23"
ROWS = 40
SHARE = 0.3
METRICS = ("faithfulness", "answer_relevance", "context_relevance")


@pytest.fixture
def shadowed(lake: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("RAGAS_OPS_JUDGE_CANDIDATE_KIND", "local")
    monkeypatch.setenv("RAGAS_OPS_JUDGE_CANDIDATE_SAMPLE", str(SHARE))
    monkeypatch.setenv("RAGAS_OPS_PIPELINE_CHUNK_ROWS", str(ROWS))  # one chunk a day: quicker
    return lake


def day_table(root: Path, table: str, day: str) -> Path:
    return warehouse(root, table, f"dt={day}", f"{table}.parquet")


def test_a_shadow_judge_scores_a_sample_of_each_day_apart_and_is_compared(
    shadowed: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for seed, day in enumerate(DAYS, start=40):
        write_logs(shadowed, day, sample_interactions(ROWS, seed=seed, day=day))
        assert state(run_dag(day)) == "success"

    for day in DAYS:
        scored = pq.read_table(day_table(shadowed, "scored", day))
        candidate = pq.read_table(day_table(shadowed, "candidate_scored", day))
        ids = scored.column("id").to_pylist()
        chosen = [
            row_id for row_id, keep in zip(ids, candidate_mask(ids, SHARE), strict=True) if keep
        ]
        assert candidate.column("id").to_pylist() == chosen, "the sample, by id, in order"
        assert 0 < len(chosen) < ROWS
        assert set(candidate.column("judge").to_pylist()) == {
            "local:all-MiniLM-L6-v2-onnx-fused-int8"
        }
        (record_judge,) = set(scored.column("judge").to_pylist())  # never mixed
        assert record_judge.startswith("openai:test-judge@")
        daily = pq.read_table(day_table(shadowed, "daily_metrics", day)).to_pylist()
        assert {row["rows"] for row in daily if row["segment_column"] == "all"} == {ROWS}
        manifest = manifest_of(shadowed, day)["candidate"]
        assert (manifest["rows"], manifest["without_id"], manifest["failed_chunks"]) == (
            len(chosen),
            0,
            [],
        )

        comparison = pq.read_table(day_table(shadowed, "judge_comparison", day)).to_pylist()
        assert [row["metric"] for row in comparison] == list(METRICS)
        record = {row["id"]: row for row in scored.to_pylist()}
        for row in comparison:
            metric = row["metric"]
            pairs = [
                (record[other["id"]][f"{metric}_score"], other[f"{metric}_score"])
                for other in candidate.to_pylist()
                if other[f"{metric}_status"] == "ok"
                and record[other["id"]][f"{metric}_status"] == "ok"
            ]
            judge, shadow = np.array(pairs).T
            assert row["pairs"] == len(pairs) >= 2
            assert row["judge_mean"] == pytest.approx(judge.mean())
            assert row["candidate_mean"] == pytest.approx(shadow.mean())
            assert row["difference"] == pytest.approx((shadow - judge).mean())
            assert row["difference_ci_low"] <= row["difference"] <= row["difference_ci_high"]
            assert row["mean_abs_difference"] == pytest.approx(np.abs(shadow - judge).mean())
            assert row["within_0_1"] == pytest.approx((np.abs(shadow - judge) <= 0.1).mean())

        report = warehouse(shadowed, "reports", f"dt={day}", "report.html").read_text()
        markdown = warehouse(shadowed, "reports", f"dt={day}", "report.md").read_text()
        assert "Shadow judge" in report
        assert "## Shadow judge" in markdown
        for row in comparison:
            difference = comparison_cells(row)[4]
            assert difference in report
            assert difference in markdown

    # The operator switches: from the fourth day the local judge is the judge of record. The
    # regression check leaves the days of the other judge out; the trend marks the switch
    # with the offset the shadow judge measured on the last day before it.
    monkeypatch.setenv("RAGAS_OPS_JUDGE_KIND", "local")
    monkeypatch.delenv("RAGAS_OPS_JUDGE_CANDIDATE_KIND")
    write_logs(shadowed, SWITCH, sample_interactions(ROWS, seed=49, day=SWITCH))
    assert state(run_dag(SWITCH)) == "success"
    assert not day_table(shadowed, "candidate_scored", SWITCH).exists()
    assert not list(warehouse(shadowed, "_staging").rglob("*.parquet")), "staging cleaned up"
    findings = manifest_of(shadowed, SWITCH)["regression"]["findings"]
    overall = [f for f in findings if f["segment_column"] == "all"]
    assert all("judge" in f["change"] and f["excluded_days"] == len(DAYS) for f in overall)
    before = pq.read_table(day_table(shadowed, "judge_comparison", DAYS[-1])).to_pylist()
    switch_report = warehouse(shadowed, "reports", f"dt={SWITCH}", "report.html").read_text()
    switch_markdown = warehouse(shadowed, "reports", f"dt={SWITCH}", "report.md").read_text()
    for row in before:
        offset = switch_offset(SWITCH, row["metric"], row["candidate"], before)
        assert offset is not None
        assert f"on {DAYS[-1]}: {comparison_cells(row)[4].split(' (')[0]}" in offset
        assert html.escape(offset, quote=False) in switch_report
        assert offset in switch_markdown.replace("\\", "")

    settings = settings_from_environment()
    switched = render_page(
        load_overview(locate(str(warehouse(shadowed))), settings, selected=SWITCH), "/rag"
    )
    for row in before:
        offset = switch_offset(SWITCH, row["metric"], row["candidate"], before) or ""
        assert html.escape(offset) in switched  # the tooltip of the mean
        assert f"shadow {offset.split(': ', 1)[1].split()[0]}</span>" in switched
    page = render_page(
        load_overview(locate(str(warehouse(shadowed))), settings, selected=DAYS[-1]), "/rag"
    )
    assert f"{DAYS[-1]}: shadow judge" in page
    assert all(cell in page for cell in COMPARISON_HEADER)
    last = pq.read_table(day_table(shadowed, "judge_comparison", DAYS[-1])).to_pylist()
    assert all(comparison_cells(row)[4] in page for row in last)

    # compare-judges over the three days: the estimate ($0: nothing to call) first, each day
    # as the pipeline compared it, then the range's pairs together.
    capsys.readouterr()
    assert main(["compare-judges", "--from", DAYS[0], "--to", DAYS[-1]]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("estimate: $0.0000, no judge is called")
    by_day = {
        day: pq.read_table(day_table(shadowed, "judge_comparison", day)).to_pylist() for day in DAYS
    }
    labels = [line.split(": candidate ")[0] for line in lines if ": candidate " in line]
    assert labels == [*DAYS, f"{DAYS[0]} to {DAYS[-1]}"]
    for day, rows in by_day.items():
        start = lines.index(next(line for line in lines if line.startswith(f"{day}: candidate")))
        for offset, row in enumerate(rows, start=2):  # after the label and the header
            assert re.split(r"\s{2,}", lines[start + offset].strip()) == comparison_cells(row)
    start = lines.index(next(line for line in lines if line.startswith(f"{DAYS[0]} to ")))
    for offset, metric in enumerate(METRICS, start=2):
        cells = re.split(r"\s{2,}", lines[start + offset].strip())
        pairs = sum(next(r for r in by_day[day] if r["metric"] == metric)["pairs"] for day in DAYS)
        assert cells[:2] == [metric, f"{pairs} of {sum(r[0]['rows'] for r in by_day.values())}"]


def test_in_batch_mode_the_shadow_judge_scores_its_sample_in_sync_after_the_batches(
    lake: Path, judge_server: JudgeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAGAS_OPS_JUDGE_BATCH_POLL_SECONDS", "0.1")
    monkeypatch.setenv("RAGAS_OPS_PIPELINE_CHUNK_ROWS", str(ROWS))  # one chunk: one wait
    monkeypatch.setenv("RAGAS_OPS_JUDGE_CANDIDATE_MODEL", "test-judge-shadow")
    monkeypatch.setenv("RAGAS_OPS_JUDGE_CANDIDATE_SAMPLE", str(SHARE))
    judge_server.update(batch_seconds=0.2)
    logs = sample_interactions(ROWS, seed=50, day=DAY)
    write_logs(lake, DAY, logs)

    assert state(run_dag(DAY, judge_mode="batch")) == "success"

    ids = logs.column("id").to_pylist()
    chosen = [row_id for row_id, keep in zip(ids, candidate_mask(ids, SHARE), strict=True) if keep]
    candidate = pq.read_table(day_table(lake, "candidate_scored", DAY))
    assert candidate.column("id").to_pylist() == chosen
    (judge,) = set(candidate.column("judge").to_pylist())
    assert judge.startswith("openai:test-judge-shadow@")
    manifest = manifest_of(lake, DAY)
    assert manifest["scoring"]["modes"] == ["batch"]
    stats = judge_server.stats()
    # the record's requests went in batches; every chat request sent alone is the candidate's
    assert stats["requests_by_endpoint"]["chat"] == manifest["candidate"]["requests"] > 0
    assert day_table(lake, "judge_comparison", DAY).exists()


def test_a_shadow_judge_that_fails_never_fails_the_day(
    lake: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAGAS_OPS_JUDGE_CANDIDATE_MODEL", "test-judge-shadow")
    monkeypatch.setenv("RAGAS_OPS_JUDGE_CANDIDATE_BASE_URL", f"http://127.0.0.1:{free_port()}/v1")
    monkeypatch.setenv("RAGAS_OPS_JUDGE_CANDIDATE_SAMPLE", str(SHARE))
    monkeypatch.setenv("RAGAS_OPS_JUDGE_UNREACHABLE_AFTER", "2")
    monkeypatch.setenv("RAGAS_OPS_PIPELINE_CHUNK_ROWS", str(ROWS // 2))  # two chunks
    logs = sample_interactions(ROWS, seed=51, day=DAY)
    write_logs(lake, DAY, logs)

    assert state(run_dag(DAY)) == "success"

    scored = pq.read_table(day_table(lake, "scored", DAY))
    assert scored.column("id").to_pylist() == logs.column("id").to_pylist()
    shadow = manifest_of(lake, DAY)["candidate"]
    assert shadow["rows"] == 0
    assert shadow["table"] is None
    assert [failed["chunk"] for failed in shadow["failed_chunks"]] == [0, 1]
    assert all("JudgeUnreachableError" in failed["error"] for failed in shadow["failed_chunks"])
    assert TEST_KEY not in json.dumps(shadow)
    assert not day_table(lake, "candidate_scored", DAY).exists()
    assert not day_table(lake, "judge_comparison", DAY).exists()
    report = warehouse(lake, "reports", f"dt={DAY}", "report.html").read_text()
    assert "The shadow judge failed on 2 of 2 chunk(s)" in report, "shown failed (issue 49)"
    assert not list(warehouse(lake, "_staging").rglob("*.parquet"))
