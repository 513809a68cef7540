"""The daily quality report: one self-contained HTML page (inline CSS and SVG charts, opens
offline) and the same information as Markdown.

It reads what the pipeline already computed (the `daily_metrics` history and the regression
check) and, for the examples worth reading, the day's scored rows. Everything that came from a
log (questions, answers, contexts, the judge's statements and explanations) is untrusted text
and is escaped before it is written into either format.
"""

from __future__ import annotations

import html
import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ragas_ops.contract.status import Status
from ragas_ops.quality.aggregate import ALL, Outcome, RegressionFinding, RegressionReport

TREND_DAYS = 30
TEST_DOUBLE_PREFIXES = ("openai:test-judge", "local:")
"""Judges whose scores show the pipeline working, not the quality of a RAG system."""
QUESTION_CHARS = 300
ANSWER_CHARS = 600
ITEM_CHARS = 300
VERDICT_ITEMS = 6
"""Findings listed under the verdict; the segment table highlights all of them."""
METRIC_TITLES = {
    "faithfulness": "Faithfulness",
    "answer_relevance": "Answer relevance",
    "context_relevance": "Context relevance",
}
EXAMPLE_TITLES = {
    "faithfulness": "Least faithful answers",
    "answer_relevance": "Least relevant answers",
    "context_relevance": "Least focused contexts",
}
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


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
) -> Report:
    """Build the report of `day`.

    `history` holds `daily_metrics` rows (the last 30 days are charted; `day`'s rows fill the
    tables), `scored` the day's scored rows (for the worst examples and failure reasons),
    `regression` the day's `check_regression` result. `manifest`'s top-level scalar entries
    are listed at the end.
    """
    if regression.day != day:
        raise ValueError(f"the regression check is for {regression.day}, not {day}")
    data = _ReportData.gather(
        day, history, scored, regression, metrics=metrics, worst_examples=worst_examples
    )
    return Report(
        day=day,
        html=_HtmlReport(data, manifest or {}).render(),
        markdown=_MarkdownReport(data, manifest or {}).render(),
    )


# --- what the report shows ----------------------------------------------------------------------


@dataclass(frozen=True)
class _Example:
    """One scored row worth reading, with the evidence of its low score."""

    score: float
    row_id: str | None
    segments: list[tuple[str, str]]
    question: str
    answer: str
    contexts: list[str]
    reason: str | None
    evidence: dict[str, Any] | None


@dataclass(frozen=True)
class _ReportData:
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
    examples: dict[str, list[_Example]]
    reasons: dict[str, list[tuple[str, int]]]
    """metric -> the most common reasons of failed rows."""
    sampling: _Sampling | None = None
    """How many of the day's rows were sampled, when some were left out."""

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
    ) -> _ReportData:
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
            examples={
                metric: _worst(scored, metric, segment_columns, worst_examples)
                for metric in metrics
            },
            reasons={metric: _failure_reasons(scored, metric) for metric in metrics},
            sampling=_Sampling.of(today, scored, metrics),
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
        cls, today: Sequence[Mapping[str, Any]], scored: pa.Table, metrics: Sequence[str]
    ) -> _Sampling | None:
        """None when no row of the day was left out (nothing to say)."""
        overall = [row for row in today if row["segment_column"] == ALL]
        if not overall:
            return None
        left_out = max(int(row.get("rows_not_sampled") or 0) for row in overall)
        if not left_out:
            return None
        return cls(int(overall[0]["rows"]), left_out, _configured_fraction(scored, metrics))

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


def _configured_fraction(scored: pa.Table, metrics: Sequence[str]) -> float | None:
    for metric in metrics:
        status_column, evidence_column = f"{metric}_status", f"{metric}_evidence"
        if status_column not in scored.column_names or evidence_column not in scored.column_names:
            continue
        left_out = scored.filter(pc.equal(scored[status_column], Status.NOT_SAMPLED.value))
        for raw in left_out[evidence_column].to_pylist()[:1]:
            try:
                fraction = json.loads(raw or "null").get("sample_fraction")
            except (json.JSONDecodeError, AttributeError):
                return None
            return float(fraction) if isinstance(fraction, int | float) else None
    return None


