"""What keeps the lake safe between runs of one day (docs/lake-safety.md): a run whose
published table was replaced by a later run stops (`Superseded`), and the leftovers of
crashed runs are removed."""

from __future__ import annotations

import time
from typing import Any

import pyarrow.fs as pafs

from ragas_ops.config import Settings
from ragas_ops.contract.layout import Lake
from ragas_ops.storage import remove_leftovers
from ragas_ops.tables.format import day_tables


class Superseded(RuntimeError):
    """Another run published the day after this one: its aggregate and report own the day."""


def check_current(
    lake: Lake,
    day: str,
    published: dict[str, Any],
    run_id: str | None,
    settings: Settings,
) -> None:
    """Raise `Superseded` when the day's table is no longer the one `published` describes
    (and delete the run's staging folder, `run_id`'s: nothing will read it any more)."""
    tables = day_tables(lake, settings)
    current = tables.published_version(day)
    if current != published["publish_id"]:
        if run_id is not None:
            lake.staging(day, run_id).delete_tree()
        raise Superseded(
            f"{tables.scored_uri(day)} is now publish {current}, not this run's "
            f"{published['publish_id']}: a later run of {day} published it, and its own "
            "aggregate and report describe it"
        )


def remove_day_leftovers(lake: Lake, day: str, run_id: str, settings: Settings) -> list[str]:
    """Delete what crashed runs of the day left: staging files in the day's partition folders
    (written by earlier versions beside the table) and the staging folders of other runs not
    touched for `pipeline.stale_staging_hours`. Returns their URIs."""
    removed = [
        path
        for target in (lake.scored(day), lake.daily_metrics(day))
        for path in remove_leftovers(target)
    ]
    root, mine = lake.staging_day(day), lake.staging(day, run_id).path
    if not root.exists():
        return removed
    hours = settings.pipeline.stale_staging_hours
    if hours < 0:
        raise ValueError(f"pipeline.stale_staging_hours must be at least 0, got {hours!r}")
    cutoff = time.time() - hours * 3600
    for entry in root.filesystem.get_file_info(pafs.FileSelector(root.path)):
        if entry.type != pafs.FileType.Directory or entry.path == mine:
            continue
        newest = _newest_mtime(root.filesystem, entry.path)
        if newest is None or newest <= cutoff:
            root.filesystem.delete_dir(entry.path)
            removed.append(entry.path)
    return removed


def _newest_mtime(filesystem: pafs.FileSystem, folder: str) -> float | None:
    stamps = [
        entry.mtime.timestamp()
        for entry in filesystem.get_file_info(pafs.FileSelector(folder, recursive=True))
        if entry.type == pafs.FileType.File and entry.mtime is not None
    ]
    return max(stamps) if stamps else None
