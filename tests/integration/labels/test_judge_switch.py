"""A change of judge in the middle of a lake: the judge's raw faithfulness series jumps at the
switch, the series corrected with the people's labels does not.

Ten days of sample logs (30% of answers with invented facts) run through the pipeline's steps
against the test judge over HTTP: the first five days judged by `test-judge`, the last five by
`test-judge-lenient` (the test judge biased on purpose: it finds every statement supported).
Each day, "people" label faithfulness of the day's labelling queue through the same code path
as the page and the import (an answer with an invented fact: 0, otherwise 1), and the day is
aggregated again with its labels, as a cleared aggregate task would.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from ragas_ops_testing.judge_server import JudgeServer

from ragas_ops.config import Settings
from ragas_ops.contract.layout import Lake
from ragas_ops.pipeline.aggregate import aggregate_day
from ragas_ops.pipeline.report import report_day
from ragas_ops.quality.view import load_overview, render_page
from ragas_ops.samples import sample_interactions
from ragas_ops.storage import locate
from ragas_ops.tables.format import day_tables
from tests.integration.labels.people import label_the_queue, people_label
from tests.pipeline_steps import run_day
from tests.support import settings_for

DAYS = [f"2026-10-{day:02d}" for day in range(1, 11)]
SWITCH = 5  # DAYS[5:] are judged by the lenient judge
ROWS, UNFAITHFUL = 60, 0.3


def human_truth(logs: pa.Table, scored: pa.Table) -> float:
    """The day's human-scale faithfulness over the rows the judge scored: the target."""
    ok = {
        row["id"]
        for row in scored.select(["id", "faithfulness_status"]).to_pylist()
        if row["faithfulness_status"] == "ok"
    }
    labels = [float(people_label(row["answer"])) for row in logs.to_pylist() if row["id"] in ok]
    return sum(labels) / len(labels)


Switched = tuple[list[dict[str, Any]], list[float], Settings, Path]
"""The overall faithfulness rows of the days, the days' people's means, the settings, the
warehouse folder."""


@pytest.fixture(scope="module")
def switched_lake(tmp_path_factory: pytest.TempPathFactory) -> Switched:
    root = tmp_path_factory.mktemp("switch")
    server = JudgeServer().start()
    truths = []
    try:
        settings: Settings = settings_for(server, root)
        settings.metrics.names = ("faithfulness",)
        settings.pipeline.raw_uri = str(root / "raw")
        settings.pipeline.warehouse_uri = str(root / "warehouse")
        settings.labels.per_day = 40
        lake = Lake(settings.pipeline)
        tables = day_tables(lake, settings)
        for index, day in enumerate(DAYS):
            settings.judge.endpoint.model = "test-judge" if index < SWITCH else "test-judge-lenient"
            logs = sample_interactions(ROWS, seed=100 + index, day=day, unfaithful_share=UNFAITHFUL)
            run_day(lake, day, settings, logs, report=False)
            label_the_queue(tables, day, settings, logs)
            aggregate_day(lake, day, settings)
            truths.append(human_truth(logs, tables.read_scored(day)))
        report_day(lake, DAYS[-1], f"scheduled__{DAYS[-1]}T00:00:00+00:00", settings)
    finally:
        server.stop()
    overall = [
        next(
            row
            for row in tables.read_daily_metrics([day])[0].to_pylist()
            if row["segment_column"] == "all" and row["metric"] == "faithfulness"
        )
        for day in DAYS
    ]
    return overall, truths, settings, root / "warehouse"


def test_the_raw_series_jumps_at_the_switch_and_the_corrected_one_does_not(
    switched_lake: Switched,
) -> None:
    days, truths, _, _ = switched_lake
    assert [day["labels_status"] for day in days] == ["ok"] * len(DAYS)
    before, after = days[:SWITCH], days[SWITCH:]

    def average(rows: list[dict[str, Any]], column: str) -> float:
        return sum(row[column] for row in rows) / len(rows)

    raw_jump = average(after, "mean") - average(before, "mean")
    corrected_jump = average(after, "corrected_mean") - average(before, "corrected_mean")
    half_width = average(days, "corrected_ci_high") / 2 - average(days, "corrected_ci_low") / 2
    assert raw_jump > 0.15  # the lenient judge finds the invented facts supported
    assert all(row["mean"] == 1.0 for row in after)
    assert abs(corrected_jump) < half_width  # within a day's interval
    # before the switch, each day's interval holds that day's human-scale mean (deterministic:
    # fixed seeds). After it, the lenient judge says 1 of every row: its offset from people is
    # the day's share of invented facts, which changes from day to day, so only the window's
    # people's mean can be recovered (the assumption a pooled window makes: a stable offset)
    for row, truth in zip(before, truths[:SWITCH], strict=True):
        assert row["corrected_ci_low"] <= truth <= row["corrected_ci_high"], (row, truth)
    # a label pairs only with its row's own judge: after the switch, only the lenient judge's
    assert after[0]["labels"] < before[-1]["labels"]
    # the lenient judge ranks rows worse than the strict one: agreement drops at the switch
    assert average(after, "agreement_mad") > average(before, "agreement_mad")


def test_the_report_and_the_quality_page_show_the_peoples_scale(switched_lake: Switched) -> None:
    days, _, settings, warehouse = switched_lake
    last = days[-1]
    sentence = (
        f"{last['corrected_mean']:.3f} (95% CI {last['corrected_ci_low']:.3f}–"
        f"{last['corrected_ci_high']:.3f}), calibrated against {last['labels']:,} labels"
    )
    markdown = (warehouse / "reports" / f"dt={DAYS[-1]}" / "report.md").read_text()
    assert "## On the people's scale" in markdown
    assert f"| Faithfulness | 1.000 | {sentence} |" in markdown
    report = (warehouse / "reports" / f"dt={DAYS[-1]}" / "report.html").read_text()
    assert "On the people&#x27;s scale" in report or "On the people's scale" in report
    assert sentence in report
    assert report.count("<polyline") >= 2  # the trends, and the judge and corrected series
    page = render_page(load_overview(locate(str(warehouse)), settings, days=10), "/rag-quality")
    assert sentence in page
    assert "judge-human agreement" in page
