"""The daily quality report: one self-contained HTML page (inline CSS and SVG charts, opens
offline) and the same information as Markdown.

It reads what the pipeline already computed (the `daily_metrics` history and the regression
check) and, for the examples worth reading, the day's scored rows. Everything that came from a
log (questions, answers, contexts, the judge's statements and explanations) is untrusted text
and is escaped before it is written into either format.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from ragas_ops.contract.inputs import ColumnMapping
from ragas_ops.quality.judge_comparison import switch_offset
from ragas_ops.quality.regression import RegressionReport
from ragas_ops.quality.report.charts import trend_svg
from ragas_ops.quality.report.data import (
    DEFAULT_COLUMNS,
    TEST_DOUBLE_PREFIXES,
    TREND_DAYS,
    ReportData,
    RowsAt,
    distinct_interactions,
    ranked_columns,
    rows_of_table,
)
from ragas_ops.quality.report.html import HtmlReport, baseline_rule, judge_notice, verdict_findings
from ragas_ops.quality.report.markdown import MarkdownReport, sparkline
from ragas_ops.quality.rerun import RerunChange


@dataclass(frozen=True)
class Report:
    """The day's report in both formats."""

    day: str
    html: str
    markdown: str


def build_report(
    day: str,
    history: pa.Table,
    scored: pa.Table,
    regression: RegressionReport,
    *,
    metrics: Sequence[str],
    manifest: Mapping[str, Any] | None = None,
    worst_examples: int = 5,
    rerun: RerunChange | None = None,
    columns: ColumnMapping = DEFAULT_COLUMNS,
    comparison: Sequence[Mapping[str, Any]] = (),
    comparison_history: Sequence[Mapping[str, Any]] = (),
    rows_at: RowsAt | None = None,
) -> Report:
    """Build the report of `day`.

    `history` holds `daily_metrics` rows (the last 30 days are charted; `day`'s rows fill the
    tables), `scored` the day's scored rows (for the worst examples and failure reasons),
    `regression` the day's `check_regression` result. `manifest`'s top-level scalar entries
    are listed at the end; `rerun`, what this publish changed against the day's previous one
    (a section after the verdict); `columns`, the logs' names of the question, contexts and
    answer (the scored rows keep them). With `rows_at` (the day's rows by position),
    `scored` needs only the `ranked_columns`: the rows shown are read alone. `comparison`: the
    day's shadow-judge comparison (`quality.judge_comparison`, a row per metric; a section
    after the cards); `comparison_history`, the comparisons of the charted days: a switch of
    judge on the charts is marked with the offset the shadow judge measured before it
    (`switch_offset`).
    """
    if regression.day != day:
        raise ValueError(f"the regression check is for {regression.day}, not {day}")
    data = ReportData.gather(
        day,
        history,
        scored,
        regression,
        metrics=metrics,
        worst_examples=worst_examples,
        columns=columns,
        rows_at=rows_at,
    )
    offsets = {
        (change.day, metric): offset
        for metric, changes in (data.changes or {}).items()
        for change in changes
        if (
            offset := switch_offset(
                change.day,
                metric,
                (data.overall[metric].get(change.day) or {}).get("judge"),
                comparison_history,
            )
        )
    }
    return Report(
        day=day,
        html=HtmlReport(data, manifest or {}, rerun, comparison, offsets).render(),
        markdown=MarkdownReport(data, manifest or {}, rerun, comparison, offsets).render(),
    )


__all__ = [
    "TEST_DOUBLE_PREFIXES",
    "TREND_DAYS",
    "Report",
    "RowsAt",
    "baseline_rule",
    "build_report",
    "distinct_interactions",
    "judge_notice",
    "ranked_columns",
    "rows_of_table",
    "sparkline",
    "trend_svg",
    "verdict_findings",
]
