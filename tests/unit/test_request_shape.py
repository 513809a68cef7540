"""A model the judge does not know is asked one request at a time until one is answered;
then every request that queued behind the first goes at once (issue 39: the queue used to
keep the lock, and a whole run on an unknown model went one request at a time)."""

from __future__ import annotations

import asyncio
from collections import Counter

from ragas_ops.config import Settings
from ragas_ops.judge.chat_completions.shape import shape_for


def most_in_flight(model: str, requests: int = 10) -> tuple[int, int]:
    """Most requests inside `first_answer` at once before and after the first answer."""
    settings = Settings()
    settings.judge.endpoint.model = model
    shape = shape_for(settings.judge, Counter())
    inside = 0
    most = {"before": 0, "after": 0}

    async def ask(first: bool) -> None:
        nonlocal inside
        async with shape.first_answer():
            inside += 1
            phase = "after" if shape.answered else "before"
            most[phase] = max(most[phase], inside)
            await asyncio.sleep(0.02 if first else 0.05)
            if first:
                shape.confirm()
            inside -= 1

    async def run() -> None:
        first = asyncio.create_task(ask(True))
        await asyncio.sleep(0)  # the first request is inside
        await asyncio.gather(first, *(ask(False) for _ in range(requests - 1)))

    asyncio.run(run())
    return most["before"], most["after"]


def test_an_unknown_model_is_asked_once_then_by_every_request_queued() -> None:
    assert most_in_flight("my-gateway-model") == (1, 9)


def test_a_known_model_is_asked_at_once() -> None:
    before, _after = most_in_flight("gpt-4o-mini")
    assert before == 10
