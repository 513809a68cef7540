"""Deterministic sampling: the same rows on every run, no judge call for the others, and
aggregates and reports that count them without averaging them in."""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from ragas_ops_testing.judge_server import JudgeServer

from ragas_ops.cli.main import EXIT_OK, main
from ragas_ops.config import Settings
from ragas_ops.contract.layout import Lake
from ragas_ops.contract.status import Status
from ragas_ops.judge.base import Completion, Embeddings
from ragas_ops.metrics import build_metrics
from ragas_ops.pipeline.plan import plan_day
from ragas_ops.pipeline.score import score_chunk
from ragas_ops.prompts import Prompt
from ragas_ops.quality.daily_metrics import daily_metrics
from ragas_ops.quality.regression import check_regression
from ragas_ops.quality.report import build_report
from ragas_ops.samples import sample_interactions
from ragas_ops.sampling import is_sampled, not_sampled_reason, row_id_text, sample_mask
from ragas_ops.scoring.scorer import Scorer
from tests.integration.e2e.test_score_e2e import score_args
from tests.support import TEST_KEY
from tests.unit.test_scoring import RuleJudge

METRICS = ("faithfulness", "answer_relevance", "context_relevance")
IDS = [f"row-{index:05d}" for index in range(10_000)]
DAY = "2026-11-29"


def spec(row_id: str, fraction: float) -> bool:
    """The rule as docs/cost.md ("Sampling") states it."""
    return int.from_bytes(hashlib.sha256(row_id.encode()).digest()[:8], "big") / 2**64 < fraction


# --- the rule ---------------------------------------------------------------------------------


def test_the_rule_is_the_documented_hash_and_gives_the_same_answer_every_time():
    for row_id in IDS[:500]:
        for fraction in (0.1, 0.5):
            assert is_sampled(row_id, fraction) == spec(row_id, fraction)
            assert is_sampled(row_id, fraction) == is_sampled(row_id, fraction)
    # Pinned: a change of the rule would resample every deployment's history.
    chosen = [index for index in range(40) if is_sampled(f"row-{index:05d}", 0.25)]
    assert chosen == [5, 6, 8, 11, 12, 14, 16, 19, 21, 24, 32, 35]


@pytest.mark.parametrize("fraction", [0.01, 0.1, 0.25, 0.5, 0.9])
def test_the_share_of_rows_chosen_is_the_fraction(fraction):
    # Fixed ids, so the count is the same on every run: the tolerance (about 3.3 standard
    # deviations of a binomial at p = 0.5) is about whether the hash spreads ids evenly.
    share = sum(is_sampled(row_id, fraction) for row_id in IDS) / len(IDS)
    assert share == pytest.approx(fraction, abs=0.0165)


def test_a_larger_fraction_only_adds_rows():
    at_10 = {row_id for row_id in IDS if is_sampled(row_id, 0.1)}
    at_20 = {row_id for row_id in IDS if is_sampled(row_id, 0.2)}
    assert at_10 < at_20
    assert all(is_sampled(row_id, 1.0) for row_id in IDS[:100])


@pytest.mark.parametrize("fraction", [0.0, -0.1, 1.5])
def test_a_fraction_outside_zero_one_is_refused(fraction):
    with pytest.raises(ValueError, match=r"\(0, 1\]"):
        is_sampled("row", fraction)
    with pytest.raises(ValueError, match="sample fraction"):
        Scorer(build_metrics(METRICS), RuleJudge(), sample_fraction=fraction)


def test_ids_that_cannot_be_hashed_are_kept_not_left_out():
    assert row_id_text("abc") == "abc"
    assert row_id_text(42) == "42"
    for unusable in (None, "", "   ", 4.2, True, b"abc"):
        assert row_id_text(unusable) is None
    # An integer id hashes as its decimal text, so int and string logs agree.
    assert is_sampled("42", 0.5) == sample_mask([42], 0.5)[0]
    assert sample_mask([None, "", 3.5], 0.01) == [True, True, True]


# --- the scorer -------------------------------------------------------------------------------


