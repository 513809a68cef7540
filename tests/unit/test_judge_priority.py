"""Rows begun first are served first: the slots hand a freed slot to the lowest rank; every
request carries its row's ticket; under a budget a row starts only when the budget covers it
beside the rows under way, in order, and once one cannot, no later row starts."""

from __future__ import annotations

import asyncio

from ragas_ops.judge.base import CURRENT_ROW, RowSequence, RowTicket
from ragas_ops.judge.limits.budget import Budget, Spend
from ragas_ops.judge.limits.priority import Decision, RowAdmission
from ragas_ops.judge.limits.rate_limit import PrioritySlots


def test_a_freed_slot_goes_to_the_lowest_rank_waiting() -> None:
    served: list[int] = []

    async def run() -> None:
        slots = PrioritySlots(1)
        everyone_waits = asyncio.Event()

        async def use(rank: int) -> None:
            async with slots.slot(rank):
                served.append(rank)
                if rank < 0:
                    await everyone_waits.wait()

        holder = asyncio.create_task(use(-1))
        await asyncio.sleep(0)  # the holder takes the only slot
        waiters = [asyncio.create_task(use(rank)) for rank in (5, 3, 9, 1, 3)]
        await asyncio.sleep(0.01)  # all of them queue
        everyone_waits.set()
        await asyncio.gather(holder, *waiters)

    asyncio.run(run())
    assert served == [-1, 1, 3, 3, 5, 9]


def test_a_cancelled_waiter_gives_its_place_up() -> None:
    async def run() -> list[int]:
        slots = PrioritySlots(1)
        served: list[int] = []

        async def use(rank: int) -> None:
            async with slots.slot(rank):
                served.append(rank)
                await asyncio.sleep(0.01)

        first = asyncio.create_task(use(0))
        await asyncio.sleep(0)
        doomed = asyncio.create_task(use(1))
        later = asyncio.create_task(use(2))
        await asyncio.sleep(0)
        doomed.cancel()
        await asyncio.gather(first, later, return_exceptions=True)
        return served

    assert asyncio.run(run()) == [0, 2]


def test_a_new_row_starts_only_when_the_budget_covers_it_beside_the_rows_under_way() -> None:
    budget = Budget(usd=1.0)
    admission = RowAdmission(budget)
    row = Spend(0.3, 0)
    for ordinal in (0, 1, 2):
        admission.wait(ordinal)
    assert admission.decide(RowTicket(0), row, in_flight=False) is Decision.START
    admission.stop_waiting(0)
    assert admission.decide(RowTicket(2), row, in_flight=False) is Decision.WAIT  # row 1 goes first
    assert admission.decide(RowTicket(1), row, in_flight=False) is Decision.START
    admission.stop_waiting(1)
    held = budget.reserve(Spend(0.2, 0), "row 0's request")  # its most is 0.2
    admission.reserve(0, held)
    # 0.2 held, 0.1 more expected for row 0, 0.3 for row 1, the largest reservation (0.2)
    # kept free: 0.3 more does not fit while they are under way, so row 2 waits for them.
    assert admission.decide(RowTicket(2), row, in_flight=True) is Decision.WAIT
    budget.settle(held, Spend(0.1, 0))
    admission.settle(0, held, Spend(0.1, 0))
    admission.finish(0)  # row 0 cost 0.1, not 0.3
    admission.finish(1)
    assert admission.decide(RowTicket(2), row, in_flight=False) is Decision.START


def test_a_row_that_cannot_fit_when_nothing_is_under_way_is_refused_with_every_later_row() -> None:
    budget = Budget(usd=1.0)
    budget.add_spent(Spend(0.8, 0))
    admission = RowAdmission(budget)
    admission.wait(5)
    admission.wait(6)
    assert admission.decide(RowTicket(5), Spend(0.3, 0), in_flight=False) is Decision.REFUSE
    admission.stop_waiting(5)
    assert admission.decide(RowTicket(6), Spend(0.01, 0), in_flight=False) is Decision.REFUSE
    admission.stop_waiting(6)
    admission.wait(4)
    before = RowTicket(4)
    assert admission.decide(before, Spend(0.1, 0), in_flight=False) is Decision.START


def test_requests_carry_the_row_their_task_is_scoring() -> None:
    async def run() -> list[int | None]:
        seen: list[int | None] = []

        async def metric_request(ticket: RowTicket) -> None:
            with ticket.current():
                await asyncio.sleep(0)
                row = CURRENT_ROW.get()
                seen.append(None if row is None else row.ordinal)

        tickets = [RowTicket(ordinal) for ordinal in (3, 4)]
        await asyncio.gather(*(metric_request(ticket) for ticket in tickets + tickets))
        seen.append(None if CURRENT_ROW.get() is None else -1)
        return seen

    assert sorted(asyncio.run(run()), key=str) == [3, 3, 4, 4, None]


def test_a_ticket_is_finished_when_its_last_metric_is() -> None:
    finished: list[int] = []
    ticket = RowTicket(7, metrics=2, listeners=[lambda row: finished.append(row.ordinal)])
    ticket.finish_metric()
    assert not ticket.finished
    assert finished == []
    ticket.finish_metric()
    assert ticket.finished
    assert finished == [7]


def test_a_row_whose_first_request_comes_late_is_not_overtaken() -> None:
    """Row 0's only request is its last metric's: row 1, whose first request comes first,
    waits for it, and goes once row 0 has started, or is finished without a request."""
    sequence = RowSequence()
    first, second, third = (sequence.issue(None, metrics=1) for _ in range(3))
    admission = RowAdmission(Budget(usd=1.0))
    admission.wait(1)
    assert admission.decide(second, Spend(0.1, 0), in_flight=False) is Decision.WAIT
    admission.wait(0)
    assert admission.decide(first, Spend(0.1, 0), in_flight=False) is Decision.START
    admission.stop_waiting(0)
    assert admission.decide(second, Spend(0.1, 0), in_flight=False) is Decision.START
    admission.stop_waiting(1)
    first.finish_metric()
    second.finish_metric()
    third.finish_metric()
    assert sequence.open == {}
