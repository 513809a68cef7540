"""Weekly warehouse maintenance: expire old Iceberg snapshots and compact recent days.

    maintain

With `warehouse.table_format = iceberg`: snapshots older than
`warehouse.snapshot_retention_days` are expired (time travel reaches that far back; the
current snapshot of each table is always kept), and the latest `warehouse.compact_days` days
of each table that are spread over several files are rewritten as one (the `runs` table gets
a small file per run). With `parquet` (one file per day and table already) it only logs that
there is nothing to do.

This file only wires the task: the work is `ragas_ops.tables.format.DayTables.maintain`,
imported inside the task (no pyiceberg import while the DAG folder is parsed).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from airflow.sdk import CronDataIntervalTimetable, Param, dag, get_current_context, task

from ragas_ops.config import settings_from_environment

SETTINGS = settings_from_environment()


@task
def maintain() -> dict[str, Any]:
    """Expire snapshots and compact recent days (a no-op with a log line under parquet)."""
    from ragas_ops.airflow import task_context
    from ragas_ops.tables.format import day_tables

    context = get_current_context()
    settings = task_context.pipeline_settings()
    warehouse = settings.warehouse
    last = (context.get("params") or {}).get("last_day")
    if not last:
        end = context.get("data_interval_end") or context["dag_run"].run_after
        last = end.date().isoformat()
    return day_tables(task_context.lake_for(settings), settings).maintain(
        warehouse.snapshot_retention_days, warehouse.compact_days, last
    )


@dag(
    dag_id="ragas_ops_maintenance",
    schedule=CronDataIntervalTimetable("0 3 * * 0", timezone="UTC"),
    start_date=datetime(2026, 1, 1),
    catchup=False,
    max_active_runs=1,
    is_paused_upon_creation=SETTINGS.pipeline.is_paused_upon_creation,
    params={
        "last_day": Param(
            None,
            type=["null", "string"],
            pattern=r"^\d{4}-\d{2}-\d{2}$",
            description="The latest day to compact (YYYY-MM-DD), with the compact_days - 1 "
            "days before it. Empty: the end of the run's week.",
        ),
    },
    tags=["ragas-ops", "maintenance"],
    doc_md=__doc__,
)
def ragas_ops_maintenance() -> None:
    maintain()


ragas_ops_maintenance()
