"""The run manifest (`runs/dt=D/_<run>.<publish>.json`): what a run read, scored, paid and
wrote, and the day's spend over every run's manifest. Each is also its run's row of the `runs`
table (`tables.format.runs_row`): a Parquet file beside it, or a row of the Iceberg table."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa

from ragas_ops.config import Settings
from ragas_ops.contract.layout import MANIFEST_PREFIX, Lake, run_folder_name
from ragas_ops.judge.base import Usage
from ragas_ops.scoring.scorer import package_version
from ragas_ops.tables.format import ParquetDayTables, day_tables, runs_row


def write_manifest(
    lake: Lake,
    day: str,
    run_id: str,
    manifest: dict[str, Any],
    settings: Settings | None = None,
) -> str:
    """Write the manifest of a run's publish (rewritten only by the same run's report: another
    run, or another try of the publish, gets a file of its own) and its row of the `runs`
    table, in the table format `settings` name (Parquet without them); returns its URI."""
    target = lake.manifest(day, run_id, _publish_id_of(manifest))
    text = json.dumps(manifest, indent=2, sort_keys=True, default=str)
    target.write_text(text, staging=lake.scratch(day, run_id, target.name))
    tables = ParquetDayTables(lake) if settings is None else day_tables(lake, settings)
    tables.record_run(day, manifest)
    return target.uri


def _publish_id_of(manifest: dict[str, Any]) -> str:
    return str((manifest.get("published") or {}).get("publish_id") or "unpublished")


def read_manifest(
    lake: Lake, day: str, run_id: str, publish_id: str | None = None
) -> dict[str, Any]:
    """The manifest of the run's publish `publish_id`, else of the run's latest publish."""
    if publish_id is None:
        prefix = f"{run_folder_name(run_id)}."
        found = [
            location
            for location in lake.manifest_files(day)
            if location.name.removeprefix(MANIFEST_PREFIX).startswith(prefix)
        ]
        if not found:
            raise FileNotFoundError(f"no manifest of run {run_id} under {lake.manifests(day).uri}")
        location = max(found, key=lambda found: found.name.removeprefix(MANIFEST_PREFIX))
    else:
        location = lake.manifest(day, run_id, publish_id)
        if not location.exists():
            location = lake.legacy_manifest(day, run_id, publish_id)
    loaded: dict[str, Any] = json.loads(location.read_text())
    return loaded


def migrate_manifests(lake: Lake) -> list[str]:
    """Bring a Parquet warehouse written before the `runs` table had Parquet rows up to date:
    each legacy manifest (`runs/dt=D/<run>.<publish>.json`, which pandas, pyarrow and polars
    fail on as not Parquet) gets its row (`<run>.<publish>.parquet`) and is renamed
    `_<run>.<publish>.json`. Returns the manifests moved; running it again moves none."""
    moved = []
    tables = ParquetDayTables(lake)
    for day in lake.table_days("runs"):
        for location in lake.manifest_files(day):
            if location.name.startswith(MANIFEST_PREFIX):
                continue
            manifest = json.loads(location.read_text())
            row = runs_row(manifest)
            if row["finished_at"] is not None:  # the report's rewrite was the file's last
                modified = location.filesystem.get_file_info(location.path).mtime
                row["finished_at"] = modified.astimezone(UTC).replace(microsecond=0)
            tables.write_run_row(day, row)
            target = location.parent().child(f"{MANIFEST_PREFIX}{location.name}")
            location.filesystem.move(location.path, target.path)
            moved.append(target.uri)
    return moved


def retype_run_rows(lake: Lake) -> list[str]:
    """Rewrite the Parquet `runs` rows written when `published_at` and `finished_at` were text
    with those times as timestamps (UTC), every other value kept: a reader of the folder then
    meets one type. Returns the rows rewritten; running it again rewrites none."""
    import pyarrow.fs as pafs
    import pyarrow.parquet as pq

    tables = ParquetDayTables(lake)
    rewritten = []
    for day in lake.table_days("runs"):
        folder = lake.manifests(day)
        selector = pafs.FileSelector(folder.path, allow_not_found=True)
        names = sorted(
            info.base_name
            for info in folder.filesystem.get_file_info(selector)
            if info.is_file
            and info.base_name.endswith(".parquet")
            and not info.base_name.startswith((".", "_"))
        )
        for name in names:
            location = folder.child(name)
            rows = pq.read_table(location.path, filesystem=location.filesystem)
            if rows.schema.field("published_at").type != pa.string():
                continue
            for row in rows.to_pylist():
                tables.write_run_row(day, row)  # runs_table types the times
            rewritten.append(location.uri)
    return rewritten


def run_totals(chunk_results: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Rows by status per metric and the judge's spend, summed over a run's chunks."""
    statuses: dict[str, dict[str, int]] = {}
    usage = Usage()
    for result in chunk_results:
        for metric, counts in result["statuses"].items():
            into = statuses.setdefault(metric, {})
            for status, count in counts.items():
                into[status] = into.get(status, 0) + count
        usage.add(Usage(**result["usage"]))
    return {
        "rows_out": sum(result["rows"] for result in chunk_results),
        "statuses": statuses,
        "usage": dataclasses.asdict(usage),
        "judges": sorted({result["judge"] for result in chunk_results}),
        "modes": sorted({result.get("mode", "sync") for result in chunk_results}),
        "batches": [batch for result in chunk_results for batch in result.get("batches", [])],
        "scoring_seconds": round(sum(result["seconds"] for result in chunk_results), 3),
        "provider_notes": sorted(
            {note for result in chunk_results for note in result.get("provider_notes", ())}
        ),
        "spend_by_attempt": {
            str(result.get("attempt", f"chunk-{result['index']}")): result["usage"]["cost_usd"]
            for result in chunk_results
        },
    }


