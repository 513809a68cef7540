"""The report as Markdown: the same information as the HTML page, with sparklines."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ragas_ops.contract.status import Status
from ragas_ops.quality.daily_metrics import ALL
from ragas_ops.quality.judge_comparison import (
    COMPARISON_HEADER,
    candidate_failure_sentence,
    comparison_cells,
    comparison_sentence,
)
from ragas_ops.quality.regression import Outcome
from ragas_ops.quality.report.calibration import calibration_markdown
from ragas_ops.quality.report.data import (
    TREND_DAYS,
    ReportData,
    example_fields,
    format_interval,
    format_score,
    metric_title,
    repeats_note,
    truncate,
    worst_title_of,
)
from ragas_ops.quality.report.html import (
    baseline_rule,
    judge_notice,
    manifest_scalars,
    outcome_label,
    unchecked_reason,
    verdict_findings,
)
from ragas_ops.quality.rerun import RERUN_HEADER, RerunChange, rerun_cells, rerun_sentence

# --- Markdown -----------------------------------------------------------------------------------

_MD_SPECIAL = str.maketrans({c: f"\\{c}" for c in "\\`*_[]|#"})
_BLOCKS = "▁▂▃▄▅▆▇█"


def _md(text: str) -> str:
    """Logged text made inert in Markdown: HTML escaped, Markdown syntax escaped, one line;
    right-to-left text isolated between Unicode's FIRST STRONG ISOLATE and POP DIRECTIONAL
    ISOLATE, which Markdown keeps (it has no `<bdi>`), so it does not reorder its line."""
    inert = html.escape(" ".join(text.split()), quote=False).translate(_MD_SPECIAL)
    return f"\u2068{inert}\u2069" if _RIGHT_TO_LEFT.search(inert) else inert


# Hebrew, Arabic, Syriac, Thaana, NKo and the other right-to-left blocks, and their forms.
_RIGHT_TO_LEFT = re.compile("[\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufeff]")


def sparkline(values: Sequence[float | None]) -> str:
    """Unicode blocks scaled between the window's lowest and highest value; a gap is `·`."""
    present = [value for value in values if value is not None]
    if not present:
        return ""
    low, high = min(present), max(present)
    span = high - low
    return "".join(
        "·"
        if value is None
        else _BLOCKS[round((value - low) / span * (len(_BLOCKS) - 1)) if span else 3]
        for value in values
    )


