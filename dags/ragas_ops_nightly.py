"""Nightly RAG quality: score a day of logged RAG interactions with the RAGAS metrics.

    plan -> score_chunk (mapped, judge pool) / score_backfill_chunk (mapped, backfill pool)
         -> publish -> aggregate -> report

Scoring runs in sync mode, or in batch mode (the OpenAI Batch API, half the price) when the
`judge_mode` parameter or the `judge.mode` setting says so: a batch-mode task defers while its
batches run, holding no worker slot (`ragas_ops.airflow.operators.ScoreChunkOperator`).

Schedule: a daily data interval in UTC. The run for [D 00:00, D+1 00:00) starts at midnight
after D ends and scores day D, so `airflow backfill create --from-date A --to-date B` scores
the days A to B. A manual run takes the day as the `day` parameter.

This file only wires tasks: the work is in `ragas_ops.pipeline`, imported inside the tasks so
that parsing the DAG folder stays fast. Settings come from RAGAS_OPS_* variables and the
config file named by RAGAS_OPS_CONFIG (see docs/configuration.md).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from airflow.sdk import CronDataIntervalTimetable, Param, dag, get_current_context, task

from ragas_ops.airflow.assets import DAILY_METRICS, SCORED, announce_day
from ragas_ops.airflow.lineage import declare_outputs
from ragas_ops.airflow.operators import JUDGE_MODES, ScoreChunkOperator
from ragas_ops.config import settings_from_environment

SETTINGS = settings_from_environment()
PIPELINE = SETTINGS.pipeline


@task
def plan() -> dict[str, Any]:
    """List and check the day's input files and cut them into chunks."""
    from ragas_ops.airflow import hooks, task_context
    from ragas_ops.pipeline.plan import plan_day, plan_result

    context = get_current_context()
    task_context.check_conf(context)
    day = task_context.day_of_run(context)
    settings = task_context.pipeline_settings()
    lake = task_context.lake_for(settings)
    day_plan = plan_day(lake, day, settings, allow_shrink=task_context.allow_shrink(context))
    warnings = hooks.model_shutdown_warnings(settings)
    return plan_result(
        day_plan, backfill=task_context.is_backfill(context), model_warnings=warnings
    )


@task
def chunks_for(day_plan: dict[str, Any], backfill: bool) -> list[dict[str, Any]]:
    """The chunks to score in the nightly pool, or in the backfill pool for backfill runs."""
    return list(day_plan["chunks"]) if day_plan["backfill"] == backfill else []


# The scoring tasks, nightly and backfill: retried (a retry in batch mode re-attaches to the
# batches already submitted), labelled by chunk in the UI.
SCORING_TASK: dict[str, Any] = {
    "map_index_template": "{{ chunk_label }}",
    "retries": PIPELINE.task_retries,
    "retry_delay": timedelta(seconds=PIPELINE.retry_delay_seconds),
    "retry_exponential_backoff": True,
}


@task(trigger_rule="none_failed", outlets=SCORED.outlets)
def publish(
    day_plan: dict[str, Any], scored: list[dict[str, Any]], backfilled: list[dict[str, Any]]
) -> dict[str, Any]:
    """Check rows in = rows out, publish the day's scored table whole, write the manifest."""
    from ragas_ops.airflow import task_context
    from ragas_ops.pipeline.manifest import run_manifest, write_manifest
    from ragas_ops.pipeline.publish import publish_day
    from ragas_ops.pipeline.shadow import publish_candidate

    context = get_current_context()
    settings = task_context.pipeline_settings()
    lake = task_context.lake_for(settings)
    day, summary = day_plan["day"], day_plan["summary"]
    # Indexing (not iterating) the mapped results: iteration probes one past the end.
    chunk_results = [part[i] for part in (scored, backfilled) if part for i in range(len(part))]
    published = publish_day(
        lake,
        day,
        context["run_id"],
        planned_rows=summary["rows"],
        chunk_count=summary["chunks"],
        settings=settings,
        allow_shrink=task_context.allow_shrink(context),
    )
    manifest = run_manifest(
        day,
        context["run_id"],
        settings,
        try_number=task_context.try_number(context),
        plan_summary=summary,
        chunk_results=chunk_results,
        published=published,
    )
    # The shadow judge's rows, apart from the published scores (null: none configured).
    manifest["candidate"] = publish_candidate(lake, day, context["run_id"], chunk_results)
    announce_day(context["outlet_events"], SCORED, day, published["table"])
    return {
        "day": day,
        "publish_id": published["publish_id"],
        "manifest": write_manifest(lake, day, context["run_id"], manifest, settings),
    }


