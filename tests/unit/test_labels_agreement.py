"""The judge-human agreement (ragas_ops.labels.agreement) against scipy and scikit-learn."""

from __future__ import annotations

import numpy as np
import pytest

from ragas_ops.labels.agreement import LEVELS, agreement, level_of, ranks, weighted_kappa
from ragas_ops.labels.ppi import MIN_LABELS

scipy_stats = pytest.importorskip("scipy.stats")
sklearn_metrics = pytest.importorskip("sklearn.metrics")


def labelled(count: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    human = rng.choice(LEVELS, size=count)
    judged = np.clip(human + rng.normal(0.05, 0.25, count), 0.0, 1.0)
    return human, judged


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_figures_are_scipys_and_scikit_learns(seed: int) -> None:
    human, judged = labelled(60, seed)
    result = agreement(list(human), list(judged))
    assert result.status == "ok"
    assert result.mean_abs_diff == pytest.approx(np.abs(human - judged).mean())
    assert result.spearman == pytest.approx(scipy_stats.spearmanr(human, judged).statistic)
    expected = sklearn_metrics.cohen_kappa_score(
        [level_of(x) for x in human], [level_of(x) for x in judged], weights="linear"
    )
    assert result.kappa == pytest.approx(expected)


def test_ranks_average_ties_as_scipy_does() -> None:
    values = np.array([0.5, 0.0, 0.5, 1.0, 0.5, 0.0])
    assert list(ranks(values)) == list(scipy_stats.rankdata(values))


def test_a_score_goes_to_the_nearest_level() -> None:
    assert [level_of(x) for x in (0.0, 0.24, 0.25, 0.74, 0.75, 1.0)] == [0, 0, 1, 1, 2, 2]
    with pytest.raises(ValueError, match="in \\[0, 1\\]"):
        level_of(1.2)


def test_perfect_agreement_and_chance() -> None:
    same = [0, 1, 2, 2, 1, 0]
    assert weighted_kappa(same, same, 3) == pytest.approx(1.0)
    assert weighted_kappa([2] * 6, [2] * 6, 3) is None  # chance agrees completely: no kappa


def test_too_few_labels_and_no_variation_say_so() -> None:
    assert agreement([1.0] * (MIN_LABELS - 1), [0.9] * (MIN_LABELS - 1)).status == (
        "too_few_labels"
    )
    flat = agreement([1.0] * MIN_LABELS, [0.9] * MIN_LABELS)
    assert flat.status == "no_variation"
    assert flat.mean_abs_diff == pytest.approx(0.1)
    assert (flat.spearman, flat.kappa) == (None, None)
