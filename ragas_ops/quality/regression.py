"""The regression check: a day's means against the trailing days' baseline, per (segment
grouping, metric), comparing only days scored with the same judge, embedding model and metric
and prompt versions; and the days on which those changed (`scoring_changes`).

`check_regression` reads `daily_metrics` rows (`quality.daily_metrics`), so the pipeline, the
report and the quality page all judge a day alike from the tables alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta
from enum import StrEnum
from typing import Any

import pyarrow as pa

from ragas_ops.quality.daily_metrics import ALL


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
        """What changed from `self` to `later`, as phrases ("the judge changed from ...");
        a criterion of the config file whose definition changed is "criterion <name> changed
        (version <a> to <b>)": its wording, not the RAG system, moved the scores."""
        parts = (
            ("the judge", self.judge, later.judge),
            ("the embedding model", self.embedding_model, later.embedding_model),
            (f"the {metric} version" if metric else "the version", self.version, later.version),
        )
        changed = [
            (name, before, after)
            for name, before, after in parts
            if before is not None and after is not None and before != after
        ]
        return [
            _criterion_change(metric, before, after)
            if name.endswith("version") and _is_criterion(metric, before, after)
            else f"{name} changed from {before} to {after}"
            for name, before, after in changed
        ]

    def to_dict(self) -> dict[str, str | None]:
        return {
            "judge": self.judge,
            "embedding_model": self.embedding_model,
            "metric_version": self.version,
        }


CRITERION_MARK = "/criterion-"
"""In a criterion's `<name>_version` (`citations/criterion-3f2a9c1d0b4e (...)`), before its
definition's hash (`metrics.criteria`)."""


def _criterion_hash(metric: str, version: str) -> str | None:
    prefix = f"{metric}{CRITERION_MARK}"
    return version.removeprefix(prefix).split(" ", 1)[0] if version.startswith(prefix) else None


def _is_criterion(metric: str, before: str, after: str) -> bool:
    return bool(metric) and _criterion_hash(metric, before) is not None


def _criterion_change(metric: str, before: str, after: str) -> str:
    old, new = _criterion_hash(metric, before), _criterion_hash(metric, after)
    if new is None:
        return f"the {metric} version changed from {before} to {after}"
    return f"criterion {metric} changed (version {old} to {new})"


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
