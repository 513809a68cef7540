"""The shadow judge's agreement with the people's labels (ragas_ops.labels.candidate) on
hand-made pairs: which pairs count, per segment, and what the columns say when there is no
shadow judge, no pair, or too few."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from ragas_ops.labels.agreement import agreement
from ragas_ops.labels.candidate import (
    CANDIDATE_AGREEMENT_COLUMNS,
    candidate_agreement,
    with_candidate_agreement,
)

DAY, BEFORE = "2026-09-10", "2026-09-09"
ALL_ROWS = ("all", "all", "faithfulness")


def pair(day: str, row_id: str, label: float, app: str = "bot") -> dict[str, Any]:
    return {"dt": day, "row_id": row_id, "metric": "faithfulness", "label": label, "app": app}


def shadow_row(score: float, judge: str = "openai:new", status: str = "ok") -> dict[str, Any]:
    return {"judge": judge, "faithfulness_score": score, "faithfulness_status": status}


def test_a_day_without_a_shadow_judge_says_so() -> None:
    found = candidate_agreement(DAY, [pair(DAY, "a", 1.0)], {}, [ALL_ROWS])
    assert found[ALL_ROWS]["candidate_labels_status"] == "no_shadow_judge"
    assert found[ALL_ROWS]["candidate_labels"] == 0
    assert found[ALL_ROWS]["candidate_agreement_mad"] is None


def test_pairs_join_by_row_id_and_day_and_skip_failed_rows_and_other_candidates() -> None:
    labels = [pair(DAY, f"r{i}", float(i % 3) / 2) for i in range(20)]
    labels.append(pair(BEFORE, "r0", 0.0))  # the same id on another day: its own row
    labels.append(pair(BEFORE, "old", 0.0))  # scored by an earlier candidate: left out
    shadow = {(DAY, f"r{i}"): shadow_row(float((i + 1) % 3) / 2) for i in range(18)}
    shadow[(DAY, "r17")] = shadow_row(0.5, status="judge_error")  # not ok: left out
    shadow[(BEFORE, "r0")] = shadow_row(1.0)
    shadow[(BEFORE, "old")] = shadow_row(1.0, judge="openai:old")
    found = candidate_agreement(DAY, labels, shadow, [ALL_ROWS])[ALL_ROWS]
    human = [float(i % 3) / 2 for i in range(17)] + [0.0]
    judged = [float((i + 1) % 3) / 2 for i in range(17)] + [1.0]
    expected = agreement(human, judged)
    assert found["candidate_labels"] == 18
    assert found["candidate_labels_status"] == expected.status == "ok"
    assert found["candidate_agreement_mad"] == pytest.approx(expected.mean_abs_diff)
    assert found["candidate_agreement_spearman"] == pytest.approx(expected.spearman)
    assert found["candidate_agreement_kappa"] == pytest.approx(expected.kappa)
    assert found["candidate_judge"] == "openai:new"


def test_each_segment_counts_its_own_pairs_and_too_few_gives_no_figures() -> None:
    labels = [pair(DAY, f"r{i}", 1.0, app="bot" if i < 17 else "search") for i in range(20)]
    shadow = {(DAY, f"r{i}"): shadow_row(float(i % 2)) for i in range(20)}
    keys = [ALL_ROWS, ("app", "bot", "faithfulness"), ("app", "search", "faithfulness")]
    found = candidate_agreement(DAY, labels, shadow, keys)
    assert [found[key]["candidate_labels"] for key in keys] == [20, 17, 3]
    search = found[("app", "search", "faithfulness")]
    assert search["candidate_labels_status"] == "too_few_labels"
    assert search["candidate_agreement_mad"] is None
    # the people say 1 of every row: no rank to correlate, the difference still given
    assert found[ALL_ROWS]["candidate_labels_status"] == "no_variation"
    assert found[ALL_ROWS]["candidate_agreement_mad"] == pytest.approx(0.5)


def test_a_shadow_judge_with_no_labelled_row_has_no_labels() -> None:
    found = candidate_agreement(
        DAY, [pair(DAY, "a", 1.0)], {(DAY, "b"): shadow_row(1.0)}, [ALL_ROWS]
    )
    assert found[ALL_ROWS]["candidate_labels_status"] == "no_labels"
    assert found[ALL_ROWS]["candidate_labels"] == 0


def test_the_columns_are_added_in_order_to_every_row_of_the_daily_metrics() -> None:
    table = pa.table(
        {
            "segment_column": ["all", "app"],
            "segment_value": ["all", "bot"],
            "metric": ["faithfulness", "faithfulness"],
        }
    )
    shadow = {(DAY, "a"): shadow_row(1.0)}
    result = with_candidate_agreement(table, DAY, [pair(DAY, "a", 0.5)], shadow)
    assert result.column_names[3:] == [name for name, _ in CANDIDATE_AGREEMENT_COLUMNS]
    assert result.column("candidate_labels").to_pylist() == [1, 1]
    assert result.column("candidate_labels_status").to_pylist() == ["too_few_labels"] * 2


def test_the_report_shows_both_judges_with_their_counts_or_why_not() -> None:
    from ragas_ops.quality.report.calibration import shadow_html, shadow_markdown, shadow_rows

    record = {"labels": 40, "labels_status": "ok", "agreement_mad": 0.1}
    record |= {"agreement_spearman": 0.9, "agreement_kappa": 0.6, "candidate_judge": "openai:new"}
    overall = {
        "faithfulness": {DAY: {**record, "candidate_labels": 9}},
        "answer_relevance": {DAY: {**record, "candidate_labels": 0}},
        "context_relevance": {DAY: {**record, "candidate_labels_status": "no_shadow_judge"}},
    }
    overall["faithfulness"][DAY]["candidate_labels_status"] = "too_few_labels"
    overall["answer_relevance"][DAY]["candidate_labels_status"] = "no_labels"
    metrics = ["faithfulness", "answer_relevance", "context_relevance"]
    agreed = "mean abs. difference 0.100 · Spearman 0.900 · kappa 0.600 (40 labels)"
    assert shadow_rows(metrics, DAY, overall) == [
        ("Faithfulness", agreed, "too few labels: 9 of the 16 agreement needs"),
        ("Answer relevance", agreed, "no labels of its rows"),
    ]
    assert "| Faithfulness | " + agreed in "\n".join(shadow_markdown(metrics, DAY, overall))
    assert "(openai:new)</h3>" in shadow_html(metrics, DAY, overall)
    # a day without a shadow judge (or before the columns existed): no table at all
    before = {"faithfulness": {DAY: record}}
    assert shadow_html(metrics, DAY, before) == ""
    assert shadow_markdown(metrics, DAY, before) == []
