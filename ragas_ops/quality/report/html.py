"""The report as one self-contained HTML page (inline CSS and SVG, opens offline); every
logged text escaped."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ragas_ops.contract.layout import EMPTY_DAY_FOLDER, NO_DAY_FOLDER, no_folder_sentence
from ragas_ops.contract.status import Status
from ragas_ops.quality.daily_metrics import ALL
from ragas_ops.quality.judge_comparison import (
    COMPARISON_HEADER,
    candidate_failure_sentence,
    comparison_cells,
    comparison_sentence,
)
from ragas_ops.quality.regression import Outcome, RegressionFinding, RegressionReport
from ragas_ops.quality.report.calibration import CALIBRATION_CSS, calibration_html
from ragas_ops.quality.report.charts import trend_svg
from ragas_ops.quality.report.data import (
    VERDICT_ITEMS,
    Example,
    ReportData,
    escape,
    example_fields,
    format_interval,
    format_score,
    interval_text,
    metric_title,
    not_sampled_note,
    repeats_note,
    truncate,
    worst_title_of,
)
from ragas_ops.quality.rerun import RERUN_HEADER, RerunChange, rerun_cells, rerun_sentence

# --- HTML ---------------------------------------------------------------------------------------


def isolated(text: str) -> str:
    """Logged text, escaped and isolated from the text around it (`<bdi>`): an Arabic or Hebrew
    value inside an English line keeps its own direction without reordering its neighbours."""
    return f"<bdi>{escape(text)}</bdi>"


EXAMPLE_CSS = """
.example { border: 1px solid var(--line, #d1d9e0); border-radius: 8px; margin: 10px 0;
  overflow: hidden; }
.example .head { background: var(--soft, #f6f8fa); padding: 6px 12px; font-size: 13px;
  color: var(--muted, #59636e); border-bottom: 1px solid var(--line, #d1d9e0); }
.example .head .score { font-weight: 700; color: var(--bad, #cf222e); margin-right: 8px; }
.example dl { margin: 0; padding: 8px 12px; display: grid; grid-template-columns: 150px 1fr;
  gap: 4px 12px; }
.example dt { color: var(--muted, #59636e); font-weight: 600; }
.example dd { margin: 0; overflow-wrap: anywhere; }
.example dd .why { display: block; color: var(--muted, #59636e); font-size: 13px; }
"""
"""How `example_html` looks, for every page that shows examples (the report's variables
when it has them, else their colours)."""


def example_html(metric: str, example: Example, *, evidence_items: int | None = None) -> str:
    """One worst example of `metric`, escaped: its score, id, segments and repeats, then its
    question, answer and what explains its low score (`example_fields`: the metric's
    `explain` of its evidence, the first `evidence_items` of it, and its reason). The report
    and the quality page both show examples with this (styled by `EXAMPLE_CSS`)."""
    tags = [f"id <code>{isolated(example.row_id)}</code>"] if example.row_id else []
    tags.extend(f"{escape(column)}={isolated(value)}" for column, value in example.segments)
    if example.repeats:
        tags.append(escape(repeats_note(example)))
    items = "".join(
        f'<dt>{escape(label)}</dt><dd dir="auto">{escape(text)}'
        + (f'<span class="why">{escape(note)}</span>' if note else "")
        + "</dd>"
        for label, text, note in example_fields(metric, example, evidence_items=evidence_items)
    )
    return (
        f'<div class="example"><div class="head"><span class="score">'
        f"{example.score:.3f}</span>{' · '.join(tags)}</div><dl>{items}</dl></div>"
    )


_CSS = (
    """
:root { --ink:#1f2328; --muted:#59636e; --line:#d1d9e0; --soft:#f6f8fa; --accent:#0969da;
  --ok:#1a7f37; --ok-bg:#dafbe1; --warn:#9a6700; --warn-bg:#fff8c5; --bad:#cf222e;
  --bad-bg:#ffebe9; }
* { box-sizing: border-box; }
body { margin: 0; background: #fff; color: var(--ink); font: 14px/1.5 -apple-system,
  BlinkMacSystemFont, "Segoe UI", "Noto Sans", Helvetica, Arial, sans-serif; }
main { max-width: 1180px; margin: 0 auto; padding: 24px 32px 48px; }
h1 { font-size: 26px; margin: 0 0 4px; }
h2 { font-size: 18px; margin: 32px 0 12px; padding-bottom: 6px;
  border-bottom: 1px solid var(--line); }
h3 { font-size: 15px; margin: 20px 0 8px; }
.sub { color: var(--muted); }
.banner { margin: 16px 0; padding: 10px 14px; border-radius: 6px; border: 1px solid #d4a72c;
  background: var(--warn-bg); color: #4d2d00; }
.verdict { margin: 16px 0; padding: 14px 18px; border-radius: 8px; border: 1px solid; }
.verdict .label { display: inline-block; font-weight: 700; letter-spacing: .04em;
  text-transform: uppercase; font-size: 12px; padding: 2px 8px; border-radius: 999px;
  color: #fff; margin-right: 10px; }
.verdict ul { margin: 8px 0 0; padding-left: 20px; }
.verdict-ok { background: var(--ok-bg); border-color: #4ac26b; }
.verdict-ok .label { background: var(--ok); }
.verdict-warn { background: var(--warn-bg); border-color: #d4a72c; }
.verdict-warn .label { background: var(--warn); }
.verdict-regression { background: var(--bad-bg); border-color: #ff8182; }
.verdict-regression .label { background: var(--bad); }
.verdict-not_checked { background: #eef1f4; border-color: #8c959f; border-style: dashed; }
.verdict-not_checked .label { background: #57606a; }
.cards { display: grid; grid-template-columns: repeat(auto-fit, minmax(260px, 1fr)); gap: 16px; }
.card { border: 1px solid var(--line); border-radius: 8px; padding: 14px 16px; background: #fff; }
.card .name { color: var(--muted); font-weight: 600; }
.card .value { font-size: 30px; font-weight: 600; line-height: 1.2; margin: 4px 0; }
.card .meta { color: var(--muted); font-size: 13px; }
.up { color: var(--ok); } .down { color: var(--bad); }
.charts { display: grid; grid-template-columns: repeat(auto-fit, minmax(520px, 1fr)); gap: 16px; }
.chart h3 { margin: 0 0 6px; }
svg { display: block; width: 100%; height: auto; }
table { border-collapse: collapse; width: 100%; font-variant-numeric: tabular-nums; }
th, td { text-align: left; padding: 6px 10px; border-bottom: 1px solid var(--line);
  vertical-align: top; }
th { background: var(--soft); font-weight: 600; font-size: 13px; }
td.num, th.num { text-align: right; }
td .small { color: var(--muted); font-size: 12px; display: block; }
td.bad { background: var(--bad-bg); } td.good { background: var(--ok-bg); }
tr.group td { border-top: 2px solid var(--line); }
.two { display: grid; grid-template-columns: minmax(280px, 1fr) 2fr; gap: 24px; }
code { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12px; }
.empty { color: var(--muted); font-style: italic; }
footer { margin-top: 40px; color: var(--muted); font-size: 12px; }
"""
    + EXAMPLE_CSS
    + CALIBRATION_CSS
)


@dataclass(frozen=True)
class HtmlReport:
    data: ReportData
    manifest: Mapping[str, Any]
    rerun: RerunChange | None = None
    comparison: Sequence[Mapping[str, Any]] = ()
    offsets: Mapping[tuple[str, str], str] = field(default_factory=dict)
    """(day, metric) of a switch of judge -> the offset the shadow judge measured before."""

    def render(self) -> str:
        data = self.data
        parts = [
            "<!DOCTYPE html>",
            '<html lang="en"><head><meta charset="utf-8">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>RAG quality report {escape(data.day)}</title>",
            f"<style>{_CSS}</style></head><body><main>",
            self._header(),
            input_alarm_html(self.manifest.get("input_alarm")),
            self._verdict(),
            self._rerun(),
            self._cards(),
            self._comparison(),
            f"<h2>Trends over the last {len(self.chart_days())} day(s)</h2>",
            '<div class="charts">',
            *(self._chart(metric) for metric in data.metrics),
            "</div>",
            calibration_html(data.metrics, self.chart_days(), data.overall),
            self._segments(),
            '<div class="two"><div>',
            "<h2>Cost and tokens</h2>",
            self._cost(),
            "</div><div>",
            "<h2>Failures by status</h2>",
            self._failures(),
            "</div></div>",
            "<h2>Examples to read</h2>",
            *(self._examples(metric) for metric in data.metrics),
            self._manifest(),
            "<footer>Means are over scored rows only (status ok): failed, not-applicable and "
            "not-sampled rows are counted, never averaged in as 0. CI: percentile bootstrap "
            "confidence interval of the mean. Every logged text is shown escaped and may be "
            "truncated.</footer>",
            "</main></body></html>",
        ]
        return "\n".join(parts)

    def _header(self) -> str:
        data = self.data
        judges = ", ".join(data.judges) or "unknown"
        banner = ""
        notice = judge_notice(data.test_double)
        if notice:
            title, text = notice
            banner = f'<div class="banner"><strong>{escape(title)}</strong> {escape(text)}</div>'

        sampling = (
            f'<div class="sub">{escape(data.sampling.sentence())}</div>' if data.sampling else ""
        )
        return (
            f"<header><h1>RAG quality report · {escape(data.day)}</h1>"
            f'<div class="sub">Judge: <code>{escape(judges)}</code></div>{sampling}</header>'
            f"{banner}"
        )

    def _verdict(self) -> str:
        regression = self.data.regression
        shown = verdict_findings(regression)
        items = "".join(f"<li>{escape(finding.message)}</li>" for finding in shown[:VERDICT_ITEMS])
        if len(shown) > VERDICT_ITEMS:
            items += (
                f"<li>and {len(shown) - VERDICT_ITEMS} more segment finding(s): see the segment "
                "table, where they are highlighted.</li>"
            )
        return (
            f'<section class="verdict verdict-{regression.verdict.value}">'
            f'<span class="label">{escape(regression.verdict.label)}</span>'
            f"<strong>{escape(regression.summary)}</strong>"
            f"{f'<ul>{items}</ul>' if items else ''}"
            f'<div class="sub">{escape(baseline_rule(regression))}</div></section>'
        )

    def _cards(self) -> str:
        cards = []
        for metric in self.data.metrics:
            row = self.data.today_overall(metric)
            finding = self.data.finding(ALL, ALL, metric)
            if row is None:
                body = '<div class="value">n/a</div><div class="meta">no aggregates</div>'
            else:
                body = (
                    f'<div class="value">{format_score(row["mean"])}</div>'
                    f'<div class="meta">{escape(interval_text(row))} · {row["rows_scored"]:,} '
                    f"scored · {row['rows_failed']:,} failed · "
                    f"{row['rows_not_applicable']:,} n/a{not_sampled_note(row)}</div>"
                    f'<div class="meta">{_delta_html(finding)}</div>'
                )
            cards.append(
                f'<div class="card"><div class="name">{escape(metric_title(metric))}</div>'
                f"{body}</div>"
            )
        return f'<div class="cards">{"".join(cards)}</div>'

    def chart_days(self) -> list[str]:
        """The trend's days from the first with a mean of any metric (a 7-day history drawn
        on 30 days filled only the axis's right-hand fifth), the same axis for every chart."""
        days, overall = list(self.data.days), self.data.overall
        for index, day in enumerate(days):
            if any((overall[m].get(day) or {}).get("mean") is not None for m in overall):
                return days[index:]
        return days

    def _chart(self, metric: str) -> str:
        finding = self.data.finding(ALL, ALL, metric)
        # A baseline the check could not use (too few days) is not drawn as one.
        checked = finding is not None and finding in self.data.regression.checked
        baseline = finding.baseline if finding and checked else None
        changes = (self.data.changes or {}).get(metric, [])
        offsets = {day: text for (day, name), text in self.offsets.items() if name == metric}
        svg = trend_svg(
            metric_title(metric),
            self.chart_days(),
            self.data.overall[metric],
            baseline,
            changes,
            offsets=offsets,
        )
        return f'<div class="card chart"><h3>{escape(metric_title(metric))}</h3>{svg}</div>'

    def _segments(self) -> str:
        data = self.data
        head = "".join(
            f'<th class="num">{escape(metric_title(metric))}</th>' for metric in data.metrics
        )
        body = []
        previous = None
        for column, value, rows in data.segment_rows():
            any_row = next(iter(rows.values()))
            cells = "".join(self._segment_cell(column, value, rows.get(m), m) for m in data.metrics)
            group = ' class="group"' if column != previous else ""
            previous = column
            label = "all rows" if column == ALL else column
            shown = "" if column == ALL else value
            body.append(
                f"<tr{group}><td>{isolated(label)}</td><td>{isolated(shown)}</td>"
                f'<td class="num">{any_row["rows"]:,}</td>{cells}</tr>'
            )
        if not body:
            return '<h2>By segment</h2><p class="empty">No aggregates for this day.</p>'
        return (
            "<h2>By segment</h2><table><thead><tr><th>Segment</th><th>Value</th>"
            f'<th class="num">Rows</th>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'
        )

    def _segment_cell(
        self, column: str, value: str, row: Mapping[str, Any] | None, metric: str
    ) -> str:
        if row is None:
            return '<td class="num">–</td>'
        finding = self.data.finding(column, value, metric)
        css = {Outcome.REGRESSION: " bad", Outcome.IMPROVED: " good"}.get(
            finding.outcome if finding else Outcome.OK, ""
        )
        return (
            f'<td class="num{css}">{format_score(row["mean"])}<span class="small">'
            f"{escape(format_interval(row))}</span>"
            f'<span class="small">{row["rows_scored"]:,} scored · '
            f"{row['rows_failed']:,} failed</span></td>"
        )

    def _cost(self) -> str:
        rows = "".join(
            f'<tr><td>{escape(label)}</td><td class="num">{escape(value)}</td></tr>'
            for label, value in self.data.cost_rows()
        )
        return (
            f"<table><tbody>{rows}</tbody></table>"
            '<p class="sub">Tokens and cost are per row, shared by all metrics. A cost is '
            "unknown when a model in use has no price.</p>"
        )

    def _failures(self) -> str:
        data = self.data
        statuses = data.failure_statuses()
        head = "".join(f'<th class="num">{escape(status)}</th>' for status in statuses)
        if data.sampling:
            head = f'<th class="num">{escape(Status.NOT_SAMPLED.value)}</th>{head}'
        body = []
        for metric in data.metrics:
            row = data.today_overall(metric)
            if row is None:
                continue
            failures = json.loads(row["failures_by_status"])
            cells = "".join(f'<td class="num">{failures.get(s, 0):,}</td>' for s in statuses)
            sampled = (
                f'<td class="num">{row.get("rows_not_sampled") or 0:,}</td>'
                if data.sampling
                else ""
            )
            body.append(
                f"<tr><td>{escape(metric_title(metric))}</td>"
                f'<td class="num">{row["rows_scored"]:,}</td>'
                f'<td class="num">{row["rows_not_applicable"]:,}</td>{sampled}{cells}</tr>'
            )
        reasons = [
            f"<li><strong>{escape(metric_title(metric))}</strong>: {escape(truncate(reason, 160))} "
            f"({count:,})</li>"
            for metric in data.metrics
            for reason, count in data.reasons.get(metric, [])
        ]
        return (
            '<table><thead><tr><th>Metric</th><th class="num">ok</th>'
            f'<th class="num">not_applicable</th>{head}</tr></thead>'
            f"<tbody>{''.join(body)}</tbody></table>"
            + (f"<h3>Most common reasons</h3><ul>{''.join(reasons)}</ul>" if reasons else "")
        )

    def _examples(self, metric: str) -> str:
        examples = self.data.examples.get(metric, [])
        title = worst_title_of(metric)
        if not examples:
            return f'<h3>{escape(title)}</h3><p class="empty">No scored row.</p>'
        return f"<h3>{escape(title)}</h3>" + "".join(
            example_html(metric, example) for example in examples
        )

    def _rerun(self) -> str:
        if self.rerun is None:
            return ""
        head = "".join(f"<th>{escape(cell)}</th>" for cell in RERUN_HEADER)
        rows = "".join(
            "<tr>" + "".join(f"<td>{escape(cell)}</td>" for cell in cells) + "</tr>"
            for cells in rerun_cells(self.rerun)
        )
        return (
            '<h2 id="rerun">What this rerun changed</h2>'
            f'<div class="sub">{escape(rerun_sentence(self.rerun))}</div>'
            f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"
        )

    def _comparison(self) -> str:
        failure = candidate_failure_sentence(self.manifest.get("candidate"))
        failed = (
            ""
            if failure is None
            else f'<div class="banner warn candidate-failed">{escape(failure)}</div>'
        )
        if not self.comparison:
            return f'<h2 id="shadow-judge">Shadow judge</h2>{failed}' if failed else ""
        head = "".join(f"<th>{escape(cell)}</th>" for cell in COMPARISON_HEADER)
        rows = "".join(
            "<tr>" + "".join(f"<td>{escape(cell)}</td>" for cell in comparison_cells(row)) + "</tr>"
            for row in self.comparison
        )
        return (
            f'<h2 id="shadow-judge">Shadow judge</h2>{failed}'
            f'<div class="sub">{escape(comparison_sentence(self.comparison))}</div>'
            f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"
        )

    def _manifest(self) -> str:
        scalars = manifest_scalars(self.manifest)
        if not scalars:
            return ""
        rows = "".join(
            f"<tr><td><code>{escape(key)}</code></td><td>{escape(value)}</td></tr>"
            for key, value in scalars
        )
        return f"<h2>Run</h2><table><tbody>{rows}</tbody></table>"


def input_alarm_html(alarm: Mapping[str, Any] | None) -> str:
    """The day's input alarm (`pipeline.input_health`) as the first thing under the title: a
    broken input must not read as a quiet day."""
    if not alarm:
        return ""
    tone = "regression" if alarm.get("severity") == "failure" else "warn"
    return (
        f'<section class="verdict verdict-{tone} input-alarm">'
        f'<span class="label">{escape(str(alarm.get("title", "")))}</span>'
        f"<strong>{escape(str(alarm.get('message', '')))}</strong></section>"
    )


def verdict_findings(regression: RegressionReport) -> list[RegressionFinding]:
    """The findings listed under the headline, overall first: what regressed, what improved,
    then the overall checks that could not be made (the headline counts the same ones)."""
    marked = (Outcome.REGRESSION, Outcome.IMPROVED)
    changed = [f for f in regression.findings if f.outcome in marked]
    skipped = [f for f in regression.skipped if f.is_overall]
    rank = {Outcome.REGRESSION: 0, Outcome.IMPROVED: 1}
    return sorted([*changed, *skipped], key=lambda f: (not f.is_overall, rank.get(f.outcome, 2)))


def baseline_rule(regression: RegressionReport) -> str:
    """How the baseline was made, in one sentence under the headline."""
    return (
        f"Baseline: the mean of the daily means of the previous {regression.window_days} days, "
        f"counting only days scored with the same judge, embedding model and metric and prompt "
        f"versions as {regression.day}; at least {regression.min_days} such days are needed. "
        f"A regression is a drop of more than {regression.threshold:g} that today's "
        "confidence interval confirms."
    )


def judge_notice(judges: Sequence[str]) -> tuple[str, str] | None:
    """What a reader must know about judges that are not LLMs: a title and a sentence."""
    doubles = [judge for judge in judges if judge.startswith("openai:test-judge")]
    local = [judge for judge in judges if judge.startswith("local:")]
    if doubles:
        return (
            "Scored by a test double, not a real judge.",
            f"{', '.join(doubles)} answers with word-overlap heuristics: these figures show the "
            "pipeline working, not the quality of the RAG system.",
        )
    if local:
        return (
            "Scored by the local judge, not an LLM.",
            f"{', '.join(local)} uses sentence embeddings and lexical evidence on this machine; "
            "see docs/evaluation.md and docs/local-judge.md for how far to trust it.",
        )
    return None


def unchecked_reason(finding: RegressionFinding | None) -> str | None:
    """Why a metric shows no comparison with its baseline (plain text), or None when it
    shows one; the HTML and Markdown reports say the same."""
    if finding is not None and finding.outcome is Outcome.NOT_COMPARED:
        return f"not compared: {finding.change or ''}"
    if finding is not None and finding.outcome is Outcome.INSUFFICIENT_HISTORY:
        return f"not checked: {finding.baseline_days} baseline day(s), too few"
    if finding is not None and finding.outcome is Outcome.NO_DATA:
        return "no scored row today"
    if finding is None or finding.delta is None or finding.baseline is None:
        return "no baseline yet"
    return None


def outcome_label(finding: RegressionFinding) -> str:
    """The outcome of a check that was compared, as a report shows it."""
    if finding.outcome is Outcome.TOO_FEW_ROWS:
        return "not checked: one scored row, no CI"
    return finding.outcome.value


def _delta_html(finding: RegressionFinding | None) -> str:
    reason = unchecked_reason(finding)
    if reason is not None or finding is None or finding.delta is None:
        return escape(reason or "")
    css = "down" if finding.delta < 0 else "up"
    return (
        f'<span class="{css}">{finding.delta:+.3f}</span> vs {finding.baseline_days}-day '
        f"baseline {finding.baseline:.3f} · {escape(outcome_label(finding))}"
    )


def replaced_sentence(replaced: Mapping[str, Any]) -> str:
    """What a rerun's publish replaced, in one line (see `pipeline.manifest.replaced_publish`)."""
    parts = [
        f"the publish of run {replaced.get('run_id')} at {replaced.get('published_at')}: "
        f"rows {replaced.get('rows_before')} -> {replaced.get('rows_after')}"
    ]
    for key in ("files_added", "files_removed", "files_changed"):
        if replaced.get(key):
            parts.append(f"{key.replace('_', ' ')}: {', '.join(replaced[key])}")
    before, after = replaced.get("ok_before") or {}, replaced.get("ok_after") or {}
    moved = [
        f"{metric} {before.get(metric, 0)} -> {after.get(metric, 0)}"
        for metric in sorted(set(before) | set(after))
        if before.get(metric, 0) != after.get(metric, 0)
    ]
    if moved:
        parts.append("ok rows: " + ", ".join(moved))
    return "; ".join(parts)


def input_rows_sentence(plan: Mapping[str, Any]) -> str:
    """The day's input rows and files, and for a day of no traffic whether its folder is
    missing (nothing logged, or a day outside the lake) or holds no row."""
    reason = plan.get("no_traffic_reason")
    if reason == NO_DAY_FOLDER:
        return "none: " + no_folder_sentence(plan.get("folder", ""), plan.get("lake_days"))
    held = f"{plan.get('rows', 0):,} in {len(plan.get('files', []))} file(s)"
    if reason == EMPTY_DAY_FOLDER:
        held += f": the folder {plan.get('folder', '')} holds no row"
    return held


def fact_text(value: str | float | bool | None) -> str:
    """A manifest's value as a reader of the report reads it: `yes`/`no`, `none`, a count
    with separators, never Python's `True`, `None` or `1234567`."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def manifest_scalars(manifest: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The run's facts: the manifest's top-level values, then what was read, rejected and
    published (a rejected input file is listed with its reason: someone has to look), and a
    judge's model that shuts down soon (the plan's `model_warnings`)."""
    facts = [
        (str(key), fact_text(value))
        for key, value in manifest.items()
        if isinstance(value, str | int | float | bool) or value is None
    ]
    plan = manifest.get("plan") or {}
    if plan:
        facts.append(("input rows", input_rows_sentence(plan)))
        facts += [
            (f"rejected file {item['path']}", str(item["reason"]))
            for item in plan.get("rejected_files", [])
        ]
        facts += [
            (f"ignored file {path}", "not read: not a log file name (.parquet, .jsonl, .csv...)")
            for path in plan.get("ignored_files", [])
        ]
        facts += [("model shutting down", warning) for warning in plan.get("model_warnings", [])]
    scoring = manifest.get("scoring") or {}
    facts += [("provider", note) for note in scoring.get("provider_notes", [])]
    replaced = manifest.get("replaced")
    if replaced:
        facts.append(("replaced", replaced_sentence(replaced)))
    elsewhere = manifest.get("dated_elsewhere") or {}
    if elsewhere.get("rows"):
        span = elsewhere["first"]
        span += f" to {elsewhere['last']}" if elsewhere["last"] != span else ""
        facts.append(
            (
                "rows dated another day",
                f"{elsewhere['rows']:,} row(s) timestamped {span} (UTC), published under this "
                "day's folder",
            )
        )
    if plan.get("derived_ids"):
        facts.append(
            (
                "derived ids",
                f"{plan['derived_ids']:,} row(s) came from files without an id column (map "
                "yours with columns.id): each got an id derived from its file, its row number "
                "and its content, the same on every rerun, which labels, sampling and the "
                "shadow judge key on",
            )
        )
    repeated = manifest.get("repeated_ids") or {}
    if repeated.get("rows"):
        facts.append(
            (
                "repeated ids",
                f"{repeated['rows']:,} rows share {repeated['ids']:,} id(s), "
                f"{repeated['ids_with_different_content']:,} of them with different content; "
                "each row is scored and counted as logged",
            )
        )
    published = manifest.get("published") or {}
    if published:
        facts.append(
            ("rows published", f"{published.get('rows', 0):,} to {published.get('table')}")
        )
    usage = (manifest.get("scoring") or {}).get("usage") or {}
    if usage:
        facts.append(
            (
                "judge requests",
                f"{usage.get('requests', 0):,} chat, "
                f"{usage.get('embedding_requests', 0):,} embeddings",
            )
        )
    return facts
