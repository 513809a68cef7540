"""What the report shows, gathered once for both formats: the day's aggregates, the
verdict, the worst examples, the cost; and the formatting helpers both formats share."""

from __future__ import annotations

import dataclasses
import html
import json
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ragas_ops.contract.inputs import QUESTION, ColumnMapping
from ragas_ops.contract.status import Status
from ragas_ops.metrics import Metric, metric_kind
from ragas_ops.quality.daily_metrics import ALL
from ragas_ops.quality.regression import (
    RegressionFinding,
    RegressionReport,
    ScoringChange,
    scoring_changes,
)

TREND_DAYS = 30
TEST_DOUBLE_PREFIXES = ("openai:test-judge", "local:")
"""Judges whose scores show the pipeline working, not the quality of a RAG system."""
QUESTION_CHARS = 300
ANSWER_CHARS = 600
ITEM_CHARS = 300
VERDICT_ITEMS = 6
"""Findings listed under the verdict; the segment table highlights all of them."""
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


DEFAULT_COLUMNS = ColumnMapping()
escape = html.escape
"""Every logged text goes through this before it is written into HTML."""

RowsAt = Callable[[Sequence[int], Sequence[str]], Mapping[int, Mapping[str, Any]]]
"""The day's rows at some positions (row numbers of the day as it is read), in some columns:
`DayTables.read_scored_rows`, or `rows_of_table` of a table in memory."""


def ranked_columns(metrics: Sequence[str], columns: ColumnMapping = DEFAULT_COLUMNS) -> list[str]:
    """The columns the report reads of every row of the day: what it ranks, counts and
    names by (scores, statuses, reasons, the question, the judge). The texts and evidence of
    the few rows it shows are read by position (`RowsAt`)."""
    per_metric = [
        f"{metric}_{part}" for metric in metrics for part in ("score", "status", "reason")
    ]
    return ["id", "judge", columns.question, *per_metric]


def example_columns(
    metrics: Sequence[str], segment_columns: Sequence[str], columns: ColumnMapping = DEFAULT_COLUMNS
) -> list[str]:
    """The columns an example shows (`example_of_row`), read for the chosen rows only."""
    return [
        "id",
        columns.question,
        columns.answer,
        columns.contexts,  # what Metric.explain may quote
        *segment_columns,
        *(f"{metric}_{part}" for metric in metrics for part in ("score", "reason", "evidence")),
    ]


def rows_of_table(table: pa.Table) -> RowsAt:
    """`RowsAt` over a table already in memory (tests, small days)."""

    def rows_at(positions: Sequence[int], wanted: Sequence[str]) -> dict[int, dict[str, Any]]:
        present = [name for name in dict.fromkeys(wanted) if name in table.column_names]
        rows = table.select(present).take(pa.array(list(positions), pa.int64())).to_pylist()
        return dict(zip(positions, rows, strict=True))

    return rows_at


# --- what the report shows ----------------------------------------------------------------------


@dataclass(frozen=True)
class Example:
    """One scored row worth reading, with the evidence of its low score."""

    score: float
    row_id: str | None
    segments: list[tuple[str, str]]
    question: str
    answer: str
    contexts: list[str]
    reason: str | None
    evidence: dict[str, Any] | None
    repeats: int = 0
    """Other low-scored rows of the day with the same question, not listed again."""


