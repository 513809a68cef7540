"""The aggregate stage: the day's daily metrics (with the day's spend) written from the table
the run published, and the regression check against the trailing days."""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any

import pyarrow as pa

from ragas_ops.config import Settings
from ragas_ops.contract.layout import Lake
from ragas_ops.labels.calibration import labelled_pairs, with_calibration
from ragas_ops.labels.candidate import with_candidate_agreement
from ragas_ops.labels.store import write_queue
from ragas_ops.pipeline.lake_safety import check_current
from ragas_ops.pipeline.manifest import day_spend, with_spend
from ragas_ops.sampling import ROW_ID_COLUMN
from ragas_ops.tables.format import day_tables


def aggregate_day(
    lake: Lake,
    day: str,
    settings: Settings,
    published: dict[str, Any] | None = None,
    run_id: str | None = None,
) -> dict[str, Any]:
    """Write the day's daily metrics; returns the regression verdict against the baseline.

    With `published` (what this run's `publish_day` returned) it reads the table this run
    published, and raises `Superseded` instead of writing when another run has published the
    day since; without, it reads the day's published table.
    """
    from ragas_ops.pipeline.shadow import candidate_rows
    from ragas_ops.quality.daily_metrics import TOKEN_COLUMNS, daily_metrics

    metrics, segments = settings.metrics.names, settings.pipeline.segments
    wanted = [
        ROW_ID_COLUMN,
        *segments,
        *(f"{metric}_{suffix}" for metric in metrics for suffix in ("score", "status", "version")),
        *TOKEN_COLUMNS,
        "cost_usd",
        "judge",
        "embedding_model",
    ]
    tables = day_tables(lake, settings)
    # not the evidence: half the bytes
    scored = tables.read_scored(day, published, run_id, columns=wanted)
    table = daily_metrics(day, scored, metrics, segments)
    version = tables.published_version(day) if published is None else published["publish_id"]
    table = with_spend(table, day_spend(lake, day, version))
    if published is not None:
        check_current(lake, day, published, run_id, settings)
    queued = write_queue(tables, day, scored, settings)
    pairs = labelled_pairs(tables, day, scored, settings)
    table = with_calibration(table, tables, day, scored, settings, pairs=pairs)
    # the shadow judge's agreement with the same labels, beside the judge of record's
    shadow = candidate_rows(lake, sorted({day} | {pair["dt"] for pair in pairs}), metrics)
    table = with_candidate_agreement(table, day, pairs, shadow)
    publish_id = None if published is None else published["publish_id"]
    target = tables.write_daily_metrics(day, table, publish_id, run_id)
    regression = day_regression(lake, day, settings, table)
    result = {"daily_metrics": target, "regression": regression.to_dict(), "label_queue": queued}
    comparison = judge_comparison(lake, day, settings, published, run_id)
    if comparison is not None:
        result["judge_comparison"] = comparison
    return result


def judge_comparison(
    lake: Lake,
    day: str,
    settings: Settings,
    published: dict[str, Any] | None = None,
    run_id: str | None = None,
) -> str | None:
    """The day's shadow-judge comparison written beside its daily metrics (None: the day has
    no candidate rows); never part of them."""
    from ragas_ops.pipeline.shadow import candidate_columns, compare_day

    if not lake.day_file("candidate_scored", day).exists():
        return None
    columns = candidate_columns(settings.metrics.names)
    scored = day_tables(lake, settings).read_scored(day, published, run_id, columns=columns)
    return compare_day(lake, day, settings, scored, run_id)


def day_regression(lake: Lake, day: str, settings: Settings, today: pa.Table | None) -> Any:
    from ragas_ops.quality.regression import check_regression

    window = settings.pipeline.regression_window_days
    history = metrics_history(lake, day, window, today, settings=settings)
    return check_regression(
        history, day, window_days=window, threshold=settings.pipeline.regression_threshold
    )


def metrics_history(
    lake: Lake,
    day: str,
    days: int,
    today: pa.Table | None = None,
    *,
    settings: Settings,
) -> pa.Table:
    """The daily metrics of `day` and of the `days` days before it that have them."""
    tables = day_tables(lake, settings)
    found = tables.read_daily_metrics(days_before(day, days))
    if today is not None:
        found.append(today)
    else:
        found.extend(tables.read_daily_metrics([day]))
    if not found:
        from ragas_ops.quality.daily_metrics import DAILY_METRICS_SCHEMA

        return DAILY_METRICS_SCHEMA.empty_table()
    return pa.concat_tables(found, promote_options="permissive")


def days_before(day: str, count: int) -> list[str]:
    """The `count` days before `day`, oldest first."""
    anchor = date.fromisoformat(day)
    return [(anchor - timedelta(days=offset)).isoformat() for offset in range(count, 0, -1)]
