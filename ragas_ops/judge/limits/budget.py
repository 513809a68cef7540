"""A run's spending limit: money, tokens, or both.

A request is admitted only if what was spent, plus what requests in flight may cost, plus the
most it can cost itself, stays within the limit; so the limit holds even with many requests in
flight, and the run stops scheduling new work instead of finding out afterwards. (The sync
judge makes a request that would fit once the requests in flight have settled wait for them,
rather than refusing it: the budget is used to the last request that fits.) A refused
request's row gets the status `budget_exhausted`; nothing already answered is thrown away.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ragas_ops.contract.status import Status
from ragas_ops.judge.base import JudgeRowError, Usage


class BudgetExhaustedError(JudgeRowError):
    """The run's budget cannot pay for this request."""

    status = Status.BUDGET_EXHAUSTED


@dataclass(frozen=True)
class Spend:
    """Money and tokens, spent or expected."""

    usd: float = 0.0
    tokens: int = 0

    @classmethod
    def of(cls, usage: Usage) -> Spend:
        return cls(usage.cost_usd or 0.0, usage.tokens)

    def __add__(self, other: Spend) -> Spend:
        return Spend(self.usd + other.usd, self.tokens + other.tokens)

    def __sub__(self, other: Spend) -> Spend:
        return Spend(self.usd - other.usd, self.tokens - other.tokens)

    def scaled(self, factor: float) -> Spend:
        return Spend(self.usd * factor, math.ceil(self.tokens * factor))

    def at_least_zero(self) -> Spend:
        return Spend(max(self.usd, 0.0), max(self.tokens, 0))


class Budget:
    """What one run may still spend. `usd` or `tokens` None: no limit on that."""

    def __init__(self, usd: float | None = None, tokens: int | None = None) -> None:
        self.usd = usd
        self.tokens = tokens
        self._spent = Spend()
        self._reserved = Spend()
        self._holding = 0
        """Reservations held (a count: sums of money do not return to exactly 0)."""
        self.refused = 0
        """Requests refused for want of budget."""

    @property
    def limited(self) -> bool:
        return self.usd is not None or self.tokens is not None

    def describe(self) -> str:
        limits = []
        if self.usd is not None:
            limits.append(f"${self.usd:g}")
        if self.tokens is not None:
            limits.append(f"{self.tokens:,} tokens")
        return " and ".join(limits) or "no limit"

    def reserve(self, expected: Spend, what: str) -> Spend:
        """Hold `expected` for a request about to be sent, or raise `BudgetExhaustedError`."""
        if not self.fits(expected, with_reserved=True):
            raise self.refuse(what)
        self._reserved = self._reserved + expected
        self._holding += 1
        return expected

    def fits(self, expected: Spend, *, with_reserved: bool) -> bool:
        """Whether `expected` fits beside what was spent (and, `with_reserved`, what requests
        in flight may still cost)."""
        held = self._reserved if with_reserved else Spend()
        usd = self._spent.usd + held.usd + expected.usd
        tokens = self._spent.tokens + held.tokens + expected.tokens
        return not (
            (self.usd is not None and usd > self.usd)
            or (self.tokens is not None and tokens > self.tokens)
        )

    @property
    def in_flight(self) -> bool:
        """Whether some reservation is held (a request in flight may settle for less)."""
        return self._holding > 0

    def refuse(self, what: str) -> BudgetExhaustedError:
        """Count a refused request; the error its row gets."""
        self.refused += 1
        return BudgetExhaustedError(
            f"{what}: not sent, the run's budget ({self.describe()}) is spent "
            f"(spent ${self._spent.usd:.4f} and {self._spent.tokens:,} tokens so far)"
        )

    def settle(self, reserved: Spend, actual: Spend) -> None:
        """Replace a reservation by what the request really cost (`Spend()` if it failed)."""
        self._reserved = self._reserved - reserved
        self._holding -= 1
        if not self._holding:
            self._reserved = Spend()
        self.add_spent(actual)

    def add_spent(self, actual: Spend) -> None:
        self._spent = self._spent + actual

    @property
    def spent(self) -> Spend:
        return self._spent
