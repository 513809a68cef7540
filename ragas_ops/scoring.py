"""Scoring tables of logged interactions: rows in, the same rows out with scores attached.

Every input row comes out exactly once, in input order, with its columns unchanged and, per
metric, a score, a status, a reason, the evidence (JSON) and the versions that produced it,
plus the tokens and cost the row took.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import AsyncIterator, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version

import pyarrow as pa

from ragas_ops.contract import ColumnMapping, ContractError, SizeBudget, interactions_from_table
from ragas_ops.judge.base import Judge, Usage
from ragas_ops.metrics.base import Metric, MetricResult
from ragas_ops.status import Status

ROW_COLUMNS: tuple[tuple[str, pa.DataType], ...] = (
    ("judge", pa.string()),
    ("embedding_model", pa.string()),
    ("judge_requests", pa.int64()),
    ("prompt_tokens", pa.int64()),
    ("cached_prompt_tokens", pa.int64()),
    ("completion_tokens", pa.int64()),
    ("embedding_tokens", pa.int64()),
    ("judge_cache_hits", pa.int64()),
    ("cost_usd", pa.float64()),
    ("scored_at", pa.timestamp("us", tz="UTC")),
    ("ragas_ops_version", pa.string()),
)
METRIC_SUFFIXES: tuple[tuple[str, pa.DataType], ...] = (
    ("score", pa.float64()),
    ("status", pa.string()),
    ("reason", pa.string()),
    ("evidence", pa.string()),
    ("version", pa.string()),
)


def package_version() -> str:
    try:
        return version("ragas-ops")
    except PackageNotFoundError:  # running from a source tree that is not installed
        return "0+unknown"


def output_schema(input_schema: pa.Schema, metrics: Sequence[Metric]) -> pa.Schema:
    """The input's columns, then each metric's five columns, then the row's accounting."""
    added = [
        pa.field(f"{metric.name}_{suffix}", kind)
        for metric in metrics
        for suffix, kind in METRIC_SUFFIXES
    ] + [pa.field(name, kind) for name, kind in ROW_COLUMNS]
    clashes = [f.name for f in added if f.name in input_schema.names]
    if clashes:
        raise ContractError(
            f"the input already has output column(s) {clashes}: score the raw log, not a scored "
            "table, or rename those columns"
        )
    return pa.schema([*input_schema, *added])


@dataclass
class RunSummary:
    """What a scoring run did, for its closing summary and its manifest."""

    rows: int = 0
    statuses: dict[str, Counter[str]] = field(default_factory=dict)
    score_sums: dict[str, float] = field(default_factory=dict)
    usage: Usage = field(default_factory=Usage)

    def record(self, metric: str, result: MetricResult) -> None:
        self.statuses.setdefault(metric, Counter())[result.status.value] += 1
        if result.score is not None:
            self.score_sums[metric] = self.score_sums.get(metric, 0.0) + result.score

    def mean(self, metric: str) -> float | None:
        scored = self.statuses.get(metric, Counter())[Status.OK.value]
        return self.score_sums[metric] / scored if scored else None


class Scorer:
    """Scores tables with a set of metrics through one judge."""

    def __init__(
        self,
        metrics: Sequence[Metric],
        judge: Judge,
        columns: ColumnMapping | None = None,
        size_budget: SizeBudget | None = None,
    ) -> None:
        self.metrics = list(metrics)
        self.judge = judge
        self.columns = columns or ColumnMapping()
        self.size_budget = size_budget or SizeBudget()
        self.summary = RunSummary()
        self._version = package_version()

    async def score_table(self, table: pa.Table) -> pa.Table:
        """Score every row of `table`; the result has the same rows, in the same order."""
        rows = interactions_from_table(table, self.columns, self.size_budget)
        per_metric = await asyncio.gather(
            *(metric.score_rows(rows, self.judge) for metric in self.metrics)
        )
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
            pa.array([now] * count, pa.timestamp("us", tz="UTC")),
            pa.array([self._version] * count, pa.string()),
        ]


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