@dataclass(frozen=True)
class MarkdownReport:
    data: ReportData
    manifest: Mapping[str, Any]
    rerun: RerunChange | None = None
    comparison: Sequence[Mapping[str, Any]] = ()
    offsets: Mapping[tuple[str, str], str] = field(default_factory=dict)

    def render(self) -> str:
        data = self.data
        lines = [f"# RAG quality report · {data.day}", ""]
        lines.append(f"Judge: `{', '.join(data.judges) or 'unknown'}`")
        lines.append("")
        if data.sampling:
            lines += [data.sampling.sentence(), ""]
        notice = judge_notice(data.test_double)
        if notice:
            lines += [f"> **{notice[0]}** {notice[1]}", ""]
        alarm = self.manifest.get("input_alarm")
        if alarm:  # broken input before any verdict: no quiet day
            lines += [f"> **{_md(alarm['title'])}** {_md(alarm['message'])}", ""]
        lines += self._verdict()
        lines += self._rerun()
        lines += self._metrics()
        lines += self._comparison()
        lines += calibration_markdown(data.metrics, data.days, data.overall)
        lines += self._segments()
        lines += self._cost()
        lines += self._failures()
        lines += self._examples()
        lines += self._manifest()
        return "\n".join(lines).rstrip() + "\n"

    def _verdict(self) -> list[str]:
        regression = self.data.regression
        lines = [f"**Verdict: {regression.verdict.label.upper()}** · {regression.summary}", ""]
        lines += [f"- {_md(finding.message)}" for finding in verdict_findings(regression)]
        if len(lines) > 2:
            lines.append("")
        changes = [
            f"- {_md(metric_title(metric))}: {_md(change.sentence)}"
            + (f"; {_md(offset)}" if (offset := self.offsets.get((change.day, metric))) else "")
            for metric, found in (self.data.changes or {}).items()
            for change in found
        ]
        if changes:
            lines += [f"Scoring changed in the last {TREND_DAYS} days:", "", *changes, ""]
        return [*lines, _md(baseline_rule(regression)), ""]

    def _rerun(self) -> list[str]:
        if self.rerun is None:
            return []
        lines = ["## What this rerun changed", "", _md(rerun_sentence(self.rerun)), ""]
        lines.append("| " + " | ".join(RERUN_HEADER) + " |")
        lines.append("|---|---:|---:|---:|")
        lines += [
            "| " + " | ".join(_md(cell) for cell in cells) + " |"
            for cells in rerun_cells(self.rerun)
        ]
        return [*lines, ""]

    def _comparison(self) -> list[str]:
        failure = candidate_failure_sentence(self.manifest.get("candidate"))
        failed = [] if failure is None else [f"**{_md(failure)}**", ""]
        if not self.comparison:
            return ["## Shadow judge", "", *failed] if failed else []
        lines = ["## Shadow judge", "", *failed, _md(comparison_sentence(self.comparison)), ""]
        lines.append("| " + " | ".join(COMPARISON_HEADER) + " |")
        lines.append("|---|" + "---:|" * (len(COMPARISON_HEADER) - 1))
        lines += [
            "| " + " | ".join(_md(cell) for cell in comparison_cells(row)) + " |"
            for row in self.comparison
        ]
        return [*lines, ""]

    def _metrics(self) -> list[str]:
        data = self.data
        sampled = " not sampled |" if data.sampling else ""
        lines = [
            "## Metrics",
            "",
            f"| metric | mean | CI | vs baseline | scored | not applicable |{sampled} failed | "
            f"last {TREND_DAYS} days |",
            "|---|---:|---|---|---:|---:|" + ("---:|" if sampled else "") + "---:|---|",
        ]
        for metric in data.metrics:
            row = data.today_overall(metric)
            finding = data.finding(ALL, ALL, metric)
            spark = sparkline([data.overall[metric].get(day, {}).get("mean") for day in data.days])
            if row is None:
                empty = " |" * (5 if sampled else 4)
                lines.append(f"| {metric_title(metric)} | n/a |{empty} | {spark} |")
                continue
            reason = unchecked_reason(finding)
            if reason is None and finding is not None and finding.delta is not None:
                reason = f"{finding.delta:+.3f} ({outcome_label(finding)})"
            versus = _md(reason or "")
            lines.append(
                f"| {metric_title(metric)} | {format_score(row['mean'])} | "
                f"{format_interval(row)} | {versus} | "
                f"{row['rows_scored']:,} | {row['rows_not_applicable']:,} | "
                + (f"{row.get('rows_not_sampled') or 0:,} | " if sampled else "")
                + f"{row['rows_failed']:,} | {spark} |"
            )
        return [*lines, ""]

    def _segments(self) -> list[str]:
        data = self.data
        lines = [
            "## By segment",
            "",
            "| segment | value | rows | "
            + " | ".join(
                f"{metric_title(metric)} (mean, CI, scored/failed)" for metric in data.metrics
            )
            + " |",
            "|---|---|---:|" + "---|" * len(data.metrics),
        ]
        for column, value, rows in data.segment_rows():
            any_row = next(iter(rows.values()))
            cells = []
            for metric in data.metrics:
                row = rows.get(metric)
                finding = data.finding(column, value, metric)
                flag = (
                    f" **{finding.outcome.value}**"
                    if finding and finding.outcome in (Outcome.REGRESSION, Outcome.IMPROVED)
                    else ""
                )
                cells.append(
                    "–"
                    if row is None
                    else f"{format_score(row['mean'])} ({format_interval(row)}, "
                    f"{row['rows_scored']:,}/{row['rows_failed']:,}){flag}"
                )
            label = "all rows" if column == ALL else _md(column)
            shown = "" if column == ALL else _md(value)
            lines.append(f"| {label} | {shown} | {any_row['rows']:,} | {' | '.join(cells)} |")
        return [*lines, ""]

    def _cost(self) -> list[str]:
        lines = ["## Cost and tokens", "", "| | |", "|---|---:|"]
        lines += [f"| {label} | {value} |" for label, value in self.data.cost_rows()]
        note = (
            "Tokens and cost are per row, shared by all metrics. A cost is unknown when a "
            "model in use has no price."
        )
        return [*lines, "", note, ""]

    def _failures(self) -> list[str]:
        data = self.data
        statuses = data.failure_statuses()
        shown = [Status.NOT_SAMPLED.value, *statuses] if data.sampling else statuses
        header = ["metric", "ok", "not_applicable", *shown]
        lines = [
            "## Failures by status",
            "",
            "| " + " | ".join(header) + " |",
            "|---|" + "---:|" * (len(header) - 1),
        ]
        for metric in data.metrics:
            row = data.today_overall(metric)
            if row is None:
                continue
            failures = json.loads(row["failures_by_status"])
            if data.sampling:
                failures[Status.NOT_SAMPLED.value] = row.get("rows_not_sampled") or 0
            cells = [
                metric_title(metric),
                f"{row['rows_scored']:,}",
                f"{row['rows_not_applicable']:,}",
                *(f"{failures.get(status, 0):,}" for status in shown),
            ]
            lines.append("| " + " | ".join(cells) + " |")
        reasons = [
            f"- {metric_title(metric)}: {_md(truncate(reason, 160))} ({count:,})"
            for metric in data.metrics
            for reason, count in data.reasons.get(metric, [])
        ]
        if reasons:
            lines += ["", "Most common reasons:", "", *reasons]
        return [*lines, ""]

    def _examples(self) -> list[str]:
        lines = ["## Examples to read", ""]
        for metric in self.data.metrics:
            title = worst_title_of(metric)
            lines += [f"### {title}", ""]
            examples = self.data.examples.get(metric, [])
            if not examples:
                lines += ["_No scored row._", ""]
            for number, example in enumerate(examples, start=1):
                tags = [f"id `{_md(example.row_id)}`"] if example.row_id else []
                tags += [f"{_md(column)}={_md(value)}" for column, value in example.segments]
                if example.repeats:
                    tags.append(repeats_note(example))
                lines.append(f"{number}. **{example.score:.3f}** {' · '.join(tags)}")
                lines += [
                    f"   - {label}: {_md(text)}" + (f" (judge: {_md(note)})" if note else "")
                    for label, text, note in example_fields(metric, example)
                ]
            lines.append("")
        return lines

    def _manifest(self) -> list[str]:
        scalars = manifest_scalars(self.manifest)
        if not scalars:
            return []
        lines = ["## Run", "", "| | |", "|---|---|"]
        lines += [f"| {_md(key)} | {_md(value)} |" for key, value in scalars]
        return [*lines, ""]
