"""Daily aggregates of scored rows, and the check that today's scores did not regress.

`daily_metrics` turns one day of scored rows into one row per (segment grouping, metric): how
many rows there were, how many were scored, failed, had no meaning for the metric or were left
out of the sample, the distribution of the scores with a bootstrap confidence interval of the
mean, and what the rows cost. `check_regression` compares a day's means with the trailing
days' means, per grouping.

Statistics that cannot be computed (no scored row, or one row for a confidence interval) are
null, never NaN and never 0.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta
from enum import StrEnum
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ragas_ops.contract.status import Status

ALL = "all"
"""`segment_column` and `segment_value` of the rows that cover every row of the day."""
NULL_SEGMENT = "(null)"
"""`segment_value` of the rows whose segment column is null."""
MISSING_STATUS = "(missing)"
"""Status counted for a row whose status column is null (a broken scored table)."""
MAX_BOOTSTRAP_SUPPORT = 256
"""Distinct values a group's scores are reduced to before bootstrapping (see `_bootstrap_ci`)."""

DAILY_METRICS_SCHEMA = pa.schema(
    [
        ("dt", pa.string()),
        ("segment_column", pa.string()),
        ("segment_value", pa.string()),
        ("metric", pa.string()),
        ("rows", pa.int64()),
        ("rows_scored", pa.int64()),
        ("rows_not_applicable", pa.int64()),
        ("rows_not_sampled", pa.int64()),
        ("rows_failed", pa.int64()),
        ("failures_by_status", pa.string()),
        ("mean", pa.float64()),
        ("median", pa.float64()),
        ("p10", pa.float64()),
        ("p90", pa.float64()),
        ("ci_low", pa.float64()),
        ("ci_high", pa.float64()),
        ("prompt_tokens", pa.int64()),
        ("completion_tokens", pa.int64()),
        ("embedding_tokens", pa.int64()),
        ("cost_usd", pa.float64()),
        ("judge", pa.string()),
        ("embedding_model", pa.string()),
        ("metric_version", pa.string()),
    ]
)
TOKEN_COLUMNS = ("prompt_tokens", "completion_tokens", "embedding_tokens")


def daily_metrics(
    day: str,
    scored: pa.Table,
    metrics: Sequence[str],
    segments: Sequence[str],
    *,
    confidence: float = 0.95,
    bootstrap_samples: int = 1000,
    seed: int = 0,
) -> pa.Table:
    """Aggregate one day of scored rows into one row per (segment grouping, metric).

    Groupings are grouping sets, not a cross product: one grouping over every row
    (`segment_column` = `segment_value` = "all"), then, for each column of `segments` on its
    own, one grouping per value of that column (a null value is grouped under "(null)"). Rows
    come out grouping by grouping (overall first, then `segments` in order, values sorted),
    each with `metrics` in order. A day with no rows gives one overall row per metric with
    `rows` = 0 and null statistics.

    Columns (schema `DAILY_METRICS_SCHEMA`):

    - `dt` (string): the day, `YYYY-MM-DD`.
    - `segment_column` (string): the segment column of the grouping, or "all".
    - `segment_value` (string): the segment's value as text, "(null)" for a null value, or
      "all".
    - `metric` (string): the metric's name, e.g. `faithfulness`.
    - `rows` (int64): rows of the grouping.
    - `rows_scored` (int64): rows with status `ok`, the only ones with a score.
    - `rows_not_applicable` (int64): rows with status `not_applicable` (a defined result, e.g.
      faithfulness of a refusal; neither scored nor failed).
    - `rows_not_sampled` (int64): rows with status `not_sampled`, left out by
      `pipeline.sample_fraction` (no judge call; neither scored nor failed). The share of
      rows sampled is 1 - `rows_not_sampled` / `rows`.
    - `rows_failed` (int64): rows with any other status (`invalid_input`, `judge_*`...);
      `rows` = `rows_scored` + `rows_not_applicable` + `rows_not_sampled` + `rows_failed`.
    - `failures_by_status` (string, JSON): the failed rows per status, e.g.
      `{"invalid_input": 3, "judge_unavailable": 1}`; `{}` when none failed.
    - `mean`, `median`, `p10`, `p90` (double): of the scores of the scored rows (percentiles
      interpolate linearly, as numpy's default); null when no row was scored. Failed,
      not-applicable and not-sampled rows are never counted as 0.
    - `ci_low`, `ci_high` (double): the percentile bootstrap confidence interval of the mean
      (`confidence`, 95% by default, `bootstrap_samples` resamples, deterministic for a given
      `seed`); null when fewer than 2 rows were scored.
    - `prompt_tokens`, `completion_tokens`, `embedding_tokens` (int64): tokens billed for the
      grouping's rows. Tokens and cost are recorded per row, not per metric, so every metric
      of a grouping carries the same totals: sum them over one metric, not over all.
    - `cost_usd` (double): what the grouping's rows cost; null when the cost of any of its
      rows is unknown (a model without a price), never a partial sum. 0 for a day without rows.
    - `judge` (string): the distinct judge descriptions of the grouping's rows, sorted and
      joined with ", " (e.g. `openai:gpt-4o-mini`); null without rows.
    - `embedding_model` (string): the distinct embedding models of the rows, joined likewise.
    - `metric_version` (string): the distinct `<metric>_version` values (the metric's version
      and its prompts' versions), joined likewise.

    `judge`, `embedding_model` and `metric_version` say what the day was scored with: the
    regression check compares a day only with days scored the same way.
    """
    _check_arguments(
        day, scored, metrics, segments, confidence=confidence, bootstrap_samples=bootstrap_samples
    )
    groupings = [_Grouping.overall(scored.num_rows)]
    groupings.extend(_Grouping.by_column(scored, column) for column in segments)
    accounting = [_Accounting.of(scored, grouping) for grouping in groupings]
    scores = [_Scores.of(scored, metric) for metric in metrics]
    rows: list[dict[str, Any]] = []
    for grouping, costs in zip(groupings, accounting, strict=True):
        per_metric = [
            _metric_rows(
                scored,
                metric_scores,
                grouping,
                confidence=confidence,
                bootstrap_samples=bootstrap_samples,
                seed=seed,
            )
            for metric_scores in scores
        ]
        for index, value in enumerate(grouping.values):
            for metric, metric_rows in zip(metrics, per_metric, strict=True):
                rows.append(
                    {
                        "dt": day,
                        "segment_column": grouping.column,
                        "segment_value": value,
                        "metric": metric,
                        **metric_rows[index],
                        **costs.row(index),
                    }
                )
    return pa.Table.from_pylist(rows, schema=DAILY_METRICS_SCHEMA)