def _not_sampled_note(row: Mapping[str, Any]) -> str:
    left_out = row.get("rows_not_sampled") or 0
    return f" · {left_out:,} not sampled" if left_out else ""


def _judges(today: Sequence[Mapping[str, Any]], scored: pa.Table) -> list[str]:
    found: set[str] = set()
    for row in today:
        if row["judge"]:
            found.update(part.strip() for part in row["judge"].split(","))
    if "judge" in scored.column_names:
        found.update(value for value in pc.unique(scored["judge"]).to_pylist() if value)
    return sorted(found)


def _worst(
    scored: pa.Table, metric: str, segment_columns: Sequence[str], count: int
) -> list[_Example]:
    """The `count` lowest-scored rows of `metric` (ties broken by id, then row order)."""
    score_column, status_column = f"{metric}_score", f"{metric}_status"
    if count <= 0 or score_column not in scored.column_names:
        return []
    indices = pa.array(range(scored.num_rows), pa.int64())
    ok = pc.and_(
        pc.equal(scored[status_column], Status.OK.value), pc.is_valid(scored[score_column])
    )
    candidates = pa.table({"score": scored[score_column], "index": indices}).filter(ok)
    order = candidates.sort_by([("score", "ascending"), ("index", "ascending")])
    wanted = order["index"].to_pylist()[:count]
    rows = scored.take(pa.array(wanted, pa.int64())).to_pylist()
    return [_example(row, metric, segment_columns) for row in rows]


def _example(row: Mapping[str, Any], metric: str, segment_columns: Sequence[str]) -> _Example:
    evidence: dict[str, Any] | None = None
    try:
        parsed = json.loads(row.get(f"{metric}_evidence") or "null")
        evidence = parsed if isinstance(parsed, dict) else None
    except json.JSONDecodeError:
        evidence = None
    return _Example(
        score=float(row[f"{metric}_score"]),
        row_id=None if row.get("id") is None else str(row["id"]),
        segments=[
            (column, "(null)" if row.get(column) is None else str(row[column]))
            for column in segment_columns
            if column in row
        ],
        question=_text(row.get("question")),
        answer=_text(row.get("answer")),
        contexts=[_text(c) for c in row.get("contexts") or [] if isinstance(c, str)],
        reason=row.get(f"{metric}_reason"),
        evidence=evidence,
    )


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


