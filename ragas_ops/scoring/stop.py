"""A graceful stop of a scoring run: what SIGTERM (the CLI) and `on_kill` (the scoring task) do.

Airflow sends SIGTERM on a task's timeout, a worker's warm shutdown or a cleared task; a user's
`kill` does too. Stopping at once would lose the answers in flight (paid for, not yet in the
cache: the rerun pays for them again) and leave the output's temporary file. Instead: the judge
sends nothing more (`engine.stopping.STOP_GATE`), the answers in flight land in the cache for at
most `grace_seconds`, then the run is cancelled, which discards its output (the temporary file
is removed, nothing is published), and `ScoringStopped` says what was kept.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Awaitable, Iterator
from contextlib import contextmanager
from typing import TypeVar

from ragas_ops.judge.engine.stopping import STOP_GATE, StopCounts

T = TypeVar("T")

GRACE_SECONDS = 5.0
"""How long answers in flight may take to land once a stop is asked for (a provider's answer
usually takes a few seconds); a scoring task has less, `TASK_GRACE_SECONDS`."""
EXIT_STOPPED = 128 + signal.SIGTERM
"""The exit code of a process stopped by SIGTERM (143): what shells and Airflow expect."""


class ScoringStopped(Exception):
    """The run stopped on request; nothing was published. `counts` says what was kept."""

    def __init__(self, counts: StopCounts, drained: bool) -> None:
        self.counts = counts
        self.drained = drained
        super().__init__(self.summary())

    def summary(self) -> str:
        kept = (
            f"{self.counts.landed} answer(s) in flight landed in the cache"
            if self.drained
            else f"{self.counts.landed} answer(s) in flight landed in the cache, "
            f"{self.counts.abandoned} were not waited for"
        )
        return (
            f"stopped on request: the judge was asked nothing more, {kept}; no output was "
            "written (its temporary file removed); a rerun pays only for what was never answered"
        )


class GracefulStop:
    """Runs a scoring coroutine so that `request` (from a signal handler or another thread)
    stops it gracefully; `run` then raises `ScoringStopped`."""

    def __init__(self, grace_seconds: float = GRACE_SECONDS) -> None:
        self.grace_seconds = grace_seconds
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[object] | None = None
        self._requested = False
        self._drained = True

    async def run(self, work: Awaitable[T]) -> T:
        global _RUNNING  # noqa: PLW0603 (one scoring run per process: the one a stop stops)
        STOP_GATE.reset()
        self._loop = asyncio.get_running_loop()
        self._task = asyncio.current_task()
        _RUNNING = self
        try:
            return await work
        except asyncio.CancelledError:
            if not self._requested:
                raise
            raise ScoringStopped(STOP_GATE.counts, self._drained) from None
        finally:
            _RUNNING = None

    def request(self) -> None:
        """Ask for the stop: safe from a signal handler and from any thread. Before the run
        has started, nothing is in flight: it stops at once."""
        if self._requested:
            return
        self._requested = True
        if self._loop is None:
            raise ScoringStopped(StopCounts(), drained=True)
        self._loop.call_soon_threadsafe(self._begin)

    def _begin(self) -> None:
        STOP_GATE.request_stop()
        assert self._loop is not None
        self._loop.create_task(self._cancel_when_drained())

    async def _cancel_when_drained(self) -> None:
        self._drained = await STOP_GATE.drained(self.grace_seconds)
        if self._task is not None:
            self._task.cancel()

    @contextmanager
    def on_sigterm(self) -> Iterator[None]:
        """SIGTERM asks for the stop while inside (the main thread's handler, restored)."""
        previous = signal.signal(signal.SIGTERM, lambda *_: self.request())
        try:
            yield
        finally:
            signal.signal(signal.SIGTERM, previous)


_RUNNING: GracefulStop | None = None


TASK_GRACE_SECONDS = 3.0
"""The grace of a scoring task's `on_kill`: Airflow 3.3's task supervisor, told by the API server
that the task must stop (marked failed, cleared), sends SIGTERM and SIGKILL 5 s later
(`ActivitySubprocess.kill`'s `escalation_delay`): the drain and the removal of the chunk's
temporary file must be done before then."""


def stop_running_scoring(grace_seconds: float | None = None) -> bool:
    """Ask the scoring run of this process, if one runs, to stop gracefully (an operator's
    `on_kill`: Airflow may call it on another copy of the operator than the one executing),
    with `grace_seconds` instead of the run's own if given; whether one was running."""
    running = _RUNNING
    if running is None:
        return False
    if grace_seconds is not None:
        running.grace_seconds = min(running.grace_seconds, grace_seconds)
    running.request()
    return True