def _check_arguments(
    day: str,
    scored: pa.Table,
    metrics: Sequence[str],
    segments: Sequence[str],
    *,
    confidence: float,
    bootstrap_samples: int,
) -> None:
    date.fromisoformat(day)  # ValueError on anything but YYYY-MM-DD
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence}")
    if bootstrap_samples < 1:
        raise ValueError(f"bootstrap_samples must be at least 1, got {bootstrap_samples}")
    needed = [f"{metric}_{suffix}" for metric in metrics for suffix in ("score", "status")]
    missing = [name for name in [*needed, *segments] if name not in scored.column_names]
    if missing:
        raise ValueError(
            f"the scored table has no column(s) {missing}; it has {scored.column_names}"
        )
    if ALL in segments:
        raise ValueError(f'"{ALL}" names the overall grouping; rename that segment column')


@dataclass(frozen=True)
class _Grouping:
    """One grouping set: a group code per row and the label of each group."""

    column: str
    values: list[str]
    codes: np.ndarray[Any, np.dtype[np.int64]]

    @classmethod
    def overall(cls, row_count: int) -> _Grouping:
        return cls(ALL, [ALL], np.zeros(row_count, dtype=np.int64))

    @classmethod
    def by_column(cls, table: pa.Table, column: str) -> _Grouping:
        labels = pc.fill_null(pc.cast(table.column(column), pa.string()), NULL_SEGMENT)
        encoded = pc.dictionary_encode(labels).combine_chunks()
        if len(encoded) == 0:
            return cls(column, [], np.zeros(0, dtype=np.int64))
        names: list[str] = encoded.dictionary.to_pylist()
        # Values sorted, "(null)" last, so the table reads the same every day.
        order = sorted(range(len(names)), key=lambda i: (names[i] == NULL_SEGMENT, names[i]))
        rank = np.empty(len(names), dtype=np.int64)
        rank[order] = np.arange(len(names))
        codes = rank[encoded.indices.to_numpy(zero_copy_only=False)]
        return cls(column, [names[i] for i in order], codes)


@dataclass(frozen=True)
class _Accounting:
    """Tokens, cost and judge per group of a grouping (the same for every metric)."""

    tokens: dict[str, list[int]]
    cost: list[float | None]
    judge: list[str | None]
    embedding_model: list[str | None]

    @classmethod
    def of(cls, table: pa.Table, grouping: _Grouping) -> _Accounting:
        groups = len(grouping.values)
        tokens = {
            name: _group_sums(table, name, grouping.codes, groups).round().astype(np.int64).tolist()
            for name in TOKEN_COLUMNS
        }
        if "cost_usd" in table.column_names:
            sums = _group_sums(table, "cost_usd", grouping.codes, groups)
            unknown = np.bincount(
                grouping.codes, weights=_null_mask(table.column("cost_usd")), minlength=groups
            )
            cost: list[float | None] = [
                None if unpriced > 0 else float(total)
                for total, unpriced in zip(sums, unknown, strict=True)
            ]
        else:
            cost = [None] * groups
        described: dict[str, list[str | None]] = {
            name: _distinct_per_group(table.column(name), grouping.codes, groups)
            if name in table.column_names
            else [None] * groups
            for name in ("judge", "embedding_model")
        }
        return cls(tokens, cost, described["judge"], described["embedding_model"])

    def row(self, index: int) -> dict[str, Any]:
        return {
            **{name: sums[index] for name, sums in self.tokens.items()},
            "cost_usd": self.cost[index],
            "judge": self.judge[index],
            "embedding_model": self.embedding_model[index],
        }