SPEND_COLUMNS = ("run_spend_usd", "other_runs_spend_usd", "day_spend_usd", "day_runs")
"""What the daily metrics say the day's judge calls cost, from the runs' manifests (see
docs/lake-safety.md): the same on every row of a day."""


def day_spend(lake: Lake, day: str, publish_id: str | None) -> dict[str, Any]:
    """What the day's runs paid, from their manifests: the publishing run's (the manifest of
    `publish_id`), every run's together (each chunk attempt counted once, however many
    manifests list it), and the other runs' (the difference). A cost is None when a price was
    unknown, never a partial sum."""
    spent: dict[str, float | None] = {}
    runs: set[str] = set()
    this_run: float | None = 0.0
    this_attempts: set[str] = set()
    for location in lake.manifest_files(day):
        manifest = json.loads(location.read_text())
        runs.add(str(manifest.get("run_id")))
        scoring = manifest.get("scoring") or {}
        by_attempt = scoring.get("spend_by_attempt") or {
            location.name.removeprefix(MANIFEST_PREFIX): (scoring.get("usage") or {}).get(
                "cost_usd", 0.0
            )
        }
        spent.update(by_attempt)
        if (manifest.get("published") or {}).get("publish_id") == publish_id:
            this_run = (scoring.get("usage") or {}).get("cost_usd", 0.0)
            this_attempts = set(by_attempt)
    values = list(spent.values())
    total = None if None in values else float(sum(v for v in values if v is not None))
    # The other runs' own attempts: known when each of theirs is, whatever this run's is.
    other_values = [value for attempt, value in spent.items() if attempt not in this_attempts]
    others = None if None in other_values else float(sum(v for v in other_values if v is not None))
    return {
        "run_spend_usd": this_run,
        "other_runs_spend_usd": others,
        "day_spend_usd": total,
        "day_runs": len(runs),
    }


def with_spend(table: pa.Table, spend: dict[str, Any]) -> pa.Table:
    """The daily metrics with the day's spend columns (`SPEND_COLUMNS`)."""
    for name in SPEND_COLUMNS:
        kind = pa.int64() if name == "day_runs" else pa.float64()
        table = table.append_column(name, pa.array([spend[name]] * table.num_rows, kind))
    return table


def manifest_base(day: str, run_id: str, settings: Settings) -> dict[str, Any]:
    from ragas_ops.judge.factory import judge_identity  # the SDK: not at DAG parse time

    identity = judge_identity(settings.judge)
    return {
        "day": day,
        "run_id": run_id,
        "ragas_ops_version": package_version(),
        "metrics": list(settings.metrics.names),
        "judge_kind": identity.kind,
        "judge_model": identity.chat_model,
        "embedding_model": identity.embedding_model,
        "created_at": now_utc(),
    }


def run_manifest(
    day: str,
    run_id: str,
    settings: Settings,
    *,
    try_number: int | None,
    plan_summary: dict[str, Any],
    chunk_results: Sequence[dict[str, Any]],
    published: dict[str, Any],
) -> dict[str, Any]:
    """The manifest of a run's publish: what ran (`manifest_base`), the task's try, the
    plan, the scoring summed over the chunks (`run_totals`, chunks in index order whatever
    order they came in), what was published, and whether the day simply had no traffic
    (no rows and no rejected file), and why (no folder for the day, or an empty one)."""
    ordered = sorted(chunk_results, key=lambda result: result["index"])
    return {
        **manifest_base(day, run_id, settings),
        "try_number": try_number,
        "plan": plan_summary,
        "scoring": run_totals(ordered),
        "published": published,
        "no_traffic": plan_summary["rows"] == 0
        and not plan_summary["rejected_files"]
        and not plan_summary.get("ignored_files"),
        # no_day_folder or empty_day_folder (pipeline.plan), null on a day with traffic
        "no_traffic_reason": plan_summary.get("no_traffic_reason"),
    }


def replaced_publish(lake: Lake, day: str, manifest: dict[str, Any]) -> dict[str, Any] | None:
    """What this run's publish replaced, from the manifest of the day's previous publish (in
    every table format: the Parquet layout keeps no earlier table, but every manifest stays):
    its run and rows, the input files added, removed or changed (by size), and the rows each
    metric scored `ok` before and after. None on the day's first publish."""
    current = manifest.get("published") or {}
    if not current.get("published_at"):
        return None
    previous: dict[str, Any] | None = None
    for location in lake.manifest_files(day):
        other = json.loads(location.read_text())
        when = (other.get("published") or {}).get("published_at")
        if not when or when >= current["published_at"]:
            continue  # unpublished, this publish, or a later one
        if previous is None or when > previous["published"]["published_at"]:
            previous = other
    if previous is None:
        return None
    before = {file["path"]: file.get("bytes") for file in previous["plan"]["files"]}
    after = {file["path"]: file.get("bytes") for file in manifest["plan"]["files"]}

    def scored_ok(of: dict[str, Any]) -> dict[str, int]:
        statuses = (of.get("scoring") or {}).get("statuses") or {}
        return {metric: int(counts.get("ok", 0)) for metric, counts in statuses.items()}

    return {
        "run_id": previous.get("run_id"),
        "publish_id": previous["published"].get("publish_id"),
        "published_at": previous["published"]["published_at"],
        "rows_before": previous["published"].get("rows"),
        "rows_after": current.get("rows"),
        "files_added": sorted(set(after) - set(before)),
        "files_removed": sorted(set(before) - set(after)),
        "files_changed": sorted(
            path for path in after if path in before and before[path] != after[path]
        ),
        "ok_before": scored_ok(previous),
        "ok_after": scored_ok(manifest),
    }


def now_utc() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
