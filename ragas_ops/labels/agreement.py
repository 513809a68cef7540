"""How well the judge agrees with people on the rows they labelled.

Three figures, each a different question:
- `mean_abs_diff`: how far apart the judge's score and the person's label are, on the score's
  own scale (0 = always the same);
- `spearman`: whether the judge orders rows as people do (rank correlation, ties averaged),
  whatever its scale;
- `kappa`: linearly weighted Cohen's kappa on the three label levels, the judge's score rounded
  to the nearest level: agreement beyond what chance gives two raters with these marginals, an
  adjacent level counting half (1: always the same level, 0: chance). Cohen's, not
  Krippendorff's alpha: each labelled row has exactly two raters (the judge of record and one
  person), with no missing ratings, where the two coincide closely; Cohen's is what
  scikit-learn's `cohen_kappa_score(weights="linear")` computes, which the tests check it
  against.

A figure that cannot be computed (too few labels, or no variation to correlate or to beat
chance with) is None with the reason in `status`, never NaN.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from ragas_ops.labels.ppi import MIN_LABELS

LEVELS = (0.0, 0.5, 1.0)
"""The three label levels: none, some, all (e.g. faithfulness: no claim, some claims, every
claim supported)."""

AgreementStatus = Literal["ok", "too_few_labels", "no_variation"]


@dataclass(frozen=True)
class Agreement:
    """The judge-human agreement on `labels` labelled rows."""

    status: AgreementStatus
    labels: int
    mean_abs_diff: float | None = None
    spearman: float | None = None
    kappa: float | None = None


def level_of(score: float) -> int:
    """The index in `LEVELS` of the level nearest to a score in [0, 1] (ties go up)."""
    if not 0.0 <= score <= 1.0:
        raise ValueError(f"a score must lie in [0, 1], got {score}")
    return min(int(score * 2 + 0.5), len(LEVELS) - 1)


def ranks(values: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Ranks from 1, ties given their average rank (as scipy's `rankdata`)."""
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    result = np.empty(values.shape[0], dtype=np.float64)
    start = 0
    while start < ordered.shape[0]:
        end = start
        while end + 1 < ordered.shape[0] and ordered[end + 1] == ordered[start]:
            end += 1
        result[order[start : end + 1]] = (start + end) / 2.0 + 1.0
        start = end + 1
    return result


def spearman(
    first: Sequence[float] | npt.NDArray[np.float64],
    second: Sequence[float] | npt.NDArray[np.float64],
) -> float | None:
    """Spearman's rank correlation; None when either side does not vary."""
    a, b = ranks(np.asarray(first, float)), ranks(np.asarray(second, float))
    if np.ptp(a) == 0 or np.ptp(b) == 0:
        return None
    return float(np.corrcoef(a, b)[0, 1])


def weighted_kappa(first: Sequence[int], second: Sequence[int], levels: int) -> float | None:
    """Linearly weighted Cohen's kappa of two raters' level indices; None when chance alone
    agrees completely (both raters always chose one and the same level)."""
    observed = np.zeros((levels, levels))
    for a, b in zip(first, second, strict=True):
        observed[a, b] += 1
    observed /= observed.sum()
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0))
    index = np.arange(levels)
    weights = np.abs(index[:, None] - index[None, :]) / (levels - 1)
    chance_disagreement = float((weights * expected).sum())
    if chance_disagreement == 0.0:
        return None
    return 1.0 - float((weights * observed).sum()) / chance_disagreement


def agreement(labels: Sequence[float], judged: Sequence[float]) -> Agreement:
    """The judge-human agreement of the labelled rows (`labels[i]` and the judge's
    `judged[i]` are the same row)."""
    if len(labels) != len(judged):
        raise ValueError(f"{len(labels)} labels but {len(judged)} judge scores of them")
    count = len(labels)
    if count < MIN_LABELS:
        return Agreement("too_few_labels", count)
    human, judge = np.asarray(labels, float), np.asarray(judged, float)
    mean_abs_diff = float(np.abs(human - judge).mean())
    rank = spearman(human, judge)
    kappa = weighted_kappa([level_of(x) for x in human], [level_of(x) for x in judge], len(LEVELS))
    status: AgreementStatus = "ok" if rank is not None and kappa is not None else "no_variation"
    return Agreement(status, count, mean_abs_diff, rank, kappa)