def _group_sums(
    table: pa.Table, column: str, codes: np.ndarray[Any, Any], groups: int
) -> np.ndarray[Any, np.dtype[np.float64]]:
    """Per-group sums of a numeric column, nulls left out; zeros when the column is absent."""
    if column not in table.column_names:
        return np.zeros(groups)
    values = pc.fill_null(pc.cast(table.column(column), pa.float64()), 0.0).to_numpy()
    return np.bincount(codes, weights=values, minlength=groups).astype(np.float64)


def _null_mask(column: pa.ChunkedArray) -> np.ndarray[Any, np.dtype[np.float64]]:
    return np.asarray(pc.is_null(column).to_numpy(zero_copy_only=False), dtype=np.float64)


def _distinct_per_group(
    column: pa.ChunkedArray, codes: np.ndarray[Any, Any], groups: int
) -> list[str | None]:
    """The distinct non-null strings of each group, sorted and joined with ", "."""
    encoded = pc.dictionary_encode(pc.cast(column, pa.string())).combine_chunks()
    names: list[str] = encoded.dictionary.to_pylist()
    indices = encoded.indices.to_numpy(zero_copy_only=False)
    present = ~np.asarray(encoded.is_null().to_numpy(zero_copy_only=False), dtype=bool)
    pairs = np.unique(codes[present] * max(len(names), 1) + indices[present].astype(np.int64))
    found: list[list[str]] = [[] for _ in range(groups)]
    for pair in pairs.tolist():
        group, name = divmod(pair, max(len(names), 1))
        found[group].append(names[name])
    return [", ".join(sorted(values)) if values else None for values in found]


def _metric_rows(
    table: pa.Table,
    scores: _Scores,
    grouping: _Grouping,
    *,
    confidence: float,
    bootstrap_samples: int,
    seed: int,
) -> list[dict[str, Any]]:
    """Counts and score statistics of a metric for each group of `grouping`."""
    metric = scores.metric
    groups = len(grouping.values)
    counts = _status_counts(table.column(f"{metric}_status"), grouping.codes, groups)
    stats = _score_statistics(
        scores,
        grouping,
        confidence=confidence,
        bootstrap_samples=bootstrap_samples,
        seed=seed,
    )
    version_column = f"{metric}_version"
    versions = (
        _distinct_per_group(table.column(version_column), grouping.codes, groups)
        if version_column in table.column_names
        else [None] * groups
    )
    return [
        {**counts[index], **stats[index], "metric_version": versions[index]}
        for index in range(groups)
    ]


def _status_counts(
    column: pa.ChunkedArray, codes: np.ndarray[Any, Any], groups: int
) -> list[dict[str, Any]]:
    statuses = pc.fill_null(pc.cast(column, pa.string()), MISSING_STATUS)
    encoded = pc.dictionary_encode(statuses).combine_chunks()
    names: list[str] = encoded.dictionary.to_pylist()
    width = max(len(names), 1)
    flat = codes * width + encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    matrix = np.bincount(flat, minlength=groups * width).reshape(groups, width)
    results = []
    for per_status in matrix.tolist():
        by_status = dict(zip(names, per_status, strict=False))
        failures = {
            name: count for name, count in sorted(by_status.items()) if count and _is_failure(name)
        }
        results.append(
            {
                "rows": sum(per_status),
                "rows_scored": by_status.get(Status.OK.value, 0),
                "rows_not_applicable": by_status.get(Status.NOT_APPLICABLE.value, 0),
                "rows_not_sampled": by_status.get(Status.NOT_SAMPLED.value, 0),
                "rows_failed": sum(failures.values()),
                "failures_by_status": json.dumps(failures, sort_keys=True),
            }
        )
    return results


def _is_failure(status: str) -> bool:
    """Known statuses say for themselves; an unknown or missing one is a failure."""
    try:
        return Status(status).is_failure
    except ValueError:
        return True


@dataclass(frozen=True)
class _Scores:
    """A metric's usable scores (status ok, score set), sorted, with the rows they come from;
    sorted once per metric, then regrouped cheaply for each grouping."""

    metric: str
    values: np.ndarray[Any, np.dtype[np.float64]]
    rows: np.ndarray[Any, np.dtype[np.intp]]

    @classmethod
    def of(cls, table: pa.Table, metric: str) -> _Scores:
        status = pc.fill_null(pc.cast(table.column(f"{metric}_status"), pa.string()), "")
        score = pc.cast(table.column(f"{metric}_score"), pa.float64())
        usable = pc.and_(pc.equal(status, Status.OK.value), pc.is_valid(score))
        rows = np.flatnonzero(np.asarray(usable.to_numpy(zero_copy_only=False), dtype=bool))
        values = pc.fill_null(score, 0.0).to_numpy().astype(np.float64)[rows]
        order = np.argsort(values, kind="stable")
        return cls(metric, values[order], rows[order])

    def by_group(
        self, codes: np.ndarray[Any, np.dtype[np.int64]], groups: int
    ) -> tuple[np.ndarray[Any, np.dtype[np.float64]], np.ndarray[Any, np.dtype[np.int64]]]:
        """The values ordered by group, then by value, and the group code of each."""
        narrow = np.uint16 if groups <= np.iinfo(np.uint16).max else np.int64
        group_of = codes[self.rows].astype(narrow)
        order = np.argsort(group_of, kind="stable")  # radix sort for 16-bit codes
        return self.values[order], group_of[order].astype(np.int64)