class RecordingJudge(RuleJudge):
    """The rule judge, remembering every answer and question it was asked about."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    async def complete(
        self, prompt: Prompt[Any], data: Mapping[str, Any], *, n: int = 1
    ) -> Completion[Any]:
        self.seen.append(json.dumps(dict(data), sort_keys=True))
        return await super().complete(prompt, data, n=n)

    async def embed(self, texts: Sequence[str]) -> Embeddings:
        self.seen.extend(texts)
        return await super().embed(texts)


def interactions(ids: Sequence[Any], day: str = DAY) -> pa.Table:
    """One row per id; every text names its row, so a judge call gives away which row it is."""
    return pa.table(
        {
            "id": pa.array(ids),
            "app": ["a" if index % 2 else "b" for index in range(len(ids))],
            "question": [f"What about item {index}?" for index in range(len(ids))],
            "contexts": pa.array(
                [[f"Item {index} is blue. It is round."] for index in range(len(ids))],
                pa.list_(pa.string()),
            ),
            "answer": [f"Item {index} is blue." for index in range(len(ids))],
        }
    )


def mentions(calls: Sequence[str], index: int) -> bool:
    return any(f"item {index}?" in call.lower() or f"Item {index} " in call for call in calls)


def test_rows_not_sampled_come_out_in_place_without_a_judge_call():
    ids = [f"r{index}" for index in range(60)]
    judge = RecordingJudge()
    scorer = Scorer(build_metrics(METRICS), judge, sample_fraction=0.3)

    result = asyncio.run(scorer.score_table(interactions(ids))).to_pylist()

    assert [row["id"] for row in result] == ids, "every row, in place"
    chosen = [is_sampled(row_id, 0.3) for row_id in ids]
    assert 0 < sum(chosen) < len(ids)
    for index, (row, sampled) in enumerate(zip(result, chosen, strict=True)):
        assert mentions(judge.seen, index) == sampled, f"row {index}"
        for metric in METRICS:
            if sampled:
                assert row[f"{metric}_status"] == Status.OK
                continue
            assert row[f"{metric}_status"] == Status.NOT_SAMPLED
            assert row[f"{metric}_score"] is None
            assert row[f"{metric}_reason"] == not_sampled_reason(0.3)
            assert "0.3" in row[f"{metric}_reason"]
            assert json.loads(row[f"{metric}_evidence"]) == {"sample_fraction": 0.3}
        if not sampled:
            assert (row["judge_requests"], row["prompt_tokens"], row["completion_tokens"]) == (
                0,
                0,
                0,
            )
            assert (row["embedding_tokens"], row["cost_usd"]) == (0, 0.0)
    assert judge.total.requests == 4 * sum(chosen)
    assert scorer.summary.rows_not_sampled == len(ids) - sum(chosen)
    assert scorer.summary.statuses["faithfulness"][Status.NOT_SAMPLED] == len(ids) - sum(chosen)
    assert not Status.NOT_SAMPLED.is_failure


def test_a_table_with_no_sampled_row_calls_nothing():
    ids = [row_id for row_id in IDS if not is_sampled(row_id, 0.05)][:8]
    judge = RecordingJudge()
    scorer = Scorer(build_metrics(METRICS), judge, sample_fraction=0.05)

    result = asyncio.run(scorer.score_table(interactions(ids)))

    assert judge.seen == []
    assert judge.embed_calls == 0
    assert set(result.column("answer_relevance_status").to_pylist()) == {Status.NOT_SAMPLED}


def test_rows_without_a_usable_id_are_scored_as_without_sampling(caplog):
    ids = pa.array([None, "", "x-1", None], pa.string())
    judge = RecordingJudge()
    scorer = Scorer(build_metrics(METRICS), judge, sample_fraction=0.01)

    result = asyncio.run(scorer.score_table(interactions(ids)))

    statuses = result.column("faithfulness_status").to_pylist()
    expected_third = Status.OK if is_sampled("x-1", 0.01) else Status.NOT_SAMPLED
    assert statuses == [Status.OK, Status.OK, expected_third, Status.OK]
    assert scorer.summary.rows_without_id == 3
    assert "no usable id" in caplog.text


def test_a_log_without_an_id_column_is_scored_in_full():
    judge = RecordingJudge()
    scorer = Scorer(build_metrics(["context_relevance"]), judge, sample_fraction=0.1)
    table = interactions([1, 2, 3]).drop_columns(["id"])

    result = asyncio.run(scorer.score_table(table))

    assert result.column("context_relevance_status").to_pylist() == [Status.OK] * 3
    assert scorer.summary.rows_without_id == 3


def test_the_same_rows_whatever_the_batches():
    ids = list(range(200))  # integer ids
    table = interactions(ids)
    whole = Scorer(build_metrics(["context_relevance"]), RuleJudge(), sample_fraction=0.4)
    parts = Scorer(build_metrics(["context_relevance"]), RuleJudge(), sample_fraction=0.4)

    once = asyncio.run(whole.score_table(table)).column("context_relevance_status").to_pylist()
    batched: list[str] = []
    for start in range(0, 200, 37):
        scored = asyncio.run(parts.score_table(table.slice(start, 37)))
        batched += scored.column("context_relevance_status").to_pylist()

    assert once == batched
    assert [status == Status.OK for status in once] == [is_sampled(str(i), 0.4) for i in ids]


# --- the pipeline's score step ----------------------------------------------------------------


async def test_the_pipelines_score_step_honours_the_sample_fraction(tmp_path: Path):
    settings = Settings()
    settings.pipeline.raw_uri = str(tmp_path / "raw")
    settings.pipeline.warehouse_uri = str(tmp_path / "warehouse")
    settings.pipeline.sample_fraction = 0.5
    ids = [f"{DAY}-{index}" for index in range(30)]
    folder = tmp_path / "raw" / f"dt={DAY}"
    folder.mkdir(parents=True)
    pq.write_table(interactions(ids), folder / "part-0.parquet")
    lake = Lake(settings.pipeline)
    (chunk,) = plan_day(lake, DAY, settings).chunks
    judge = RecordingJudge()

    result = await score_chunk(lake, DAY, "run-1", chunk=chunk, settings=settings, judge=judge)

    sampled = sum(is_sampled(row_id, 0.5) for row_id in ids)
    assert result["rows"] == 30
    assert result["statuses"]["faithfulness"] == {"ok": sampled, "not_sampled": 30 - sampled}
    assert judge.total.requests == 4 * sampled


# --- aggregates and the report ----------------------------------------------------------------


@pytest.fixture(scope="module")
def sampled_day() -> pa.Table:
    ids = [f"{DAY}-{index:04d}" for index in range(120)]
    scorer = Scorer(build_metrics(METRICS), RuleJudge(), sample_fraction=0.25)
    return asyncio.run(scorer.score_table(interactions(ids)))


def test_aggregates_count_not_sampled_rows_apart_and_average_only_scored_ones(sampled_day):
    table = daily_metrics(DAY, sampled_day, METRICS, ["app"]).to_pylist()
    left_out = [not is_sampled(row_id, 0.25) for row_id in sampled_day.column("id").to_pylist()]
    for row in table:
        group = (
            left_out
            if row["segment_column"] == "all"
            else [
                out
                for out, app in zip(left_out, sampled_day.column("app").to_pylist(), strict=True)
                if app == row["segment_value"]
            ]
        )
        assert row["rows"] == len(group)
        assert row["rows_not_sampled"] == sum(group)
        assert row["rows_scored"] == len(group) - sum(group)
        assert row["rows_failed"] == 0
        assert json.loads(row["failures_by_status"]) == {}
        assert row["rows"] == (
            row["rows_scored"]
            + row["rows_not_applicable"]
            + row["rows_not_sampled"]
            + row["rows_failed"]
        )
    faithfulness = next(
        row for row in table if row["segment_column"] == "all" and row["metric"] == "faithfulness"
    )
    scores = [s for s in sampled_day.column("faithfulness_score").to_pylist() if s is not None]
    assert faithfulness["mean"] == pytest.approx(sum(scores) / len(scores))


def test_the_report_says_how_many_rows_were_sampled(sampled_day):
    history = daily_metrics(DAY, sampled_day, METRICS, [])
    report = build_report(
        DAY, history, sampled_day, check_regression(history, DAY), metrics=METRICS
    )
    not_sampled = sampled_day.column("faithfulness_status").to_pylist().count("not_sampled")
    sampled = 120 - not_sampled
    expected = f"{sampled:,} of 120 ({sampled / 120:.1%}; sample_fraction 0.25)"
    for text in (report.html, report.markdown):
        assert f"Sampled: {expected}" in text
        assert "Cost per 1,000 sampled rows" in text
        assert "not_sampled" in text
    assert "not in the sample" not in report.markdown, "not a failure reason"
    assert "| not sampled |" in report.markdown


def test_a_report_without_sampling_does_not_mention_it():
    scorer = Scorer(build_metrics(METRICS), RuleJudge())
    scored = asyncio.run(scorer.score_table(interactions([f"r{i}" for i in range(10)])))
    history = daily_metrics(DAY, scored, METRICS, [])
    report = build_report(DAY, history, scored, check_regression(history, DAY), metrics=METRICS)
    assert "ampled" not in report.markdown
    assert "ampled:" not in report.html


# --- the score command --------------------------------------------------------------------------


def test_the_score_command_samples_and_says_so(
    judge_server: JudgeServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
):
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    source = tmp_path / "logs.parquet"
    pq.write_table(sample_interactions(40, seed=2), source)
    target = tmp_path / "scored.parquet"
    args = score_args(judge_server, source, target, tmp_path / "cache.sqlite")

    assert main([*args, "--sample-fraction", "0.25"]) == EXIT_OK

    scored = pq.read_table(target)
    chosen = [is_sampled(row_id, 0.25) for row_id in scored.column("id").to_pylist()]
    statuses = scored.column("context_relevance_status").to_pylist()
    assert [status != Status.NOT_SAMPLED for status in statuses] == chosen
    assert judge_server.stats()["requests_by_endpoint"]["chat"] <= 4 * sum(chosen)
    out = capsys.readouterr().out
    assert f"sampled {sum(chosen)} of 40 rows" in out
    assert "sample_fraction 0.25" in out
