"""How a request fits a Bedrock model (`engine.wire.Fitting`): Converse takes one request
shape for every model, so there is nothing to learn from refusals; no reasoning effort is sent
(a model's extended thinking would go in `additionalModelRequestFields`: not offered here)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from ragas_ops.judge.engine.wire import ROOM_CEILING_FACTOR


class ConverseShape:
    """The Fitting of the Converse API."""

    def __init__(self) -> None:
        self._answered = False

    @property
    def effort(self) -> str | None:
        return None

    @property
    def answered(self) -> bool:
        return self._answered

    def reasoning_allowance(self) -> int:
        return 0

    def room_ceiling(self, visible: int) -> int:
        """The most output tokens a request may get: `ROOM_CEILING_FACTOR` x its answer's room
        (Converse spends no hidden reasoning here)."""
        return ROOM_CEILING_FACTOR * visible

    def saw_reasoning(self, tokens_per_reply: int) -> None:
        return None  # Converse reports no reasoning tokens apart from the output

    def learn(self, param: str | None, code: str | None, message: str) -> bool:
        return False  # a ValidationException is no parameter to drop: the request is refused

    def confirm(self) -> None:
        self._answered = True

    @asynccontextmanager
    async def first_answer(self) -> AsyncIterator[None]:
        yield  # Converse needs no first request alone: nothing is learnt from a refusal