def _score_statistics(
    scores: _Scores,
    grouping: _Grouping,
    *,
    confidence: float,
    bootstrap_samples: int,
    seed: int,
) -> list[dict[str, float | None]]:
    """Mean, median, p10, p90 and the bootstrap CI of the mean of each group's scores."""
    groups = len(grouping.values)
    values, codes = scores.by_group(grouping.codes, groups)
    sizes = np.bincount(codes, minlength=groups)
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.int64)
    sums = np.bincount(codes, weights=values, minlength=groups)
    quantiles = {name: _sorted_quantile(values, starts, sizes, q) for name, q in _QUANTILES}
    results: list[dict[str, float | None]] = []
    for index in range(groups):
        size = int(sizes[index])
        row: dict[str, float | None] = dict.fromkeys(("mean", "ci_low", "ci_high"))
        row.update({name: quantile[index] for name, quantile in quantiles.items()})
        if size:
            row["mean"] = float(sums[index] / size)
        if size >= 2:
            group_values = values[starts[index] : starts[index] + size]
            rng = np.random.default_rng(_group_seed(seed, grouping, index, scores.metric))
            row["ci_low"], row["ci_high"] = _bootstrap_ci(
                group_values, rng, bootstrap_samples, confidence
            )
        results.append(row)
    return results


_QUANTILES = (("median", 0.5), ("p10", 0.1), ("p90", 0.9))


def _sorted_quantile(
    values: np.ndarray[Any, np.dtype[np.float64]],
    starts: np.ndarray[Any, Any],
    sizes: np.ndarray[Any, Any],
    q: float,
) -> list[float | None]:
    """The q-quantile of every group at once, interpolated linearly like `np.quantile`, from
    values sorted within contiguous groups."""
    if len(values) == 0:
        return [None] * len(sizes)
    position = q * np.maximum(sizes - 1, 0)
    below = np.floor(position).astype(np.int64)
    above = np.minimum(below + 1, np.maximum(sizes - 1, 0))
    fraction = position - below
    low = values[np.minimum(starts + below, len(values) - 1)]
    high = values[np.minimum(starts + above, len(values) - 1)]
    result = low + (high - low) * fraction
    return [float(value) if size else None for value, size in zip(result, sizes, strict=True)]


def _group_seed(seed: int, grouping: _Grouping, index: int, metric: str) -> list[int]:
    """A seed per (grouping, value, metric), so that one group's interval does not change
    when other segments or metrics are added (Python's `hash` differs between processes)."""
    key = f"{grouping.column}\x00{grouping.values[index]}\x00{metric}".encode()
    return [seed, zlib.crc32(key)]


def _bootstrap_ci(
    sorted_values: np.ndarray[Any, np.dtype[np.float64]],
    rng: np.random.Generator,
    samples: int,
    confidence: float,
) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of at least two values.

    A resample of n rows drawn with replacement is, for the mean, a multinomial draw of how
    many times each distinct value is taken, so the work is samples x distinct values rather
    than samples x rows: exact, and fast for a million rows. Scores with more than
    `MAX_BOOTSTRAP_SUPPORT` distinct values (e.g. cosine similarities) are first grouped into
    that many equal-width bins, each represented by the mean of its values: the mean is kept
    exactly, and the spread lost is at most a bin width (under 0.4% of the score range).
    """
    size = len(sorted_values)
    support, counts = _weighted_support(sorted_values)
    draws = rng.multinomial(size, counts / size, size=samples)
    means = draws @ support / size
    tail = (1.0 - confidence) / 2.0
    low_mean, high_mean = np.quantile(means, [tail, 1.0 - tail])
    return float(low_mean), float(high_mean)


def _weighted_support(
    sorted_values: np.ndarray[Any, np.dtype[np.float64]],
) -> tuple[np.ndarray[Any, np.dtype[np.float64]], np.ndarray[Any, np.dtype[np.int64]]]:
    """The distinct values and their counts, or, past `MAX_BOOTSTRAP_SUPPORT` of them, the
    means and counts of equal-width bins; found by bisection, as the values are sorted."""
    low, high = float(sorted_values[0]), float(sorted_values[-1])
    distinct = 1 + int(np.count_nonzero(np.diff(sorted_values)))
    if distinct <= MAX_BOOTSTRAP_SUPPORT:
        edges = np.concatenate(([0], np.flatnonzero(np.diff(sorted_values)) + 1))
        return sorted_values[edges], np.diff(np.append(edges, len(sorted_values)))
    inner = np.linspace(low, high, MAX_BOOTSTRAP_SUPPORT + 1)[1:-1]
    edges = np.unique(np.concatenate(([0], np.searchsorted(sorted_values, inner))))
    bounds = np.append(edges, len(sorted_values))
    counts = np.diff(bounds)
    kept = counts > 0
    running = np.concatenate(([0.0], np.cumsum(sorted_values)))
    sums = running[bounds[1:]] - running[bounds[:-1]]
    return sums[kept] / counts[kept], counts[kept]


# --- regression check -------------------------------------------------------------------------


class Outcome(StrEnum):
    """What the check concluded for one (segment, metric)."""

    OK = "ok"
    REGRESSION = "regression"
    IMPROVED = "improved"
    INSUFFICIENT_HISTORY = "insufficient_history"
    """Too few days in the window have a mean: not checked."""
    NOT_COMPARED = "not_compared"
    """Enough days, but too few of them scored with today's judge and versions: not checked."""
    TOO_FEW_ROWS = "too_few_rows"
    """Today's mean has no confidence interval (one scored row): a drop cannot be told from
    noise, so it is not checked."""
    NO_DATA = "no_data"