@dataclass(frozen=True)
class ReportData:
    day: str
    metrics: list[str]
    days: list[str]
    """The charted days, oldest first, `day` last."""
    overall: dict[str, dict[str, dict[str, Any]]]
    """metric -> dt -> the overall daily_metrics row."""
    today: list[dict[str, Any]]
    """`day`'s daily_metrics rows."""
    segment_columns: list[str]
    judges: list[str]
    regression: RegressionReport
    examples: dict[str, list[Example]]
    reasons: dict[str, list[tuple[str, int]]]
    """metric -> the most common reasons of failed rows."""
    sampling: _Sampling | None = None
    """How many of the day's rows were sampled, when some were left out."""
    changes: dict[str, list[ScoringChange]] | None = None
    """metric -> the charted days on which its judge or versions changed."""

    @classmethod
    def gather(
        cls,
        day: str,
        history: pa.Table,
        scored: pa.Table,
        regression: RegressionReport,
        *,
        metrics: Sequence[str],
        worst_examples: int,
        columns: ColumnMapping = DEFAULT_COLUMNS,
        rows_at: RowsAt | None = None,
    ) -> ReportData:
        """`scored` needs only the `ranked_columns` when `rows_at` gives the rows it shows
        (else they are taken from `scored`)."""
        rows_at = rows_at or rows_of_table(scored)
        first = (date.fromisoformat(day) - timedelta(days=TREND_DAYS - 1)).isoformat()
        days = [
            (date.fromisoformat(first) + timedelta(days=offset)).isoformat()
            for offset in range(TREND_DAYS)
        ]
        window = history.filter(
            pc.and_(pc.greater_equal(history["dt"], first), pc.less_equal(history["dt"], day))
        ).to_pylist()
        overall: dict[str, dict[str, dict[str, Any]]] = {metric: {} for metric in metrics}
        for row in window:
            if row["segment_column"] == ALL and row["metric"] in overall:
                overall[row["metric"]][row["dt"]] = row
        today = [row for row in window if row["dt"] == day and row["metric"] in metrics]
        segment_columns = list(
            dict.fromkeys(row["segment_column"] for row in today if row["segment_column"] != ALL)
        )
        return cls(
            day=day,
            metrics=list(metrics),
            days=days,
            overall=overall,
            today=today,
            segment_columns=segment_columns,
            judges=_judges(today, scored),
            regression=regression,
            examples=worst_examples_of(
                scored,
                rows_at,
                metrics=metrics,
                segment_columns=segment_columns,
                count=worst_examples,
                columns=columns,
            ),
            reasons={metric: _failure_reasons(scored, metric) for metric in metrics},
            sampling=_Sampling.of(today, scored, metrics, rows_at),
            changes=_changes_by_metric(history, first, day, metrics),
        )

    @property
    def test_double(self) -> list[str]:
        return [judge for judge in self.judges if judge.startswith(TEST_DOUBLE_PREFIXES)]

    def today_overall(self, metric: str) -> dict[str, Any] | None:
        return self.overall.get(metric, {}).get(self.day)

    def finding(self, column: str, value: str, metric: str) -> RegressionFinding | None:
        return self.regression.finding(column, value, metric)

    def segment_rows(self) -> list[tuple[str, str, dict[str, dict[str, Any]]]]:
        """(segment column, value, metric -> row) for `day`, overall first."""
        grouped: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}
        for row in self.today:
            grouped.setdefault((row["segment_column"], row["segment_value"]), {})[row["metric"]] = (
                row
            )
        return [(column, value, rows) for (column, value), rows in grouped.items()]

    def cost_rows(self) -> list[tuple[str, str]]:
        """(label, formatted value) for the day's cost and tokens."""
        row = self.today_overall(self.metrics[0]) if self.metrics else None
        if row is None:
            return [("Rows", "no aggregates for this day")]
        month: list[Any] = [
            _paid(self.overall[self.metrics[0]][dt])
            for dt in self.days
            if dt in self.overall[self.metrics[0]]
        ]
        per_1k = (
            _money(row["cost_usd"] / row["rows"] * 1000)
            if row["cost_usd"] is not None and row["rows"]
            else "n/a"
        )
        sampling = self.sampling
        rows = [("Rows", f"{row['rows']:,}")]
        if sampling:
            rows.append(("Rows sampled", sampling.describe()))
        rows += [
            ("Prompt tokens", f"{row['prompt_tokens']:,}"),
            ("Completion tokens", f"{row['completion_tokens']:,}"),
            ("Embedding tokens", f"{row['embedding_tokens']:,}"),
            ("Cost", _money(row["cost_usd"])),
            ("Cost per 1,000 rows", per_1k),
        ]
        if "day_spend_usd" in row:  # what the day's runs paid, from their manifests
            rows += [
                ("Paid by the run that published", _money(row["run_spend_usd"])),
                (
                    f"Paid by the day's other runs ({max(0, (row['day_runs'] or 1) - 1)})",
                    _money(row["other_runs_spend_usd"]),
                ),
                ("Paid for the day in all", _money(row["day_spend_usd"])),
            ]
        if sampling:
            rows.append(("Cost per 1,000 sampled rows", sampling.cost_per_1k(row["cost_usd"])))
        rows.append(
            (f"Cost over the last {TREND_DAYS} days", _money(None if None in month else sum(month)))
        )
        return rows

    def failure_statuses(self) -> list[str]:
        statuses: set[str] = set()
        for metric in self.metrics:
            row = self.today_overall(metric)
            if row is not None:
                statuses.update(json.loads(row["failures_by_status"]))
        return sorted(statuses)


