"""The people's scale in the report and on the quality page: each metric's judge mean beside
its mean corrected with the human labels ("calibrated against N labels"), the judge-human
agreement, and a chart of both series over time, so a judge drifting from people, or a change
of judge, is seen (docs/labels.md). One section of its own, in HTML and in Markdown."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ragas_ops.quality.report.data import escape, metric_title, short_date

_W, _H = 600, 200
_LEFT, _RIGHT, _TOP, _BOTTOM = 44, 22, 28, 28
JUDGE_COLOUR, PEOPLE_COLOUR = "#8c959f", "#1a7f37"
CALIBRATION_CSS = """
/* sentences, not figures: they wrap (the quality page's tables do not by default) */
.calibration td, .calibration th { padding: 4px 8px; text-align: left; white-space: normal; }
.calibration .people { color: #1a7f37; font-weight: 600; }
.calibration .charts { display: grid; grid-template-columns: repeat(auto-fit, minmax(420px, 1fr));
  gap: 12px; }
.calibration svg { display: block; width: 100%; max-width: 640px; height: auto; }
"""


def _number(value: Any) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def calibration_sentence(row: Mapping[str, Any] | None) -> str:
    """`0.652 (95% CI 0.601–0.703), calibrated against 35 labels`, or why there is none."""
    if row is None or "labels_status" not in row:
        return "no labels: this day was aggregated before labelling existed"
    status, count = row.get("labels_status"), row.get("labels") or 0
    if status == "no_labels":
        return "no labels yet (ragas-ops labels export, or the labelling page)"
    if status != "ok":
        return f"too few labels: {count} of the 16 an interval needs"
    return (
        f"{_number(row['corrected_mean'])} (95% CI {_number(row['corrected_ci_low'])}–"
        f"{_number(row['corrected_ci_high'])}), calibrated against {count:,} labels"
    )


def agreement_sentence(row: Mapping[str, Any] | None) -> str:
    if row is None or row.get("agreement_mad") is None:
        return "–"
    return (
        f"mean abs. difference {_number(row['agreement_mad'])} · Spearman "
        f"{_number(row.get('agreement_spearman'))} · kappa {_number(row.get('agreement_kappa'))}"
    )


def _agreement_over(row: Mapping[str, Any], prefix: str, count: str, status: str) -> str:
    """One judge's agreement with the labels with its count of pairs, or why there is none."""
    pairs = row.get(count) or 0
    if row.get(status) == "too_few_labels":
        return f"too few labels: {pairs} of the 16 agreement needs"
    if row.get(f"{prefix}_mad") is None:
        return "no labels of its rows"
    return (
        f"mean abs. difference {_number(row[f'{prefix}_mad'])} · Spearman "
        f"{_number(row.get(f'{prefix}_spearman'))} · kappa "
        f"{_number(row.get(f'{prefix}_kappa'))} ({pairs:,} labels)"
    )


SHADOW_NOTE = (
    "The shadow judge's sample meets the labelling queue by chance (about candidate_sample × "
    "labels.per_day labels a day): raise either for more pairs."
)


def shadow_rows(
    metrics: Sequence[str], last: str | None, overall: Mapping[str, Mapping[str, Any]]
) -> list[tuple[str, str, str]]:
    """Per metric of the last day with a shadow judge: its title, the judge of record's
    agreement with the labels and the shadow judge's, each with its count (none: no shadow
    judge that day)."""
    rows = []
    for metric in metrics:
        row = overall.get(metric, {}).get(last) if last else None
        if row is None or row.get("candidate_labels_status") in (None, "no_shadow_judge"):
            continue
        rows.append(
            (
                metric_title(metric),
                _agreement_over(row, "agreement", "labels", "labels_status"),
                _agreement_over(
                    row, "candidate_agreement", "candidate_labels", "candidate_labels_status"
                ),
            )
        )
    return rows


def _shadow_judge(
    metrics: Sequence[str], last: str | None, overall: Mapping[str, Mapping[str, Any]]
) -> str:
    return next(
        (
            str(row["candidate_judge"])
            for metric in metrics
            if (row := overall.get(metric, {}).get(last or "")) and row.get("candidate_judge")
        ),
        "",
    )


def shadow_html(
    metrics: Sequence[str], last: str | None, overall: Mapping[str, Mapping[str, Any]]
) -> str:
    rows = shadow_rows(metrics, last, overall)
    if not rows:
        return ""
    cells = "".join(
        f"<tr><td>{escape(title)}</td><td>{escape(record)}</td><td>{escape(shadow)}</td></tr>"
        for title, record, shadow in rows
    )
    judge = escape(_shadow_judge(metrics, last, overall))
    return (
        f"<h3>The shadow judge against the same people ({judge})</h3>"
        f"<p class='sub'>{escape(SHADOW_NOTE)}</p>"
        "<table class='shadow-labels'><tr><th>metric</th><th>judge of record vs people</th>"
        f"<th>shadow judge vs people</th></tr>{cells}</table>"
    )


def shadow_markdown(
    metrics: Sequence[str], last: str | None, overall: Mapping[str, Mapping[str, Any]]
) -> list[str]:
    rows = shadow_rows(metrics, last, overall)
    if not rows:
        return []
    return [
        f"### The shadow judge against the same people ({_shadow_judge(metrics, last, overall)})",
        "",
        SHADOW_NOTE,
        "",
        "| metric | judge of record vs people | shadow judge vs people |",
        "|---|---|---|",
        *(f"| {title} | {record} | {shadow} |" for title, record, shadow in rows),
        "",
    ]


NO_LABELS = (
    "No human labels in these days yet: label the nightly queue on the labelling page or with "
    "ragas-ops labels export / import, and the judge's means are shown on the people's scale."
)


def has_labels(days: Sequence[str], overall: Mapping[str, Mapping[str, Any]]) -> bool:
    """Whether any shown day's figures rest on a label."""
    return any((rows.get(day) or {}).get("labels") for rows in overall.values() for day in days)


def calibration_html(
    metrics: Sequence[str], days: Sequence[str], overall: Mapping[str, Mapping[str, Any]]
) -> str:
    """The section: a table of the last day's figures and one chart per metric (one sentence
    when no shown day has a label). `overall` is metric -> day -> the overall daily_metrics
    row."""
    if not has_labels(days, overall):
        return (
            "<section class='calibration'><h2>On the people's scale</h2>"
            f"<p class='sub'>{escape(NO_LABELS)}</p></section>"
        )
    last = days[-1] if days else None
    rows = []
    for metric in metrics:
        row = overall.get(metric, {}).get(last) if last else None
        rows.append(
            f"<tr><td>{escape(metric_title(metric))}</td>"
            f"<td>{_number(None if row is None else row.get('mean'))}</td>"
            f"<td class='{'people' if (row or {}).get('labels_status') == 'ok' else ''}'>"
            f"{escape(calibration_sentence(row))}</td>"
            f"<td>{escape(agreement_sentence(row))}</td></tr>"
        )
    charts = "".join(
        f"<div class='card chart'><h3>{escape(metric_title(metric))}</h3>"
        f"{calibration_svg(metric_title(metric), days, overall.get(metric, {}))}</div>"
        for metric in metrics
    )
    return (
        "<section class='calibration'><h2>On the people's scale</h2>"
        "<p class='sub'>The judge's mean beside the mean corrected with blind human labels "
        "(prediction-powered inference over the labels window), and how well the judge agrees "
        "with people. The corrected series stays comparable across a change of judge.</p>"
        "<table><tr><th>metric</th><th>judge mean</th><th>people's scale</th>"
        f"<th>judge-human agreement</th></tr>{''.join(rows)}</table>"
        f"{shadow_html(metrics, last, overall)}"
        f"<div class='charts'>{charts}</div></section>"
    )


def calibration_markdown(
    metrics: Sequence[str], days: Sequence[str], overall: Mapping[str, Mapping[str, Any]]
) -> list[str]:
    if not has_labels(days, overall):
        return ["## On the people's scale", "", NO_LABELS, ""]
    last = days[-1] if days else None
    lines = [
        "## On the people's scale",
        "",
        "| metric | judge mean | people's scale | judge-human agreement |",
        "|---|---|---|---|",
    ]
    for metric in metrics:
        row = overall.get(metric, {}).get(last) if last else None
        judge = _number(None if row is None else row.get("mean"))
        lines.append(
            f"| {metric_title(metric)} | {judge} | {calibration_sentence(row)} | "
            f"{agreement_sentence(row)} |"
        )
    return [*lines, "", *shadow_markdown(metrics, last, overall)]


def calibration_svg(title: str, days: Sequence[str], rows: Mapping[str, Mapping[str, Any]]) -> str:
    """The judge's daily mean (grey) and the corrected mean with its interval (green) on a
    0..1 scale; a day without a value breaks its line."""
    step = (_W - _LEFT - _RIGHT) / max(len(days) - 1, 1)

    def x(index: int) -> float:
        return _LEFT + index * step

    def y(value: float) -> float:
        return _TOP + (1.0 - min(max(value, 0.0), 1.0)) * (_H - _TOP - _BOTTOM)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {_W} {_H}" role="img" '
        f'aria-label="{escape(title)}: judge mean and people\'s scale over {len(days)} days">'
    ]
    for tick in (0.0, 0.5, 1.0):
        parts.append(
            f'<line x1="{_LEFT}" x2="{_W - _RIGHT}" y1="{y(tick):.1f}" y2="{y(tick):.1f}" '
            f'stroke="#eaeef2" /><text x="{_LEFT - 6}" y="{y(tick) + 4:.1f}" '
            f'text-anchor="end" font-size="11" fill="#59636e">{tick:.2f}</text>'
        )
    for index, day in enumerate(days):
        if (len(days) - 1 - index) % 7 == 0:
            parts.append(
                f'<text x="{x(index):.1f}" y="{_H - 8}" text-anchor="middle" font-size="11" '
                f'fill="#59636e">{escape(short_date(day))}</text>'
            )
    parts.append(
        f'<g font-size="11" fill="#59636e" transform="translate({_W - _RIGHT - 250},14)">'
        f'<line x1="0" x2="16" y1="-4" y2="-4" stroke="{JUDGE_COLOUR}" stroke-width="2" />'
        '<text x="20" y="0">judge mean</text>'
        f'<line x1="100" x2="116" y1="-4" y2="-4" stroke="{PEOPLE_COLOUR}" stroke-width="2" />'
        '<text x="120" y="0">people\'s scale (95% CI)</text></g>'
    )
    for index, day in enumerate(days):
        row = rows.get(day) or {}
        low, high = row.get("corrected_ci_low"), row.get("corrected_ci_high")
        if low is not None and high is not None:
            parts.append(
                f'<line x1="{x(index):.1f}" x2="{x(index):.1f}" y1="{y(high):.1f}" '
                f'y2="{y(low):.1f}" stroke="{PEOPLE_COLOUR}" stroke-opacity="0.3" '
                'stroke-width="6" />'
            )
    for column, colour in (("mean", JUDGE_COLOUR), ("corrected_mean", PEOPLE_COLOUR)):
        for run in _runs(days, rows, column):
            points = " ".join(f"{x(i):.1f},{y(rows[days[i]][column]):.1f}" for i in run)
            parts.append(
                f'<polyline points="{points}" fill="none" stroke="{colour}" stroke-width="2" />'
            )
            parts.extend(
                f'<circle cx="{x(i):.1f}" cy="{y(rows[days[i]][column]):.1f}" r="2.5" '
                f'fill="{colour}"><title>{escape(days[i])}: {rows[days[i]][column]:.3f}</title>'
                "</circle>"
                for i in run
            )
    parts.append("</svg>")
    return "".join(parts)


def _runs(
    days: Sequence[str], rows: Mapping[str, Mapping[str, Any]], column: str
) -> list[list[int]]:
    runs: list[list[int]] = [[]]
    for index, day in enumerate(days):
        if (rows.get(day) or {}).get(column) is not None:
            runs[-1].append(index)
        elif runs[-1]:
            runs.append([])
    return [run for run in runs if run]