SKIPPED = (Outcome.INSUFFICIENT_HISTORY, Outcome.NOT_COMPARED)
"""Outcomes of a check that was not made although there were scores today."""
THIN = (Outcome.NO_DATA, Outcome.TOO_FEW_ROWS)
"""Outcomes of a check today's rows were too few for: they leave the day unchecked when
they are an overall check, not when a small segment has them."""


class Verdict(StrEnum):
    """The day's verdict, the first that applies: a regression overall, a regression in a
    segment only, a check that could not be made, or every check made and held."""

    OK = "ok"
    WARN = "warn"
    REGRESSION = "regression"
    NOT_CHECKED = "not_checked"

    @property
    def label(self) -> str:
        """As a badge shows it: `not checked`."""
        return self.value.replace("_", " ")


@dataclass(frozen=True)
class ScoredWith:
    """What a day's scores of one (segment, metric) were produced with, from its
    `daily_metrics` row. Scores are compared only between days scored the same way; a part
    that is unknown (null: a table written before it was recorded) matches anything."""

    judge: str | None
    embedding_model: str | None
    version: str | None

    @classmethod
    def of(cls, row: Mapping[str, Any]) -> ScoredWith:
        return cls(row.get("judge"), row.get("embedding_model"), row.get("metric_version"))

    def matches(self, other: ScoredWith) -> bool:
        return not self.differences(other, "")

    def differences(self, later: ScoredWith, metric: str) -> list[str]:
        """What changed from `self` to `later`, as phrases ("the judge changed from ...")."""
        parts = (
            ("the judge", self.judge, later.judge),
            ("the embedding model", self.embedding_model, later.embedding_model),
            (f"the {metric} version" if metric else "the version", self.version, later.version),
        )
        return [
            f"{name} changed from {before} to {after}"
            for name, before, after in parts
            if before is not None and after is not None and before != after
        ]

    def to_dict(self) -> dict[str, str | None]:
        return {
            "judge": self.judge,
            "embedding_model": self.embedding_model,
            "metric_version": self.version,
        }


@dataclass(frozen=True)
class ScoringChange:
    """A day whose scores of a metric were produced differently from the day before (another
    judge, embedding model, metric or prompt version): the trend charts mark it."""

    day: str
    metric: str
    changes: list[str]

    @property
    def sentence(self) -> str:
        return f"{' and '.join(self.changes)} on {self.day}"


@dataclass(frozen=True)
class RegressionFinding:
    """The comparison of one (segment, metric) mean with its trailing baseline."""

    segment_column: str
    segment_value: str
    metric: str
    outcome: Outcome
    mean: float | None
    ci_low: float | None
    ci_high: float | None
    rows_scored: int
    baseline: float | None
    baseline_days: int
    """Days the baseline is the mean of: days in the window with a mean, scored like today."""
    delta: float | None
    message: str
    scored_with: ScoredWith | None = None
    """What today's scores were produced with (None: no row today)."""
    excluded_days: int = 0
    """Days of the window left out of the baseline because they were scored differently."""
    change: str | None = None
    """Why days were left out: "the judge changed from X to Y on D"."""

    @property
    def is_overall(self) -> bool:
        return self.segment_column == ALL

    @property
    def skipped(self) -> bool:
        """There were scores today but the check could not be made."""
        return self.outcome in SKIPPED or (self.outcome in THIN and self.is_overall)

    @property
    def label(self) -> str:
        """`faithfulness (all rows)` or `faithfulness for app=support-bot`."""
        return _label((self.segment_column, self.segment_value, self.metric))

    def to_dict(self) -> dict[str, Any]:
        return {
            "segment_column": self.segment_column,
            "segment_value": self.segment_value,
            "metric": self.metric,
            "outcome": self.outcome.value,
            "mean": self.mean,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "rows_scored": self.rows_scored,
            "baseline": self.baseline,
            "baseline_days": self.baseline_days,
            "excluded_days": self.excluded_days,
            "delta": self.delta,
            "scored_with": self.scored_with.to_dict() if self.scored_with else None,
            "change": self.change,
            "message": self.message,
        }


