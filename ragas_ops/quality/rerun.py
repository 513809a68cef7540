"""What a rerun changed: a day's latest publish against the one it replaced.

With the iceberg table format a republished day keeps its earlier snapshots
(`tables.format.DayTables.rerun`); the report and the quality page compare the two: rows
before and after, and each metric's mean (over its `ok` rows) and scored rows before and
after. The Parquet layout keeps no earlier version, so there are no means to compare; the
manifests still say what a publish replaced (`pipeline.manifest.replaced_publish`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import pyarrow as pa
import pyarrow.compute as pc

from ragas_ops.contract.status import Status
from ragas_ops.tables.format import Rerun


@dataclass(frozen=True)
class MetricChange:
    """One metric's mean (None: no `ok` row) and scored rows, before and after."""

    metric: str
    mean_before: float | None
    mean_after: float | None
    scored_before: int
    scored_after: int

    @property
    def delta(self) -> float | None:
        if self.mean_before is None or self.mean_after is None:
            return None
        return self.mean_after - self.mean_before


@dataclass(frozen=True)
class RerunChange:
    """The day's previous publish against its latest."""

    day: str
    run_before: str
    run_after: str
    published_before: datetime
    published_after: datetime
    snapshot_before: int
    snapshot_after: int
    rows_before: int
    rows_after: int
    metrics: list[MetricChange]

    def summary(self) -> str:
        """One line: rows and the metrics whose mean moved."""
        moved = [
            f"{change.metric} {_mean(change.mean_before)} -> {_mean(change.mean_after)}"
            for change in self.metrics
            if change.mean_before != change.mean_after
        ]
        return f"rows {self.rows_before:,} -> {self.rows_after:,}; " + (
            "; ".join(moved) if moved else "no metric's mean changed"
        )


def _mean(value: float | None) -> str:
    return "none" if value is None else f"{value:.3f}"


def rerun_change(day: str, rerun: Rerun, metrics: Sequence[str]) -> RerunChange:
    """Compare the two versions of `rerun` on `metrics`."""
    changes = []
    for metric in metrics:
        before = _metric_mean(rerun.before_rows, metric)
        after = _metric_mean(rerun.after_rows, metric)
        changes.append(MetricChange(metric, before[0], after[0], before[1], after[1]))
    return RerunChange(
        day=day,
        run_before=rerun.before.run_id,
        run_after=rerun.after.run_id,
        published_before=rerun.before.committed_at,
        published_after=rerun.after.committed_at,
        snapshot_before=rerun.before.snapshot_id,
        snapshot_after=rerun.after.snapshot_id,
        rows_before=0 if rerun.before_rows is None else rerun.before_rows.num_rows,
        rows_after=0 if rerun.after_rows is None else rerun.after_rows.num_rows,
        metrics=changes,
    )


def _metric_mean(rows: pa.Table | None, metric: str) -> tuple[float | None, int]:
    """The mean of the metric's `ok` scores and how many there are (a version of the day
    without the metric's columns, from before it was added, has none)."""
    score, status = f"{metric}_score", f"{metric}_status"
    if rows is None or score not in rows.schema.names or status not in rows.schema.names:
        return None, 0
    ok = pc.equal(rows.column(status), pa.scalar(Status.OK.value))
    scores = pc.filter(rows.column(score), pc.fill_null(ok, False))
    count = len(scores) - scores.null_count
    if count == 0:
        return None, 0
    return float(pc.mean(scores).as_py()), count


RERUN_HEADER = ("", "before", "after", "change")


def rerun_cells(change: RerunChange) -> list[tuple[str, str, str, str]]:
    """The rows of the "what this rerun changed" table: rows, then each metric's mean and
    scored rows, before / after / change."""
    cells = [
        ("run", change.run_before, change.run_after, ""),
        (
            "published",
            f"{change.published_before:%Y-%m-%d %H:%M:%S} UTC",
            f"{change.published_after:%Y-%m-%d %H:%M:%S} UTC",
            "",
        ),
        (
            "rows",
            f"{change.rows_before:,}",
            f"{change.rows_after:,}",
            f"{change.rows_after - change.rows_before:+,}",
        ),
    ]
    for metric in change.metrics:
        delta = metric.delta
        cells.append(
            (
                f"{metric.metric} mean",
                _mean(metric.mean_before),
                _mean(metric.mean_after),
                "" if delta is None else f"{delta:+.3f}",
            )
        )
        cells.append(
            (
                f"{metric.metric} scored rows",
                f"{metric.scored_before:,}",
                f"{metric.scored_after:,}",
                f"{metric.scored_after - metric.scored_before:+,}",
            )
        )
    return cells


def rerun_sentence(change: RerunChange) -> str:
    """Under the heading: which versions are compared, and how to read the old one."""
    return (
        f"{change.day} was published before (snapshot {change.snapshot_before}); this publish "
        f"(snapshot {change.snapshot_after}) replaced it. Means are over ok rows. The earlier "
        "version stays readable until its snapshot expires (docs/iceberg.md, time travel)."
    )
