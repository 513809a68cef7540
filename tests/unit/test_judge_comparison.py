"""The shadow judge's pieces: its settings, which rows it scores, and the comparison of its
scores with the judge of record's."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from ragas_ops.config import ConfigError, Settings, apply_environment, apply_mapping
from ragas_ops.judge.engine.spec import ModelSpec
from ragas_ops.quality.judge_comparison import (
    JUDGE_COMPARISON_SCHEMA,
    day_comparison,
    paired_bootstrap_ci,
    spearman,
    switch_offset,
)
from ragas_ops.sampling import is_sampled
from ragas_ops.scoring.shadow import (
    CandidatePick,
    candidate_mask,
    candidate_settings,
    candidate_share,
)


def test_judge_candidate_is_a_table_of_the_config_file_and_flat_in_the_environment() -> None:
    settings = Settings()
    assert not settings.judge.candidate.enabled
    apply_mapping(
        settings,
        {"judge": {"model": "gpt-4o-mini", "candidate": {"model": "gpt-5-mini", "sample": 0.1}}},
        "ragas-ops.toml",
    )
    apply_environment(settings, {"RAGAS_OPS_JUDGE_CANDIDATE_RPM": "30"})
    candidate = settings.judge.candidate
    assert (candidate.model, candidate.sample, candidate.rpm) == ("gpt-5-mini", 0.1, 30)
    with pytest.raises(ConfigError, match=r"candidate_sample must be in \(0, 1\]"):
        apply_mapping(settings, {"judge": {"candidate": {"sample": 0}}}, "ragas-ops.toml")
    with pytest.raises(ConfigError, match="unknown setting 'candidate_modle'"):
        apply_mapping(settings, {"judge": {"candidate": {"modle": "x"}}}, "ragas-ops.toml")


def test_the_candidate_judges_with_its_own_model_and_rates_over_the_record_s_rest() -> None:
    settings = Settings()
    with pytest.raises(ConfigError, match="no shadow judge is configured"):
        candidate_settings(settings)
    apply_mapping(
        settings,
        {
            "judge": {
                "base_url": "http://127.0.0.1:9/v1",
                "mode": "batch",
                "model_profile": "classic",  # the record's model's, not the candidate's
                "candidate": {"model": "gpt-5-mini", "tpm": 1000},
            },
            "pipeline": {"sample_fraction": 0.5},
        },
        "f",
    )
    shadow = candidate_settings(settings)
    assert shadow.judge.endpoint.model == "gpt-5-mini"
    assert shadow.judge.endpoint.base_url == "http://127.0.0.1:9/v1"  # the record's
    assert (shadow.judge.limits.rpm, shadow.judge.limits.tpm) == (settings.judge.limits.rpm, 1000)
    assert shadow.judge.batch.mode == "sync"
    assert shadow.judge.model == ModelSpec()  # its name's profile, at the lowest effort
    assert shadow.pipeline.sample_fraction == 1.0  # it scores every row it is given
    assert candidate_share(settings) == 0.05


def test_the_candidate_s_rows_are_chosen_by_id_within_the_record_s_sample() -> None:
    ids = [f"row-{n}" for n in range(4000)]
    chosen = candidate_mask(ids, 0.05)
    picked = [row_id for row_id, keep in zip(ids, chosen, strict=True) if keep]
    assert 120 < len(picked) < 280  # about 5% of 4000
    assert all(is_sampled(row_id, 0.2) for row_id in picked)  # inside a 20% record sample
    assert candidate_mask(ids, 0.05) == chosen  # the same rows on every run
    pick = CandidatePick()
    tables = [pa.table({"id": ids[:2000]}), pa.table({"id": [None, *ids[2000:]]})]
    chosen_rows = sum(t.num_rows for t in pick.of(tables, 0.05))
    assert (pick.rows, pick.chosen, pick.without_id) == (4001, len(picked), 1)
    assert chosen_rows == len(picked)


def _scored(ids: list[str | None], scores: list[float | None], judge: str) -> pa.Table:
    return pa.table(
        {
            "id": ids,
            "faithfulness_score": scores,
            "faithfulness_status": ["ok" if s is not None else "judge_unavailable" for s in scores],
            "judge": [judge] * len(ids),
        }
    )


def test_the_comparison_pairs_rows_by_id_and_says_why_a_row_is_not_paired() -> None:
    record = _scored(["a", "b", "c", "d", "d", "e"], [0.2, 0.4, 0.6, 0.8, 0.9, 1.0], "record")
    candidate = _scored(["a", "b", "c", "d", "e", "x"], [0.3, 0.5, 0.9, 0.8, None, 0.5], "cand")
    (row,) = day_comparison("2026-12-01", record, candidate, ["faithfulness"]).to_pylist()
    # a, b, c pair; d is repeated in the record, x is not there; e failed with the candidate
    assert (row["rows"], row["pairs"], row["unpaired"], row["candidate_failed"]) == (6, 3, 2, 1)
    # a row the judge of record did not score is not the candidate's failure
    record = _scored(["a", "b"], [None, 0.4], "record")
    candidate = _scored(["a", "b"], [None, 0.5], "cand")
    (other,) = day_comparison("2026-12-01", record, candidate, ["faithfulness"]).to_pylist()
    assert (other["pairs"], other["candidate_failed"]) == (1, 0)
    assert row["judge_mean"] == pytest.approx((0.2 + 0.4 + 0.6) / 3)
    assert row["candidate_mean"] == pytest.approx((0.3 + 0.5 + 0.9) / 3)
    assert row["difference"] == pytest.approx(row["candidate_mean"] - row["judge_mean"])
    assert row["difference_ci_low"] <= row["difference"] <= row["difference_ci_high"]
    assert row["mean_abs_difference"] == pytest.approx((0.1 + 0.1 + 0.3) / 3)
    assert row["within_0_1"] == pytest.approx(2 / 3)
    assert row["rank_correlation"] == pytest.approx(1.0)  # the same order
    assert (row["judge"], row["candidate"]) == ("record", "cand")


def test_a_comparison_without_pairs_has_null_statistics_not_zeros() -> None:
    record = _scored(["a"], [0.5], "record")
    candidate = _scored(["b"], [0.5], "cand")
    table = day_comparison("2026-12-01", record, candidate, ["faithfulness"])
    assert table.schema == JUDGE_COMPARISON_SCHEMA
    (row,) = table.to_pylist()
    assert row["pairs"] == 0
    assert all(row[name] is None for name in JUDGE_COMPARISON_SCHEMA.names[8:])


def test_the_interval_covers_a_known_offset_and_the_rank_correlation_sees_order() -> None:
    rng = np.random.default_rng(7)
    judge = rng.uniform(0, 1, 400)
    candidate = judge + 0.1 + rng.normal(0, 0.05, 400)
    low, high = paired_bootstrap_ci(judge, candidate, seed=1)
    assert low < 0.1 < high
    assert high - low < 0.03
    assert paired_bootstrap_ci(judge, candidate, seed=1) == (low, high)  # seeded
    assert spearman(judge, -judge) == pytest.approx(-1.0)
    assert spearman(judge, np.full(400, 0.5)) is None
    ties = np.array([0.0, 0.0, 1.0, 1.0])
    assert spearman(ties, np.array([0.1, 0.2, 0.3, 0.4])) == pytest.approx(0.894427, abs=1e-6)


def test_a_switch_of_judge_is_given_the_offset_measured_last_before_it() -> None:
    record = _scored(["a", "b", "c"], [0.2, 0.4, 0.6], "old")
    earlier = day_comparison(
        "2026-12-01", record, _scored(["a", "b", "c"], [0.3] * 3, "new"), ["faithfulness"]
    )
    latest = day_comparison(
        "2026-12-02", record, _scored(["a", "b", "c"], [0.5] * 3, "new"), ["faithfulness"]
    )
    other = day_comparison(
        "2026-12-02", record, _scored(["a", "b", "c"], [0.9] * 3, "x"), ["faithfulness"]
    )
    rows = [*earlier.to_pylist(), *latest.to_pylist(), *other.to_pylist()]
    offset = switch_offset("2026-12-03", "faithfulness", "new", rows)
    assert offset is not None
    assert offset.startswith("offset measured by the shadow judge on 2026-12-02: +0.100 (95% CI ")
    assert offset.endswith(" over 3 rows")
    assert switch_offset("2026-12-02", "faithfulness", "new", rows) is not None  # 12-01's
    assert switch_offset("2026-12-01", "faithfulness", "new", rows) is None  # none before
    assert switch_offset("2026-12-03", "faithfulness", "another", rows) is None
    assert switch_offset("2026-12-03", "answer_relevance", "new", rows) is None