@dataclass(frozen=True)
class RegressionReport:
    """The day's verdict and one finding per (segment, metric) seen today or in the window."""

    day: str
    verdict: Verdict
    window_days: int
    threshold: float
    min_days: int
    findings: list[RegressionFinding] = field(default_factory=list)

    def of(self, outcome: Outcome) -> list[RegressionFinding]:
        """The findings with that outcome."""
        return [finding for finding in self.findings if finding.outcome is outcome]

    def finding(self, column: str, value: str, metric: str) -> RegressionFinding | None:
        """The finding of one metric in one segment grouping, if it was checked."""
        for finding in self.findings:
            if (finding.segment_column, finding.segment_value, finding.metric) == (
                column,
                value,
                metric,
            ):
                return finding
        return None

    @property
    def skipped(self) -> list[RegressionFinding]:
        """The checks that could not be made (see `RegressionFinding.skipped`)."""
        return [finding for finding in self.findings if finding.skipped]

    @property
    def checked(self) -> list[RegressionFinding]:
        """The checks made: today's mean against a baseline."""
        made = (Outcome.OK, Outcome.REGRESSION, Outcome.IMPROVED)
        return [finding for finding in self.findings if finding.outcome in made]

    @property
    def changes(self) -> list[str]:
        """The distinct changes of judge or version that kept days out of a baseline."""
        return list(dict.fromkeys(f.change for f in self.findings if f.change))

    @property
    def summary(self) -> str:
        """One sentence (or two) for the top of a report or an alert; every count in it is
        the count of the findings listed under it."""
        if self.verdict is Verdict.REGRESSION:
            dropped = [f for f in self.of(Outcome.REGRESSION) if f.is_overall]
            text = f"Regression on {self.day}: " + "; ".join(
                f"{f.metric} {f.delta:+.3f} vs its {f.baseline_days}-day baseline"
                for f in dropped
                if f.delta is not None
            )
            return text + "." + self._segment_note(dropped) + self._skipped_note() + self._since()
        if self.verdict is Verdict.WARN:
            count = len(self.of(Outcome.REGRESSION))
            return (
                f"Warning on {self.day}: {count} segment(s) dropped below their baseline; the "
                f"overall means held.{self._skipped_note()}{self._since()}"
            )
        if self.verdict is Verdict.NOT_CHECKED:
            return f"Not checked on {self.day}: {self._skipped_reasons()}." + self._held_note()
        return (
            f"No regression on {self.day}: all {len(self.checked)} check(s) against the "
            f"baseline held.{self._since()}"
        )

    def _since(self) -> str:
        """The changes that shortened the baselines of checks that were made."""
        changes = dict.fromkeys(f.change for f in self.checked if f.change)
        return "".join(f" Baselines count only the days since {change}." for change in changes)

    def _segment_note(self, overall: Sequence[RegressionFinding]) -> str:
        segments = len(self.of(Outcome.REGRESSION)) - len(overall)
        return f" {segments} segment(s) dropped too." if segments else ""

    def _skipped_note(self) -> str:
        skipped = self.skipped
        return f" Not checked: {self._skipped_reasons()}." if skipped else ""

    def _held_note(self) -> str:
        checked = self.checked
        if not checked:
            return ""
        return f" The {len(checked)} check(s) that could be made held."

    def _skipped_reasons(self) -> str:
        """Why checks were skipped, grouped: a change of judge or version, too few days,
        no scores; each with the findings it covers."""
        skipped = self.skipped
        parts = []
        for change in self.changes:
            covered = [f for f in skipped if f.change == change and f.outcome in SKIPPED]
            if covered:
                matching = min(f.baseline_days for f in covered)
                parts.append(
                    f"{_names(covered)} not compared: {change}, and only {matching} of the "
                    f"{self.min_days} baseline days needed {_was(matching)} scored the same way"
                )
        short = self.of(Outcome.INSUFFICIENT_HISTORY)
        for days in sorted({f.baseline_days for f in short}, reverse=True):
            covered = [f for f in short if f.baseline_days == days]
            parts.append(f"{_names(covered)} {days} of {self.min_days} baseline days")
        one_row = [f for f in skipped if f.outcome is Outcome.TOO_FEW_ROWS]
        if one_row:
            parts.append(f"{_names(one_row)} one scored row today, no confidence interval")
        empty = [f for f in skipped if f.outcome is Outcome.NO_DATA]
        if empty:
            parts.append(f"{_names(empty)} no scored row today")
        return "; ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, for the run manifest."""
        return {
            "day": self.day,
            "verdict": self.verdict.value,
            "summary": self.summary,
            "window_days": self.window_days,
            "threshold": self.threshold,
            "min_days": self.min_days,
            "counts": {outcome.value: len(self.of(outcome)) for outcome in Outcome},
            "checked": len(self.checked),
            "not_checked": len(self.skipped),
            "changes": self.changes,
            "findings": [finding.to_dict() for finding in self.findings],
        }


def _was(count: int) -> str:
    return "was" if count == 1 else "were"


def _names(findings: Sequence[RegressionFinding]) -> str:
    """`faithfulness, answer_relevance` for overall findings, then `3 segment(s)`."""
    overall = list(dict.fromkeys(f.metric for f in findings if f.is_overall))
    segments = sum(not f.is_overall for f in findings)
    parts = [", ".join(overall)] if overall else []
    if segments:
        parts.append(f"{segments} segment finding(s)")
    return " and ".join(parts) + ":"


