"""What a rerun changed (`quality.rerun`): the means and counts it compares, and the section
the report and the quality page give it (escaped, in both report formats)."""

from __future__ import annotations

from datetime import UTC, datetime

import pyarrow as pa
import pytest

from ragas_ops.quality.daily_metrics import daily_metrics
from ragas_ops.quality.regression import check_regression
from ragas_ops.quality.report import build_report
from ragas_ops.quality.rerun import rerun_cells, rerun_change
from ragas_ops.tables.format import Rerun
from ragas_ops.tables.iceberg import DayVersion
from tests.fixtures.scored_tables import METRICS, fake_scored_day

DAY = "2026-11-30"


def rows(scores: list[float | None], statuses: list[str]) -> pa.Table:
    return pa.table(
        {
            "faithfulness_score": pa.array(scores, pa.float64()),
            "faithfulness_status": pa.array(statuses),
        }
    )


def version(snapshot: int, run_id: str, count: int) -> DayVersion:
    return DayVersion(snapshot, datetime(2026, 12, 1, snapshot, tzinfo=UTC), run_id, count, "p")


def test_means_are_over_ok_rows_and_a_missing_metric_has_none() -> None:
    before = rows([0.2, None, 0.9], ["ok", "judge_unavailable", "not_applicable"])
    after = rows([0.4, 0.8, 0.6, None], ["ok", "ok", "ok", "invalid_input"])
    rerun = Rerun(version(1, "first", 3), version(2, "second", 4), before, after)

    change = rerun_change(DAY, rerun, ["faithfulness", "context_relevance"])

    faithfulness, context = change.metrics
    assert (change.rows_before, change.rows_after) == (3, 4)
    assert faithfulness.mean_before == pytest.approx(0.2)
    assert faithfulness.mean_after == pytest.approx(0.6)
    assert (faithfulness.scored_before, faithfulness.scored_after) == (1, 3)
    assert faithfulness.delta == pytest.approx(0.4)
    assert (context.mean_before, context.mean_after, context.delta) == (None, None, None)
    cells = rerun_cells(change)
    assert ("rows", "3", "4", "+1") in cells
    assert ("faithfulness mean", "0.200", "0.600", "+0.400") in cells
    assert ("context_relevance mean", "none", "none", "") in cells
    assert "faithfulness 0.200 -> 0.600" in change.summary()


def test_the_report_shows_the_rerun_section_escaped_in_both_formats() -> None:
    scored = fake_scored_day(DAY, 60, seed=1)
    history = daily_metrics(DAY, scored, METRICS, (), bootstrap_samples=100)
    attack = "<script>alert(1)</script>"
    rerun = Rerun(
        version(1, attack, 50), version(2, "manual__again", 60), scored.slice(0, 50), scored
    )
    change = rerun_change(DAY, rerun, METRICS)

    report = build_report(
        DAY, history, scored, check_regression(history, DAY), metrics=METRICS, rerun=change
    )

    assert 'id="rerun"' in report.html
    assert attack not in report.html
    assert "&lt;script&gt;" in report.html
    assert "## What this rerun changed" in report.markdown
    assert "| rows | 50 | 60 | +10 |" in report.markdown
    plain = build_report(DAY, history, scored, check_regression(history, DAY), metrics=METRICS)
    assert "rerun" not in plain.html.lower()