def _truncate(text: str, limit: int) -> str:
    """At most `limit` characters, cut at a word boundary, saying how much was left out."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0] if " " in text[:limit] else text[:limit]
    return f"{cut} … ({len(text) - len(cut):,} more characters)"


def _title(metric: str) -> str:
    return METRIC_TITLES.get(metric, metric.replace("_", " ").capitalize())


def _score(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _money(value: float | None) -> str:
    if value is None:
        return "unknown"
    return f"${value:,.4f}" if value < 100 else f"${value:,.2f}"


def _interval(row: Mapping[str, Any]) -> str:
    if row.get("ci_low") is None or row.get("ci_high") is None:
        return "no CI"
    return f"{row['ci_low']:.3f}–{row['ci_high']:.3f}"


def _short_date(day: str) -> str:
    parsed = date.fromisoformat(day)
    return f"{_MONTHS[parsed.month - 1]} {parsed.day}"


def _example_details(metric: str, example: _Example) -> list[tuple[str, str, str]]:
    """(label, untrusted text, untrusted note) that explain an example's low score, from its
    evidence; the note is the judge's explanation, when there is one."""
    evidence = example.evidence or {}
    details: list[tuple[str, str, str]] = []
    if metric == "faithfulness":
        statements = evidence.get("statements") or []
        details.append(
            (
                "Supported",
                f"{evidence.get('supported', '?')} of {evidence.get('total', '?')} statements",
                "",
            )
        )
        details.extend(
            ("Unsupported", _text(item.get("statement")), _text(item.get("explanation")))
            for item in statements
            if isinstance(item, dict) and item.get("verdict") != "yes"
        )
    elif metric == "answer_relevance":
        similarities = evidence.get("similarities") or []
        for index, question in enumerate(evidence.get("questions") or []):
            similarity = f" (cosine {similarities[index]:.2f})" if index < len(similarities) else ""
            details.append(("Generated question", f"{_text(question)}{similarity}", ""))
    elif metric == "context_relevance":
        extracted = evidence.get("extracted") or []
        total = evidence.get("sentences_in_context", "?")
        insufficient = evidence.get("insufficient_information")
        note = "the judge answered Insufficient Information" if insufficient else ""
        details.append(("Contexts", " ⏐ ".join(example.contexts), ""))
        details.append(("Extracted", f"{len(extracted)} of {total} context sentences", note))
        details.extend(("Needed sentence", _text(sentence), "") for sentence in extracted)
        details.extend(
            ("Not in the contexts", _text(sentence), "")
            for sentence in evidence.get("not_in_context") or []
        )
    elif "explanation" in evidence:
        details.append(("Judge", _text(evidence["explanation"]), ""))
    if example.reason:
        details.append(("Note", example.reason, ""))
    return [
        (label, _truncate(text, ITEM_CHARS), _truncate(note, ITEM_CHARS))
        for label, text, note in details
    ]


# --- HTML ---------------------------------------------------------------------------------------

_CSS = """
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
.example { border: 1px solid var(--line); border-radius: 8px; margin: 10px 0; overflow: hidden; }
.example .head { background: var(--soft); padding: 6px 12px; font-size: 13px;
  color: var(--muted); border-bottom: 1px solid var(--line); }
.example .head .score { font-weight: 700; color: var(--bad); margin-right: 8px; }
.example dl { margin: 0; padding: 8px 12px; display: grid; grid-template-columns: 150px 1fr;
  gap: 4px 12px; }
.example dt { color: var(--muted); font-weight: 600; }
.example dd { margin: 0; overflow-wrap: anywhere; }
.example dd .why { display: block; color: var(--muted); font-size: 13px; }
code { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12px; }
.empty { color: var(--muted); font-style: italic; }
footer { margin-top: 40px; color: var(--muted); font-size: 12px; }
"""

_e = html.escape