_Key = tuple[str, str, str]


@dataclass(frozen=True)
class _PastDay:
    mean: float
    scored_with: ScoredWith


def check_regression(
    history: pa.Table,
    day: str,
    *,
    window_days: int = 7,
    threshold: float = 0.05,
    min_days: int = 3,
) -> RegressionReport:
    """Compare `day`'s means with the trailing baseline, per (segment grouping, metric).

    `history` holds `daily_metrics` rows of many days, `day` included. The baseline of a
    (segment_column, segment_value, metric) is the mean of its daily means over the
    `window_days` days before `day`, counting only days that have a mean and that were scored
    like `day` (same `judge`, `embedding_model` and `metric_version`, which holds the prompt
    versions): a new judge or prompt moves every score, which is not a regression. Outcomes:

    - `no_data`: no scored row today (the grouping existed today or in the window);
    - `insufficient_history`: fewer than `min_days` days in the window have a mean;
    - `not_compared`: enough days have a mean, but fewer than `min_days` of them were scored
      like today (the finding's `change` says what changed, and on which day);
    - `too_few_rows`: today's mean has no confidence interval (one scored row), so a drop
      cannot be told from noise;
    - `regression`: today's mean is more than `threshold` (absolute) below the baseline AND
      the upper bound of today's confidence interval is below the baseline too, so that a
      small, noisy sample does not trip it;
    - `improved`: the mirror image (above by more than `threshold`, CI low bound above);
    - `ok`: otherwise.

    The verdict is `regression` when an overall ("all") row regresses, else `warn` when a
    segment regresses, else `not_checked` when a check was skipped (`insufficient_history`,
    `not_compared`, or no or one scored row overall), else `ok`.
    """
    if window_days < 1 or min_days < 1:
        raise ValueError("window_days and min_days must be at least 1")
    today = date.fromisoformat(day)
    first = (today - timedelta(days=window_days)).isoformat()
    current: dict[_Key, dict[str, Any]] = {}
    window: dict[_Key, dict[str, _PastDay]] = {}
    for row in _history_rows(history):
        key: _Key = (row["segment_column"], row["segment_value"], row["metric"])
        if row["dt"] == day:
            if key in current:
                raise ValueError(f"history holds {key} twice for {day}")
            current[key] = row
        elif first <= row["dt"] < day:
            days = window.setdefault(key, {})
            if row["dt"] in days:
                raise ValueError(f"history holds {key} twice for {row['dt']}")
            if row["mean"] is not None:
                days[row["dt"]] = _PastDay(row["mean"], ScoredWith.of(row))
    keys = sorted(set(current) | set(window), key=lambda k: (k[0] != ALL, k))
    findings = [
        _finding(
            key,
            current.get(key),
            window.get(key, {}),
            day=day,
            threshold=threshold,
            min_days=min_days,
            window_days=window_days,
        )
        for key in keys
    ]
    regressions = [finding for finding in findings if finding.outcome is Outcome.REGRESSION]
    if any(finding.is_overall for finding in regressions):
        verdict = Verdict.REGRESSION
    elif regressions:
        verdict = Verdict.WARN
    elif any(finding.skipped for finding in findings):
        verdict = Verdict.NOT_CHECKED
    else:
        verdict = Verdict.OK
    return RegressionReport(day, verdict, window_days, threshold, min_days, findings)


_DESCRIBED = ("judge", "embedding_model", "metric_version")


def _history_rows(history: pa.Table) -> list[dict[str, Any]]:
    """The columns the check reads; what a day was scored with is null in tables written
    before it was recorded."""
    columns = ["dt", "segment_column", "segment_value", "metric", "mean", "ci_low", "ci_high"]
    present = [name for name in _DESCRIBED if name in history.column_names]
    rows: list[dict[str, Any]] = history.select([*columns, "rows_scored", *present]).to_pylist()
    for row in rows:
        for name in _DESCRIBED:
            row.setdefault(name, None)
    return rows


def scoring_changes(history: pa.Table, metrics: Sequence[str]) -> list[ScoringChange]:
    """The days on which a metric's overall scores were produced differently from the
    previous day that had scores (judge, embedding model, metric or prompt version)."""
    found: list[ScoringChange] = []
    by_metric: dict[str, list[dict[str, Any]]] = {metric: [] for metric in metrics}
    for row in _history_rows(history):
        if row["segment_column"] == ALL and row["metric"] in by_metric and row["mean"] is not None:
            by_metric[row["metric"]].append(row)
    for metric, rows in by_metric.items():
        previous: ScoredWith | None = None
        for row in sorted(rows, key=lambda r: str(r["dt"])):
            scored_with = ScoredWith.of(row)
            changes = previous.differences(scored_with, metric) if previous else []
            if changes:
                found.append(ScoringChange(str(row["dt"]), metric, changes))
            previous = scored_with
    return found


