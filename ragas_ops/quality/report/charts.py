"""The SVG trend chart of one metric: daily means, their confidence band, the baseline and
the days the judge or a version changed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ragas_ops.quality.regression import ScoringChange
from ragas_ops.quality.report.data import escape, interval_text, short_date

# --- the SVG trend chart ------------------------------------------------------------------------

_W, _H = 600, 230
_LEFT, _RIGHT, _TOP, _BOTTOM = 44, 22, 30, 30


def trend_svg(
    title: str,
    days: Sequence[str],
    rows: Mapping[str, Mapping[str, Any]],
    baseline: float | None = None,
    changes: Sequence[ScoringChange] = (),
    *,
    offsets: Mapping[str, str] | None = None,
) -> str:
    """A line chart of the daily means on a 0..1 scale with their CI band; a day without a
    mean breaks the line rather than being drawn as 0. A day on which the judge or a version
    changed is marked with a vertical line (its sentence in a tooltip): scores on either side
    of it are not comparable; a switch of judge the shadow judge measured beforehand
    (`offsets`: day -> the phrase) carries that offset in its label and tooltip."""
    plot_w, plot_h = _W - _LEFT - _RIGHT, _H - _TOP - _BOTTOM
    step = plot_w / max(len(days) - 1, 1)

    def x(index: int) -> float:
        return _LEFT + index * step

    def y(value: float) -> float:
        return _TOP + (1.0 - min(max(value, 0.0), 1.0)) * plot_h

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {_W} {_H}" role="img" '
        f'aria-label="{escape(title)}: daily mean over {len(days)} days">'
    ]
    parts.extend(_axes(days, x, y))
    parts.append(_legend(baseline))
    if baseline is not None:
        parts.append(
            f'<line x1="{_LEFT}" x2="{_W - _RIGHT}" y1="{y(baseline):.1f}" '
            f'y2="{y(baseline):.1f}" stroke="#8c959f" stroke-dasharray="4 4" />'
        )
    parts.extend(_change_marks(days, changes, x, y, offsets or {}))
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
            f"<title>{escape(day)}: {row['mean']:.3f} ({escape(interval_text(row))}, "
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


def _change_marks(
    days: Sequence[str],
    changes: Sequence[ScoringChange],
    x: Any,
    y: Any,
    offsets: Mapping[str, str],
) -> list[str]:
    """A dashed purple line before each day scored differently from the one before, labelled
    with what changed (and the offset the shadow judge measured, when it did)."""
    index_of = {day: index for index, day in enumerate(days)}
    step = (x(1) - x(0)) if len(days) > 1 else 0.0
    marks = []
    for change in changes:
        if change.day not in index_of:
            continue
        at = x(index_of[change.day]) - step / 2
        what = "judge" if any("judge" in c for c in change.changes) else "version"
        offset = offsets.get(change.day)
        sentence = change.sentence if offset is None else f"{change.sentence}; {offset}"
        shown = f"{what} changed" if offset is None else f"judge changed, shadow {_offset(offset)}"
        # Near the right edge the label goes left of the line, so that it is not cut off.
        left = at > _LEFT + (_W - _LEFT - _RIGHT) / 2
        label = (
            f'<text x="{at - 3 if left else at + 3:.1f}" y="{y(1.0) + 11:.1f}" '
            f'text-anchor="{"end" if left else "start"}" font-size="10" fill="#8250df">'
            f"{escape(shown)}</text>"
        )
        marks.append(
            f'<g><title>{escape(sentence)}</title><line x1="{at:.1f}" x2="{at:.1f}" '
            f'y1="{y(1.0):.1f}" y2="{y(0.0):.1f}" stroke="#8250df" stroke-width="1.5" '
            f'stroke-dasharray="3 3" />{label}</g>'
        )
    return marks


def _offset(phrase: str) -> str:
    """The measured offset alone (`+0.012`), from `judge_comparison.switch_offset`'s phrase."""
    return phrase.split(": ", 1)[1].split(" ", 1)[0]


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
    # Every day of a short chart (534 px hold 8 labels of "Nov 21"), else every 7th back from
    # the last; the first day too when no label is near it (a 7-day chart labelled its last).
    step = 1 if len(days) <= 8 else 7
    for index, day in enumerate(days):
        labelled = (last - index) % step == 0 or (index == 0 and last % step >= step / 2)
        if labelled:
            anchor = "end" if index == last else "start" if index == 0 else "middle"
            parts.append(
                f'<line x1="{x(index):.1f}" x2="{x(index):.1f}" y1="{y(0.0):.1f}" '
                f'y2="{y(0.0) + 4:.1f}" stroke="#8c959f" />'
                f'<text x="{x(index):.1f}" y="{_H - _BOTTOM + 18}" '
                f'text-anchor="{anchor}" '
                f'font-size="11" fill="#59636e">{escape(short_date(day))}</text>'
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
