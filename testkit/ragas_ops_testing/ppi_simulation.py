"""A simulated day of scored rows with a known human-scale mean, and a judge of known bias.

People label a row none / some / all (0, 0.5, 1) with probabilities `LEVEL_SHARES`, so the
human-scale mean is known exactly (`TRUE_MEAN`); the judge scores each row as its label plus a
bias and Gaussian noise, clipped to [0, 1] (so its own mean is off by less than the bias:
+0.055 for the default +0.12). Each
repetition draws `rows` scored rows and `labels` labelled ones (a uniform sample, as the
labelling queue draws) and asks each estimator for a 95% interval: the PPI one
(`ragas_ops.labels.ppi.ppi_mean`, tuned and plain), the labels alone, and the judge alone. Used by
benchmarks/bench_ppi_coverage.py (the figures of docs/benchmarks.md) and the coverage test.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from statistics import NormalDist

import numpy as np

from ragas_ops.labels.ppi import MeanEstimate, labels_only_mean, ppi_mean

LEVELS = np.array([0.0, 0.5, 1.0])
LEVEL_SHARES = np.array([0.2, 0.3, 0.5])
TRUE_MEAN = float(LEVELS @ LEVEL_SHARES)
"""The human-scale mean every estimator is after: 0.65."""
ESTIMATORS = ("ppi", "ppi_plain", "labels_only", "judge_only")
"""PPI++ (tuned `lam`), plain PPI (`lam = 1`), the labels alone, the judge alone."""


@dataclass(frozen=True)
class BiasedJudge:
    """A judge whose score is the person's label plus `bias` plus N(0, `noise`), in [0, 1]."""

    bias: float = 0.12
    noise: float = 0.15

    def scores(self, labels: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        noisy = labels + self.bias + rng.normal(0.0, self.noise, labels.shape[0])
        return np.clip(noisy, 0.0, 1.0)


@dataclass
class Coverage:
    """How often each estimator's interval held `TRUE_MEAN`, and its widths, over `reps`."""

    labels: int
    rows: int
    reps: int = 0
    covered: dict[str, int] = field(default_factory=lambda: dict.fromkeys(ESTIMATORS, 0))
    widths: dict[str, list[float]] = field(
        default_factory=lambda: {name: [] for name in ESTIMATORS}
    )
    means: dict[str, list[float]] = field(default_factory=lambda: {name: [] for name in ESTIMATORS})

    def rate(self, estimator: str) -> float:
        return self.covered[estimator] / self.reps

    def monte_carlo_error(self, nominal: float = 0.95) -> float:
        """The standard error of a coverage rate of `nominal` over `reps` repetitions."""
        return float(np.sqrt(nominal * (1 - nominal) / self.reps))

    def median_width(self, estimator: str) -> float:
        return float(np.median(self.widths[estimator]))

    def mean_estimate(self, estimator: str) -> float:
        return float(np.mean(self.means[estimator]))

    def add(self, estimator: str, estimate: MeanEstimate) -> None:
        assert estimate.mean is not None
        assert estimate.ci_low is not None
        assert estimate.ci_high is not None
        self.covered[estimator] += estimate.ci_low <= TRUE_MEAN <= estimate.ci_high
        self.widths[estimator].append(estimate.ci_high - estimate.ci_low)
        self.means[estimator].append(estimate.mean)


def judge_only_mean(scores: np.ndarray, confidence: float = 0.95) -> MeanEstimate:
    """The judge's own mean over every row with its normal interval: what is published today."""
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    mean = float(scores.mean())
    half = z * float(scores.std(ddof=1)) / np.sqrt(scores.shape[0])
    return MeanEstimate("ok", 0, scores.shape[0], mean, mean - half, mean + half)


def simulate(
    labels: int,
    rows: int = 2000,
    reps: int = 1000,
    seed: int = 43,
    judge: BiasedJudge | None = None,
) -> Coverage:
    """`reps` simulated days of `rows` scored rows, `labels` of them labelled."""
    judge = judge or BiasedJudge()
    rng = np.random.default_rng(seed)
    coverage = Coverage(labels=labels, rows=rows)
    for _ in range(reps):
        human = rng.choice(LEVELS, size=rows, p=LEVEL_SHARES)
        scores = judge.scores(human, rng)
        labelled = rng.choice(rows, size=labels, replace=False)
        unlabelled = np.ones(rows, dtype=bool)
        unlabelled[labelled] = False
        coverage.add("ppi", ppi_mean(human[labelled], scores[labelled], scores[unlabelled]))
        coverage.add(
            "ppi_plain", ppi_mean(human[labelled], scores[labelled], scores[unlabelled], lam=1.0)
        )
        coverage.add("labels_only", labels_only_mean(human[labelled]))
        coverage.add("judge_only", judge_only_mean(scores))
        coverage.reps += 1
    return coverage