def _finding(
    key: _Key,
    today: Mapping[str, Any] | None,
    past: Mapping[str, _PastDay],
    *,
    day: str,
    threshold: float,
    min_days: int,
    window_days: int,
) -> RegressionFinding:
    scored_with = ScoredWith.of(today) if today else None
    matching = {
        dt: past_day.mean
        for dt, past_day in past.items()
        if scored_with is None or past_day.scored_with.matches(scored_with)
    }
    excluded = sorted(dt for dt in past if dt not in matching)
    change = _change(key[2], past, matching, excluded, scored_with=scored_with, day=day)
    days = len(matching)
    comparison = _Comparison(
        mean=today["mean"] if today else None,
        ci_low=today["ci_low"] if today else None,
        ci_high=today["ci_high"] if today else None,
        scored=int(today["rows_scored"] or 0) if today else 0,
        baseline=sum(matching.values()) / days if days else None,
        days=days,
        excluded=len(excluded),
        change=change,
    )
    outcome = comparison.outcome(threshold, min_days)
    return RegressionFinding(
        segment_column=key[0],
        segment_value=key[1],
        metric=key[2],
        outcome=outcome,
        mean=comparison.mean,
        ci_low=comparison.ci_low,
        ci_high=comparison.ci_high,
        rows_scored=comparison.scored,
        baseline=comparison.baseline,
        baseline_days=days,
        delta=comparison.delta,
        message=comparison.message(
            _label(key), outcome, window_days=window_days, min_days=min_days, threshold=threshold
        ),
        scored_with=scored_with,
        excluded_days=len(excluded),
        change=change,
    )


def _change(
    metric: str,
    past: Mapping[str, _PastDay],
    matching: Mapping[str, float],
    excluded: Sequence[str],
    *,
    scored_with: ScoredWith | None,
    day: str,
) -> str | None:
    """ "the judge changed from X to Y on D": from the last day scored differently to the
    first day scored like today after it (or today)."""
    if not excluded or scored_with is None:
        return None
    last_different = excluded[-1]
    since = min((dt for dt in matching if dt > last_different), default=day)
    changes = past[last_different].scored_with.differences(scored_with, metric)
    return ScoringChange(since, metric, changes).sentence


def _label(key: _Key) -> str:
    column, value, metric = key
    return f"{metric} (all rows)" if column == ALL else f"{metric} for {column}={value}"


@dataclass(frozen=True)
class _Comparison:
    """Today's figures for one (segment, metric) against its baseline."""

    mean: float | None
    ci_low: float | None
    ci_high: float | None
    scored: int
    baseline: float | None
    days: int
    excluded: int
    change: str | None

    @property
    def delta(self) -> float | None:
        if self.mean is None or self.baseline is None:
            return None
        return self.mean - self.baseline

    def outcome(self, threshold: float, min_days: int) -> Outcome:
        delta = self.delta
        if self.mean is None:
            return Outcome.NO_DATA
        if self.days < min_days or self.baseline is None or delta is None:
            return Outcome.NOT_COMPARED if self.excluded else Outcome.INSUFFICIENT_HISTORY
        if self.ci_low is None or self.ci_high is None:
            return Outcome.TOO_FEW_ROWS
        if delta < -threshold and self.ci_high < self.baseline:
            return Outcome.REGRESSION
        if delta > threshold and self.ci_low > self.baseline:
            return Outcome.IMPROVED
        return Outcome.OK

    def message(
        self, label: str, outcome: Outcome, *, window_days: int, min_days: int, threshold: float
    ) -> str:
        """The finding as a sentence a person can act on."""
        if outcome is Outcome.NO_DATA or self.mean is None:
            return f"{label}: no scored row today, nothing to compare."
        interval = (
            f"CI {self.ci_low:.3f}-{self.ci_high:.3f}"
            if self.ci_low is not None and self.ci_high is not None
            else "no CI"
        )
        today = f"{self.mean:.3f} ({interval}, {self.scored} scored)"
        delta = self.delta
        if outcome in SKIPPED or self.baseline is None or delta is None:
            return f"{label}: {today}; {self._why_not_checked(window_days, min_days)}."
        versus = f"{today} vs a {self.days}-day baseline of {self.baseline:.3f} ({delta:+.3f})"
        if self.excluded:
            versus += (
                f" (only days scored like today: {self.excluded} day(s) before the change, "
                f"{self.change}, left out)"
            )
        if outcome is Outcome.REGRESSION:
            return f"{label} regressed: {versus}."
        if outcome is Outcome.IMPROVED:
            return f"{label} improved: {versus}."
        if outcome is Outcome.TOO_FEW_ROWS:
            note = "; not checked: one scored row has no confidence interval"
        else:  # a drop that the confidence interval does not confirm, or none
            note = "; within the noise of today's sample" if delta < -threshold else ""
        return f"{label}: {versus}{note}."

    def _why_not_checked(self, window_days: int, min_days: int) -> str:
        if self.excluded:
            return (
                f"not compared: {self.change}, and only {self.days} of the {min_days} "
                f"baseline days needed {_was(self.days)} scored the same way"
            )
        return (
            f"not checked: {self.days} of {min_days} baseline days (days with a mean in the "
            f"previous {window_days})"
        )
