"""Adding a metric is adding a module: a toy metric, registered from outside the package, is
scored by `score_file` (over real HTTP against the test judge), aggregated, estimated and
reported with its own title, heading and explanations, and nothing else in the house changes."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ragas_ops.contract.inputs import ANSWER, QUESTION, Interaction
from ragas_ops.contract.status import Status
from ragas_ops.estimate import estimate_input
from ragas_ops.judge.base import Judge, Usage
from ragas_ops.metrics import build_metrics, register_metric
from ragas_ops.metrics.base import Detail, ExpectedCall, Metric, MetricResult
from ragas_ops.metrics.registry import unregister_metric
from ragas_ops.quality.daily_metrics import ALL, daily_metrics
from ragas_ops.quality.regression import check_regression
from ragas_ops.quality.report import build_report
from ragas_ops.scoring.jobs import score_file
from ragas_ops.testing.judge_server import JudgeServer
from tests.support import TEST_KEY, settings_for

DAY = "2026-11-30"


class AnswerBrevity(Metric):
    """1.0 for an answer of at most `limit` words, falling linearly to 0 at twice that."""

    name = "answer_brevity"
    version = 1
    requires = (QUESTION, ANSWER)
    prompts: ClassVar[tuple[Any, ...]] = ()
    title = "Answer brevity"
    worst_title = "Wordiest answers"
    estimate_assumption = "answer brevity: counted locally, no judge request"
    limit = 5

    @classmethod
    def explain(cls, evidence: Mapping[str, Any], contexts: Sequence[str]) -> list[Detail]:
        return [("Words", f"{evidence['words']} (limit {cls.limit})", "")]

    def expected_calls(self, row: Interaction) -> list[ExpectedCall]:
        return []

    async def score(self, row: Interaction, judge: Judge, usage: Usage) -> MetricResult:
        words = len((row.answer or "").split())
        score = max(0.0, min(1.0, 2 - words / self.limit))
        return MetricResult(Status.OK, score, evidence={"words": words})


@pytest.fixture
def toy_metric() -> Iterator[str]:
    register_metric(AnswerBrevity.name, AnswerBrevity)
    yield AnswerBrevity.name
    unregister_metric(AnswerBrevity.name)


def test_an_unregistered_metric_is_unknown() -> None:
    with pytest.raises(ValueError, match="unknown metric"):
        build_metrics([AnswerBrevity.name])


def test_a_toy_metric_runs_through_score_aggregate_estimate_and_report(
    toy_metric: str,
    judge_server: JudgeServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    rows = {
        "id": ["short", "long", "refusal"],
        "question": ["When did it open?", "Who designed it?", "How tall is it?"],
        "contexts": [["It opened in 2004."], ["Michel Virlogeux designed it."], ["343 m."]],
        "answer": [
            "In 2004.",
            "It was designed by the structural engineer Michel Virlogeux, with Norman Foster.",
            "I do not know.",
        ],
        "app": ["bot", "bot", "bot"],
    }
    source = tmp_path / "log.parquet"
    pq.write_table(pa.table(rows), source)
    settings = settings_for(judge_server, tmp_path)
    settings.metrics.names = (toy_metric, "faithfulness")
    settings.pipeline.segments = ("app",)

    outcome = asyncio.run(score_file(str(source), str(tmp_path / "scored.parquet"), settings))

    scored = pq.read_table(tmp_path / "scored.parquet")
    by_id = dict(
        zip(scored["id"].to_pylist(), scored["answer_brevity_score"].to_pylist(), strict=True)
    )
    assert by_id == {"short": 1.0, "long": 0.0, "refusal": 1.0}
    assert set(scored["answer_brevity_status"].to_pylist()) == {"ok"}
    assert scored["answer_brevity_version"][0].as_py().startswith("answer_brevity/v1")
    assert outcome.summary.rows == 3

    daily = daily_metrics(DAY, scored, settings.metrics.names, settings.pipeline.segments)
    overall = [
        row
        for row in daily.to_pylist()
        if row["metric"] == toy_metric and row["segment_column"] == ALL
    ]
    assert len(overall) == 1
    assert overall[0]["rows_scored"] == 3
    assert overall[0]["mean"] == pytest.approx(2 / 3)

    estimate = estimate_input(str(source), settings)
    assert estimate.total.requests_by_metric[toy_metric] == 0
    assert "- answer brevity: counted locally, no judge request" in estimate.lines()

    regression = check_regression(daily, DAY)
    report = build_report(DAY, daily, scored, regression, metrics=settings.metrics.names)
    for text in (report.html, report.markdown):
        assert "Answer brevity" in text
        assert "Wordiest answers" in text
        assert "12 (limit 5)" in text
