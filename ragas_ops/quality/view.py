"""The "RAG quality" page: what the nightly DAG wrote to the warehouse, read back for people.

    daily_metrics       the aggregates of the latest days
    scored              the worst examples of one day
    reports             the day's report.html and report.md, linked, served by `report_file`
    runs                the manifests of the runs that wrote a day

The tables are read through `tables.format.DayTables`, whatever their format (with
`warehouse.table_format = iceberg` also what the selected day's last rerun changed, from its
previous snapshot); every path is `contract.layout.Lake`'s. An example is the report's
(`quality.report.data.Example`), chosen by the report's rule (`worst_positions`).

The regression verdict of each day is computed again from the daily metrics with the
configured window and threshold (`check_regression`, as the pipeline does), so the page needs
nothing but the tables. Nothing here knows about Airflow or HTTP: `ragas_ops.quality.app`
serves it, `plugins/ragas_ops_plugin.py` mounts that in Airflow's UI.

Paths taken from a request go through `parse_day` or `report_file` (`layout.report_of_path`),
which accept only the shapes the pipeline writes, so a request can never name a file outside
the warehouse.
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs

from ragas_ops.config import Settings
from ragas_ops.contract.layout import Lake, parse_day, report_of_path, report_path
from ragas_ops.quality.daily_metrics import ALL
from ragas_ops.quality.judge_comparison import (
    COMPARISON_HEADER,
    candidate_failure_sentence,
    comparison_cells,
    comparison_sentence,
    switch_offset,
)
from ragas_ops.quality.regression import (
    SKIPPED,
    Outcome,
    RegressionReport,
    ScoringChange,
    check_regression,
    scoring_changes,
)
from ragas_ops.quality.report.calibration import CALIBRATION_CSS, calibration_html
from ragas_ops.quality.report.data import Example, worst_examples_of
from ragas_ops.quality.report.html import EXAMPLE_CSS, example_html
from ragas_ops.quality.rerun import (
    RERUN_HEADER,
    RerunChange,
    rerun_cells,
    rerun_change,
    rerun_sentence,
)
from ragas_ops.storage import Location, S3Options
from ragas_ops.tables.format import DayTables, day_tables, read_parquet

DEFAULT_DAYS = 14
MAX_DAYS = 90
WORST_EXAMPLES = 3
EVIDENCE_ITEMS = 4
"""Evidence items shown per example: the page lists several metrics' examples, each short."""
REPORT_MEDIA_TYPES = {
    "html": "text/html; charset=utf-8",
    "md": "text/markdown; charset=utf-8",
}


class UnsafePath(ValueError):
    """A path from a request that is not one the warehouse serves."""


# -- reading the warehouse -----------------------------------------------------------------------


def report_file(warehouse: Location, relative: str) -> tuple[Location, str]:
    """The report file that `relative` (`dt=YYYY-MM-DD/report.html` or `.md`, below
    `<warehouse>/reports/`) names, with its media type; `UnsafePath` for anything else.

    Only that exact shape is accepted (`layout.report_of_path`), checked part by part before
    any path is built, so no
    `..`, absolute path, backslash or encoded separator can reach the filesystem. On a local
    disk the resolved path must be that very file of the warehouse: a link below the warehouse
    can neither lead out nor pass another file (`report.html -> scored.parquet`, 530 KB of
    Parquet served as a page) for a report. The warehouse folder itself may be a link.
    """
    found = report_of_path(relative)
    if found is None:
        raise UnsafePath("not a report path")
    day, extension = found
    parts = report_path(day, extension)
    location = warehouse.child(*parts)
    if isinstance(warehouse.filesystem, pafs.LocalFileSystem):
        import os

        expected = os.path.join(os.path.realpath(warehouse.path), *parts)
        if os.path.realpath(location.path) != expected:
            raise UnsafePath("a link below the warehouse: not the day's report file")
    return location, REPORT_MEDIA_TYPES[extension]


def read_bytes(location: Location) -> bytes | None:
    """The file's content, or None when there is no such file."""
    try:
        with location.filesystem.open_input_stream(location.path) as stream:
            return bytes(stream.read())
    except (FileNotFoundError, OSError):
        if location.exists():
            raise
        return None