@task(outlets=DAILY_METRICS.outlets)
def aggregate(published: dict[str, Any]) -> dict[str, Any]:
    """Daily metrics per segment and metric, and the regression check against the baseline."""
    from ragas_ops.airflow import task_context
    from ragas_ops.pipeline.aggregate import aggregate_day

    context = get_current_context()
    settings = task_context.pipeline_settings()
    with task_context.skipped_when_superseded():
        aggregated = aggregate_day(
            task_context.lake_for(settings),
            published["day"],
            settings,
            published=published,
            run_id=context["run_id"],
        )
    announce_day(
        context["outlet_events"], DAILY_METRICS, published["day"], aggregated["daily_metrics"]
    )
    return aggregated


@task
def report(published: dict[str, Any]) -> dict[str, Any]:
    """The day's report (HTML and Markdown); fails the run when configured to."""
    from ragas_ops.airflow import task_context
    from ragas_ops.pipeline.report import report_day

    context = get_current_context()
    settings = task_context.pipeline_settings()
    lake = task_context.lake_for(settings)
    with task_context.skipped_when_superseded():
        return report_day(lake, published["day"], context["run_id"], settings, published=published)


@dag(
    dag_id="ragas_ops_nightly",
    schedule=CronDataIntervalTimetable("0 0 * * *", timezone="UTC"),
    start_date=datetime(2026, 1, 1),
    catchup=False,
    max_active_runs=2,
    is_paused_upon_creation=PIPELINE.is_paused_upon_creation,
    params={
        "day": Param(
            None,
            type=["null", "string"],
            pattern=r"^\d{4}-\d{2}-\d{2}$",
            description="Day to score (YYYY-MM-DD). Empty: the run's data interval.",
        ),
        "allow_shrink": Param(
            False,
            type="boolean",
            description="Publish even when the day would lose published rows: an empty or "
            "much smaller table over a scored day, or a day whose raw partition is gone.",
        ),
        "judge_mode": Param(
            None,
            type=["null", "string"],
            enum=[None, *JUDGE_MODES],
            description="sync or batch (OpenAI Batch API: half the price, within 24 h). "
            "Empty: the judge.mode setting.",
        ),
    },
    tags=["ragas-ops", "rag-quality"],
    doc_md=__doc__,
)
def ragas_ops_nightly() -> None:
    day_plan = plan()
    nightly = ScoreChunkOperator.partial(
        task_id="score_chunk", pool=PIPELINE.pool, priority_weight=10, **SCORING_TASK
    ).expand(chunk=chunks_for(day_plan, backfill=False))
    backfill = ScoreChunkOperator.partial(
        task_id="score_backfill_chunk",
        pool=PIPELINE.backfill_pool,
        priority_weight=1,
        **SCORING_TASK,
    ).expand(chunk=chunks_for.override(task_id="backfill_chunks_for")(day_plan, backfill=True))
    published = publish(day_plan, nightly.output, backfill.output)
    aggregated, reported = aggregate(published), report(published)
    aggregated >> reported
    for written in (published, aggregated, reported):
        declare_outputs(written)  # their OpenLineage outputs, with the provider installed


ragas_ops_nightly()
