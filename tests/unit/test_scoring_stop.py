"""The scoring task's graceful stop fits inside what Airflow's task supervisor allows it."""

from __future__ import annotations

import asyncio
import inspect

import pytest
from airflow.sdk.execution_time.supervisor import ActivitySubprocess

from ragas_ops.scoring.stop import (
    GRACE_SECONDS,
    TASK_GRACE_SECONDS,
    GracefulStop,
    ScoringStopped,
    stop_running_scoring,
)


def test_the_task_grace_ends_well_before_the_supervisors_sigkill() -> None:
    # SIGTERM, then SIGKILL `escalation_delay` later: the drain, the cancel and the removal of
    # the chunk's temporary file must fit in between
    sigkill_after = inspect.signature(ActivitySubprocess.kill).parameters["escalation_delay"]
    assert sigkill_after.default >= TASK_GRACE_SECONDS + 1.5


def test_stop_running_scoring_shortens_the_grace_of_the_run_it_stops() -> None:
    stop = GracefulStop()
    seen: list[float] = []

    async def scoring() -> None:
        await asyncio.sleep(0)
        assert stop_running_scoring(TASK_GRACE_SECONDS)
        seen.append(stop.grace_seconds)
        await asyncio.sleep(30)  # cancelled: nothing is in flight

    with pytest.raises(ScoringStopped) as stopped:
        asyncio.run(stop.run(scoring()))
    assert stopped.value.drained
    assert seen == [TASK_GRACE_SECONDS]
    assert TASK_GRACE_SECONDS < GRACE_SECONDS
    assert not stop_running_scoring(TASK_GRACE_SECONDS), "no run left to stop"