@dataclass(frozen=True)
class _HtmlReport:
    data: _ReportData
    manifest: Mapping[str, Any]

    def render(self) -> str:
        data = self.data
        parts = [
            "<!DOCTYPE html>",
            '<html lang="en"><head><meta charset="utf-8">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>RAG quality report {_e(data.day)}</title>",
            f"<style>{_CSS}</style></head><body><main>",
            self._header(),
            self._verdict(),
            self._cards(),
            "<h2>Trends over the last 30 days</h2>",
            '<div class="charts">',
            *(self._chart(metric) for metric in data.metrics),
            "</div>",
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
            banner = f'<div class="banner"><strong>{_e(title)}</strong> {_e(text)}</div>'

        sampling = f'<div class="sub">{_e(data.sampling.sentence())}</div>' if data.sampling else ""
        return (
            f"<header><h1>RAG quality report · {_e(data.day)}</h1>"
            f'<div class="sub">Judge: <code>{_e(judges)}</code></div>{sampling}</header>{banner}'
        )

    def _verdict(self) -> str:
        regression = self.data.regression
        shown = [
            finding
            for finding in regression.findings
            if finding.outcome in (Outcome.REGRESSION, Outcome.IMPROVED)
        ]
        items = "".join(f"<li>{_e(finding.message)}</li>" for finding in shown[:VERDICT_ITEMS])
        if len(shown) > VERDICT_ITEMS:
            items += (
                f"<li>and {len(shown) - VERDICT_ITEMS} more segment finding(s): see the segment "
                "table, where they are highlighted.</li>"
            )
        return (
            f'<section class="verdict verdict-{regression.verdict.value}">'
            f'<span class="label">{_e(regression.verdict.value)}</span>'
            f"<strong>{_e(regression.summary)}</strong>"
            f"{f'<ul>{items}</ul>' if items else ''}</section>"
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
                    f'<div class="value">{_score(row["mean"])}</div>'
                    f'<div class="meta">CI {_e(_interval(row))} · {row["rows_scored"]:,} '
                    f"scored · {row['rows_failed']:,} failed · "
                    f"{row['rows_not_applicable']:,} n/a{_not_sampled_note(row)}</div>"
                    f'<div class="meta">{_delta_html(finding)}</div>'
                )
            cards.append(
                f'<div class="card"><div class="name">{_e(_title(metric))}</div>{body}</div>'
            )
        return f'<div class="cards">{"".join(cards)}</div>'

    def _chart(self, metric: str) -> str:
        finding = self.data.finding(ALL, ALL, metric)
        baseline = finding.baseline if finding else None
        svg = trend_svg(_title(metric), self.data.days, self.data.overall[metric], baseline)
        return f'<div class="card chart"><h3>{_e(_title(metric))}</h3>{svg}</div>'

    def _segments(self) -> str:
        data = self.data
        head = "".join(f'<th class="num">{_e(_title(metric))}</th>' for metric in data.metrics)
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
                f"<tr{group}><td>{_e(label)}</td><td>{_e(shown)}</td>"
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
            f'<td class="num{css}">{_score(row["mean"])}<span class="small">'
            f'{_e(_interval(row))}</span><span class="small">{row["rows_scored"]:,} scored · '
            f"{row['rows_failed']:,} failed</span></td>"
        )

    def _cost(self) -> str:
        rows = "".join(
            f'<tr><td>{_e(label)}</td><td class="num">{_e(value)}</td></tr>'
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
        head = "".join(f'<th class="num">{_e(status)}</th>' for status in statuses)
        if data.sampling:
            head = f'<th class="num">{_e(Status.NOT_SAMPLED.value)}</th>{head}'
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
                f'<tr><td>{_e(_title(metric))}</td><td class="num">{row["rows_scored"]:,}</td>'
                f'<td class="num">{row["rows_not_applicable"]:,}</td>{sampled}{cells}</tr>'
            )
        reasons = [
            f"<li><strong>{_e(_title(metric))}</strong>: {_e(_truncate(reason, 160))} "
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
        title = EXAMPLE_TITLES.get(metric, f"Lowest {_title(metric).lower()}")
        if not examples:
            return f'<h3>{_e(title)}</h3><p class="empty">No scored row.</p>'
        return f"<h3>{_e(title)}</h3>" + "".join(
            self._example(metric, example) for example in examples
        )

    def _example(self, metric: str, example: _Example) -> str:
        tags = [f"id <code>{_e(example.row_id)}</code>"] if example.row_id else []
        tags.extend(f"{_e(column)}={_e(value)}" for column, value in example.segments)
        fields = [
            ("Question", _truncate(example.question, QUESTION_CHARS), ""),
            ("Answer", _truncate(example.answer, ANSWER_CHARS), ""),
            *_example_details(metric, example),
        ]
        items = "".join(
            f"<dt>{_e(label)}</dt><dd>{_e(text)}"
            + (f'<span class="why">{_e(note)}</span>' if note else "")
            + "</dd>"
            for label, text, note in fields
        )
        return (
            f'<div class="example"><div class="head"><span class="score">'
            f"{example.score:.3f}</span>{' · '.join(tags)}</div><dl>{items}</dl></div>"
        )

    def _manifest(self) -> str:
        scalars = _manifest_scalars(self.manifest)
        if not scalars:
            return ""
        rows = "".join(
            f"<tr><td><code>{_e(key)}</code></td><td>{_e(value)}</td></tr>"
            for key, value in scalars
        )
        return f"<h2>Run</h2><table><tbody>{rows}</tbody></table>"


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
            "see the README's 'How good are the scores?' for how far to trust it.",
        )
    return None