def _paid(row: Mapping[str, Any]) -> float | None:
    """What a day's judge calls were paid: every run's spend (the manifests') when the daily
    metrics have it, else the cost of its rows."""
    if "day_spend_usd" in row and row.get("day_runs"):
        return row["day_spend_usd"]  # type: ignore[no-any-return]
    return row["cost_usd"]  # type: ignore[no-any-return]


@dataclass(frozen=True)
class _Sampling:
    """The day's sample: rows in all, rows left out by `pipeline.sample_fraction`, and the
    fraction the run was configured with (read from the evidence of a not-sampled row)."""

    rows: int
    not_sampled: int
    fraction: float | None

    @classmethod
    def of(
        cls,
        today: Sequence[Mapping[str, Any]],
        scored: pa.Table,
        metrics: Sequence[str],
        rows_at: RowsAt,
    ) -> _Sampling | None:
        """None when no row of the day was left out (nothing to say)."""
        overall = [row for row in today if row["segment_column"] == ALL]
        if not overall:
            return None
        left_out = max(int(row.get("rows_not_sampled") or 0) for row in overall)
        if not left_out:
            return None
        fraction = _configured_fraction(scored, metrics, rows_at)
        return cls(int(overall[0]["rows"]), left_out, fraction)

    @property
    def sampled(self) -> int:
        return self.rows - self.not_sampled

    def describe(self) -> str:
        share = self.sampled / self.rows if self.rows else 0.0
        configured = "" if self.fraction is None else f"; sample_fraction {self.fraction:g}"
        return f"{self.sampled:,} of {self.rows:,} ({share:.1%}{configured})"

    def sentence(self) -> str:
        return (
            f"Sampled: {self.describe()}. Means and intervals are over the sampled rows; the "
            f"other {self.not_sampled:,} rows are not_sampled, chosen by a hash of their id."
        )

    def cost_per_1k(self, cost: float | None) -> str:
        if cost is not None and not self.sampled:
            return "n/a"
        return _money(None if cost is None else cost / self.sampled * 1000)


def _configured_fraction(scored: pa.Table, metrics: Sequence[str], rows_at: RowsAt) -> float | None:
    for metric in metrics:
        status_column, evidence_column = f"{metric}_status", f"{metric}_evidence"
        if status_column not in scored.column_names:
            continue
        left_out = pc.indices_nonzero(
            pc.fill_null(pc.equal(scored[status_column], Status.NOT_SAMPLED.value), False)
        )
        if not len(left_out):
            continue
        first = left_out[0].as_py()
        row = rows_at([first], [evidence_column])[first]
        if evidence_column not in row:
            continue
        try:
            fraction = json.loads(row[evidence_column] or "null").get("sample_fraction")
        except (json.JSONDecodeError, AttributeError):
            return None
        return float(fraction) if isinstance(fraction, int | float) else None
    return None


def not_sampled_note(row: Mapping[str, Any]) -> str:
    left_out = row.get("rows_not_sampled") or 0
    return f" · {left_out:,} not sampled" if left_out else ""


