"""Whether the day's input is broken rather than quiet: the alarm the report's headline, the
quality page and the run's state carry (the manifest's `input_alarm`).

Three inputs look like a quiet day and are not:
- `no_day_folders`: the raw root holds no `dt=YYYY-MM-DD` folder at all (a mistyped
  `pipeline.raw_uri`, a writer that never wrote): a failure, every night, until it does;
- `all_files_rejected`: the day had files and every one was rejected (a broken export, a
  column mapping that fits none): a failure under `pipeline.on_bad_input = fail` (the
  default), a warning under `warn`;
- `quiet_days`: `pipeline.max_quiet_days` nights or more in a row without traffic since the
  raw root's last day folder (a writer that stopped): a failure.
A day without traffic after days with traffic, under that count, is a normal quiet day.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ragas_ops.config import Settings
from ragas_ops.contract.layout import NO_DAY_FOLDER, outside_day_folder

NO_DAY_FOLDERS, ALL_FILES_REJECTED = "no_day_folders", "all_files_rejected"
QUIET_DAYS = "quiet_days"
FAILURE, WARNING = "failure", "warning"
TITLES = {
    NO_DAY_FOLDERS: "NO LOGS AT ALL",
    ALL_FILES_REJECTED: "EVERY INPUT FILE REJECTED",
    QUIET_DAYS: "NO TRAFFIC FOR DAYS",
}
"""The alarm's label in the report's headline and on the quality page."""


def input_alarm(plan: Mapping[str, Any], settings: Settings) -> dict[str, str] | None:
    """The day's input alarm from its plan's summary (`kind`, `severity`, `title`,
    `message`), or None when the input is sound or merely quiet."""
    day, folder = plan.get("day", ""), str(plan.get("folder", ""))
    raw_root = outside_day_folder(folder)
    lake = plan.get("lake_days") or {}
    if plan.get("no_traffic_reason") == NO_DAY_FOLDER and lake.get("count") == 0:
        return _alarm(
            NO_DAY_FOLDERS,
            FAILURE,
            f"the raw location {raw_root} holds no day folder (dt=YYYY-MM-DD) at all: check "
            "pipeline.raw_uri (RAGAS_OPS_PIPELINE_RAW_URI) and that your logs are written "
            "there; nothing was scored",
        )
    rejected = plan.get("rejected_files") or []
    if rejected and not plan.get("files"):
        first = rejected[0]
        severity = FAILURE if settings.pipeline.on_bad_input == "fail" else WARNING
        return _alarm(
            ALL_FILES_REJECTED,
            severity,
            f"every input file of {day} was rejected ({len(rejected)}), so no row was "
            f"scored; e.g. {first['path']}: {first['reason']}",
        )
    quiet, limit = int(plan.get("quiet_days") or 0), settings.pipeline.max_quiet_days
    if limit and quiet >= limit:
        return _alarm(
            QUIET_DAYS,
            FAILURE,
            f"no traffic for {quiet} days in a row up to {day} (no row logged under {raw_root} "
            f"since its last day folder; pipeline.max_quiet_days is {limit}): is the log "
            "writer still running?",
        )
    return None


def _alarm(kind: str, severity: str, message: str) -> dict[str, str]:
    return {"kind": kind, "severity": severity, "title": TITLES[kind], "message": message}