def _delta_html(finding: RegressionFinding | None) -> str:
    if finding is None or finding.delta is None or finding.baseline is None:
        return "no baseline yet"
    css = "down" if finding.delta < 0 else "up"
    return (
        f'<span class="{css}">{finding.delta:+.3f}</span> vs {finding.baseline_days}-day '
        f"baseline {finding.baseline:.3f} · {_e(finding.outcome.value)}"
    )


def _manifest_scalars(manifest: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The run's facts: the manifest's top-level values, then what was read, rejected and
    published (a rejected input file is listed with its reason: someone has to look)."""
    facts = [
        (str(key), str(value))
        for key, value in manifest.items()
        if isinstance(value, str | int | float | bool) or value is None
    ]
    plan = manifest.get("plan") or {}
    if plan:
        facts.append(
            ("input rows", f"{plan.get('rows', 0):,} in {len(plan.get('files', []))} file(s)")
        )
        facts += [
            (f"rejected file {item['path']}", str(item["reason"]))
            for item in plan.get("rejected_files", [])
        ]
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


# --- the SVG trend chart ------------------------------------------------------------------------

_W, _H = 600, 230
_LEFT, _RIGHT, _TOP, _BOTTOM = 44, 22, 30, 30


def trend_svg(
    title: str,
    days: Sequence[str],
    rows: Mapping[str, Mapping[str, Any]],
    baseline: float | None = None,
) -> str:
    """A line chart of the daily means on a 0..1 scale with their CI band; a day without a
    mean breaks the line rather than being drawn as 0."""
    plot_w, plot_h = _W - _LEFT - _RIGHT, _H - _TOP - _BOTTOM
    step = plot_w / max(len(days) - 1, 1)

    def x(index: int) -> float:
        return _LEFT + index * step

    def y(value: float) -> float:
        return _TOP + (1.0 - min(max(value, 0.0), 1.0)) * plot_h

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {_W} {_H}" role="img" '
        f'aria-label="{_e(title)}: daily mean over {len(days)} days">'
    ]
    parts.extend(_axes(days, x, y))
    parts.append(_legend(baseline))
    if baseline is not None:
        parts.append(
            f'<line x1="{_LEFT}" x2="{_W - _RIGHT}" y1="{y(baseline):.1f}" '
            f'y2="{y(baseline):.1f}" stroke="#8c959f" stroke-dasharray="4 4" />'
        )
    for run in _runs(days, rows):
        parts.append(_band(run, rows, days, x, y))
        points = " ".join(f"{x(i):.1f},{y(rows[days[i]]['mean']):.1f}" for i in run)
        parts.append(
            f'<polyline points="{points}" fill="none" stroke="#0969da" stroke-width="2" />'
        )
    for index, day in enumerate(days):
        row = rows.get(day)
        if row is None or row["mean"] is None:
            continue
        last = index == len(days) - 1
        parts.append(
            f'<circle cx="{x(index):.1f}" cy="{y(row["mean"]):.1f}" r="{4 if last else 2.5}" '
            f'fill="{"#0969da" if last else "#fff"}" stroke="#0969da" stroke-width="1.5">'
            f"<title>{_e(day)}: {row['mean']:.3f} (CI {_e(_interval(row))}, "
            f"{row['rows_scored']:,} scored)</title></circle>"
        )
    if not any(rows.get(day, {}).get("mean") is not None for day in days):
        parts.append(
            f'<text x="{_LEFT + plot_w / 2:.1f}" y="{_TOP + plot_h / 2:.1f}" '
            'text-anchor="middle" font-size="13" fill="#59636e">no scored rows in this window'
            "</text>"
        )
    parts.append("</svg>")
    return "".join(parts)


def _legend(baseline: float | None) -> str:
    """Above the plot, right-aligned: line, band and (when known) the baseline."""
    items = [
        '<line x1="0" x2="16" y1="-4" y2="-4" stroke="#0969da" stroke-width="2" />'
        '<text x="20" y="0">daily mean</text>',
        '<rect x="96" y="-9" width="16" height="10" fill="#0969da" fill-opacity="0.18" />'
        '<text x="116" y="0">CI of the mean</text>',
    ]
    width = 210
    if baseline is not None:
        items.append(
            '<line x1="218" x2="234" y1="-4" y2="-4" stroke="#8c959f" stroke-dasharray="4 3" />'
            f'<text x="238" y="0">baseline {baseline:.3f}</text>'
        )
        width = 325
    return (
        f'<g transform="translate({_W - _RIGHT - width},16)" font-size="11" fill="#59636e">'
        f"{''.join(items)}</g>"
    )


def _axes(days: Sequence[str], x: Any, y: Any) -> list[str]:
    parts = []
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        parts.append(
            f'<line x1="{_LEFT}" x2="{_W - _RIGHT}" y1="{y(tick):.1f}" y2="{y(tick):.1f}" '
            f'stroke="{"#8c959f" if tick == 0 else "#eaeef2"}" />'
            f'<text x="{_LEFT - 6}" y="{y(tick) + 4:.1f}" text-anchor="end" font-size="11" '
            f'fill="#59636e">{tick:.2f}</text>'
        )
    last = len(days) - 1
    for index, day in enumerate(days):
        if (last - index) % 7 == 0:
            parts.append(
                f'<line x1="{x(index):.1f}" x2="{x(index):.1f}" y1="{y(0.0):.1f}" '
                f'y2="{y(0.0) + 4:.1f}" stroke="#8c959f" />'
                f'<text x="{x(index):.1f}" y="{_H - _BOTTOM + 18}" '
                f'text-anchor="{"end" if index == last else "middle"}" '
                f'font-size="11" fill="#59636e">{_e(_short_date(day))}</text>'
            )
    return parts


def _runs(days: Sequence[str], rows: Mapping[str, Mapping[str, Any]]) -> list[list[int]]:
    """Indices of consecutive days that have a mean."""
    runs: list[list[int]] = []
    current: list[int] = []
    for index, day in enumerate(days):
        row = rows.get(day)
        if row is not None and row["mean"] is not None:
            current.append(index)
        elif current:
            runs.append(current)
            current = []
    if current:
        runs.append(current)
    return runs


def _band(
    run: Sequence[int], rows: Mapping[str, Mapping[str, Any]], days: Sequence[str], x: Any, y: Any
) -> str:
    """The CI band of a run of days (a day without an interval pinches it to its mean)."""

    def bound(index: int, name: str) -> float:
        row = rows[days[index]]
        value = row.get(name)
        return float(row["mean"] if value is None else value)

    upper = [f"{x(i):.1f},{y(bound(i, 'ci_high')):.1f}" for i in run]
    lower = [f"{x(i):.1f},{y(bound(i, 'ci_low')):.1f}" for i in reversed(run)]
    if len(run) == 1:  # a lone day: a short vertical bar instead of an invisible polygon
        i = run[0]
        return (
            f'<line x1="{x(i):.1f}" x2="{x(i):.1f}" y1="{y(bound(i, "ci_high")):.1f}" '
            f'y2="{y(bound(i, "ci_low")):.1f}" stroke="#9cc5f5" stroke-width="6" />'
        )
    return f'<polygon points="{" ".join(upper + lower)}" fill="#0969da" fill-opacity="0.18" />'


# --- Markdown -----------------------------------------------------------------------------------

_MD_SPECIAL = str.maketrans({c: f"\\{c}" for c in "\\`*_[]|#"})
_BLOCKS = "▁▂▃▄▅▆▇█"


def _md(text: str) -> str:
    """Logged text made inert in Markdown: HTML escaped, Markdown syntax escaped, one line."""
    return html.escape(" ".join(text.split()), quote=False).translate(_MD_SPECIAL)


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
class _MarkdownReport:
    data: _ReportData
    manifest: Mapping[str, Any]

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
        lines += self._verdict()
        lines += self._metrics()
        lines += self._segments()
        lines += self._cost()
        lines += self._failures()
        lines += self._examples()
        lines += self._manifest()
        return "\n".join(lines).rstrip() + "\n"

    def _verdict(self) -> list[str]:
        regression = self.data.regression
        lines = [f"**Verdict: {regression.verdict.value.upper()}** · {regression.summary}", ""]
        lines += [
            f"- {_md(finding.message)}"
            for finding in regression.findings
            if finding.outcome in (Outcome.REGRESSION, Outcome.IMPROVED)
        ]
        return [*lines, ""] if len(lines) > 2 else lines

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
                lines.append(f"| {_title(metric)} | n/a |{empty} | {spark} |")
                continue
            versus = (
                f"{finding.delta:+.3f} ({finding.outcome.value})"
                if finding and finding.delta is not None
                else (finding.outcome.value if finding else "")
            )
            lines.append(
                f"| {_title(metric)} | {_score(row['mean'])} | {_interval(row)} | {versus} | "
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
            + " | ".join(f"{_title(metric)} (mean, CI, scored/failed)" for metric in data.metrics)
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
                    else f"{_score(row['mean'])} ({_interval(row)}, "
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
        lines = [
            "## Failures by status",
            "",
            "| metric | ok | not_applicable | " + " | ".join(shown) + " |",
            "|---|---:|---:|" + "---:|" * len(shown),
        ]
        for metric in data.metrics:
            row = data.today_overall(metric)
            if row is None:
                continue
            failures = json.loads(row["failures_by_status"])
            if data.sampling:
                failures[Status.NOT_SAMPLED.value] = row.get("rows_not_sampled") or 0
            counts = " | ".join(f"{failures.get(status, 0):,}" for status in shown)
            lines.append(
                f"| {_title(metric)} | {row['rows_scored']:,} | {row['rows_not_applicable']:,} "
                f"| {counts} |"
            )
        reasons = [
            f"- {_title(metric)}: {_md(_truncate(reason, 160))} ({count:,})"
            for metric in data.metrics
            for reason, count in data.reasons.get(metric, [])
        ]
        if reasons:
            lines += ["", "Most common reasons:", "", *reasons]
        return [*lines, ""]

    def _examples(self) -> list[str]:
        lines = ["## Examples to read", ""]
        for metric in self.data.metrics:
            title = EXAMPLE_TITLES.get(metric, f"Lowest {_title(metric).lower()}")
            lines += [f"### {title}", ""]
            examples = self.data.examples.get(metric, [])
            if not examples:
                lines += ["_No scored row._", ""]
            for number, example in enumerate(examples, start=1):
                tags = [f"id `{_md(example.row_id)}`"] if example.row_id else []
                tags += [f"{_md(column)}={_md(value)}" for column, value in example.segments]
                lines.append(f"{number}. **{example.score:.3f}** {' · '.join(tags)}")
                fields = [
                    ("Question", _truncate(example.question, QUESTION_CHARS), ""),
                    ("Answer", _truncate(example.answer, ANSWER_CHARS), ""),
                    *_example_details(metric, example),
                ]
                lines += [
                    f"   - {label}: {_md(text)}" + (f" (judge: {_md(note)})" if note else "")
                    for label, text, note in fields
                ]
            lines.append("")
        return lines

    def _manifest(self) -> list[str]:
        scalars = _manifest_scalars(self.manifest)
        if not scalars:
            return []
        lines = ["## Run", "", "| | |", "|---|---|"]
        lines += [f"| {_md(key)} | {_md(value)} |" for key, value in scalars]
        return [*lines, ""]