# -- the page's data ---------------------------------------------------------------------------


@dataclass(frozen=True)
class DayRun:
    """A run that wrote a day: its Airflow run id and the day it scored (a backfill's or a
    scheduled run's id names the end of its data interval, the day after)."""

    run_id: str
    day: str
    created_at: str
    input_alarm: dict[str, str] | None = None
    """The run's alarm of a broken input (`pipeline.input_health`): no quiet day."""
    model_warnings: tuple[str, ...] = ()
    """The judge's models its endpoint said shut down soon (the plan's `model_warnings`)."""
    candidate_failure: str | None = None
    """What the run's shadow judge failed on (`candidate_failure_sentence`), if it did."""


@dataclass(frozen=True)
class DayVerdict:
    day: str
    report: RegressionReport
    has_report: bool
    runs: list[DayRun] = field(default_factory=list)
    """The runs that wrote the day, latest first."""


@dataclass
class QualityOverview:
    """Everything the page shows."""

    warehouse_uri: str
    days: list[str]
    """The shown days, oldest first."""
    selected: str | None
    metrics: list[str]
    rows: dict[tuple[str, str, str, str], dict[str, Any]]
    """(dt, segment_column, segment_value, metric) -> the daily_metrics row."""
    groupings: list[tuple[str, str]]
    """(segment_column, segment_value) seen in the shown days, overall first."""
    verdicts: dict[str, DayVerdict]
    examples: dict[str, list[Example]] = field(default_factory=dict)
    changes: list[ScoringChange] = field(default_factory=list)
    """The shown days on which a metric's judge or versions changed."""
    rerun: RerunChange | None = None
    """What the selected day's latest publish changed against its previous one (iceberg)."""
    comparison: list[dict[str, Any]] = field(default_factory=list)
    """The selected day's shadow-judge comparison, a row per metric (`judge_comparison`)."""
    offsets: dict[tuple[str, str], str] = field(default_factory=dict)
    """(day, metric) of a switch of judge -> the offset the shadow judge measured before it."""

    def row(self, day: str, column: str, value: str, metric: str) -> dict[str, Any] | None:
        return self.rows.get((day, column, value, metric))


def load_overview(
    warehouse: Location,
    settings: Settings,
    *,
    days: int = DEFAULT_DAYS,
    selected: str | None = None,
    worst: int = WORST_EXAMPLES,
    tables: DayTables | None = None,
) -> QualityOverview:
    """The latest `days` days with daily metrics, their verdicts, and for the selected day
    (default: the latest) its worst examples per metric and what its last rerun changed.
    `tables` reads the warehouse in its table format (default: the settings' format, at
    `warehouse`)."""
    days = max(1, min(days, MAX_DAYS))
    tables = tables or tables_at(warehouse, settings)
    lake = tables.lake
    known = tables.metrics_days()
    if selected is not None:
        selected = parse_day(selected)
        shown = [day for day in known if day <= selected][-days:]
    else:
        shown = known[-days:]
        selected = shown[-1] if shown else None
    window = settings.pipeline.regression_window_days
    history_days = sorted(set(known) & set(_with_window(shown, window)))
    found = tables.read_daily_metrics(history_days)
    history = pa.concat_tables(found, promote_options="permissive") if found else None
    overview = QualityOverview(
        warehouse_uri=warehouse.uri,
        days=shown,
        selected=selected if selected in shown else None,
        metrics=[],
        rows={},
        groupings=[],
        verdicts={},
    )
    if history is None:
        return overview
    records = history.to_pylist()
    present = {record["metric"] for record in records}
    overview.metrics = [m for m in settings.metrics.names if m in present] + sorted(
        present - set(settings.metrics.names)
    )
    groupings: dict[tuple[str, str], None] = {}
    for record in records:
        if record["dt"] in shown:
            key = (record["dt"], record["segment_column"], record["segment_value"])
            overview.rows[(*key, record["metric"])] = record
            groupings[(record["segment_column"], record["segment_value"])] = None
    overview.groupings = sorted(groupings, key=lambda g: (g[0] != ALL, g))
    for day in shown:
        overview.verdicts[day] = DayVerdict(
            day=day,
            report=check_regression(
                history,
                day,
                window_days=window,
                threshold=settings.pipeline.regression_threshold,
            ),
            has_report=lake.report(day, "html").exists(),
            runs=day_runs(lake, day),
        )
    overview.changes = [
        change for change in scoring_changes(history, overview.metrics) if change.day in shown
    ]
    overview.offsets = switch_offsets(lake, overview, history_days)
    if overview.selected is None:
        return overview
    segment_columns = list(dict.fromkeys(c for c, _ in overview.groupings if c != ALL))
    if worst > 0:
        overview.examples = worst_examples(
            tables,
            overview.selected,
            metrics=overview.metrics,
            settings=settings,
            segment_columns=segment_columns,
            count=worst,
        )
    comparison = lake.day_file("judge_comparison", overview.selected)
    if comparison.exists():
        overview.comparison = read_parquet(comparison).to_pylist()
    columns = [f"{m}_{part}" for m in overview.metrics for part in ("score", "status")]
    rerun = tables.rerun(overview.selected, columns)
    if rerun is not None:
        overview.rerun = rerun_change(overview.selected, rerun, overview.metrics)
    return overview


