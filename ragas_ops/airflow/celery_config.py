"""The Celery workers' configuration (`[celery] celery_config_options`): Airflow's default,
with the scoring task's modules imported once in each worker before it forks its task
processes.

Airflow 3 runs every task in a process forked from a Celery worker process, and the scoring
task imports the pipeline, the judge (the OpenAI SDK), pyarrow and pandas when it starts
(lazily, so that parsing the DAG folder stays fast): about 3 s of CPU per task, 5-19 s of
wall time on a busy two-core host, during which the task holds a pool slot and asks the judge
nothing. Imported in the worker, they are already there in every task it forks.
"""

from __future__ import annotations

from typing import Any

from airflow.providers.celery.executors.default_celery import DEFAULT_CELERY_CONFIG

# What the DAG's tasks import when they run (tests/unit/test_celery_config.py keeps the list
# complete): the pipeline's stages (batch mode's too), the judge and the Airflow glue.
PRELOADED_MODULES = (
    "ragas_ops.airflow.hooks",
    "ragas_ops.airflow.operators",
    "ragas_ops.airflow.task_context",
    "ragas_ops.airflow.triggers",
    "ragas_ops.judge.factory",
    "ragas_ops.pipeline.aggregate",
    "ragas_ops.pipeline.batch_chunk",
    "ragas_ops.pipeline.manifest",
    "ragas_ops.pipeline.plan",
    "ragas_ops.pipeline.publish",
    "ragas_ops.pipeline.report",
    "ragas_ops.pipeline.score",
    "ragas_ops.pipeline.shadow",
    "ragas_ops.pipeline.share",
    "ragas_ops.scoring.stop",
)

CELERY_CONFIG: dict[str, Any] = {
    **DEFAULT_CELERY_CONFIG,
    # Celery imports these in the worker's main process at start, before its pool forks.
    "imports": (*DEFAULT_CELERY_CONFIG.get("imports", ()), *PRELOADED_MODULES),
}
