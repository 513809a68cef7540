"""The PPI++ mean (ragas_ops.labels.ppi) against ppi-python's own, and its simulated coverage."""

from __future__ import annotations

import numpy as np
import pytest
from ragas_ops_testing.ppi_simulation import TRUE_MEAN, BiasedJudge, simulate

from ragas_ops.labels.ppi import MIN_LABELS, labels_only_mean, ppi_mean

ppi_py = pytest.importorskip("ppi_py", reason="ppi-python is in the dev extra")


def day(labels: int, rows: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    human = rng.choice([0.0, 0.5, 1.0], size=labels + rows, p=[0.3, 0.3, 0.4])
    scores = BiasedJudge(bias=0.1, noise=0.2).scores(human, rng)
    return human[:labels], scores[:labels], scores[labels:]


@pytest.mark.parametrize(("labels", "rows", "seed"), [(16, 500, 1), (40, 2000, 2), (300, 900, 3)])
def test_the_interval_is_ppi_pythons(labels: int, rows: int, seed: int) -> None:
    human, judged, unlabelled = day(labels, rows, seed)
    estimate = ppi_mean(human, judged, unlabelled, confidence=0.9)
    low, high = ppi_py.ppi_mean_ci(human, judged, unlabelled, alpha=0.1)
    assert estimate.status == "ok"
    assert (estimate.ci_low, estimate.ci_high) == pytest.approx((low[0], high[0]), abs=1e-12)
    point = ppi_py.ppi_mean_pointestimate(human, judged, unlabelled)
    assert estimate.mean == pytest.approx(float(np.squeeze(point)), abs=1e-12)


def test_weights_and_a_fixed_lam_are_ppi_pythons() -> None:
    human, judged, unlabelled = day(60, 1000, 4)
    weights = np.where(np.arange(60) < 20, 3.0, 1.0)  # a stratum labelled three times as thinly
    for lam in (None, 1.0, 0.0):
        estimate = ppi_mean(human, judged, unlabelled, weights=weights, lam=lam)
        low, high = ppi_py.ppi_mean_ci(human, judged, unlabelled, alpha=0.05, w=weights, lam=lam)
        assert (estimate.ci_low, estimate.ci_high) == pytest.approx((low[0], high[0]), abs=1e-12)


def test_the_labels_only_mean_is_the_classical_interval() -> None:
    human, _, _ = day(80, 10, 5)
    estimate = labels_only_mean(human)
    low, high = ppi_py.classical_mean_ci(human, alpha=0.05)
    assert (estimate.ci_low, estimate.ci_high) == pytest.approx((low, high), abs=1e-12)


def test_below_the_minimum_there_is_no_interval_but_a_reason() -> None:
    human, judged, unlabelled = day(MIN_LABELS - 1, 500, 6)
    estimate = ppi_mean(human, judged, unlabelled)
    assert estimate.status == "too_few_labels"
    assert (estimate.mean, estimate.ci_low, estimate.ci_high) == (None, None, None)
    assert estimate.labels == MIN_LABELS - 1
    assert labels_only_mean(human).status == "too_few_labels"


def test_a_judge_that_says_the_same_everywhere_leaves_the_labels_to_decide() -> None:
    human, _, _ = day(30, 100, 7)
    estimate = ppi_mean(human, np.full(30, 0.8), np.full(100, 0.8))
    assert estimate.lam == 0.0
    assert estimate.mean == pytest.approx(human.mean())


@pytest.mark.parametrize(
    ("labels", "judged", "message"),
    [
        ([0.5] * 20, [0.5] * 19, "20 labels but 19"),
        ([float("nan")] + [0.5] * 19, [0.5] * 20, "labels: holds a NaN"),
    ],
)
def test_bad_input_is_refused(labels: list[float], judged: list[float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ppi_mean(labels, judged, [0.5] * 100)


def test_the_interval_covers_the_human_mean_at_its_nominal_rate() -> None:
    # 2,000 simulated days of 2,000 rows, 200 labels each (0.8 s): the Monte Carlo standard
    # error of a 95% coverage is 0.0049, so 4 of them leave a fixed seed far from flaking
    coverage = simulate(labels=200, rows=2000, reps=2000, seed=43)
    tolerance = 4 * coverage.monte_carlo_error()
    assert abs(coverage.rate("ppi") - 0.95) <= tolerance
    assert abs(coverage.rate("labels_only") - 0.95) <= tolerance
    assert coverage.median_width("ppi") < 0.6 * coverage.median_width("labels_only")
    # the judge alone is biased as constructed (+0.12 before clipping to [0, 1]): its narrow
    # interval almost never holds the truth
    assert coverage.mean_estimate("judge_only") - TRUE_MEAN > 0.04
    assert coverage.rate("judge_only") < 0.01
    assert abs(coverage.mean_estimate("ppi") - TRUE_MEAN) < 0.005
