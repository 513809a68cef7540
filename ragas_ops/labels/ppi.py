"""The human-scale mean of a metric from every row's judge score and a few rows' human labels.

Prediction-powered inference (Angelopoulos et al., Science 2023) with PPI++'s power tuning
(Angelopoulos, Duchi and Zrnic, arXiv 2311.01453): the judge's mean over the unlabelled rows,
scaled by a tuning factor `lam` in [0, 1], plus the mean of `label - lam * judge` over the
labelled rows. `lam = 1` is plain PPI (judge mean plus the mean human-minus-judge difference),
`lam = 0` the labels alone; the tuned `lam` minimises the interval's width, so the interval is
never (asymptotically) wider than the labels-only one, even for a useless judge. The interval is
the normal one. These are the few lines of `ppi_py.ppi_mean_ci` (ppi-python 0.2.3), written
with numpy alone so the library does not pull scipy and statsmodels;
tests/unit/test_labels_ppi.py checks them against it.

Below `MIN_LABELS` labels the normal interval under-covers (ppi-python's own caveat), so the
estimate is not given at all: its status says `too_few_labels`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Literal

import numpy as np
import numpy.typing as npt

MIN_LABELS = 16
"""Fewest labelled rows an interval is given for."""

EstimateStatus = Literal["ok", "too_few_labels"]

Floats = npt.NDArray[np.float64]


@dataclass(frozen=True)
class MeanEstimate:
    """A mean with its confidence interval, or the reason there is none (`status`)."""

    status: EstimateStatus
    labels: int
    """Labelled rows it rests on."""
    rows: int
    """Unlabelled rows whose judge scores it uses (0 for the labels-only mean)."""
    mean: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    lam: float | None = None
    """The power-tuning factor used (1: plain PPI; 0: the labels alone)."""

    @property
    def width(self) -> float | None:
        if self.ci_low is None or self.ci_high is None:
            return None
        return self.ci_high - self.ci_low


def _array(values: Sequence[float] | Floats, name: str) -> Floats:
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1:
        raise ValueError(f"{name}: expected a flat sequence of numbers")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name}: holds a NaN or an infinite value")
    return array


def _weights(weights: Sequence[float] | Floats | None, count: int) -> Floats:
    """Weights normalised to mean 1 (ppi_py's `construct_weight_vector`); ones when none."""
    if weights is None:
        return np.ones(count)
    array = _array(weights, "weights")
    if array.shape[0] != count:
        raise ValueError(f"weights: {array.shape[0]} weights for {count} labelled rows")
    if np.any(array <= 0):
        raise ValueError("weights: every weight must be above 0")
    normalised: Floats = array / array.sum() * count
    return normalised


def tuned_lam(labels: Floats, judged: Floats, unlabelled: Floats, weights: Floats) -> float:
    """PPI++'s variance-minimising `lam` for a mean, clipped to [0, 1] (ppi_py's
    `_calc_lam_glm` for a one-dimensional mean: the gradients are the residuals about the
    plain-PPI estimate)."""
    n, big_n = labels.shape[0], unlabelled.shape[0]
    if np.ptp(np.concatenate([judged, unlabelled])) == 0.0:
        # the judge said the same everywhere: it carries no information, the labels decide
        return 0.0
    plain = float(unlabelled.mean() + (weights * (labels - judged)).mean())
    grads = weights * (labels - plain)
    grads_hat = weights * (judged - plain)
    centred, centred_hat = grads - grads.mean(), grads_hat - grads_hat.mean()
    covariance = 2.0 * float(centred @ centred_hat) / n
    judged_variance = float(np.var(np.concatenate([grads_hat, unlabelled - plain]), ddof=1))
    denominator = 2.0 * (1.0 + n / big_n) * judged_variance
    return float(np.clip(covariance / denominator, 0.0, 1.0))


def _z(confidence: float) -> float:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence}")
    return NormalDist().inv_cdf(0.5 + confidence / 2.0)


def ppi_mean(
    labels: Sequence[float] | Floats,
    judged: Sequence[float] | Floats,
    unlabelled: Sequence[float] | Floats,
    *,
    weights: Sequence[float] | Floats | None = None,
    confidence: float = 0.95,
    lam: float | None = None,
) -> MeanEstimate:
    """The prediction-powered mean of `labels`' scale with its interval.

    `labels` are the human labels of the labelled rows, `judged` the judge's scores of the
    same rows (in the same order), `unlabelled` the judge's scores of every other row.
    `weights` (one per labelled row, any positive scale) make a sample that is not uniform
    (stratified, or more labels on a small day) stand for the rows: a row's inverse
    probability of being labelled. `lam` None tunes it (PPI++), 1 is plain PPI.
    """
    y, y_hat, y_unlabelled = (
        _array(labels, "labels"),
        _array(judged, "judged"),
        _array(unlabelled, "unlabelled"),
    )
    if y.shape != y_hat.shape:
        raise ValueError(f"{y.shape[0]} labels but {y_hat.shape[0]} judge scores of them")
    z = _z(confidence)
    n, big_n = y.shape[0], y_unlabelled.shape[0]
    if n < MIN_LABELS or big_n < 2:
        return MeanEstimate("too_few_labels", labels=n, rows=big_n)
    w = _weights(weights, n)
    if lam is None:
        lam = tuned_lam(y, y_hat, y_unlabelled, w)
    mean = float(lam * y_unlabelled.mean() + (w * (y - lam * y_hat)).mean())
    imputed_se = float(np.std(lam * y_unlabelled)) / np.sqrt(big_n)
    rectifier_se = float(np.std(w * (y - lam * y_hat))) / np.sqrt(n)
    half = z * float(np.hypot(imputed_se, rectifier_se))
    return MeanEstimate("ok", n, big_n, mean, mean - half, mean + half, lam)


def labels_only_mean(
    labels: Sequence[float] | Floats,
    *,
    weights: Sequence[float] | Floats | None = None,
    confidence: float = 0.95,
) -> MeanEstimate:
    """The classical mean of the labels with its normal interval (PPI with `lam = 0`)."""
    y = _array(labels, "labels")
    z = _z(confidence)
    if y.shape[0] < MIN_LABELS:
        return MeanEstimate("too_few_labels", labels=y.shape[0], rows=0)
    w = _weights(weights, y.shape[0])
    mean = float((w * y).mean())
    half = z * float(np.std(w * y)) / np.sqrt(y.shape[0])
    return MeanEstimate("ok", y.shape[0], 0, mean, mean - half, mean + half, 0.0)