def switch_offsets(
    lake: Lake, overview: QualityOverview, days: Sequence[str]
) -> dict[tuple[str, str], str]:
    """The offset the shadow judge measured before each shown switch of judge."""
    judge_changes = [c for c in overview.changes if any("judge" in what for what in c.changes)]
    if not judge_changes:
        return {}
    comparisons = [
        row
        for day in days
        if (location := lake.day_file("judge_comparison", day)).exists()
        for row in read_parquet(location).to_pylist()
    ]
    offsets = {}
    for change in judge_changes:
        row = overview.row(change.day, ALL, ALL, change.metric) or {}
        offset = switch_offset(change.day, change.metric, row.get("judge"), comparisons)
        if offset is not None:
            offsets[(change.day, change.metric)] = offset
    return offsets


def tables_at(warehouse: Location, settings: Settings, s3: S3Options | None = None) -> DayTables:
    """The warehouse at `warehouse` in the settings' table format (`s3`: the credentials an
    Iceberg catalog of an s3:// warehouse reads its files with)."""
    # the caller's location, with its filesystem's credentials
    return day_tables(Lake(settings.pipeline, s3, warehouse=warehouse), settings)


def day_runs(lake: Lake, day: str) -> list[DayRun]:
    """The runs whose manifests are in the day's `runs` folder, latest first (a manifest that
    cannot be read is skipped: the page shows what it can)."""
    runs = []
    for location in lake.manifest_files(day):
        try:
            manifest = json.loads(location.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(manifest, dict) and manifest.get("run_id"):
            runs.append(
                DayRun(
                    str(manifest["run_id"]),
                    str(manifest.get("day") or day),
                    str(manifest.get("created_at") or ""),
                    manifest.get("input_alarm") or None,
                    tuple((manifest.get("plan") or {}).get("model_warnings") or ()),
                    candidate_failure_sentence(manifest.get("candidate")),
                )
            )
    return sorted(runs, key=lambda run: run.created_at, reverse=True)


def _with_window(days: Sequence[str], window: int) -> list[str]:
    if not days:
        return []
    first = date.fromisoformat(days[0]) - timedelta(days=window)
    last = date.fromisoformat(days[-1])
    return [(first + timedelta(days=i)).isoformat() for i in range((last - first).days + 1)]


def worst_examples(
    tables: DayTables,
    day: str,
    *,
    metrics: Sequence[str],
    settings: Settings,
    segment_columns: Sequence[str],
    count: int,
) -> dict[str, list[Example]]:
    """The `count` lowest-scored rows per metric of distinct questions (ties: row order), as
    the report chooses them. Only the score, status and question columns of the day are read
    in full; the text of the chosen rows is read alone (`DayTables.read_scored_rows`), so a
    day of a million rows costs a few columns, not the table. No scored table: no example."""
    columns = settings.columns
    ranked = [f"{m}_{part}" for m in metrics for part in ("score", "status")]
    try:
        ranking = tables.read_scored(day, columns=[*ranked, columns.question])
    except FileNotFoundError:
        return {}
    names = set(ranking.schema.names)
    metrics = [m for m in metrics if {f"{m}_score", f"{m}_status"} <= names]

    def rows_at(positions: Sequence[int], wanted: Sequence[str]) -> dict[int, dict[str, Any]]:
        return tables.read_scored_rows(day, positions, wanted)

    return worst_examples_of(
        ranking,
        rows_at,
        metrics=metrics,
        segment_columns=segment_columns,
        count=count,
        columns=columns,
    )


# -- rendering -----------------------------------------------------------------------------------

_STYLE = (
    EXAMPLE_CSS
    + CALIBRATION_CSS
    + """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;padding:20px 28px;
color:#1f2933;background:#fff}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px}
h3{font-size:15px;margin:18px 0 6px}
.muted{color:#616e7c}.small{font-size:12px}
table{border-collapse:collapse;margin:6px 0 4px}
th,td{border:1px solid #d9e2ec;padding:4px 8px;text-align:right;white-space:nowrap}
th{background:#f0f4f8;font-weight:600}td.l,th.l{text-align:left}
tr.sel td{background:#fffbea}
.badge{display:inline-block;border-radius:10px;padding:1px 9px;font-size:12px;font-weight:600}
.ok{background:#e3f9e5;color:#196c2e}.warn{background:#fff3c4;color:#8d5b00}
.regression{background:#ffe3e3;color:#a61b1b}.improved{background:#e0f2ff;color:#0b5394}
.not_checked,.not_compared,.insufficient_history,.too_few_rows{background:#eceff3;color:#3e4c59;
border:1px dashed #7b8794}
td.regression,td.improved{font-weight:600}
td.skipped{color:#7b8794;font-style:italic}
td.run{white-space:normal;max-width:290px;overflow-wrap:normal;font-size:12px}
td.change{box-shadow:inset 3px 0 0 #8250df}
.change-mark{color:#8250df;font-weight:700}
.banner{border-radius:6px;padding:10px 14px;margin:10px 0}
.scroll{overflow-x:auto;max-width:100%}
.example{max-width:1100px}
a{color:#0b5394}
"""
)


def run_id_html(run_id: str) -> str:
    """A run id that wraps only between its parts: after the run type's `__` and before the
    time (`backfill__|2026-11-26|T00:00:00+00:00`), never inside a word or a number (the
    column broke `scheduled` and the time mid-word)."""
    escaped = _esc(run_id)
    return escaped.replace("__", "__<wbr>", 1).replace("T", "<wbr>T", 1)


def _esc(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def _num(value: float | None, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def render_page(overview: QualityOverview, base_path: str, *, days: int = DEFAULT_DAYS) -> str:
    """The whole page, self-contained (inline CSS, no script). Every value from the warehouse
    is escaped; links are built from validated days only."""
    base = base_path.rstrip("/")
    parts = [
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>",
        "<title>RAG quality</title><style>",
        _STYLE,
        "</style></head><body>",
        "<h1>RAG quality</h1>",
        f"<div class='muted small'>warehouse {_esc(overview.warehouse_uri)}"
        f" · last {len(overview.days)} day(s) with daily metrics"
        f" · <a href='{_esc(base)}/label'>label rows</a> (blind human labels)</div>",
    ]
    if not overview.days:
        parts.append(
            "<p class='banner warn'>No daily metrics in the warehouse yet: they appear after "
            "the first run of the <code>ragas_ops_nightly</code> DAG.</p></body></html>"
        )
        return "".join(parts)
    parts.append(_selected_banner(overview))
    parts.append(_days_table(overview, base, days))
    parts.append(_trend_table(overview))
    parts.append(_calibration(overview))
    if overview.selected:
        parts.append(_day_detail(overview, overview.selected))
        parts.append(_comparison_html(overview))
        parts.append(_rerun_html(overview))
        parts.append(_examples_html(overview))
    parts.append("</body></html>")
    return "".join(parts)


def _calibration(overview: QualityOverview) -> str:
    """The people's scale up to the selected day (else the latest): its own section."""
    last = overview.selected or overview.days[-1]
    days = [day for day in overview.days if day <= last]
    overall = {
        metric: {
            day: row for day in days if (row := overview.row(day, ALL, ALL, metric)) is not None
        }
        for metric in overview.metrics
    }
    return calibration_html(overview.metrics, days, overall)


def _verdict_badge(verdict: str) -> str:
    return f"<span class='badge {_esc(verdict)}'>{_esc(verdict.replace('_', ' '))}</span>"


def _selected_banner(overview: QualityOverview) -> str:
    if overview.selected is None:
        return ""
    verdict = overview.verdicts[overview.selected]
    report = verdict.report
    tone = report.verdict.value
    verdict_banner = (
        f"<div class='banner {_esc(tone)}'>{_verdict_badge(tone)} {_esc(report.summary)}</div>"
    )
    return (
        _alarm_banner(verdict.runs)
        + _shutdown_banner(verdict.runs)
        + _candidate_banner(verdict.runs)
        + verdict_banner
    )


def _candidate_banner(runs: Sequence[DayRun]) -> str:
    """The latest run's word that its shadow judge failed (never a silent absence)."""
    failure = runs[0].candidate_failure if runs else None
    if failure is None:
        return ""
    return (
        "<div class='banner warn candidate-failed'><span class='badge warn'>shadow judge "
        f"failed</span> {_esc(failure)}</div>"
    )


def _latest_alarm(runs: Sequence[DayRun]) -> dict[str, str] | None:
    return runs[0].input_alarm if runs else None


def _alarm_banner(runs: Sequence[DayRun]) -> str:
    """The latest run's input alarm, above the verdict: a broken input is no quiet day."""
    alarm = _latest_alarm(runs)
    if not alarm:
        return ""
    tone = "regression" if alarm.get("severity") == "failure" else "warn"
    return (
        f"<div class='banner {tone} input-alarm'><span class='badge {tone}'>"
        f"{_esc(alarm.get('title', ''))}</span> {_esc(alarm.get('message', ''))}</div>"
    )


def _shutdown_banner(runs: Sequence[DayRun]) -> str:
    """The latest run's word that a judge's model shuts down soon (docs/judge.md)."""
    warnings = runs[0].model_warnings if runs else ()
    return "".join(
        f"<div class='banner warn model-shutdown'><span class='badge warn'>model shutting "
        f"down</span> {_esc(warning)}</div>"
        for warning in warnings
    )


def _alarm_badge(runs: Sequence[DayRun]) -> str:
    alarm = _latest_alarm(runs)
    if not alarm:
        return ""
    tone = "regression" if alarm.get("severity") == "failure" else "warn"
    return (
        f"<br><span class='badge {tone}' title='{_esc(alarm.get('message', ''))}'>"
        f"{_esc(alarm.get('title', '').lower())}</span>"
    )


def _days_table(overview: QualityOverview, base: str, days: int) -> str:
    head = "".join(f"<th>{_esc(m)}</th>" for m in overview.metrics)
    body = []
    for day in reversed(overview.days):
        verdict = overview.verdicts[day]
        cells = []
        for metric in overview.metrics:
            row = overview.row(day, ALL, ALL, metric)
            finding = verdict.report.finding(ALL, ALL, metric)
            cells.append(_mean_cell(overview, day, metric, row, finding))
        any_row = next((r for m in overview.metrics if (r := overview.row(day, ALL, ALL, m))), None)
        links = (
            f"<a href='{base}/{'/'.join(report_path(day, 'html'))}' {_NEW_TAB}>HTML</a> · "
            f"<a href='{base}/{'/'.join(report_path(day, 'md'))}' {_NEW_TAB}>Markdown</a>"
            if verdict.has_report
            else "<span class='muted'>no report</span>"
        )
        selected = " class='sel'" if day == overview.selected else ""
        judges = sorted(
            {
                row["judge"]
                for metric in overview.metrics
                if (row := overview.row(day, ALL, ALL, metric)) and row.get("judge")
            }
        )
        body.append(
            f"<tr{selected}><td class='l'><a href='{base}/?day={day}&amp;days={days}'>{day}</a>"
            f"</td><td class='l'>{_verdict_badge(verdict.report.verdict.value)}"
            f"{_alarm_badge(verdict.runs)}</td>"
            f"<td>{'{:,}'.format(any_row['rows']) if any_row else '–'}</td>"
            f"{''.join(cells)}<td class='l'><code>{_esc(', '.join(judges) or '–')}</code></td>"
            f"<td class='l run'>{_runs_cell(verdict.runs)}</td><td class='l'>{links}</td></tr>"
        )
    return (
        "<h2>Days</h2><div class='muted small'>Overall mean per metric; the verdict compares "
        "each day with the trailing days scored by the same judge, embedding model and metric "
        "and prompt versions (grey: not checked, hover for why; a purple edge: the judge or a "
        "version changed that day). Pick a day for its segments and worst examples.</div>"
        "<div class='scroll'><table><tr><th class='l'>day</th><th class='l'>verdict</th>"
        f"<th>rows</th>{head}<th class='l'>judge</th><th class='l'>run</th>"
        f"<th class='l'>report</th></tr>{''.join(body)}</table></div>"
    )


def _mean_cell(
    overview: QualityOverview,
    day: str,
    metric: str,
    row: Mapping[str, Any] | None,
    finding: Any,
) -> str:
    """A mean, coloured by its finding, with the finding's message (and the day's change of
    judge or version) as its tooltip."""
    classes = []
    if finding is not None and finding.outcome in _MARKED:
        classes.append(finding.outcome.value)
    elif finding is not None and finding.outcome in SKIPPED:
        classes.append("skipped")
    notes = [finding.message] if finding is not None and classes else []
    changed = [c.sentence for c in overview.changes if c.day == day and c.metric == metric]
    offset = overview.offsets.get((day, metric))
    if changed:
        classes.append("change")
        notes = [*changed, *([offset] if offset else []), *notes]
    title = f" title='{_esc(' · '.join(notes))}'" if notes else ""
    mark = "<span class='change-mark'>◆</span> " if changed else ""
    # the measured offset itself on the overall mean (the shadow judge compares all rows)
    overall = row is not None and row.get("segment_column") == ALL
    shadow = (
        f"<br><span class='muted small'>shadow {_esc(offset.split(': ', 1)[1].split()[0])}</span>"
        if changed and offset and overall
        else ""
    )
    mean = _num(row["mean"] if row else None)
    return f"<td class='{' '.join(classes)}'{title}>{mark}{mean}{shadow}</td>"


def _runs_cell(runs: Sequence[DayRun]) -> str:
    """The latest run id with the day it scored beside it (`backfill__2026-11-26...` scores
    2026-11-25), and how many earlier runs wrote the day."""
    if not runs:
        return "<span class='muted'>–</span>"
    latest = runs[0]
    earlier = f" <span class='muted small'>(+{len(runs) - 1} earlier)</span>" if runs[1:] else ""
    return (
        f"<code>{run_id_html(latest.run_id)}</code><br><span class='muted small'>scored "
        f"{_esc(latest.day)}</span>{earlier}"
    )


_MARKED = (Outcome.REGRESSION, Outcome.IMPROVED)
# Reports open beside Airflow's UI rather than inside its frame.
_NEW_TAB = "target='_blank' rel='noopener'"


def _grouping_label(column: str, value: str) -> str:
    return "all rows" if column == ALL else f"{column}={value}"


def _trend_table(overview: QualityOverview) -> str:
    head = "".join(f"<th>{_esc(day[5:])}</th>" for day in overview.days)
    body = []
    for column, value in overview.groupings:
        for metric in overview.metrics:
            cells = []
            for day in overview.days:
                row = overview.row(day, column, value, metric)
                finding = overview.verdicts[day].report.finding(column, value, metric)
                cells.append(_mean_cell(overview, day, metric, row, finding))
            body.append(
                f"<tr><td class='l'>{_esc(_grouping_label(column, value))}</td>"
                f"<td class='l'>{_esc(metric)}</td>{''.join(cells)}</tr>"
            )
    return (
        "<h2>Daily mean per metric and segment</h2><div class='muted small'>Red: a regression "
        "against the baseline; blue: an improvement; grey: not checked; ◆: the judge or a "
        "version changed that day (hover for the numbers).</div>"
        f"<table><tr><th class='l'>segment</th><th class='l'>metric</th>{head}</tr>"
        f"{''.join(body)}</table>"
    )


def _day_detail(overview: QualityOverview, day: str) -> str:
    report = overview.verdicts[day].report
    notable = [f for f in report.findings if f.outcome in _MARKED or (f.skipped and f.is_overall)]
    findings = "".join(
        f"<li>{_verdict_badge(f.outcome.value)} {_esc(f.message)}</li>" for f in notable
    )
    body = []
    for column, value in overview.groupings:
        for metric in overview.metrics:
            row = overview.row(day, column, value, metric)
            if row is None:
                continue
            ci = (
                f"{_num(row['ci_low'])} – {_num(row['ci_high'])}"
                if row["ci_low"] is not None
                else "–"
            )
            body.append(
                f"<tr><td class='l'>{_esc(_grouping_label(column, value))}</td>"
                f"<td class='l'>{_esc(metric)}</td><td>{row['rows']:,}</td>"
                f"<td>{row['rows_scored']:,}</td><td>{row['rows_not_applicable']:,}</td>"
                f"<td>{row.get('rows_not_sampled') or 0:,}</td><td>{row['rows_failed']:,}</td>"
                f"<td><b>{_num(row['mean'])}</b></td>"
                f"<td>{ci}</td><td>{_num(row['p10'])}</td><td>{_num(row['median'])}</td>"
                f"<td>{_num(row['p90'])}</td></tr>"
            )
    return (
        f"<h2>{_esc(day)}: aggregates</h2>"
        + (f"<ul>{findings}</ul>" if findings else "")
        + "<table><tr><th class='l'>segment</th><th class='l'>metric</th><th>rows</th>"
        "<th>scored</th><th>n/a</th><th>not sampled</th><th>failed</th><th>mean</th>"
        f"<th>95% CI</th><th>p10</th><th>median</th><th>p90</th></tr>{''.join(body)}</table>"
    )


def _comparison_html(overview: QualityOverview) -> str:
    if not overview.comparison:
        return ""
    head = "".join(f"<th class='l'>{_esc(cell)}</th>" for cell in COMPARISON_HEADER)
    body = "".join(
        "<tr>"
        + "".join(f"<td class='l'>{_esc(cell)}</td>" for cell in comparison_cells(row))
        + "</tr>"
        for row in overview.comparison
    )
    return (
        f"<h2 id='shadow-judge'>{_esc(overview.selected)}: shadow judge</h2>"
        f"<div class='muted small'>{_esc(comparison_sentence(overview.comparison))}</div>"
        f"<table><tr>{head}</tr>{body}</table>"
    )


def _rerun_html(overview: QualityOverview) -> str:
    change = overview.rerun
    if change is None:
        return ""
    head = "".join(f"<th class='l'>{_esc(cell)}</th>" for cell in RERUN_HEADER)
    body = "".join(
        "<tr>" + "".join(f"<td class='l'>{_esc(cell)}</td>" for cell in cells) + "</tr>"
        for cells in rerun_cells(change)
    )
    return (
        f"<h2>{_esc(change.day)}: what the last rerun changed</h2>"
        f"<div class='muted small'>{_esc(rerun_sentence(change))}</div>"
        f"<table><tr>{head}</tr>{body}</table>"
    )


def _examples_html(overview: QualityOverview) -> str:
    parts = [f"<h2>{_esc(overview.selected)}: worst examples</h2>"]
    if not overview.examples:
        parts.append("<p class='muted'>No scored table for this day.</p>")
    for metric, examples in overview.examples.items():
        parts.append(f"<h3>{_esc(metric)}</h3>")
        if not examples:
            parts.append("<p class='muted'>No scored row.</p>")
        parts.extend(
            example_html(metric, example, evidence_items=EVIDENCE_ITEMS) for example in examples
        )
    return "".join(parts)