def _changes_by_metric(
    history: pa.Table, first: str, day: str, metrics: Sequence[str]
) -> dict[str, list[ScoringChange]]:
    """The changes of judge or version inside the charted days (the day before the first
    charted day is read too, so a change on the first day is seen)."""
    found: dict[str, list[ScoringChange]] = {metric: [] for metric in metrics}
    for change in scoring_changes(history.filter(pc.less_equal(history["dt"], day)), metrics):
        if first <= change.day <= day:
            found[change.metric].append(change)
    return found


def _judges(today: Sequence[Mapping[str, Any]], scored: pa.Table) -> list[str]:
    found: set[str] = set()
    for row in today:
        if row["judge"]:
            found.update(part.strip() for part in row["judge"].split(","))
    if "judge" in scored.column_names:
        found.update(value for value in pc.unique(scored["judge"]).to_pylist() if value)
    return sorted(found)


def worst_examples_of(
    ranking: pa.Table,
    rows_at: RowsAt,
    *,
    metrics: Sequence[str],
    segment_columns: Sequence[str],
    count: int,
    columns: ColumnMapping = DEFAULT_COLUMNS,
) -> dict[str, list[Example]]:
    """The `count` lowest-scored rows per metric of distinct questions (`worst_positions`),
    as examples. Only `ranking`'s score, status and question columns are read for every
    row; the chosen rows' text and evidence come from `rows_at`, read once for all metrics,
    so a day of a million rows costs a few columns, not the table."""
    wanted = {
        metric: worst_positions(ranking, metric, count, question=columns.question)
        for metric in metrics
    }
    positions = sorted({position for worst in wanted.values() for position, _ in worst})
    rows = (
        rows_at(positions, example_columns(metrics, segment_columns, columns)) if positions else {}
    )
    return {
        metric: [
            dataclasses.replace(
                example_of_row(rows[position], metric, segment_columns, columns), repeats=repeats
            )
            for position, repeats in worst
        ]
        for metric, worst in wanted.items()
    }


def worst_positions(
    scored: pa.Table, metric: str, count: int, question: str = QUESTION
) -> list[tuple[int, int]]:
    """(row number, other rows with its question) of the `count` lowest `ok` scores of
    `metric` among distinct questions, worst first (ties: row order). `scored` needs only the
    metric's score and status columns and, when it has one, the `question` column."""
    score_column, status_column = f"{metric}_score", f"{metric}_status"
    if count <= 0 or score_column not in scored.column_names:
        return []
    indices = pa.array(range(scored.num_rows), pa.int64())
    ok = pc.and_(
        pc.equal(scored[status_column], Status.OK.value), pc.is_valid(scored[score_column])
    )
    candidates = pa.table({"score": scored[score_column], "index": indices}).filter(ok)
    order = candidates.sort_by([("score", "ascending"), ("index", "ascending")])
    ranked = order["index"].to_pylist()
    questions = (
        scored[question].take(pa.array(ranked, pa.int64())).to_pylist()
        if question in scored.column_names
        else [None] * len(ranked)
    )
    wanted, repeats = distinct_interactions(ranked, questions, count)
    return list(zip(wanted, repeats, strict=True))


def distinct_interactions(
    ranked: Sequence[int], questions: Sequence[Any], count: int
) -> tuple[list[int], list[int]]:
    """The first `count` of `ranked` (row positions, worst first) that ask different
    questions (compared without case or spacing), and for each how many other ranked rows
    ask the same: five logged repeats of one question are one example, not five."""
    chosen: list[int] = []
    keys: dict[str, int] = {}
    counts: Counter[str] = Counter()
    for position, question in zip(ranked, questions, strict=True):
        key = " ".join(str(question).casefold().split()) if question else f"#{position}"
        counts[key] += 1
        if key not in keys and len(chosen) < count:
            keys[key] = len(chosen)
            chosen.append(position)
    repeats = [0] * len(chosen)
    for key, index in keys.items():
        repeats[index] = counts[key] - 1
    return chosen, repeats


