"""The daily metrics: one day of scored rows turned into one row per (segment grouping, metric).

`daily_metrics` counts how many rows there were, how many were scored, failed, had no meaning
for the metric or were left out of the sample, the distribution of the scores with a bootstrap
confidence interval of the mean, and what the rows cost. The check of a day against the
trailing days is `quality.regression`.

Statistics that cannot be computed (no scored row, or one row for a confidence interval) are
null, never NaN and never 0.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
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
            f"the scored table has no column(s) {missing} (the metrics' and pipeline.segments'); "
            f"it has {scored.column_names}"
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
