"""A shadow judge beside the people's labels: its agreement with the same labels as the judge
of record's, in the daily metrics, the report and the quality page.

Four days of sample logs (30% of answers with invented facts) run through the pipeline's
steps against the test judge over HTTP: the judge of record is `test-judge`, and from the
second day a shadow judge, `test-judge-lenient` (biased on purpose: it finds every statement
supported), scores 30% of each day. "People" label faithfulness of each day's queue and the
day is aggregated again with its labels. The candidate's pairs are counted here apart from
the code under test, from the `labels/` and `candidate_scored/` tables joined by row id and day.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
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
from tests.integration.labels.people import label_the_queue
from tests.pipeline_steps import run_day
from tests.support import settings_for

DAYS = [f"2026-09-{day:02d}" for day in range(1, 5)]
ROWS, UNFAITHFUL, SHARE = 60, 0.3, 0.3
CANDIDATE = "test-judge-lenient"

Shadowed = tuple[list[dict[str, Any]], list[list[dict[str, Any]]], Settings, Path]
"""The overall faithfulness rows of the days, each day's rows by app, the settings, the
warehouse folder."""


@pytest.fixture(scope="module")
def shadowed_lake(tmp_path_factory: pytest.TempPathFactory) -> Shadowed:
    root = tmp_path_factory.mktemp("shadow-labels")
    server = JudgeServer().start()
    try:
        settings: Settings = settings_for(server, root)
        settings.metrics.names = ("faithfulness",)
        settings.pipeline.raw_uri = str(root / "raw")
        settings.pipeline.warehouse_uri = str(root / "warehouse")
        settings.labels.per_day = 40
        settings.pipeline.segments = ("app",)
        settings.judge.candidate.sample = SHARE
        lake = Lake(settings.pipeline)
        tables = day_tables(lake, settings)
        for index, day in enumerate(DAYS):
            # the first day without a shadow judge: its rows say so
            settings.judge.candidate.model = None if index == 0 else CANDIDATE
            logs = sample_interactions(ROWS, seed=200 + index, day=day, unfaithful_share=UNFAITHFUL)
            run_day(lake, day, settings, logs, report=False)
            label_the_queue(tables, day, settings, logs)
            aggregate_day(lake, day, settings)
        report_day(lake, DAYS[-1], f"scheduled__{DAYS[-1]}T00:00:00+00:00", settings)
    finally:
        server.stop()
    rows = [tables.read_daily_metrics([day])[0].to_pylist() for day in DAYS]
    overall = [next(row for row in day if row["segment_column"] == "all") for day in rows]
    by_app = [[row for row in day if row["segment_column"] == "app"] for day in rows]
    return overall, by_app, settings, root / "warehouse"


def candidate_pairs(warehouse: Path, settings: Settings, up_to: int) -> list[float]:
    """The people's labels of the rows the shadow judge scored `ok`, over days 1..up_to (the
    days with a shadow judge, all inside the labels window)."""
    tables = day_tables(Lake(settings.pipeline), settings)
    labels: dict[tuple[str, str], list[float]] = {}
    for table in tables.read_labels(DAYS[: up_to + 1]):
        for row in table.to_pylist():
            labels.setdefault((str(row["dt"]), row["row_id"]), []).append(row["label"])
    found = []
    for day in DAYS[1 : up_to + 1]:
        path = warehouse / "candidate_scored" / f"dt={day}" / "candidate_scored.parquet"
        for row in pq.read_table(path).to_pylist():
            given = labels.get((day, row["id"]))
            if given and row["faithfulness_status"] == "ok":
                assert row["faithfulness_score"] == 1.0  # the lenient judge, as built
                found.append(sum(given) / len(given))
    return found


def test_the_shadow_judges_agreement_with_the_labels_is_in_the_daily_metrics(
    shadowed_lake: Shadowed,
) -> None:
    days, by_app, settings, warehouse = shadowed_lake
    assert days[0]["candidate_labels_status"] == "no_shadow_judge"
    assert days[0]["candidate_labels"] == 0
    assert days[0]["candidate_agreement_mad"] is None
    for index in range(1, len(DAYS)):
        row = days[index]
        people = candidate_pairs(warehouse, settings, index)
        assert row["candidate_labels"] == len(people) > 0, "joined by row id and day"
        assert CANDIDATE in row["candidate_judge"]
        if len(people) < 16:
            assert row["candidate_labels_status"] == "too_few_labels"
            assert row["candidate_agreement_mad"] is None
            continue
        # the lenient judge says 1 of every row: its distance from people is their share of
        # zeros, it ranks nothing (no Spearman), and agrees no better than chance (kappa 0)
        assert row["candidate_labels_status"] == "no_variation"
        assert row["candidate_agreement_mad"] == pytest.approx(1 - sum(people) / len(people))
        assert row["candidate_agreement_spearman"] is None
        assert row["candidate_agreement_kappa"] == pytest.approx(0.0)
        # the judge of record, over its own (more) labels, agrees with people better
        assert row["labels"] > row["candidate_labels"]
        assert row["agreement_mad"] < row["candidate_agreement_mad"]
    assert days[-1]["candidate_labels_status"] == "no_variation", "enough pairs by the last day"
    assert days[1]["candidate_labels"] < days[-1]["candidate_labels"], "the window gathers them"
    # per segment too: each app's pairs are its own, and together they are the day's
    for day, apps in zip(days, by_app, strict=True):
        assert len(apps) > 1
        assert sum(app["candidate_labels"] for app in apps) == day["candidate_labels"]
        assert {app["candidate_judge"] for app in apps} == {day["candidate_judge"]}


def test_the_report_and_the_quality_page_show_both_judges_against_the_people(
    shadowed_lake: Shadowed,
) -> None:
    days, _, settings, warehouse = shadowed_lake
    last = days[-1]
    record = (
        f"mean abs. difference {last['agreement_mad']:.3f} · Spearman "
        f"{last['agreement_spearman']:.3f} · kappa {last['agreement_kappa']:.3f} "
        f"({last['labels']:,} labels)"
    )
    shadow = (
        f"mean abs. difference {last['candidate_agreement_mad']:.3f} · Spearman n/a · "
        f"kappa {last['candidate_agreement_kappa']:.3f} ({last['candidate_labels']:,} labels)"
    )
    markdown = (warehouse / "reports" / f"dt={DAYS[-1]}" / "report.md").read_text()
    assert "### The shadow judge against the same people (" in markdown
    assert f"| Faithfulness | {record} | {shadow} |" in markdown
    report = (warehouse / "reports" / f"dt={DAYS[-1]}" / "report.html").read_text()
    assert "The shadow judge against the same people" in report
    assert f"<td>Faithfulness</td><td>{record}</td><td>{shadow}</td>" in report
    page = render_page(load_overview(locate(str(warehouse)), settings, days=10), "/rag-quality")
    assert f"<td>{record}</td><td>{shadow}</td>" in page
    # a day before any shadow judge shows no such table
    first = render_page(
        load_overview(locate(str(warehouse)), settings, days=10, selected=DAYS[0]),
        "/rag-quality",
    )
    assert "The shadow judge against the same people" not in first
