"""The demo: a local lake with several days of sample logs, scored by the nightly DAG.

Everything runs on embedded defaults: a local folder as object storage, SQLite for Airflow's
metadata, and the local judge (no network, no API key) unless OPENAI_API_KEY is set. Airflow
really runs the DAG (`dag.test()`), one run per day, oldest first, so that the last day is
checked against the baseline of the days before it; the last day is a bad one on purpose.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from datetime import date, timedelta
from pathlib import Path

import pyarrow.parquet as pq

from ragas_ops.config import ENV_PREFIX, TableFormat, settings_from_environment
from ragas_ops.contract.layout import (
    MANIFEST_PREFIX,
    Lake,
    day_folder,
    every_day_folder,
    every_day_glob,
    run_folder_name,
)
from ragas_ops.samples import sample_interactions
from ragas_ops.tables.format import local_table_formats, missing_for
from ragas_ops.tables.iceberg import local_catalog_path
from ragas_ops_testing.local_airflow.checkout import DAG_ID, PROJECT

PROJECT_DAGS = PROJECT / "dags"


def demo_days(count: int, last: date | None = None) -> list[str]:
    """`count` days ending yesterday (or `last`), oldest first."""
    end = last or date.today() - timedelta(days=1)
    return [(end - timedelta(days=offset)).isoformat() for offset in range(count - 1, -1, -1)]


def demo_environment(folder: Path, key_set: bool) -> dict[str, str]:
    """The settings of the demo deployment, as the environment Airflow and the DAG read."""
    lake = folder / "lake"
    environment = {
        "AIRFLOW_HOME": str(folder / "airflow"),
        "AIRFLOW__CORE__DAGS_FOLDER": str(PROJECT_DAGS),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__LOGGING__LOGGING_LEVEL": "WARNING",
        "RAGAS_OPS_PIPELINE_RAW_URI": str(lake / "raw"),
        "RAGAS_OPS_PIPELINE_WAREHOUSE_URI": str(lake / "warehouse"),
        "RAGAS_OPS_PIPELINE_SEGMENTS": "app,model_version",
        "RAGAS_OPS_PIPELINE_CHUNK_ROWS": "100",
        "RAGAS_OPS_JUDGE_CACHE_PATH": str(folder / "cache" / "judge.sqlite"),
    }
    if not key_set:
        environment["RAGAS_OPS_JUDGE_KIND"] = "local"
    return environment


def write_sample_lake(raw: Path, days: list[str], rows: int) -> None:
    """One Parquet file of `rows` interactions per day; the last day answers worse."""
    for index, day in enumerate(days):
        folder = raw / day_folder(day)
        folder.mkdir(parents=True, exist_ok=True)
        bad_day = index == len(days) - 1
        table = sample_interactions(
            rows, seed=index, day=day, unfaithful_share=0.45 if bad_day else 0.10
        )
        pq.write_table(table, folder / "part-0.parquet")


def run_demo(folder: Path, days: int, rows: int) -> int:
    """Build the lake, run the DAG for every day, and say where everything is."""
    folder = folder.resolve()
    key_set = bool(os.environ.get("OPENAI_API_KEY"))
    os.environ.update(demo_environment(folder, key_set))
    say(
        "judge: OpenAI (OPENAI_API_KEY is set)"
        if key_set
        else "judge: the LOCAL judge (no OPENAI_API_KEY set): sentence embeddings and lexical "
        "evidence on this machine, no LLM, no network"
    )
    # The settings the DAG reads, from the same environment (a bad value fails here).
    settings = settings_from_environment()
    table_format = settings.warehouse.table_format
    missing = missing_for(table_format)
    if missing is not None:
        say(f"{TABLE_FORMAT_ENV}={table_format}: {missing}")
        return 2
    say(f"warehouse: {table_format} tables ({TABLE_FORMAT_ENV})")
    lake = Lake(settings.pipeline)
    warehouse = Path(lake.warehouse.path)
    moved = set_aside_other_format(warehouse, table_format)
    if moved is not None:
        say(
            f"warehouse: the {moved[0]} tables of an earlier demo moved to {moved[1]} "
            f"(one table format per warehouse: their query would read that run's rows)"
        )
    scored_days = demo_days(days)
    write_sample_lake(Path(lake.raw.path), scored_days, rows)
    say(f"sample logs: {len(scored_days)} days x {rows} rows in {lake.raw.path}")
    subprocess.run(
        [sys.executable, "-m", "airflow", "db", "migrate"], check=True, capture_output=True
    )
    from airflow.dag_processing.dagbag import DagBag

    dag = DagBag(str(PROJECT_DAGS)).dags[DAG_ID]
    failed = []
    for day in scored_days:
        run = dag.test(run_conf={"day": day})
        outcome = str(getattr(run.state, "value", run.state))
        say(f"  {DAG_ID} {day}: {outcome} · {day_verdict(lake, day, run.run_id)}")
        if outcome != "success":
            failed.append(day)
    for line in warehouse_lines(warehouse, table_format):
        say(line)
    say(f"latest report:  {lake.report(scored_days[-1], 'html').path}")
    if failed:
        say(f"runs that failed: {failed} (see the Airflow logs under {folder / 'airflow'})")
        return 1
    return 0


TABLE_FORMAT_ENV = f"{ENV_PREFIX}WAREHOUSE_TABLE_FORMAT"
"""The variable of `warehouse.table_format`, named in the demo's output."""


