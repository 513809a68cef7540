"""The Assets the nightly DAG produces, and the events that say which day changed.

Each table is announced twice, because Airflow keeps the two kinds of consumer apart: an
asset event with a partition key queues only DAGs scheduled with `PartitionedAssetTimetable`,
and one without queues only plain `schedule=[Asset(...)]` DAGs (airflow.assets.manager,
Airflow 3.2+). So a table has a plain Asset (`ragas_ops_scored`, as before) and a per-day one
(`ragas_ops_scored_by_day`) whose events carry the day scored as their partition key: a
partition-aware consumer runs once per day written, with `dag_run.partition_key` = that day,
whatever kind of run wrote it (nightly, manual or backfill) and each time it is written again.

The nightly DAG keeps its data-interval schedule (its runs have no partition key of their
own), so the key is added to the event by the task (`add_partitions`), from the day the run
scored, never from the clock. Imported when the DAG file is parsed: Airflow's SDK only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from airflow.sdk import Asset


@dataclass(frozen=True)
class Announced:
    """A table's two Assets: the plain one and its per-day partitioned twin."""

    plain: Asset
    by_day: Asset

    @property
    def outlets(self) -> list[Asset]:
        return [self.plain, self.by_day]


SCORED = Announced(Asset("ragas_ops_scored"), Asset("ragas_ops_scored_by_day"))
DAILY_METRICS = Announced(Asset("ragas_ops_daily_metrics"), Asset("ragas_ops_daily_metrics_by_day"))


def announce_day(outlet_events: Any, table: Announced, day: str, location: str) -> None:
    """Say in the task's asset events that `day` of `table` was written at `location`: the
    plain event's extra names the day, the per-day event's partition key is the day."""
    extra = {"day": day, "table": location}
    outlet_events[table.plain].extra = extra
    by_day = outlet_events[table.by_day]
    by_day.extra = extra
    by_day.add_partitions(day)
