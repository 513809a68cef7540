"""Daily aggregates and the regression check: known inputs, exact outputs."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from ragas_ops.quality.daily_metrics import DAILY_METRICS_SCHEMA, daily_metrics
from ragas_ops.quality.regression import Outcome, Verdict, check_regression, scoring_changes
from tests.fixtures.scored_tables import fake_history_days

DAY = "2026-11-29"


def scored_table(
    rows: Sequence[dict[str, Any]], metrics: Sequence[str] = ("faithfulness",)
) -> pa.Table:
    """A scored table from compact rows: {"score", "status", "app", "cost", "tokens", ...}."""
    columns: dict[str, pa.Array] = {
        "app": pa.array([row.get("app") for row in rows], pa.string()),
        "tenant": pa.array([row.get("tenant", "t1") for row in rows], pa.string()),
    }
    for metric in metrics:
        statuses = [row.get(f"{metric}_status", row.get("status", "ok")) for row in rows]
        scores = [row.get(f"{metric}_score", row.get("score")) for row in rows]
        columns[f"{metric}_score"] = pa.array(
            [
                score if status == "ok" else None
                for score, status in zip(scores, statuses, strict=True)
            ],
            pa.float64(),
        )
        columns[f"{metric}_status"] = pa.array(statuses, pa.string())
        columns[f"{metric}_version"] = pa.array(
            [row.get("version", f"{metric}/v1") for row in rows], pa.string()
        )
    columns["judge"] = pa.array([row.get("judge", "openai:gpt-4o-mini") for row in rows])
    for name in ("prompt_tokens", "completion_tokens", "embedding_tokens"):
        columns[name] = pa.array([row.get("tokens", 10) for row in rows], pa.int64())
    columns["cost_usd"] = pa.array([row.get("cost", 0.01) for row in rows], pa.float64())
    return pa.table(columns)


def only(table: pa.Table, column: str = "all", value: str = "all", metric: str = "faithfulness"):
    matches = [
        row
        for row in table.to_pylist()
        if (row["segment_column"], row["segment_value"], row["metric"]) == (column, value, metric)
    ]
    assert len(matches) == 1, matches
    return matches[0]


def ok_rows(scores: Sequence[float], **extra: Any) -> list[dict[str, Any]]:
    return [{"score": score, **extra} for score in scores]


def test_counts_mean_median_and_percentiles_of_known_scores() -> None:
    rows = [
        *ok_rows([0.0, 0.25, 0.5, 0.75, 1.0]),
        {"status": "not_applicable"},
        {"status": "invalid_input"},
        {"status": "judge_unavailable"},
        {"status": "judge_unavailable"},
    ]
    row = only(daily_metrics(DAY, scored_table(rows), ["faithfulness"], []))
    assert (row["rows"], row["rows_scored"], row["rows_not_applicable"], row["rows_failed"]) == (
        9,
        5,
        1,
        3,
    )
    assert json.loads(row["failures_by_status"]) == {"invalid_input": 1, "judge_unavailable": 2}
    # failures and not_applicable rows are counted, never averaged in as 0
    assert row["mean"] == pytest.approx(0.5)
    assert row["median"] == pytest.approx(0.5)
    assert row["p10"] == pytest.approx(0.1)  # linear: 0 + 0.4 * 0.25
    assert row["p90"] == pytest.approx(0.9)
    assert row["dt"] == DAY
    assert row["metric_version"] == "faithfulness/v1"
    assert row["judge"] == "openai:gpt-4o-mini"


def test_percentiles_match_numpy_for_every_group() -> None:
    rng = np.random.default_rng(7)
    scores = rng.random(501).round(3)
    apps = rng.choice(["a", "b", "c"], 501)
    rows = [{"score": float(s), "app": str(a)} for s, a in zip(scores, apps, strict=True)]
    table = daily_metrics(DAY, scored_table(rows), ["faithfulness"], ["app"])
    for app in ("a", "b", "c"):
        mine = scores[apps == app]
        row = only(table, "app", app)
        assert row["rows_scored"] == len(mine)
        assert row["mean"] == pytest.approx(mine.mean())
        assert row["median"] == pytest.approx(np.median(mine))
        assert row["p10"] == pytest.approx(np.quantile(mine, 0.1))
        assert row["p90"] == pytest.approx(np.quantile(mine, 0.9))


def test_grouping_sets_not_cross_product_and_null_segment_visible() -> None:
    rows = [
        {"score": 1.0, "app": "a", "tenant": "x"},
        {"score": 0.0, "app": "a", "tenant": "y"},
        {"score": 0.5, "app": None, "tenant": "x"},
        {"status": "invalid_input", "app": "b", "tenant": "y"},
    ]
    table = daily_metrics(DAY, scored_table(rows), ["faithfulness"], ["app", "tenant"])
    keys = [(r["segment_column"], r["segment_value"]) for r in table.to_pylist()]
    assert keys == [
        ("all", "all"),
        ("app", "a"),
        ("app", "b"),
        ("app", "(null)"),
        ("tenant", "x"),
        ("tenant", "y"),
    ]
    assert only(table, "app", "(null)")["mean"] == pytest.approx(0.5)
    b = only(table, "app", "b")
    assert (b["rows"], b["rows_scored"], b["rows_failed"], b["mean"]) == (1, 0, 1, None)
    assert b["median"] is None
    assert b["ci_low"] is None
    assert only(table, "tenant", "y")["mean"] == pytest.approx(0.0)
    assert table.schema.equals(DAILY_METRICS_SCHEMA)


def test_ci_contains_the_mean_and_narrows_with_more_rows() -> None:
    rng = np.random.default_rng(1)
    small = rng.beta(5, 2, 30)
    large = rng.beta(5, 2, 3000)
    widths = []
    for scores in (small, large):
        row = only(daily_metrics(DAY, scored_table(ok_rows(scores.tolist())), ["faithfulness"], []))
        assert row["ci_low"] < row["mean"] < row["ci_high"]
        widths.append(row["ci_high"] - row["ci_low"])
    assert widths[1] < widths[0] / 5  # ~ 1 / sqrt(100)


def test_bootstrap_agrees_with_direct_resampling_of_continuous_scores() -> None:
    # more distinct values than the bootstrap's support: the binned shortcut is exercised
    scores = np.random.default_rng(3).beta(5, 2, 2000)
    row = only(
        daily_metrics(
            DAY,
            scored_table(ok_rows(scores.tolist())),
            ["faithfulness"],
            [],
            bootstrap_samples=4000,
        )
    )
    resampled = scores[np.random.default_rng(9).integers(0, 2000, (4000, 2000))].mean(axis=1)
    low, high = np.quantile(resampled, [0.025, 0.975])
    assert row["ci_low"] == pytest.approx(low, abs=0.002)
    assert row["ci_high"] == pytest.approx(high, abs=0.002)


def test_deterministic_for_a_seed() -> None:
    rows = ok_rows(np.random.default_rng(2).random(200).tolist(), app="a")
    first = daily_metrics(DAY, scored_table(rows), ["faithfulness"], ["app"], seed=5)
    again = daily_metrics(DAY, scored_table(rows), ["faithfulness"], ["app"], seed=5)
    other = daily_metrics(DAY, scored_table(rows), ["faithfulness"], ["app"], seed=6)
    assert first.equals(again)
    assert only(first)["ci_low"] != only(other)["ci_low"]
    # a group's interval does not depend on which other segments are configured
    alone = daily_metrics(DAY, scored_table(rows), ["faithfulness"], [], seed=5)
    assert only(alone)["ci_low"] == only(first)["ci_low"]


def test_ci_is_null_below_two_scored_rows() -> None:
    rows = [{"score": 0.8}, {"status": "judge_rejected"}]
    row = only(daily_metrics(DAY, scored_table(rows), ["faithfulness"], []))
    assert row["mean"] == pytest.approx(0.8)
    assert (row["ci_low"], row["ci_high"]) == (None, None)


def test_empty_day_gives_rows_with_null_statistics_not_an_error() -> None:
    empty = scored_table([], metrics=("faithfulness", "context_relevance"))
    table = daily_metrics(DAY, empty, ["faithfulness", "context_relevance"], ["app"])
    assert table.num_rows == 2  # the overall row per metric; no segment value exists
    for row in table.to_pylist():
        assert (row["rows"], row["rows_scored"], row["rows_failed"]) == (0, 0, 0)
        assert row["failures_by_status"] == "{}"
        for name in ("mean", "median", "p10", "p90", "ci_low", "ci_high", "judge"):
            assert row[name] is None
        assert row["cost_usd"] == 0.0  # nothing was spent: a known zero, not missing data


def test_no_nan_anywhere() -> None:
    rows = [*ok_rows([0.2]), {"status": "invalid_input", "app": "x"}]
    table = daily_metrics(DAY, scored_table(rows), ["faithfulness"], ["app"])
    for row in table.to_pylist():
        for value in row.values():
            assert not (isinstance(value, float) and math.isnan(value))


def test_tokens_and_cost_per_grouping_and_unknown_cost_propagates() -> None:
    rows = [
        {"score": 1.0, "app": "a", "tokens": 100, "cost": 0.5},
        {"score": 1.0, "app": "a", "tokens": 50, "cost": 0.25},
        {"score": 0.0, "app": "b", "tokens": 7, "cost": None},
        {"status": "invalid_input", "app": "b", "tokens": 0, "cost": 0.0},
    ]
    metrics = ("faithfulness", "context_relevance")
    table = daily_metrics(DAY, scored_table(rows, metrics), metrics, ["app"])
    for metric in metrics:  # the same per-row totals for every metric of a grouping
        a = only(table, "app", "a", metric)
        assert (a["prompt_tokens"], a["completion_tokens"], a["embedding_tokens"]) == (150,) * 3
        assert a["cost_usd"] == pytest.approx(0.75)
        assert only(table, "app", "b", metric)["cost_usd"] is None
        assert only(table, metric=metric)["cost_usd"] is None  # never a partial sum
        assert only(table, metric=metric)["prompt_tokens"] == 157


def test_distinct_judges_are_listed() -> None:
    rows = [{"score": 1.0, "judge": "openai:gpt-4o"}, {"score": 1.0, "judge": "openai:gpt-4o-mini"}]
    row = only(daily_metrics(DAY, scored_table(rows), ["faithfulness"], []))
    assert row["judge"] == "openai:gpt-4o, openai:gpt-4o-mini"


def test_unknown_status_counts_as_a_failure() -> None:
    rows = [{"score": 1.0}, {"status": "something_new"}]
    row = only(daily_metrics(DAY, scored_table(rows), ["faithfulness"], []))
    assert row["rows_failed"] == 1
    assert json.loads(row["failures_by_status"]) == {"something_new": 1}


def test_missing_columns_are_named() -> None:
    with pytest.raises(ValueError, match="answer_relevance_score"):
        daily_metrics(DAY, scored_table(ok_rows([1.0])), ["answer_relevance"], [])
    with pytest.raises(ValueError, match="retriever"):
        daily_metrics(DAY, scored_table(ok_rows([1.0])), ["faithfulness"], ["retriever"])


def test_a_large_day_aggregates_every_grouping() -> None:
    n = 300_000
    rng = np.random.default_rng(0)
    metrics = ("faithfulness", "answer_relevance", "context_relevance")
    columns: dict[str, Any] = {
        "app": rng.choice(["a", "b", "c"], n),
        "model": rng.choice(["m1", "m2"], n),
        "tenant": rng.choice([f"t{i}" for i in range(20)], n),
    }
    for metric in metrics:
        status = rng.choice(["ok"] * 8 + ["not_applicable", "invalid_input"], n)
        columns[f"{metric}_status"] = status
        columns[f"{metric}_score"] = pa.array(np.where(status == "ok", rng.random(n), np.nan),
                                              from_pandas=True)  # fmt: skip
    table = pa.table(columns)
    result = daily_metrics(DAY, table, metrics, ["app", "model", "tenant"])
    assert result.num_rows == 3 * (1 + 3 + 2 + 20)
    assert only(result, metric="answer_relevance")["rows"] == n


# --- regression --------------------------------------------------------------------------------


def day_of(scores: Sequence[float], app: str = "a", **extra: Any) -> list[dict[str, Any]]:
    return ok_rows(scores, app=app, **extra)


def history_of(days: dict[str, list[dict[str, Any]]]) -> pa.Table:
    return pa.concat_tables(
        daily_metrics(day, scored_table(rows), ["faithfulness"], ["app"])
        for day, rows in days.items()
    )


def steady(mean: float, n: int, seed: int) -> list[float]:
    rng = np.random.default_rng(seed)
    return np.clip(rng.normal(mean, 0.1, n), 0, 1).tolist()


def test_a_clear_drop_is_a_regression() -> None:
    days = fake_history_days(DAY, 8)
    history = history_of(
        {day: day_of(steady(0.85, 300, i)) for i, day in enumerate(days[:-1])}
        | {DAY: day_of(steady(0.70, 300, 99))}
    )
    report = check_regression(history, DAY)
    overall = next(f for f in report.findings if f.segment_column == "all")
    assert overall.outcome is Outcome.REGRESSION
    assert overall.baseline_days == 7
    assert overall.delta == pytest.approx(-0.15, abs=0.02)
    assert report.verdict is Verdict.REGRESSION
    assert "regressed" in overall.message
    assert "faithfulness" in overall.message
    json.dumps(report.to_dict())  # manifest-ready
    assert report.to_dict()["verdict"] == "regression"


def test_a_noisy_drop_on_a_small_sample_is_not_a_regression() -> None:
    days = fake_history_days(DAY, 8)
    history = history_of(
        {day: day_of(steady(0.85, 300, i)) for i, day in enumerate(days[:-1])}
        | {DAY: day_of([1.0, 0.4, 0.9, 0.5])}  # mean 0.7, but a wide interval
    )
    report = check_regression(history, DAY)
    overall = next(f for f in report.findings if f.segment_column == "all")
    assert overall.delta is not None
    assert overall.delta < -0.05
    assert overall.ci_high is not None
    assert overall.ci_high >= overall.baseline
    assert overall.outcome is Outcome.OK
    assert "noise" in overall.message
    assert report.verdict is Verdict.OK


def test_insufficient_history_and_the_window() -> None:
    days = fake_history_days(DAY, 12)
    history = history_of(
        {days[0]: day_of(steady(0.1, 300, 0))}  # outside the 7-day window: ignored
        | {days[-3]: day_of(steady(0.85, 300, 1)), days[-2]: day_of(steady(0.85, 300, 2))}
        | {DAY: day_of(steady(0.5, 300, 3))}
    )
    report = check_regression(history, DAY, min_days=3)
    overall = next(f for f in report.findings if f.segment_column == "all")
    assert overall.outcome is Outcome.INSUFFICIENT_HISTORY
    assert overall.baseline_days == 2
    assert report.verdict is Verdict.NOT_CHECKED  # never "ok" over a check not made
    assert "not checked: 2 of 3 baseline days" in overall.message
    assert check_regression(history, DAY, min_days=2).verdict is Verdict.REGRESSION


def test_a_clear_rise_is_an_improvement() -> None:
    days = fake_history_days(DAY, 5)
    history = history_of(
        {day: day_of(steady(0.6, 300, i)) for i, day in enumerate(days[:-1])}
        | {DAY: day_of(steady(0.8, 300, 42))}
    )
    report = check_regression(history, DAY)
    assert {f.outcome for f in report.findings} == {Outcome.IMPROVED}
    assert report.verdict is Verdict.OK


def test_a_segment_regression_alone_is_a_warning() -> None:
    days = fake_history_days(DAY, 5)
    normal = {
        day: day_of(steady(0.85, 900, i), "a") + day_of(steady(0.85, 100, i + 50), "b")
        for i, day in enumerate(days[:-1])
    }
    today = day_of(steady(0.85, 900, 77), "a") + day_of(steady(0.45, 100, 78), "b")
    report = check_regression(history_of(normal | {DAY: today}), DAY)
    by_key = {(f.segment_column, f.segment_value): f for f in report.findings}
    assert by_key[("app", "b")].outcome is Outcome.REGRESSION
    assert by_key[("all", "all")].outcome is not Outcome.REGRESSION
    assert report.verdict is Verdict.WARN
    assert report.findings[0].segment_column == "all"  # overall findings come first


def test_no_scored_row_today_is_no_data() -> None:
    days = fake_history_days(DAY, 5)
    history = history_of(
        {day: day_of(steady(0.85, 50, i)) for i, day in enumerate(days[:-1])}
        | {DAY: [{"status": "judge_unavailable", "app": "a"}]}
    )
    report = check_regression(history, DAY)
    assert {f.outcome for f in report.findings} == {Outcome.NO_DATA}
    assert report.verdict is Verdict.NOT_CHECKED
    assert report.summary == ("Not checked on 2026-11-29: faithfulness: no scored row today.")


def test_an_empty_table_with_untyped_columns_is_an_empty_day() -> None:
    names = ["faithfulness_score", "faithfulness_status", "app", "prompt_tokens", "cost_usd"]
    untyped = pa.table({name: pa.array([]) for name in names})  # pa.null() columns
    row = only(daily_metrics(DAY, untyped, ["faithfulness"], ["app"]))
    assert (row["rows"], row["mean"], row["prompt_tokens"]) == (0, None, 0)


# --- baselines compare like with like ---------------------------------------------------------


def test_a_judge_change_is_not_compared_and_says_what_changed_and_when() -> None:
    days = fake_history_days(DAY, 8)
    old = {day: day_of(steady(0.45, 300, i), judge="local:bge") for i, day in enumerate(days[:5])}
    new = {day: day_of(steady(0.85, 300, 10 + i)) for i, day in enumerate(days[5:7])}
    history = history_of(old | new | {DAY: day_of(steady(0.85, 300, 99))})
    report = check_regression(history, DAY)
    overall = report.finding("all", "all", "faithfulness")
    assert overall is not None
    assert overall.outcome is Outcome.NOT_COMPARED
    assert (overall.baseline_days, overall.excluded_days) == (2, 5)
    assert overall.change == (
        f"the judge changed from local:bge to openai:gpt-4o-mini on {days[5]}"
    )
    assert report.verdict is Verdict.NOT_CHECKED
    assert report.summary.startswith(
        f"Not checked on {DAY}: faithfulness and 1 segment finding(s): not compared: "
        f"the judge changed from local:bge to openai:gpt-4o-mini on {days[5]}, and only 2 of "
        "the 3 baseline days needed were scored the same way"
    )
    manifest = report.to_dict()
    assert manifest["verdict"] == "not_checked"
    assert manifest["counts"]["not_compared"] == 2
    assert manifest["changes"] == [overall.change]
    assert manifest["findings"][0]["scored_with"]["judge"] == "openai:gpt-4o-mini"


def test_a_judge_change_today_is_named_with_today() -> None:
    days = fake_history_days(DAY, 8)
    history = history_of(
        {day: day_of(steady(0.85, 300, i)) for i, day in enumerate(days[:-1])}
        | {DAY: day_of(steady(0.40, 300, 99), judge="local:bge")}
    )
    report = check_regression(history, DAY)
    overall = report.finding("all", "all", "faithfulness")
    assert overall is not None
    assert overall.outcome is Outcome.NOT_COMPARED, "a new judge's -0.45 is not a regression"
    assert overall.change == f"the judge changed from openai:gpt-4o-mini to local:bge on {DAY}"
    assert report.verdict is Verdict.NOT_CHECKED


def test_enough_matching_days_are_compared_and_the_others_left_out() -> None:
    days = fake_history_days(DAY, 8)
    old = {day: day_of(steady(0.30, 300, i), judge="local:bge") for i, day in enumerate(days[:3])}
    new = {day: day_of(steady(0.85, 300, 10 + i)) for i, day in enumerate(days[3:7])}
    history = history_of(old | new | {DAY: day_of(steady(0.84, 300, 99))})
    report = check_regression(history, DAY)
    overall = report.finding("all", "all", "faithfulness")
    assert overall is not None
    assert overall.outcome is Outcome.OK  # against 0.85, not a mix with the old judge's 0.30
    assert (overall.baseline_days, overall.excluded_days) == (4, 3)
    assert overall.baseline == pytest.approx(0.85, abs=0.02)
    assert "3 day(s) before the change" in overall.message
    assert report.verdict is Verdict.OK
    assert report.summary.endswith(
        f"Baselines count only the days since the judge changed from local:bge to "
        f"openai:gpt-4o-mini on {days[3]}."
    )


def test_a_metric_or_prompt_version_change_is_not_compared() -> None:
    days = fake_history_days(DAY, 8)
    history = history_of(
        {day: day_of(steady(0.85, 300, i)) for i, day in enumerate(days[:-1])}
        | {DAY: day_of(steady(0.60, 300, 99), version="faithfulness/v2 (statements/v2)")}
    )
    report = check_regression(history, DAY)
    overall = report.finding("all", "all", "faithfulness")
    assert overall is not None
    assert overall.outcome is Outcome.NOT_COMPARED
    assert overall.change == (
        "the faithfulness version changed from faithfulness/v1 to "
        f"faithfulness/v2 (statements/v2) on {DAY}"
    )


def test_a_day_with_another_embedding_model_is_left_out_of_the_baseline() -> None:
    days = fake_history_days(DAY, 8)
    before = {day: day_of(steady(0.85, 300, i)) for i, day in enumerate(days[:-1])}
    today = day_of(steady(0.60, 300, 99))
    tables = [
        daily_metrics(day, scored_table(rows), ["faithfulness"], ["app"])
        for day, rows in before.items()
    ]
    scored = scored_table(today)
    scored = scored.append_column("embedding_model", pa.array(["local:e5"] * scored.num_rows))
    earlier = scored_table(before[days[0]])
    earlier = earlier.append_column("embedding_model", pa.array(["openai:t3"] * earlier.num_rows))
    tables[0] = daily_metrics(days[0], earlier, ["faithfulness"], ["app"])
    history = pa.concat_tables(
        [*tables, daily_metrics(DAY, scored, ["faithfulness"], ["app"])],
        promote_options="permissive",
    )
    overall = check_regression(history, DAY).finding("all", "all", "faithfulness")
    assert overall is not None
    # one day known to differ is left out; six days whose model was not recorded still count
    assert (overall.baseline_days, overall.excluded_days) == (6, 1)
    assert overall.outcome is Outcome.REGRESSION


def test_ok_only_when_every_check_was_made_and_counts_agree() -> None:
    days = fake_history_days(DAY, 8)
    history = history_of(
        {day: day_of(steady(0.85, 300, i)) for i, day in enumerate(days[1:-1])}
        | {DAY: day_of(steady(0.70, 300, 99))}
    )
    report = check_regression(history, DAY)
    assert report.verdict is Verdict.REGRESSION
    overall = report.finding("all", "all", "faithfulness")
    assert overall is not None
    assert overall.baseline_days == 6
    assert "6-day baseline" in report.summary
    assert "6-day baseline" in overall.message
    assert "7-day" not in report.summary
    steady_day = history_of(
        {day: day_of(steady(0.85, 300, i)) for i, day in enumerate(days[:-1])}
        | {DAY: day_of(steady(0.85, 300, 99))}
    )
    fine = check_regression(steady_day, DAY)
    assert fine.verdict is Verdict.OK
    assert fine.summary == f"No regression on {DAY}: all 2 check(s) against the baseline held."


def test_a_regression_also_says_what_was_not_checked() -> None:
    days = fake_history_days(DAY, 8)
    history = history_of(
        {day: day_of(steady(0.85, 300, i)) for i, day in enumerate(days[:-1])}
        | {DAY: day_of(steady(0.60, 300, 99)) + day_of(steady(0.6, 50, 98), app="new")}
    )
    report = check_regression(history, DAY)
    assert report.verdict is Verdict.REGRESSION
    assert report.summary.endswith("Not checked: 1 segment finding(s): 0 of 3 baseline days.")


def test_scoring_changes_mark_the_day_a_judge_or_version_changed() -> None:
    days = fake_history_days(DAY, 6)
    history = history_of(
        {day: day_of(steady(0.5, 30, i), judge="local:bge") for i, day in enumerate(days[:2])}
        | {day: day_of(steady(0.8, 30, 9 + i)) for i, day in enumerate(days[2:4])}
        | {days[4]: day_of(steady(0.8, 30, 20), version="faithfulness/v2")}
        | {DAY: day_of(steady(0.8, 30, 21), version="faithfulness/v2")}
    )
    changes = scoring_changes(history, ["faithfulness"])
    assert [(change.day, change.changes) for change in changes] == [
        (days[2], ["the judge changed from local:bge to openai:gpt-4o-mini"]),
        (days[4], ["the faithfulness version changed from faithfulness/v1 to faithfulness/v2"]),
    ]


def test_one_scored_row_is_not_a_check_made_overall_but_a_small_segment_does_not_block() -> None:
    """One row has no confidence interval: a drop cannot be told from noise. Overall, the day
    is then not checked (never OK over it); in one small segment, the rest of the day decides."""
    days = fake_history_days(DAY, 6)
    history = history_of(
        {day: day_of(steady(0.85, 300, i)) for i, day in enumerate(days[:-1])}
        | {DAY: day_of([0.27])}
    )
    report = check_regression(history, DAY)
    overall = next(f for f in report.findings if f.segment_column == "all")
    assert overall.outcome is Outcome.TOO_FEW_ROWS
    assert overall.delta == pytest.approx(0.27 - 0.85, abs=0.03)
    assert "not checked: one scored row has no confidence interval" in overall.message
    assert report.verdict is Verdict.NOT_CHECKED
    assert "one scored row today, no confidence interval" in report.summary
    assert report.to_dict()["counts"]["too_few_rows"] == 2  # overall and app=a

    history = history_of(
        {
            day: day_of(steady(0.85, 300, i)) + day_of([0.8], app="b")
            for i, day in enumerate(days[:-1])
        }
        | {DAY: day_of(steady(0.85, 300, 77)) + day_of([0.2], app="b")}
    )
    report = check_regression(history, DAY)
    small = next(f for f in report.findings if f.segment_value == "b")
    assert small.outcome is Outcome.TOO_FEW_ROWS
    assert report.verdict is Verdict.OK
