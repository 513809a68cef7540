"""The judge of record against the candidate (the shadow judge), per metric, on the same rows.

The candidate's rows (`candidate_scored`) are paired with the published rows by the row id;
a pair counts for a metric when both judges scored it (`ok`). Per metric:

- both means over the pairs, and their difference (candidate - record) with a 95% paired
  percentile bootstrap interval: the pairs are resampled together, so the interval is that of
  the mean difference on these rows, not of two independent means (seeded by the day and the
  metric: the same rows give the same interval);
- agreement: the mean absolute difference, Spearman's rank correlation (ties at their mean
  rank) and the share of pairs within 0.1 of each other.

A statistic that cannot be computed (no pair; one pair for an interval; a constant side for
a rank correlation) is null, and the row counts say why: `rows` (the candidate's rows of the
day), `pairs`, `unpaired` (rows whose id is not on exactly one row of each table) and
`candidate_failed` (rows the judge of record scored that the candidate failed on: its
reliability, not only its scores, decides a switch).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from ragas_ops.contract.status import Status
from ragas_ops.sampling import ROW_ID_COLUMN, row_id_text

BOOTSTRAP_RESAMPLES = 2000
WITHIN = 0.1
"""Two scores within this of each other count as agreeing (`within_0_1`)."""

JUDGE_COMPARISON_SCHEMA = pa.schema(
    [
        ("day", pa.string()),
        ("metric", pa.string()),
        ("judge", pa.string()),
        ("candidate", pa.string()),
        ("rows", pa.int64()),
        ("pairs", pa.int64()),
        ("unpaired", pa.int64()),
        ("candidate_failed", pa.int64()),
        ("judge_mean", pa.float64()),
        ("candidate_mean", pa.float64()),
        ("difference", pa.float64()),
        ("difference_ci_low", pa.float64()),
        ("difference_ci_high", pa.float64()),
        ("mean_abs_difference", pa.float64()),
        ("rank_correlation", pa.float64()),
        ("within_0_1", pa.float64()),
    ]
)
"""One row per day (or range) and metric; documented in docs/tables.md."""

_FloatArray = np.ndarray[Any, np.dtype[np.float64]]


@dataclass
class Pairs:
    """One metric's paired scores (record, candidate) and what was left unpaired."""

    judge: list[float] = field(default_factory=list)
    candidate: list[float] = field(default_factory=list)
    rows: int = 0
    unpaired: int = 0
    candidate_failed: int = 0
    judges: set[str] = field(default_factory=set)
    candidates: set[str] = field(default_factory=set)

    def extend(self, other: Pairs) -> None:
        """Add another day's pairs (a range of days is compared as one sample of pairs)."""
        self.judge += other.judge
        self.candidate += other.candidate
        self.rows += other.rows
        self.unpaired += other.unpaired
        self.candidate_failed += other.candidate_failed
        self.judges |= other.judges
        self.candidates |= other.candidates


def paired_scores(
    scored: pa.Table, candidate: pa.Table, metrics: Sequence[str]
) -> dict[str, Pairs]:
    """Each metric's pairs of the candidate's rows with the published rows, by row id. Both
    judges are named from every candidate row and every published row of the same ids, paired
    or not: a day whose ids pair nothing still says who was compared."""
    record_rows = _single_rows(scored)
    candidate_rows = _single_rows(candidate)
    record = scored.to_pylist()
    named = candidate.to_pylist()
    candidate_ids = {row_id_text(row.get(ROW_ID_COLUMN)) for row in named} - {None}
    candidates = {str(row["judge"]) for row in named if row.get("judge")}
    judges = {
        str(row["judge"])
        for row in record
        if row.get("judge") and row_id_text(row.get(ROW_ID_COLUMN)) in candidate_ids
    }
    result: dict[str, Pairs] = {}
    for metric in metrics:
        pairs = Pairs(rows=candidate.num_rows, judges=set(judges), candidates=set(candidates))
        for row in candidate.to_pylist():
            status = row.get(f"{metric}_status")
            row_id = row_id_text(row.get(ROW_ID_COLUMN))
            index = record_rows.get(row_id) if row_id in candidate_rows else None
            if index is None:
                pairs.unpaired += 1
                continue
            mine = record[index]
            pairs.judges.add(str(mine.get("judge")))
            pairs.candidates.add(str(row.get("judge")))
            if mine.get(f"{metric}_status") != Status.OK:
                continue  # the row itself (invalid input...), or the judge of record failed
            if status == Status.OK:
                pairs.judge.append(float(mine[f"{metric}_score"]))
                pairs.candidate.append(float(row[f"{metric}_score"]))
            elif status is not None and Status(status).is_failure:
                pairs.candidate_failed += 1
        result[metric] = pairs
    return result


