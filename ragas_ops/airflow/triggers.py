"""The trigger that waits, in Airflow's triggerer, for a chunk's batches to finish.

While it waits, the scoring task is deferred: it holds no worker slot and no pool slot. The
trigger asks the Batch API for the batches' status every `poll_seconds`, and fires once all
of them are finished (completed, failed, expired or cancelled: the task sorts out which rows
were answered), or when `deadline` has passed (the task then fails; its retry re-attaches to
the same batches). It reads the API key in the triggerer, never from its
arguments, which Airflow stores in its database: from the `conn_id` connection when it is
defined (`ragas_ops.airflow.hooks`), else from the triggerer's environment (`api_key_env`).
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import AsyncIterator
from typing import Any

from airflow.triggers.base import BaseTrigger, TriggerEvent

from ragas_ops.secrets import Secret, is_secret, mask_log_records

log = logging.getLogger(__name__)


def _event(payload: dict[str, Any]) -> TriggerEvent:
    return TriggerEvent(payload)  # type: ignore[no-untyped-call]


class BatchesFinishedTrigger(BaseTrigger):
    """Fires when every batch in `batch_ids` is finished, or at `deadline` (Unix time)."""

    def __init__(
        self,
        batch_ids: list[str],
        base_url: str | None,
        api_key_env: str,
        poll_seconds: float,
        deadline: float,
        *,
        conn_id: str | None = None,
    ) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.batch_ids = list(batch_ids)
        self.base_url = base_url
        self.api_key_env = api_key_env
        self.poll_seconds = poll_seconds
        self.deadline = deadline
        self.conn_id = conn_id

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            f"{type(self).__module__}.{type(self).__qualname__}",
            {
                "batch_ids": self.batch_ids,
                "base_url": self.base_url,
                "api_key_env": self.api_key_env,
                "poll_seconds": self.poll_seconds,
                "deadline": self.deadline,
                "conn_id": self.conn_id,
            },
        )

    async def _endpoint(self) -> tuple[str | None, Secret]:
        """The base URL and key: the connection's when it is defined, else the environment's."""
        from ragas_ops.airflow.hooks import JudgeHook

        if self.conn_id:
            found = await JudgeHook(self.conn_id).aendpoint(self.base_url, self.api_key_env)
            if found is not None:
                return found.base_url, found.api_key
        return self.base_url, Secret(os.environ.get(self.api_key_env, ""))

    async def run(self) -> AsyncIterator[TriggerEvent]:
        from airflow.sdk.log import amask_secret

        from ragas_ops.judge.base import JudgeFatalError
        from ragas_ops.judge.batch import TERMINAL_STATUSES, BatchPollError
        from ragas_ops.judge.factory import batch_watcher

        base_url, key = await self._endpoint()
        mask_log_records()
        if is_secret(key.reveal()):  # the triggerer's own log output (`amask_secret`: async)
            await amask_secret(key.reveal())
        watcher = batch_watcher(base_url, key)
        try:
            while True:
                try:
                    statuses = await watcher.statuses(self.batch_ids)
                except JudgeFatalError as error:  # a bad key, no Batch API: no retry helps
                    yield _event({"state": "error", "message": str(error)})
                    return
                except BatchPollError as error:
                    log.warning("%s; will ask again", error)
                    statuses = {}
                if statuses and all(status in TERMINAL_STATUSES for status in statuses.values()):
                    yield _event({"state": "finished", "statuses": statuses})
                    return
                if time.time() >= self.deadline:
                    yield _event({"state": "timeout", "statuses": statuses})
                    return
                log.info("waiting for batches: %s", statuses)
                await asyncio.sleep(self.poll_seconds)
        finally:
            await watcher.aclose()