def set_aside_other_format(warehouse: Path, table_format: TableFormat) -> tuple[str, Path] | None:
    """Move a warehouse with tables in another format than `table_format` to
    `<warehouse>-<format>` (replacing an earlier one there), and say which format and where.

    Both formats share the run manifests and reports of `runs/` and `reports/`, and the
    other format's tables would stay beside the new ones, read by their own queries as if
    current: the demo keeps one format per warehouse."""
    other = sorted(local_table_formats(warehouse) - {table_format})
    if not other:
        return None
    aside = warehouse.with_name(f"{warehouse.name}-{'-'.join(other)}")
    if aside.exists():
        shutil.rmtree(aside)  # an earlier demo's set-aside warehouse: the sample is rebuilt
    warehouse.rename(aside)
    return "-".join(other), aside


def warehouse_lines(warehouse: Path, table_format: TableFormat) -> list[str]:
    """Where the demo's tables are, in the warehouse's table format."""
    if table_format == "iceberg":
        catalog = local_catalog_path(warehouse)
        return [
            f"iceberg tables: ragas_ops.scored, ragas_ops.daily_metrics, ragas_ops.runs "
            f"(catalog {catalog}, files under {warehouse / 'ragas_ops'})",
            "  read them:     IcebergTables(...).metadata_location(name) -> DuckDB "
            "iceberg_scan (docs/iceberg.md)",
            f"run manifests:  {every_day_folder(str(warehouse), 'runs')} (and the runs table)",
        ]
    return [
        f"scored tables:  {every_day_glob(str(warehouse), 'scored')}",
        f"daily metrics:  {every_day_glob(str(warehouse), 'daily_metrics')}",
        f"run manifests:  {every_day_folder(str(warehouse), 'runs')}",
    ]


def day_verdict(lake: Lake, day: str, run_id: str) -> str:
    """The verdict the run stored in its manifest, with its headline: a run's state says only
    that the pipeline worked, not whether the day's scores held."""
    # One manifest per publish of the run (the lake knows their names, old and new); the
    # newest has the verdict. The demo's lake is a local folder.
    prefix = f"{run_folder_name(run_id)}."
    manifests = sorted(
        (
            Path(location.path)
            for location in lake.manifest_files(day)
            if location.name.removeprefix(MANIFEST_PREFIX).startswith(prefix)
        ),
        key=lambda path: path.stat().st_mtime,
    )
    try:
        regression = json.loads(manifests[-1].read_text()).get("regression") or {}
    except (IndexError, OSError, ValueError):
        return "no verdict (the run wrote no manifest)"
    if not regression:
        return "no verdict (the run stopped before the regression check)"
    verdict = str(regression.get("verdict", "unknown")).replace("_", " ").upper()
    return f"verdict {verdict}: {regression.get('summary', '')}"


def say(line: str) -> None:
    print(line, flush=True)
