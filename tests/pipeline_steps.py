"""A day of logs run through the pipeline's own steps (plan, score with the shadow judge when
one is set, publish, manifest, aggregate, report) as the DAG runs them, without Airflow: for
tests that need a real warehouse of a few days quickly."""

from __future__ import annotations

import asyncio
import os

import pyarrow as pa
import pyarrow.parquet as pq

from ragas_ops.config import Settings
from ragas_ops.contract.layout import Lake
from ragas_ops.pipeline.aggregate import aggregate_day
from ragas_ops.pipeline.manifest import manifest_base, run_totals, write_manifest
from ragas_ops.pipeline.plan import plan_day
from ragas_ops.pipeline.publish import publish_day
from ragas_ops.pipeline.report import report_day
from ragas_ops.pipeline.score import score_chunk
from ragas_ops.pipeline.shadow import publish_candidate, with_candidate
from tests.support import TEST_KEY


def run_day(
    lake: Lake,
    day: str,
    settings: Settings,
    logs: pa.Table,
    *,
    report: bool = True,
    row_group_size: int | None = None,
) -> None:
    """Write `logs` as the day's raw partition (in row groups of `row_group_size` rows, else
    pyarrow's default) and run the day through every step."""
    os.environ.setdefault("OPENAI_API_KEY", TEST_KEY)
    target = lake.raw_day(day).child("part-0.parquet")
    target.filesystem.create_dir(lake.raw_day(day).path, recursive=True)
    pq.write_table(logs, target.path, filesystem=target.filesystem, row_group_size=row_group_size)
    run_id = f"scheduled__{day}T00:00:00+00:00"
    plan = plan_day(lake, day, settings)
    # each chunk's shadow-judge sample too, when `[judge.candidate]` is set (as the DAG does)
    results = [
        with_candidate(
            asyncio.run(score_chunk(lake, day, run_id, chunk=chunk, settings=settings)),
            lake,
            day,
            run_id,
            chunk=chunk,
            settings=settings,
        )
        for chunk in plan.chunks
    ]
    summary = plan.summary()
    published = publish_day(
        lake,
        day,
        run_id,
        planned_rows=summary["rows"],
        chunk_count=summary["chunks"],
        settings=settings,
    )
    manifest = {
        **manifest_base(day, run_id, settings),
        "plan": summary,
        "scoring": run_totals(results),
        "published": published,
        "no_traffic": False,
        "candidate": publish_candidate(lake, day, run_id, results),
    }
    write_manifest(lake, day, run_id, manifest)
    aggregate_day(lake, day, settings)
    if report:
        report_day(lake, day, run_id, settings)
