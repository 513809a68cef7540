"""The report stage: the day's report written, the manifest completed with what the report
saw of the day's rows, and the run failed when a policy says so."""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from ragas_ops.config import Settings
from ragas_ops.contract.inputs import TIMESTAMP
from ragas_ops.contract.layout import Lake
from ragas_ops.pipeline.aggregate import (
    aggregate_day,
    day_regression,
    days_before,
    metrics_history,
)
from ragas_ops.pipeline.input_health import ALL_FILES_REJECTED, FAILURE, input_alarm
from ragas_ops.pipeline.lake_safety import check_current
from ragas_ops.pipeline.manifest import read_manifest, replaced_publish, write_manifest
from ragas_ops.sampling import ROW_ID_COLUMN
from ragas_ops.storage import Location
from ragas_ops.tables.format import DayTables, day_tables

if TYPE_CHECKING:
    from ragas_ops.quality.report import RowsAt

REPORT_DAYS = 30
REPEATED_ROWS_READ = 20_000
"""Rows of repeated ids whose content is read at a time (`repeated_ids`)."""
log = logging.getLogger(__name__)


class RunProblem(RuntimeError):
    """The day was published and reported, but the run must fail (see `on_regression`,
    `on_bad_input`): someone has to look."""


def report_day(
    lake: Lake,
    day: str,
    run_id: str,
    settings: Settings,
    published: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Write the day's report, complete the manifest, and fail the run if configured to.

    With `published`, it reports the table this run published (or raises `Superseded`), and
    the run's staging folder is deleted at the end.
    """
    from ragas_ops.quality.report import build_report, ranked_columns

    tables = day_tables(lake, settings)
    publish_id = None if published is None else published["publish_id"]
    if published is not None and tables.metrics_version(day) != publish_id:
        # A run that lost the race to publish wrote its daily metrics after this run's
        # aggregate: this run's (the published table's) are written again.
        aggregate_day(lake, day, settings, published, run_id)
    history = metrics_history(lake, day, REPORT_DAYS, settings=settings)
    regression = day_regression(lake, day, settings, None)
    manifest = read_manifest(lake, day, run_id, publish_id)
    # Only the columns ranked and counted by, for every row; the few rows shown (and the
    # content of repeated ids) are read by position: memory follows the columns, not the texts.
    columns = [*ranked_columns(settings.metrics.names, settings.columns), TIMESTAMP]
    scored = tables.read_scored(day, published, run_id, columns=columns)

    def rows_at(positions: Sequence[int], wanted: Sequence[str]) -> dict[int, dict[str, Any]]:
        return tables.read_scored_rows(day, positions, wanted, published, run_id)

    manifest["repeated_ids"] = repeated_ids(scored, settings, rows_at)
    manifest["dated_elsewhere"] = dated_elsewhere(scored, day)
    manifest["replaced"] = replaced_publish(lake, day, manifest)
    alarm = input_alarm(manifest["plan"], settings)
    if alarm is not None:  # recorded only when there is one: a sound day's manifest is as before
        manifest["input_alarm"] = alarm
        log.warning("input alarm for %s: %s", day, alarm["message"])
    report = build_report(
        day,
        history,
        scored,
        regression,
        metrics=settings.metrics.names,
        manifest=manifest,
        rerun=rerun_change(tables, day, settings, published),
        columns=settings.columns,
        comparison=day_comparison_rows(lake, day),
        comparison_history=[
            row
            for earlier in [*days_before(day, REPORT_DAYS), day]
            for row in day_comparison_rows(lake, earlier)
        ],
        rows_at=rows_at,
    )
    if published is not None:
        check_current(lake, day, published, run_id, settings)
    html, markdown = lake.report(day, "html"), lake.report(day, "md")
    html.write_text(report.html, staging=lake.scratch(day, run_id, html.name))
    markdown.write_text(report.markdown, staging=lake.scratch(day, run_id, markdown.name))
    manifest["regression"] = regression.to_dict()
    manifest["report"] = {"html": html.uri, "markdown": markdown.uri}
    write_manifest(lake, day, run_id, manifest, settings)
    if published is not None:
        lake.staging(day, run_id).delete_tree()  # the run is done: its table is in place
        remove_if_empty(lake.staging_day(day))
    problems = run_problems(manifest, regression.verdict.value, settings)
    if problems:
        raise RunProblem("; ".join(problems) + f" (report: {html.uri})")
    return manifest["report"]  # type: ignore[no-any-return]


def remove_if_empty(folder: Location) -> None:
    """Remove a local folder left empty (the day's `_staging/dt=D/` once its last run is
    done): `os.rmdir` refuses a folder another run of the day has just written into, where a
    check-then-delete would race it. A store without folders (S3) keeps none to remove."""
    import os

    import pyarrow.fs as pafs

    if not isinstance(folder.filesystem, pafs.LocalFileSystem):
        return
    with contextlib.suppress(OSError):  # not empty (another run's), or already gone
        os.rmdir(folder.path)


def day_comparison_rows(lake: Lake, day: str) -> list[dict[str, Any]]:
    """The day's shadow-judge comparison, a row per metric (none without a shadow judge)."""
    from ragas_ops.pipeline.shadow import read_comparison

    table = read_comparison(lake, day)
    return [] if table is None else table.to_pylist()


def run_problems(manifest: dict[str, Any], verdict: str, settings: Settings) -> list[str]:
    """Why the run must fail, under the configured policies (empty: it must not)."""
    problems = []
    alarm = manifest.get("input_alarm")
    if alarm is not None and alarm["severity"] == FAILURE:
        problems.append(f"{alarm['title'].lower()}: {alarm['message']}")
    rejected = manifest["plan"]["rejected_files"]
    all_rejected = alarm is not None and alarm["kind"] == ALL_FILES_REJECTED
    if rejected and settings.pipeline.on_bad_input == "fail" and not all_rejected:
        problems.append(
            f"{len(rejected)} input file(s) rejected, e.g. {rejected[0]['path']}: "
            f"{rejected[0]['reason']}"
        )
    if verdict == "regression" and settings.pipeline.on_regression == "fail":
        problems.append("a metric regressed against its baseline")
    return problems


def rerun_change(
    tables: DayTables, day: str, settings: Settings, published: dict[str, Any] | None
) -> Any:
    """What this publish of the day changed against the one before it (`quality.rerun.
    RerunChange`), or None: the day's first publish, or a format without earlier versions."""
    from ragas_ops.quality.rerun import rerun_change as compare

    metrics = settings.metrics.names
    columns = [f"{metric}_{suffix}" for metric in metrics for suffix in ("score", "status")]
    snapshot = None if published is None else published.get("snapshot_id")
    rerun = tables.rerun(day, columns, snapshot)
    return None if rerun is None else compare(day, rerun, metrics)


def repeated_ids(
    table: pa.Table, settings: Settings, rows_at: RowsAt | None = None
) -> dict[str, int]:
    """Rows of the day that share an `id` with another row: the same interaction logged twice
    (a copied file, an overlapping export) or an id reused for other content. Which copy is
    right no reader can tell, so every row is scored and published as logged; this counts
    them for the manifest and the report. No `id` column: nothing to count.

    `table` needs only the `id` column when `rows_at` gives the repeated rows' content (read
    `REPEATED_ROWS_READ` rows at a time, so a day of many copies is never held whole)."""
    import pyarrow.compute as pc

    from ragas_ops.quality.report import rows_of_table

    counted = {"rows": 0, "ids": 0, "ids_with_different_content": 0}
    if ROW_ID_COLUMN not in table.column_names or table.num_rows == 0:
        return counted
    counts = table.group_by(ROW_ID_COLUMN).aggregate([(ROW_ID_COLUMN, "count")])
    repeated = counts.filter(
        pc.and_(pc.is_valid(counts[ROW_ID_COLUMN]), pc.greater(counts[f"{ROW_ID_COLUMN}_count"], 1))
    )
    if repeated.num_rows == 0:
        return counted
    mapping = settings.columns
    content = [mapping.question, mapping.contexts, mapping.answer]
    read = rows_at or rows_of_table(table)
    positions = pc.indices_nonzero(pc.is_in(table[ROW_ID_COLUMN], repeated[ROW_ID_COLUMN]))
    seen: dict[Any, set[str]] = {}
    for start in range(0, len(positions), REPEATED_ROWS_READ):
        part = positions.slice(start, REPEATED_ROWS_READ).to_pylist()
        for row in read(part, [ROW_ID_COLUMN, *content]).values():
            text = json.dumps([row.get(name) for name in content], default=str)
            # a digest, not the text: the day's copies are counted, not kept
            digest = hashlib.sha256(text.encode()).hexdigest()
            seen.setdefault(row[ROW_ID_COLUMN], set()).add(digest)
    counted["rows"] = len(positions)
    counted["ids"] = repeated.num_rows
    counted["ids_with_different_content"] = sum(len(texts) > 1 for texts in seen.values())
    return counted


def dated_elsewhere(table: pa.Table, day: str) -> dict[str, Any]:
    """Rows whose `timestamp` falls on another day (UTC) than the `dt=` folder they were
    logged in: published under the folder's day, as the lake's layout says, but counted (with
    the first and last such day) so that a misfiled export shows."""
    import pyarrow.compute as pc

    counted: dict[str, Any] = {"rows": 0, "first": None, "last": None}
    if TIMESTAMP not in table.column_names or not pa.types.is_timestamp(table[TIMESTAMP].type):
        return counted
    stamps = table[TIMESTAMP]
    if stamps.type.tz is not None:
        stamps = stamps.cast(pa.timestamp(stamps.type.unit, tz="UTC"))
    days = pc.strftime(stamps, format="%Y-%m-%d")
    elsewhere = pc.filter(days, pc.not_equal(days, day))
    if len(elsewhere):
        counted.update(
            rows=len(elsewhere),
            first=pc.min(elsewhere).as_py(),
            last=pc.max(elsewhere).as_py(),
        )
    return counted
