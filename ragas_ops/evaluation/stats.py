"""Agreement and classification statistics, with ties handled explicitly."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd


def agreement(preferred: float, other: float) -> float:
    """1 when the human-preferred side scores higher, 0 when lower, 0.5 for a tie."""
    if preferred > other:
        return 1.0
    return 0.5 if preferred == other else 0.0


def roc_auc(labels: Sequence[bool], scores: Sequence[float]) -> float | None:
    """Area under the ROC curve (the Mann-Whitney statistic; tied scores count half).

    None when one class is absent: the area is undefined then, never 0.5 by default.
    """
    y = np.asarray(labels, dtype=bool)
    positives, negatives = int(y.sum()), int((~y).sum())
    if positives == 0 or negatives == 0:
        return None
    ranks = pd.Series(np.asarray(scores, dtype=float)).rank(method="average").to_numpy()
    return float((ranks[y].sum() - positives * (positives + 1) / 2) / (positives * negatives))


def balanced_accuracy(labels: Sequence[bool], scores: Sequence[float], threshold: float) -> float:
    """Mean of the true positive and true negative rates when `score >= threshold` is positive.

    A class that is absent contributes no rate (the other class's rate is returned alone).
    """
    y = np.asarray(labels, dtype=bool)
    predicted = np.asarray(scores, dtype=float) >= threshold
    rates = []
    if y.any():
        rates.append(float(predicted[y].mean()))
    if (~y).any():
        rates.append(float((~predicted[~y]).mean()))
    return float(np.mean(rates)) if rates else float("nan")


def best_threshold(labels: Sequence[bool], scores: Sequence[float]) -> float:
    """The threshold with the best balanced accuracy (the lowest such one)."""
    candidates = sorted(set(float(s) for s in scores))
    if not candidates:
        return 0.5
    return max(candidates, key=lambda t: (balanced_accuracy(labels, scores, t), -t))
