"""The operator that scores one chunk of a day, in sync or in batch mode.

Sync mode scores the chunk at once through the rate-limited judge. Batch mode submits the
chunk's judge requests to the OpenAI Batch API and defers to `BatchesFinishedTrigger` while the
batches run, so waiting holds no worker slot; on each resume it collects the answers and submits
what the next step needs (faithfulness' verdicts wait for its statements), until the chunk is
scored. The mode is the run's `judge_mode` parameter, else the `judge.mode` setting.

This module is imported when the DAG file is parsed: it imports nothing heavy at the top.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseOperator

if TYPE_CHECKING:
    from ragas_ops.config import Settings

JUDGE_MODES = ("sync", "batch")


class BatchWaitError(RuntimeError):
    """The batches were not finished by the deadline, or could not be checked."""


class ScoreChunkOperator(BaseOperator):
    """Score one chunk (a dict from the `plan` task) into the run's staging folder."""

    def __init__(self, *, chunk: dict[str, Any], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.chunk = chunk

    def execute(self, context: Any) -> dict[str, Any]:
        from ragas_ops.airflow import hooks, task_context
        from ragas_ops.config import ConfigError
        from ragas_ops.judge.factory import build_judge, capabilities
        from ragas_ops.pipeline.plan import chunk_from_dict
        from ragas_ops.pipeline.score import run_score_chunk
        from ragas_ops.pipeline.shadow import with_candidate

        piece = chunk_from_dict(self.chunk)
        self._label(context)
        settings = self._settings()
        if self._mode(context, settings.judge.batch.mode) == "batch":
            if not capabilities(settings.judge).batch:
                raise ConfigError(
                    f"batch mode needs a judge with a Batch API; the {settings.judge.kind} "
                    "judge has none"
                )
            return self._advance(context)
        sync = dataclasses.replace(settings.judge.batch, mode="sync")  # this run's choice
        settings.judge = dataclasses.replace(settings.judge, batch=sync)
        settings, environ = hooks.environment_for(settings)
        lake = task_context.lake_for(settings)
        with task_context.failed_without_retry():
            result = run_score_chunk(
                lake,
                self.chunk["day"],
                context["run_id"],
                chunk=piece,
                settings=settings,
                judge=build_judge(settings, environ, s3=lake.s3),
            )
        return with_candidate(
            result,
            lake,
            self.chunk["day"],
            context["run_id"],
            chunk=piece,
            settings=settings,
            environ=environ,
        )

    def on_kill(self) -> None:
        """Airflow asks the task to stop (a timeout, a worker's warm shutdown, a cleared task;
        called from its SIGTERM handler): send nothing more, let the answers in flight land in
        the cache for a few seconds, discard the chunk's file (`scoring.stop`). A batch-mode
        task is deferred or collecting: its batches keep running and a retry re-attaches."""
        from ragas_ops.scoring.stop import TASK_GRACE_SECONDS, stop_running_scoring

        # this process's run (`self` may be a copy of the one executing), done before Airflow's
        # SIGKILL
        stop_running_scoring(TASK_GRACE_SECONDS)

    def resume(self, context: Any, event: dict[str, Any] | None = None) -> dict[str, Any]:
        """Back from the trigger: collect the finished batches and go on."""
        self._label(context)
        event = event or {}
        state = event.get("state")
        if state == "error":
            raise BatchWaitError(f"checking the batches failed: {event.get('message')}")
        if state == "timeout":
            raise BatchWaitError(
                f"the batches were not finished by the deadline ({event.get('statuses')}); a "
                "retry of this task re-attaches to them"
            )
        return self._advance(context)

    def _advance(self, context: Any) -> dict[str, Any]:  # noqa: RET503 (defer() never returns)
        from ragas_ops.airflow import hooks, task_context
        from ragas_ops.airflow.triggers import BatchesFinishedTrigger
        from ragas_ops.pipeline.batch_chunk import Waiting, advance
        from ragas_ops.pipeline.plan import chunk_from_dict
        from ragas_ops.pipeline.shadow import with_candidate

        settings = self._settings()
        settings, environ = hooks.environment_for(settings)
        with task_context.failed_without_retry():
            progress = asyncio.run(
                advance(
                    task_context.lake_for(settings),
                    self.chunk["day"],
                    context["run_id"],
                    chunk=chunk_from_dict(self.chunk),
                    settings=settings,
                    environ=environ,
                )
            )
        if not isinstance(progress, Waiting):  # scored: the shadow judge's sample, in sync
            return with_candidate(
                progress,
                task_context.lake_for(settings),
                self.chunk["day"],
                context["run_id"],
                chunk=chunk_from_dict(self.chunk),
                settings=settings,
                environ=environ,
            )
        endpoint, batch = settings.judge.endpoint, settings.judge.batch
        self.defer(
            trigger=BatchesFinishedTrigger(
                batch_ids=progress.batch_ids,
                base_url=endpoint.base_url,
                api_key_env=endpoint.api_key_env,
                conn_id=endpoint.conn_id,
                poll_seconds=batch.poll_seconds,
                deadline=time.time() + batch.wait_seconds,
            ),
            method_name="resume",
        )

    def _label(self, context: Any) -> None:
        """The chunk's label in the UI (`map_index_template`)."""
        rows = sum(int(piece["rows"]) for piece in self.chunk["slices"])
        context["chunk_label"] = f"chunk {self.chunk['index']} ({rows} rows)"

    def _settings(self) -> Settings:
        from ragas_ops.airflow import task_context
        from ragas_ops.pipeline.share import chunk_settings

        settings = task_context.pipeline_settings()
        piece_rows = sum(int(piece["rows"]) for piece in self.chunk["slices"])
        day_rows = int(self.chunk.get("day_rows", 0))
        if self.pool == settings.pipeline.backfill_pool:
            return chunk_settings(settings, piece_rows, day_rows, "backfill")
        return chunk_settings(settings, piece_rows, day_rows, "nightly")

    @staticmethod
    def _mode(context: Any, default: str) -> str:
        requested = (context.get("params") or {}).get("judge_mode")
        return str(requested) if requested in JUDGE_MODES else default
