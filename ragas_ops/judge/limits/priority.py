"""Which row's requests go first, and when a new row may start under a budget.

Every request carries the row it is for (`RowTicket`, through the `CURRENT_ROW` context
variable that the scorer and the metrics set): requests waiting for a slot or for budget go
lowest row ordinal first, so the rows begun first finish first.

Under a budget a row starts (sends its first request) only when the budget can pay, beside
what was spent and what requests in flight may cost, what every row under way is still
expected to cost, what this row is expected to cost, and one request's worst case more (the
largest reservation seen: a row's last request reserves its most before it is sent). What a
row is expected to cost is corrected by what the finished rows of the run really cost against
their expectation, when that is more (an estimate that runs low must not leave rows half
scored; one that runs high only leaves a row's worth unspent at the end). Rows start in
ordinal order: the lowest waiting row is the one considered. When it does not fit it
waits while rows are under way (they usually cost less than expected); once nothing is under
way and it still does not fit, it is refused, and so is every row after it. Rows already
started are never refused by this rule: they finish, so the rows past a budget are the last
rows, whole.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from enum import Enum

from ragas_ops.judge.base import RowTicket
from ragas_ops.judge.limits.budget import Budget, Spend

NO_ROW_PRIORITY = -1
"""The priority of a request made for no row in particular (the shared embeddings of rows
under way, requests resent after a batch): ahead of every row."""


def priority_of(row: RowTicket | None) -> int:
    """Lower goes first: the row's ordinal."""
    return NO_ROW_PRIORITY if row is None else row.ordinal


class Decision(Enum):
    START = "start"
    WAIT = "wait"
    REFUSE = "refuse"


@dataclass
class _UnderWay:
    """A started row: what it was expected to cost, what it has cost, what it holds now."""

    expected: Spend
    settled: Spend = field(default_factory=Spend)
    reserved: Spend = field(default_factory=Spend)

    def outstanding(self, correction: float) -> Spend:
        """What it may still need beyond what it spent and holds (never below 0)."""
        return (self.expected.scaled(correction) - self.settled - self.reserved).at_least_zero()


class RowAdmission:
    """The rows under way under one budget, and whether a new row may start."""

    def __init__(self, budget: Budget) -> None:
        self.budget = budget
        self._under_way: dict[int, _UnderWay] = {}
        self._waiting: Counter[int] = Counter()
        self._first_waiting: int | None = None
        self._refused_from: int | None = None
        self.largest_reservation = Spend()
        """One request's worst case: kept free when a row starts."""
        self.rows_started = 0
        self._expected_finished = Spend()
        self._settled_finished = Spend()

    @property
    def correction(self) -> float:
        """What finished rows cost over what they were expected to (at least 1)."""
        ratios = [1.0]
        if self._expected_finished.usd > 0:
            ratios.append(self._settled_finished.usd / self._expected_finished.usd)
        if self._expected_finished.tokens > 0:
            ratios.append(self._settled_finished.tokens / self._expected_finished.tokens)
        return max(ratios)

    def started(self, ordinal: int) -> bool:
        return ordinal in self._under_way

    def wait(self, ordinal: int) -> None:
        self._waiting[ordinal] += 1
        if self._first_waiting is None or ordinal < self._first_waiting:
            self._first_waiting = ordinal

    def stop_waiting(self, ordinal: int) -> None:
        self._waiting[ordinal] -= 1
        if self._waiting[ordinal] <= 0:
            del self._waiting[ordinal]
            if ordinal == self._first_waiting:
                self._first_waiting = min(self._waiting, default=None)

    def decide(self, row: RowTicket, expected: Spend, *, in_flight: bool) -> Decision:
        """Whether `row` (waiting, see `wait`) may start now."""
        ordinal = row.ordinal
        if self._refused_from is not None and ordinal >= self._refused_from:
            return Decision.REFUSE
        if ordinal != self._first_waiting or self._earlier_row_not_started(row):
            return Decision.WAIT  # a row before it goes first: rows start in order
        correction = self.correction
        committed = expected.scaled(correction) + self.largest_reservation
        for under_way in self._under_way.values():
            committed = committed + under_way.outstanding(correction)
        if self.budget.fits(committed, with_reserved=True):
            self._under_way[ordinal] = _UnderWay(expected)
            self.rows_started += 1
            return Decision.START
        if self._under_way or in_flight:
            return Decision.WAIT
        self._refused_from = ordinal
        return Decision.REFUSE

    def _earlier_row_not_started(self, row: RowTicket) -> bool:
        """Whether a row before `row` in its sequence is neither finished nor started (its
        first request has not come yet: it comes first)."""
        if row.sequence is None:
            return False
        for ordinal in row.sequence.open:
            if ordinal >= row.ordinal:
                return False
            if ordinal not in self._under_way:
                return True
        return False

    def reserve(self, ordinal: int | None, reserved: Spend) -> None:
        if reserved.usd > self.largest_reservation.usd or (
            reserved.tokens > self.largest_reservation.tokens
        ):
            self.largest_reservation = Spend(
                max(reserved.usd, self.largest_reservation.usd),
                max(reserved.tokens, self.largest_reservation.tokens),
            )
        row = self._under_way.get(ordinal) if ordinal is not None else None
        if row is not None:
            row.reserved = row.reserved + reserved

    def settle(self, ordinal: int | None, reserved: Spend, actual: Spend) -> None:
        row = self._under_way.get(ordinal) if ordinal is not None else None
        if row is not None:
            row.reserved = (row.reserved - reserved).at_least_zero()
            row.settled = row.settled + actual

    def finish(self, ordinal: int) -> None:
        """The row's metrics are all done: it needs nothing more."""
        row = self._under_way.pop(ordinal, None)
        if row is not None and not row.reserved.tokens:
            self._expected_finished = self._expected_finished + row.expected
            self._settled_finished = self._settled_finished + row.settled