def example_of_row(
    row: Mapping[str, Any],
    metric: str,
    segment_columns: Sequence[str],
    columns: ColumnMapping = DEFAULT_COLUMNS,
) -> Example:
    """A scored row as an example of `metric` (`columns`: the logs' names of the question,
    contexts and answer)."""
    evidence: dict[str, Any] | None = None
    try:
        parsed = json.loads(row.get(f"{metric}_evidence") or "null")
        evidence = parsed if isinstance(parsed, dict) else None
    except json.JSONDecodeError:
        evidence = None
    return Example(
        score=float(row[f"{metric}_score"]),
        row_id=None if row.get("id") is None else str(row["id"]),
        segments=[
            (column, "(null)" if row.get(column) is None else str(row[column]))
            for column in segment_columns
            if column in row
        ],
        question=_text(row.get(columns.question)),
        answer=_text(row.get(columns.answer)),
        contexts=[_text(c) for c in row.get(columns.contexts) or [] if isinstance(c, str)],
        reason=row.get(f"{metric}_reason"),
        evidence=evidence,
    )


def repeats_note(example: Example) -> str:
    return f"same question in {example.repeats:,} other scored row(s), not listed again"


def _failure_reasons(scored: pa.Table, metric: str, top: int = 3) -> list[tuple[str, int]]:
    status_column, reason_column = f"{metric}_status", f"{metric}_reason"
    if status_column not in scored.column_names or reason_column not in scored.column_names:
        return []
    not_failures = [status.value for status in Status if not status.is_failure]
    failed = pc.invert(pc.is_in(scored[status_column], pa.array(not_failures, pa.string())))
    reasons = scored.filter(pc.fill_null(failed, True))[reason_column].to_pylist()
    return Counter(reason or "(no reason given)" for reason in reasons).most_common(top)


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def truncate(text: str, limit: int) -> str:
    """At most `limit` characters, cut at a word boundary, saying how much was left out."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0] if " " in text[:limit] else text[:limit]
    return f"{cut} … ({len(text) - len(cut):,} more characters)"


def metric_title(metric: str) -> str:
    return (metric_kind(metric) or Metric).display_title(metric)


def worst_title_of(metric: str) -> str:
    return (metric_kind(metric) or Metric).display_worst_title(metric)


def format_score(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _money(value: float | None) -> str:
    if value is None:
        return "unknown"
    return f"${value:,.4f}" if value < 100 else f"${value:,.2f}"


def format_interval(row: Mapping[str, Any]) -> str:
    if row.get("ci_low") is None or row.get("ci_high") is None:
        return "no CI"
    return f"{row['ci_low']:.3f}–{row['ci_high']:.3f}"


def interval_text(row: Mapping[str, Any]) -> str:
    """`CI 0.812–0.874`, or `no CI` (one scored row)."""
    interval = format_interval(row)
    return interval if row.get("ci_low") is None or row.get("ci_high") is None else f"CI {interval}"


def short_date(day: str) -> str:
    parsed = date.fromisoformat(day)
    return f"{_MONTHS[parsed.month - 1]} {parsed.day}"


def example_fields(
    metric: str, example: Example, *, evidence_items: int | None = None
) -> list[tuple[str, str, str]]:
    """(label, untrusted text, untrusted note) shown for an example: its question and answer,
    truncated, then what explains its low score (`example_details`)."""
    return [
        ("Question", truncate(example.question, QUESTION_CHARS), ""),
        ("Answer", truncate(example.answer, ANSWER_CHARS), ""),
        *example_details(metric, example, evidence_items=evidence_items),
    ]


def example_details(
    metric: str, example: Example, *, evidence_items: int | None = None
) -> list[tuple[str, str, str]]:
    """(label, untrusted text, untrusted note) that explain an example's low score, from its
    evidence as the metric explains it (the first `evidence_items` of them; default all),
    then its reason; the note is the judge's explanation, when there is one."""
    evidence = example.evidence or {}
    details = (metric_kind(metric) or Metric).explain(evidence, example.contexts)
    details = details[:evidence_items]
    if example.reason:
        details.append(("Note", example.reason, ""))
    return [
        (label, truncate(text, ITEM_CHARS), truncate(note, ITEM_CHARS))
        for label, text, note in details
    ]