def _single_rows(table: pa.Table) -> dict[str | None, int]:
    """Row position by id, for the ids on exactly one row (a repeated id pairs nothing)."""
    if ROW_ID_COLUMN not in table.column_names:
        return {}
    positions: dict[str | None, int] = {}
    repeated: set[str | None] = set()
    for index, value in enumerate(table.column(ROW_ID_COLUMN).to_pylist()):
        text = row_id_text(value)
        if text is None:
            continue
        if text in positions:
            repeated.add(text)
        positions[text] = index
    return {text: index for text, index in positions.items() if text not in repeated}


def comparison_row(label: str, metric: str, pairs: Pairs) -> dict[str, Any]:
    """The comparison of one metric's pairs, as a row of `JUDGE_COMPARISON_SCHEMA`."""
    judge = np.asarray(pairs.judge, dtype=np.float64)
    candidate = np.asarray(pairs.candidate, dtype=np.float64)
    row: dict[str, Any] = {
        "day": label,
        "metric": metric,
        "judge": ", ".join(sorted(pairs.judges)) or None,
        "candidate": ", ".join(sorted(pairs.candidates)) or None,
        "rows": pairs.rows,
        "pairs": len(judge),
        "unpaired": pairs.unpaired,
        "candidate_failed": pairs.candidate_failed,
    }
    statistics = dict.fromkeys(JUDGE_COMPARISON_SCHEMA.names[8:])
    if len(judge):
        differences = candidate - judge
        statistics.update(
            judge_mean=float(judge.mean()),
            candidate_mean=float(candidate.mean()),
            difference=float(differences.mean()),
            mean_abs_difference=float(np.abs(differences).mean()),
            within_0_1=float((np.abs(differences) <= WITHIN + 1e-12).mean()),
            rank_correlation=spearman(judge, candidate),
        )
    if len(judge) >= 2:
        low, high = paired_bootstrap_ci(judge, candidate, seed=_seed(label, metric))
        statistics.update(difference_ci_low=low, difference_ci_high=high)
    return {**row, **statistics}


def compare_judges(
    label: str, pairs_by_metric: Mapping[str, Pairs], metrics: Sequence[str]
) -> pa.Table:
    """The comparison table of `label` (a day, or a range of days or a folder): a row per
    metric."""
    rows = [comparison_row(label, metric, pairs_by_metric[metric]) for metric in metrics]
    return pa.Table.from_pylist(rows, schema=JUDGE_COMPARISON_SCHEMA)


def day_comparison(
    day: str, scored: pa.Table, candidate: pa.Table, metrics: Sequence[str]
) -> pa.Table:
    """The day's comparison of the candidate's rows with the published ones."""
    return compare_judges(day, paired_scores(scored, candidate, metrics), metrics)


