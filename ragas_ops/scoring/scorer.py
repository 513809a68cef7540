"""Scoring tables of logged interactions: rows in, the same rows out with scores attached.

Every input row comes out exactly once, in input order, with its columns unchanged and, per
metric, a score, a status, a reason, the evidence (JSON) and the versions that produced it,
plus the tokens and cost the row took.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version

import pyarrow as pa

from ragas_ops.contract.inputs import (
    REQUIRED_FIELDS,
    ColumnMapping,
    Interaction,
    SizeBudget,
    interactions_from_table,
)
from ragas_ops.contract.outputs import output_schema
from ragas_ops.contract.status import Status
from ragas_ops.judge.base import ExpectedRequest, Judge, RowSequence, RowTicket, Usage
from ragas_ops.metrics.base import Metric, MetricResult
from ragas_ops.sampling import (
    ROW_ID_COLUMN,
    check_fraction,
    not_sampled_reason,
    row_id_text,
    sample_mask,
)

log = logging.getLogger(__name__)


def package_version() -> str:
    try:
        return version("ragas-ops")
    except PackageNotFoundError:  # running from a source tree that is not installed
        return "0+unknown"


@dataclass
class RunSummary:
    """What a scoring run did, for its closing summary and its manifest."""

    rows: int = 0
    statuses: dict[str, Counter[str]] = field(default_factory=dict)
    score_sums: dict[str, float] = field(default_factory=dict)
    usage: Usage = field(default_factory=Usage)
    rows_not_sampled: int = 0
    """Rows left out by the sample fraction (no judge call)."""
    rows_without_id: int = 0
    """Rows scored although a sample fraction was set, because they have no usable id."""

    def record(self, metric: str, result: MetricResult) -> None:
        self.statuses.setdefault(metric, Counter())[result.status.value] += 1
        if result.score is not None:
            self.score_sums[metric] = self.score_sums.get(metric, 0.0) + result.score

    def mean(self, metric: str) -> float | None:
        scored = self.statuses.get(metric, Counter())[Status.OK.value]
        return self.score_sums[metric] / scored if scored else None


def pass_through_columns(metrics: Sequence[Metric]) -> list[str]:
    """The columns the metrics read besides the contract's (a criterion's `policy`...)."""
    needed = (name for metric in metrics for name in metric.requires)
    return list(dict.fromkeys(name for name in needed if name not in REQUIRED_FIELDS))


class Scorer:
    """Scores tables with a set of metrics through one judge.

    With a `sample_fraction` below 1, only the rows that `ragas_ops.sampling` chooses by their
    id (`id_column`) reach the judge; the others come out in their place with the status
    `not_sampled` for every metric, no score and no usage.
    """

    def __init__(
        self,
        metrics: Sequence[Metric],
        judge: Judge,
        columns: ColumnMapping | None = None,
        size_budget: SizeBudget | None = None,
        *,
        sample_fraction: float = 1.0,
        id_column: str = ROW_ID_COLUMN,
    ) -> None:
        check_fraction(sample_fraction)
        self.metrics = list(metrics)
        self.judge = judge
        self.columns = columns or ColumnMapping()
        self.size_budget = size_budget or SizeBudget()
        self.sample_fraction = sample_fraction
        self.id_column = id_column
        self.summary = RunSummary()
        self._version = package_version()
        self._rows = RowSequence()
        """The rows handed to the judge, numbered across every table of the run."""

    async def score_table(self, table: pa.Table) -> pa.Table:
        """Score every row of `table`; the result has the same rows, in the same order."""
        rows = interactions_from_table(
            table, self.columns, self.size_budget, pass_through_columns(self.metrics)
        )
        chosen = self._sample(table)
        picked = [row for row, keep in zip(rows, chosen, strict=True) if keep]
        tickets = self._tickets(picked)
        per_metric = await asyncio.gather(
            *(metric.score_rows(picked, self.judge, tickets) for metric in self.metrics)
        )
        if len(picked) != len(rows):
            per_metric = [self._in_place(chosen, results) for results in per_metric]
        scored = self._with_results(table, per_metric)
        if scored.num_rows != table.num_rows:  # a broken metric must never lose a row silently
            raise RuntimeError(f"scored {scored.num_rows} rows out of {table.num_rows}")
        return scored

    async def score_stream(
        self, tables: Iterable[pa.Table], in_flight: int = 2
    ) -> AsyncIterator[pa.Table]:
        """Score a stream of tables, `in_flight` at a time so that the judge never idles at a
        table's tail; results come out in input order."""
        pending: list[asyncio.Task[pa.Table]] = []
        try:
            for table in tables:
                pending.append(asyncio.create_task(self.score_table(table)))
                if len(pending) >= in_flight:
                    yield await pending.pop(0)
            while pending:
                yield await pending.pop(0)
        finally:
            for task in pending:
                task.cancel()

    def _tickets(self, rows: Sequence[Interaction]) -> list[RowTicket]:
        """One ticket per row, numbered on from the previous table's (taken before anything
        is awaited, so tables in flight keep their order), shared by all metrics."""
        return [
            self._rows.issue(_expected_requests(self.metrics, row), len(self.metrics))
            for row in rows
        ]

    def _sample(self, table: pa.Table) -> list[bool]:
        """Which rows of `table` go to the judge (all of them without sampling); counts the
        rows left out, and the rows sent only because they have no usable id."""
        if self.sample_fraction >= 1.0:
            return [True] * table.num_rows
        ids = (
            table.column(self.id_column).to_pylist()
            if self.id_column in table.column_names
            else [None] * table.num_rows
        )
        chosen = sample_mask(ids, self.sample_fraction)
        without_id = sum(row_id_text(value) is None for value in ids)
        if without_id:
            log.warning(
                "%d of %d rows have no usable id in column %r: they are scored, not sampled",
                without_id,
                table.num_rows,
                self.id_column,
            )
        self.summary.rows_without_id += without_id
        self.summary.rows_not_sampled += chosen.count(False)
        return chosen

    def _in_place(self, chosen: list[bool], results: Sequence[MetricResult]) -> list[MetricResult]:
        """The sampled rows' results, with a `not_sampled` result in the place of each other."""
        if len(results) != chosen.count(True):
            raise RuntimeError(f"{len(results)} results for {chosen.count(True)} sampled rows")
        scored = iter(results)
        reason = not_sampled_reason(self.sample_fraction)
        evidence = {"sample_fraction": self.sample_fraction}
        return [
            next(scored)
            if keep
            else MetricResult(Status.NOT_SAMPLED, reason=reason, evidence=dict(evidence))
            for keep in chosen
        ]

    def _with_results(
        self, table: pa.Table, per_metric: Sequence[Sequence[MetricResult]]
    ) -> pa.Table:
        schema = output_schema(table.schema, self.metrics)
        columns: list[pa.Array | pa.ChunkedArray] = list(table.columns)
        row_usage = [Usage() for _ in range(table.num_rows)]
        for metric, results in zip(self.metrics, per_metric, strict=True):
            for usage, result in zip(row_usage, results, strict=True):
                usage.add(result.usage)
                self.summary.record(metric.name, result)
            columns.extend(_metric_columns(metric, results))
        for usage in row_usage:
            self.summary.usage.add(usage)
        self.summary.rows += table.num_rows
        columns.extend(self._row_columns(row_usage))
        return pa.Table.from_arrays(columns, schema=schema)

    def _row_columns(self, row_usage: Sequence[Usage]) -> list[pa.Array]:
        count = len(row_usage)
        now = datetime.now(UTC)
        return [
            pa.array([self.judge.description] * count, pa.string()),
            pa.array([self.judge.embedding_description] * count, pa.string()),
            pa.array([u.requests for u in row_usage], pa.int64()),
            pa.array([u.prompt_tokens for u in row_usage], pa.int64()),
            pa.array([u.cached_prompt_tokens for u in row_usage], pa.int64()),
            pa.array([u.completion_tokens for u in row_usage], pa.int64()),
            pa.array([u.embedding_tokens for u in row_usage], pa.int64()),
            pa.array([u.cache_hits for u in row_usage], pa.int64()),
            pa.array([u.cost_usd for u in row_usage], pa.float64()),
            pa.array([u.service_tier for u in row_usage], pa.string()),
            pa.array([now] * count, pa.timestamp("us", tz="UTC")),
            pa.array([self._version] * count, pa.string()),
        ]


def _expected_requests(
    metrics: Sequence[Metric], row: Interaction
) -> Callable[[], list[ExpectedRequest]]:
    """What the row's metrics are expected to ask, worked out only if a budget asks."""
    return lambda: [request for metric in metrics for request in metric.expected_requests(row)]


def _metric_columns(metric: Metric, results: Sequence[MetricResult]) -> list[pa.Array]:
    return [
        pa.array([r.score for r in results], pa.float64()),
        pa.array([r.status.value for r in results], pa.string()),
        pa.array([r.reason or None for r in results], pa.string()),
        pa.array(
            [json.dumps(r.evidence, ensure_ascii=False) if r.evidence else None for r in results],
            pa.string(),
        ),
        pa.array([metric.version_label] * len(results), pa.string()),
    ]
