"""Which day a run scores (`airflow.task_context.day_of_run`): what docs/pipeline.md says."""

from __future__ import annotations

from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import pytest

from ragas_ops.airflow.task_context import day_of_run


def context(**values: Any) -> dict[str, Any]:
    return {
        "params": {},
        "dag_run": SimpleNamespace(run_after=values.pop("run_after", None)),
    } | values


@pytest.mark.parametrize(
    ("given", "scored"),
    [
        # airflow dags test ragas_ops_nightly 2026-11-21: the manual interval it infers is the
        # day before, but the logical date names the day
        (
            context(
                logical_date=datetime(2026, 11, 21, tzinfo=UTC),
                data_interval_start=datetime(2026, 11, 20, tzinfo=UTC),
            ),
            "2026-11-21",
        ),
        # a scheduled run or a backfill: interval [D, D+1), logical date D
        (
            context(
                logical_date=datetime(2026, 11, 21, tzinfo=UTC),
                data_interval_start=datetime(2026, 11, 21, tzinfo=UTC),
            ),
            "2026-11-21",
        ),
        # dag.test() or a trigger "now": the last whole day
        (
            context(
                logical_date=datetime(2026, 11, 22, 9, 30, tzinfo=UTC),
                data_interval_start=datetime(2026, 11, 21, tzinfo=UTC),
            ),
            "2026-11-21",
        ),
        # a manual run without a logical date
        (context(logical_date=None, run_after=datetime(2026, 11, 22, 9, tzinfo=UTC)), "2026-11-21"),
        # the day parameter wins
        (
            context(params={"day": "2026-10-01"}, logical_date=datetime(2026, 11, 21, tzinfo=UTC)),
            "2026-10-01",
        ),
    ],
    ids=["dags-test-date", "scheduled", "now", "no-logical-date", "day-param"],
)
def test_the_day_a_run_scores(given: dict[str, Any], scored: str) -> None:
    assert day_of_run(given) == scored