def paired_bootstrap_ci(
    judge: _FloatArray, candidate: _FloatArray, *, seed: int, confidence: float = 0.95
) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of `candidate - judge`, resampling pairs."""
    differences = candidate - judge
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(differences), size=(BOOTSTRAP_RESAMPLES, len(differences)))
    means = differences[picks].mean(axis=1)
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(means, [tail, 1.0 - tail])
    return float(low), float(high)


def spearman(first: _FloatArray, second: _FloatArray) -> float | None:
    """Spearman's rank correlation (ties at their mean rank); None for fewer than two pairs
    or a side whose scores are all equal (no order to agree on)."""
    if len(first) < 2:
        return None
    ranks_first, ranks_second = _ranks(first), _ranks(second)
    if np.ptp(ranks_first) == 0 or np.ptp(ranks_second) == 0:
        return None
    return float(np.corrcoef(ranks_first, ranks_second)[0, 1])


def _ranks(values: _FloatArray) -> _FloatArray:
    """1-based ranks, tied values at the mean of their ranks."""
    order = np.argsort(values, kind="stable")
    ranks = np.empty(len(values), dtype=np.float64)
    ranks[order] = np.arange(1, len(values) + 1, dtype=np.float64)
    unique, inverse = np.unique(values, return_inverse=True)
    sums = np.bincount(inverse, weights=ranks, minlength=len(unique))
    counts = np.bincount(inverse, minlength=len(unique))
    means: _FloatArray = sums / counts
    return means[inverse]


def _seed(label: str, metric: str) -> int:
    return int.from_bytes(hashlib.sha256(f"{label}/{metric}".encode()).digest()[:8], "big")


# -- how the report, the quality page and the CLI show it -----------------------------------------

COMPARISON_HEADER = (
    "metric",
    "pairs",
    "judge mean",
    "candidate mean",
    "difference (95% CI)",
    "mean |difference|",
    "rank correlation",
    "within 0.1",
    "candidate failed",
)
"""The columns of a comparison as the report, the quality page and `compare-judges` show it."""


def _number(value: float | None, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _signed(value: float | None) -> str:
    return "–" if value is None else f"{value:+.3f}"


def comparison_cells(row: Mapping[str, Any]) -> list[str]:
    """One metric's comparison as the cells of `COMPARISON_HEADER`."""
    interval = (
        f" ({_signed(row['difference_ci_low'])} to {_signed(row['difference_ci_high'])})"
        if row["difference_ci_low"] is not None
        else ""
    )
    share = row["within_0_1"]
    return [
        str(row["metric"]),
        f"{row['pairs']:,} of {row['rows']:,}",
        _number(row["judge_mean"]),
        _number(row["candidate_mean"]),
        _signed(row["difference"]) + interval,
        _number(row["mean_abs_difference"]),
        _number(row["rank_correlation"], 2),
        "–" if share is None else f"{share:.0%}",
        f"{row['candidate_failed']:,}",
    ]


def comparison_sentence(rows: Sequence[Mapping[str, Any]]) -> str:
    """Who was compared with whom, on how many rows, and how to read the table."""
    if not rows:
        return "No shadow judge scored these rows."
    first = rows[0]
    return (
        f"The shadow judge {first['candidate'] or 'unknown'} scored {first['rows']:,} rows "
        f"of {first['day']} beside the judge of record {first['judge'] or 'unknown'}. "
        "Per metric, on the rows both scored (pairs): both means, the difference "
        "(candidate - record) with a 95% paired bootstrap interval, and their agreement. "
        "These scores are not in the published ones nor in the daily means."
    )


def candidate_failure_sentence(candidate: Mapping[str, Any] | None) -> str | None:
    """What a run's shadow judge failed on (the manifest's `candidate`), as one sentence;
    None when it did not fail (or none is configured)."""
    if not candidate or candidate.get("status", "ok") == "ok":
        return None
    failed = candidate.get("failed_chunks") or []
    if not failed:
        return None
    chunks = candidate.get("chunks") or len(failed)
    whole = candidate.get("status") == "failed"
    return (
        f"The shadow judge failed on {len(failed)} of {chunks} chunk(s)"
        + (": no candidate row, no comparison this day" if whole else "")
        + f". First error (chunk {failed[0]['chunk']}): {failed[0]['error']}"
    )


def switch_offset(
    day: str, metric: str, new_judge: str | None, comparisons: Sequence[Mapping[str, Any]]
) -> str | None:
    """What the shadow judge measured before a switch of judge: the latest comparison before
    `day` of `metric` whose candidate is the judge scoring from `day` (`new_judge`, as the
    daily metrics name it), as a phrase for the trend's mark; None when none was measured."""
    measured = [
        row
        for row in comparisons
        if row["metric"] == metric
        and str(row["day"]) < day
        and new_judge is not None
        and row["candidate"] == new_judge
        and row["difference"] is not None
    ]
    if not measured:
        return None
    row = max(measured, key=lambda found: str(found["day"]))
    interval = (
        f" (95% CI {_signed(row['difference_ci_low'])} to {_signed(row['difference_ci_high'])})"
        if row["difference_ci_low"] is not None
        else ""
    )
    return (
        f"offset measured by the shadow judge on {row['day']}: "
        f"{_signed(row['difference'])}{interval} over {row['pairs']:,} rows"
    )
