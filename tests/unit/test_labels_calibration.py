"""The day's corrected means (ragas_ops.labels.calibration) on hand-made tables: which labels
count, how they are weighed, and what the columns say when they cannot be computed."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pyarrow as pa
import pytest

from ragas_ops.config import Settings
from ragas_ops.labels.calibration import calibration, with_calibration

DAY, BEFORE = "2026-09-10", "2026-09-09"


@dataclass
class TablesDouble:
    """The few reads calibration makes of the warehouse's tables, from memory."""

    scored: dict[str, pa.Table]
    queues: dict[str, pa.Table]
    labels: dict[str, pa.Table] = field(default_factory=dict)

    def read_scored(self, day: str, columns: Sequence[str] | None = None) -> pa.Table:
        return self.scored[day]

    def read_label_queue(self, day: str) -> pa.Table | None:
        return self.queues.get(day)

    def read_labels(self, days: Sequence[str]) -> list[pa.Table]:
        return [
            self.labels[day].append_column("dt", pa.array([day] * self.labels[day].num_rows))
            for day in days
            if day in self.labels
        ]


def scored(day: str, judge: str, scores: list[float], apps: list[str]) -> pa.Table:
    return pa.table(
        {
            "id": [f"{day}-{index}" for index in range(len(scores))],
            "app": apps,
            "judge": [judge] * len(scores),
            "faithfulness_score": scores,
            "faithfulness_status": ["ok"] * len(scores),
        }
    )


def queue(day: str, rows: dict[int, tuple[str, int, int]]) -> pa.Table:
    return pa.table(
        {
            "row_id": [f"{day}-{index}" for index in rows],
            "position": list(range(len(rows))),
            "stratum": [stratum for stratum, _, _ in rows.values()],
            "stratum_rows": [size for _, size, _ in rows.values()],
            "stratum_labels": [labels for _, _, labels in rows.values()],
        }
    )


def labels(day: str, given: dict[int, list[float]]) -> pa.Table:
    pairs = [(index, value) for index, values in given.items() for value in values]
    return pa.table(
        {
            "row_id": [f"{day}-{index}" for index, _ in pairs],
            "metric": ["faithfulness"] * len(pairs),
            "label": [value for _, value in pairs],
            "labeller": [f"person-{n}" for n in range(len(pairs))],
        }
    )


@pytest.fixture
def settings() -> Settings:
    settings = Settings()
    settings.metrics.names = ("faithfulness",)
    settings.pipeline.segments = ("app",)
    return settings


def test_the_corrected_mean_is_the_days_judge_mean_plus_the_weighted_difference(
    settings: Settings,
) -> None:
    scores = [0.9, 0.8, 1.0, 0.7] * 10  # 40 rows: app a for the first 30, b for the last 10
    apps = ["a"] * 30 + ["b"] * 10
    today = scored(DAY, "judge-2", scores, apps)
    # 16 labelled rows of app a (weight 30/16) and 4 of app b (weight 10/4), one of them twice
    rows = {i: ("app=a", 30, 16) for i in range(16)} | {i: ("app=b", 10, 4) for i in range(30, 34)}
    given = {i: [0.5] for i in range(16)} | {30: [1.0, 0.0], 31: [1.0], 32: [1.0], 33: [0.5]}
    tables = TablesDouble({DAY: today}, {DAY: queue(DAY, rows)}, {DAY: labels(DAY, given)})

    found = calibration(tables, DAY, today, settings)  # type: ignore[arg-type]

    label_of = {i: sum(values) / len(values) for i, values in given.items()}
    weight_of = {i: size / count for i, (_, size, count) in rows.items()}
    difference = sum(weight_of[i] * (label_of[i] - scores[i]) for i in rows)
    # the weights are normalised to a mean of 1 over the labelled rows: 30 + 10 in all
    expected = sum(scores) / 40 + difference / sum(weight_of.values())
    assert expected == pytest.approx(0.85 - 11.5 / 40)
    overall = found[("all", "all", "faithfulness")]
    assert overall["labels_status"] == "ok"
    assert overall["labels"] == 20  # the row labelled twice counts once, its labels averaged
    assert overall["corrected_mean"] == pytest.approx(expected)
    assert overall["corrected_ci_low"] < expected < overall["corrected_ci_high"]
    assert found[("app", "b", "faithfulness")]["labels_status"] == "too_few_labels"
    assert found[("app", "b", "faithfulness")]["corrected_mean"] is None


def test_labels_of_another_judges_rows_do_not_count(settings: Settings) -> None:
    before = scored(BEFORE, "judge-1", [0.5] * 20, ["a"] * 20)
    today = scored(DAY, "judge-2", [0.9] * 20, ["a"] * 20)
    rows = {i: ("app=a", 20, 20) for i in range(20)}
    tables = TablesDouble(
        {BEFORE: before, DAY: today},
        {BEFORE: queue(BEFORE, rows)},
        {BEFORE: labels(BEFORE, {i: [0.5] for i in range(20)})},
    )
    metrics = pa.table(
        {
            "segment_column": ["all", "app"],
            "segment_value": ["all", "a"],
            "metric": ["faithfulness", "faithfulness"],
        }
    )

    added = with_calibration(metrics, tables, DAY, today, settings).to_pylist()  # type: ignore[arg-type]

    assert [row["labels_status"] for row in added] == ["no_labels", "no_labels"]
    assert [row["labels"] for row in added] == [0, 0]
    assert added[0]["corrected_mean"] is None
    assert added[0]["agreement_mad"] is None
