"""Rows begun first are served first: the slots hand a freed slot to the lowest rank, and a
row's requests share the rank of the row that first showed its question or answer."""

from __future__ import annotations

import asyncio

from ragas_ops.judge.priority import RowOrder
from ragas_ops.judge.rate_limit import PrioritySlots


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


def test_a_rows_metrics_share_its_rank_and_a_task_keeps_its_own() -> None:
    async def run() -> dict[str, int]:
        order = RowOrder()
        ranks: dict[str, int] = {}

        async def faithfulness(row: int) -> None:
            ranks[f"f{row}"] = order.rank({"question": f"q{row}", "answer": f"a{row}"})
            await asyncio.sleep(0)
            # Verdicts carry neither the question nor the answer: the task keeps its rank.
            ranks[f"v{row}"] = order.rank({"contexts": ["shared"], "statements": ["s"]})

        async def answer_relevance(row: int) -> None:
            await asyncio.sleep(0)
            ranks[f"ar{row}"] = order.rank({"answer": f"a{row}", "number_of_questions": 3})

        async def context_relevance(row: int) -> None:
            await asyncio.sleep(0)
            ranks[f"cr{row}"] = order.rank({"question": f"q{row}", "contexts": ["shared"]})

        await asyncio.gather(
            *(faithfulness(row) for row in range(3)),
            *(answer_relevance(row) for row in range(3)),
            *(context_relevance(row) for row in range(3)),
        )
        return ranks

    ranks = asyncio.run(run())
    for row in range(3):
        assert ranks[f"f{row}"] == ranks[f"v{row}"] == ranks[f"ar{row}"] == ranks[f"cr{row}"]
    assert ranks["f0"] < ranks["f1"] < ranks["f2"]
