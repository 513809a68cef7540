"""Which 429s should slow the judge down, and which it should simply retry.

A 429 is congestion only when the judge's own pace caused it. The provider's headers usually
say so (`provider.cause_of_429`): no budget left is ours, budget left means another limit
refused the request (an organisation's quota that other applications share, a gateway's own),
and slowing down would not make those 429s rarer, only the night longer.

A 429 without headers is judged by its share: while 429s arrive at about the share they came at
before (the background), they are retried at the same pace. A share clearly above it starts a
trial: the pace is halved (AIMD, `RateLimiter.slow_down`) and the share watched over the next
attempts. If it fell by more than chance explains, the pace was the cause and the judge stays
slowed (and climbs back as usual). If it did not, the 429s do not follow the pace: their share
becomes the background and the pace before the trial is restored.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from typing import Literal

from ragas_ops.judge.limits.provider import RateLimitCause

Reaction = Literal["slow_down", "keep_pace"]

WINDOW_ATTEMPTS = 100
"""The attempts the share of 429s is measured over."""
TRIAL_ATTEMPTS = 40
"""Attempts watched after a slow-down before deciding whether the pace caused the 429s."""
MIN_ATTEMPTS_MEASURED = 20
"""Before this many attempts a share says too little to start a trial: the 429 is retried."""
MIN_TOLERANCE = 0.02
"""A share this far above the background (plus two standard errors) is not the background."""


@dataclass
class _Trial:
    pace_before: float
    share_before: float
    measured_before: int
    outcomes: int = 0
    refused: int = 0


class CongestionControl:
    """Decides, for each 429, whether to slow down; says when a trial ends (`restore`)."""

    def __init__(self, window: int = WINDOW_ATTEMPTS, trial_attempts: int = TRIAL_ATTEMPTS) -> None:
        self._recent: deque[bool] = deque(maxlen=window)
        self._trial_attempts = trial_attempts
        self._trial: _Trial | None = None
        self.background = 0.0
        """The share of attempts answered 429 whatever the pace (learnt; 0 at first)."""
        self.trials = 0
        self.foreign_429s = 0
        """429s retried without slowing down: not caused by this judge's pace."""

    def answered(self) -> float | None:
        """An attempt that was not a 429. Returns the pace to restore when a trial just
        showed the 429s were not the pace's, else None."""
        self._recent.append(False)
        full = len(self._recent) == self._recent.maxlen
        if self._trial is None and full and self.share() < self.background / 2:
            self.background = self.share()  # the others' 429s have become rarer
        return self._count_in_trial(refused=False)

    def refused(self, cause: RateLimitCause, pace: float) -> tuple[Reaction, float | None]:
        """A 429 of the given cause while pacing at `pace`: whether to slow down, and the pace
        to restore if a trial just ended showing the 429s are not the pace's."""
        share_before = self.share()
        self._recent.append(True)
        restore = self._count_in_trial(refused=True)
        if cause == "ours":
            return "slow_down", restore
        if cause == "not_ours" or self._trial is not None or restore is not None:
            self.foreign_429s += 1
            return "keep_pace", restore
        too_few = len(self._recent) < MIN_ATTEMPTS_MEASURED
        if too_few or share_before <= self.background + self._tolerance():
            self.foreign_429s += 1
            return "keep_pace", None
        self._trial = _Trial(pace, self.share(), len(self._recent))
        self.trials += 1
        return "slow_down", None

    def share(self) -> float:
        """The share of the recent attempts answered 429."""
        return sum(self._recent) / len(self._recent) if self._recent else 0.0

    def _tolerance(self) -> float:
        attempts = max(1, len(self._recent))
        spread = math.sqrt(max(self.background * (1 - self.background), 0.0) / attempts)
        return MIN_TOLERANCE + 2 * spread

    def _count_in_trial(self, *, refused: bool) -> float | None:
        trial = self._trial
        if trial is None:
            return None
        trial.outcomes += 1
        trial.refused += refused
        if trial.outcomes < self._trial_attempts:
            return None
        self._trial = None
        share_after = trial.refused / trial.outcomes
        if _fell(trial.share_before, trial.measured_before, share_after, trial.outcomes):
            return None  # the pace was the cause: stay slowed down
        self.background = max(self.background, share_after)
        return trial.pace_before


def _fell(before: float, measured_before: int, after: float, measured_after: int) -> bool:
    """Whether the share of 429s fell by more than chance explains (two standard errors of
    the difference of two proportions): the pace was the cause."""
    pooled = (before * measured_before + after * measured_after) / (
        measured_before + measured_after
    )
    spread = math.sqrt(pooled * (1 - pooled) * (1 / measured_before + 1 / measured_after))
    return before - after > 2 * spread
