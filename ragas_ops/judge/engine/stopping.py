"""Stop sending, let what is in flight land: the judge's side of a graceful stop.

A judge call's requests and the storing of its answer in the cache form one span
(`STOP_GATE.sending()`), in flight from its first request sent (the transport calls
`before_send`). Once a stop is asked for (`scoring.stop.GracefulStop`: SIGTERM to the CLI,
`on_kill` of the scoring task), no request goes out: one not yet sent (waiting for its turn,
its rate or a retry) waits at `before_send` until the run is cancelled, and is never paid for.
The spans in flight go on, so their answers, paid for already, are in the cache when they
close and the rerun does not pay for them again; `drained` says when they have all closed.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass


@dataclass
class StopCounts:
    """What a stop left: spans that closed after it was asked for (answers kept), and spans
    still open when the run was cancelled (requests whose answers were not waited for)."""

    landed: int = 0
    abandoned: int = 0


class StopGate:
    """The process's gate in front of every judge request (one scoring run at a time)."""

    def __init__(self) -> None:
        self.counts = StopCounts()
        self._open = 0
        self._stopping = False
        self._changed: asyncio.Event | None = None

    def reset(self) -> None:
        """A new run: not stopping, nothing in flight (a run cancelled before left none)."""
        self.counts = StopCounts()
        self._open = 0
        self._stopping = False
        self._changed = None

    @property
    def stopping(self) -> bool:
        return self._stopping

    @property
    def in_flight(self) -> int:
        return self._open

    def request_stop(self) -> None:
        """No request is sent from now on (call it from the event loop's thread)."""
        self._stopping = True
        self._notify()

    @asynccontextmanager
    async def sending(self) -> AsyncIterator[None]:
        """The span of one judge call: its requests and the storing of its answer. It counts
        as in flight from its first request actually sent (`before_send`) until it closes."""
        span = _Span()
        token = _CURRENT_SPAN.set(span)
        closed = False
        try:
            yield
            closed = True
        finally:
            _CURRENT_SPAN.reset(token)
            if span.sent:
                self._open -= 1
                if self._stopping:
                    if closed:
                        self.counts.landed += 1
                    else:
                        self.counts.abandoned += 1
                self._notify()

    async def before_send(self) -> None:
        """Called by the transport right before a request goes out: once a stop is asked
        for, waits for the cancellation instead (nothing more is sent, nothing paid)."""
        if self._stopping:
            await asyncio.Event().wait()
        span = _CURRENT_SPAN.get()
        if span is not None and not span.sent:
            span.sent = True
            self._open += 1

    async def drained(self, timeout: float) -> bool:
        """Wait until no span is open, at most `timeout` seconds; whether none is."""
        deadline = asyncio.get_running_loop().time() + timeout
        while self._open:
            remaining = deadline - asyncio.get_running_loop().time()
            if remaining <= 0:
                return False
            changed = self._changed = asyncio.Event()
            try:
                await asyncio.wait_for(changed.wait(), remaining)
            except TimeoutError:
                return self._open == 0
        return True

    def _notify(self) -> None:
        if self._changed is not None:
            self._changed.set()


@dataclass
class _Span:
    sent: bool = False


_CURRENT_SPAN: contextvars.ContextVar[_Span | None] = contextvars.ContextVar(
    "ragas_ops_judge_span", default=None
)

STOP_GATE = StopGate()
"""The gate every judge of this process sends through."""
