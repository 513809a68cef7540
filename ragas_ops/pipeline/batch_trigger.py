"""Kept for triggers deferred before the move to `ragas_ops.airflow.triggers`: Airflow stores a
deferred trigger's class path, and a task deferred before an upgrade must still resume after it."""

from ragas_ops.airflow.triggers import BatchesFinishedTrigger

__all__ = ["BatchesFinishedTrigger"]
