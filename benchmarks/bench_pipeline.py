"""Pipeline benchmarks: the nightly DAG end to end, planning a big day, parsing the DAG folder.

Prints, for docs/benchmarks.md:
1. a day of generated logs run through the real DAG (Airflow's `dag.test()`, SQLite metadata
   in a throwaway AIRFLOW_HOME, a local lake in a temp folder) against the project's test
   judge server in a process of its own (no latency, no limits, a fresh cache): wall time,
   time inside scoring, and where the rest goes, per task, from Airflow's task instances;
2. planning a day of cheap synthetic rows (never scored): `plan_day` time and peak memory, the
   number of chunks against `max_chunks`, then reading one mapped task's slice batch by batch,
   each in a fresh process, to show that memory follows the chunk, not the day;
3. parsing the DAG folder (a DagBag) in a fresh process, as Airflow's DAG processor does.

Usage: python benchmarks/bench_pipeline.py [--quick] [--rows N] [--chunk-rows N] [--plan-rows N]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from contextlib import suppress
from pathlib import Path
from typing import Any

from ragas_ops_testing.judge_process import server_stats, test_judge_process

PROJECT = Path(__file__).resolve().parents[1]
DAGS = PROJECT / "dags"
DAG_ID = "ragas_ops_nightly"
DAY = "2026-11-28"
EMPTY_DAY = "2026-11-27"
SCORING_TASKS = ("score_chunk", "score_backfill_chunk")
TASK_ORDER = (
    "plan",
    "chunks_for",
    "backfill_chunks_for",
    "score_chunk",
    "score_backfill_chunk",
    "publish",
    "aggregate",
    "report",
)


# -- helpers ----------------------------------------------------------------------------------


def child(kind: str, *arguments: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run this script's `--child KIND` in a fresh process; returns the JSON it prints last."""
    command = [sys.executable, __file__, "--child", kind, *arguments]
    finished = subprocess.run(
        command, capture_output=True, text=True, check=False, env=env, cwd=PROJECT
    )
    if finished.returncode != 0:
        raise RuntimeError(f"{kind} child failed:\n{finished.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(finished.stdout.strip().splitlines()[-1])
    return result


def _status_mb(field: str) -> float | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024  # kB
    except OSError:
        pass
    return None


def rss_mb() -> float:
    """This process's resident memory now (MB)."""
    now = _status_mb("VmRSS")
    return now if now is not None else peak_rss_mb()


def reset_peak_rss() -> None:
    """Start measuring the peak resident memory from now (Linux; elsewhere a no-op)."""
    with suppress(OSError):
        Path("/proc/self/clear_refs").write_text("5")


def peak_rss_mb() -> float:
    """Peak resident memory since start or `reset_peak_rss()` (MB). Not ru_maxrss: on Linux
    that survives exec, so a child started from a big parent would report the parent's."""
    peak = _status_mb("VmHWM")
    return peak if peak is not None else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def mb(size: float) -> str:
    return f"{size / 1e6:,.1f} MB"


# -- 1. a day through the DAG -------------------------------------------------------------------


def pipeline_environment(work: Path, base_url: str, chunk_rows: int) -> dict[str, str]:
    lake = work / "lake"
    return {
        "AIRFLOW_HOME": str(work / "airflow"),
        "AIRFLOW__CORE__DAGS_FOLDER": str(DAGS),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__LOGGING__LOGGING_LEVEL": "ERROR",
        "RAGAS_OPS_PIPELINE_RAW_URI": str(lake / "raw"),
        "RAGAS_OPS_PIPELINE_WAREHOUSE_URI": str(lake / "warehouse"),
        "RAGAS_OPS_PIPELINE_SEGMENTS": "app,model_version",
        "RAGAS_OPS_PIPELINE_CHUNK_ROWS": str(chunk_rows),
        "RAGAS_OPS_JUDGE_BASE_URL": base_url,
        "RAGAS_OPS_JUDGE_MODEL": "test-judge",
        "RAGAS_OPS_JUDGE_EMBEDDING_MODEL": "test-embedding",
        "RAGAS_OPS_JUDGE_RPM": "none",
        "RAGAS_OPS_JUDGE_TPM": "none",
        "RAGAS_OPS_JUDGE_CACHE_PATH": str(work / "cache" / "judge.sqlite"),
        "OPENAI_API_KEY": (
            "sk-" + "bench-not-a-real-key"
        ),  # never send a real key to the test double
    }


def write_logs(raw_day: Path, rows: int, files: int, day: str = DAY) -> None:
    """`rows` generated interactions of `day` in `files` Parquet files under `raw_day`."""
    import pyarrow.parquet as pq

    from ragas_ops.samples import sample_interactions

    raw_day.mkdir(parents=True, exist_ok=True)
    per_file = -(-rows // files)
    for index in range(files):
        count = min(per_file, rows - index * per_file)
        table = sample_interactions(count, seed=index, day=day)
        pq.write_table(table, raw_day / f"part-{index}.parquet")


def seconds(ti: Any) -> float:
    return float((ti.end_date - ti.start_date).total_seconds())


def breakdown(run: Any, wall: float, scoring_seconds: float) -> None:
    """Where a run's wall time went, from its task instances' start and end dates."""
    instances = [ti for ti in run.get_task_instances() if ti.start_date and ti.end_date]
    per_task: dict[str, list[float]] = defaultdict(list)
    for ti in instances:
        per_task[ti.task_id].append(seconds(ti))
    in_tasks = sum(sum(values) for values in per_task.values())
    span = (
        max(ti.end_date for ti in instances) - min(ti.start_date for ti in instances)
    ).total_seconds()
    print(f"     {'task instances':<22}{'count':>6}{'seconds':>10}{'min-max':>14}{'share':>8}")
    for task_id in sorted(per_task, key=lambda t: TASK_ORDER.index(t) if t in TASK_ORDER else 99):
        values = per_task[task_id]
        spread = f"{min(values):.2f}-{max(values):.2f}" if len(values) > 1 else ""
        print(
            f"     {task_id:<22}{len(values):>6}{sum(values):>10.2f}{spread:>14}"
            f"{sum(values) / wall:>8.1%}"
        )
    chunks = sorted((ti.map_index, seconds(ti)) for ti in instances if ti.task_id in SCORING_TASKS)
    if len(chunks) > 1:
        print(f"     score tasks in map order (s): {' '.join(f'{s:.1f}' for _, s in chunks)}")
    scoring_tis = sum(sum(per_task.get(task, [])) for task in SCORING_TASKS)
    if scoring_tis:
        around = scoring_tis - scoring_seconds
        print(f"     {'  of which around scoring':<28}{around:>10.2f}{'':>14}{around / wall:>8.1%}")
    print(
        f"     {'between tasks (dag.test loop)':<28}{span - in_tasks:>10.2f}{'':>14}"
        f"{(span - in_tasks) / wall:>8.1%}"
    )
    print(
        f"     {'before first, after last task':<28}{wall - span:>10.2f}{'':>14}"
        f"{(wall - span) / wall:>8.1%}"
    )


def manifest_of(work: Path, day: str) -> dict[str, Any]:
    manifests = sorted((work / "lake" / "warehouse" / "runs" / f"dt={day}").glob("*.json"))
    return json.loads(manifests[-1].read_text()) if manifests else {}


def dag_day(work: Path, rows: int, chunk_rows: int, files: int) -> None:
    print(
        f"\n1. A day of {rows:,} rows through the DAG (dag.test(), SQLite, local lake, "
        f"{files} input files, chunk_rows {chunk_rows:,}; test judge in its own process, "
        "no latency, no limits, fresh cache)"
    )
    with test_judge_process() as base_url:
        os.environ.pop("RAGAS_OPS_CONFIG", None)
        os.environ.update(pipeline_environment(work, base_url, chunk_rows))
        write_logs(work / "lake" / "raw" / f"dt={DAY}", rows, files)
        started = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "airflow", "db", "migrate"], check=True, capture_output=True
        )
        migrate = time.perf_counter() - started

        from airflow.dag_processing.dagbag import DagBag

        started = time.perf_counter()
        bag = DagBag(str(DAGS))
        parse = time.perf_counter() - started
        if bag.import_errors:
            raise RuntimeError(f"DAG import errors: {bag.import_errors}")
        dag = bag.dags[DAG_ID]

        started = time.perf_counter()
        run = dag.test(run_conf={"day": DAY})
        wall = time.perf_counter() - started
        requests = server_stats(base_url)["requests"]

        # The same process again, for a day without logs: Airflow is warm, nothing is scored.
        started = time.perf_counter()
        empty_run = dag.test(run_conf={"day": EMPTY_DAY})
        empty_wall = time.perf_counter() - started

    manifest = manifest_of(work, DAY)
    scoring_seconds = float(manifest.get("scoring", {}).get("scoring_seconds", 0.0))
    outside = wall - scoring_seconds
    print(f"   setup (not counted): airflow db migrate {migrate:.1f} s, DagBag parse {parse:.2f} s")
    print(
        f"   run state: {state(run)}; rows published: {manifest.get('published', {}).get('rows')}; "
        f"chunks: {manifest.get('plan', {}).get('chunks')}; judge requests: {requests:,}"
    )
    print(f"   wall time of dag.test():              {wall:7.1f} s  ({rows / wall:.0f} rows/s)")
    print(
        f"   inside scoring (chunks' own seconds): {scoring_seconds:7.1f} s  "
        f"({scoring_seconds / wall:.1%} of wall; {rows / max(scoring_seconds, 1e-9):.0f} rows/s)"
    )
    print(
        f"   outside scoring:                      {outside:7.1f} s  ({outside / wall:.1%} of "
        f"wall; target < 10%: {'met' if outside / wall < 0.10 else 'MISSED'})"
    )
    breakdown(run, wall, scoring_seconds)
    print(
        f"   a second run in the same process, for a day with no logs ({state(empty_run)}): "
        f"{empty_wall:.1f} s, the fixed cost of a run once Airflow is warm"
    )
    breakdown(empty_run, empty_wall, 0.0)


def state(run: Any) -> str:
    return str(getattr(run.state, "value", run.state))


# -- 2. planning a big day, and reading one chunk -----------------------------------------------


def write_synthetic_day(raw_day: Path, rows: int, files: int, row_group: int | None) -> int:
    """`files` Parquet files of cheap synthetic rows in the input contract; returns bytes."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    raw_day.mkdir(parents=True, exist_ok=True)
    per_file = rows // files
    words = ("retrieval", "augmented", "generation", "answers", "questions", "from", "passages")
    passage = " ".join(words) + ". "
    size = 0
    for index in range(files):
        offset = index * per_file
        table = pa.table(
            {
                "id": [f"row-{offset + row:07d}" for row in range(per_file)],
                "question": [
                    f"What does {words[row % len(words)]} {row} mean?" for row in range(per_file)
                ],
                "contexts": pa.array(
                    [
                        [passage * 2 + str(row), passage + words[row % len(words)]]
                        for row in range(per_file)
                    ],
                    pa.list_(pa.string()),
                ),
                "answer": [f"It means {passage}{row}" for row in range(per_file)],
            }
        )
        path = raw_day / f"part-{index:03d}.parquet"
        pq.write_table(table, path, row_group_size=row_group)
        size += path.stat().st_size
    return size


def planning(work: Path, rows: int, files: int, chunk_rows: int) -> None:
    per_file = rows // files
    print(
        f"\n2. Planning a day of {rows:,} synthetic rows ({files} Parquet files of {per_file:,} "
        "rows, never scored); each measure in a fresh process"
    )
    # Files as pyarrow writes them by default (one row group each), then with row groups of
    # a chunk's size: a reader can only skip whole row groups.
    for label, row_group in (
        ("one row group per file", None),
        (f"row groups of {chunk_rows:,}", chunk_rows),
    ):
        lake = work / f"plan-lake-{row_group or 'default'}"
        size = write_synthetic_day(lake / "raw" / f"dt={DAY}", rows, files, row_group)
        environment = {
            **os.environ,
            "RAGAS_OPS_PIPELINE_RAW_URI": str(lake / "raw"),
            "RAGAS_OPS_PIPELINE_WAREHOUSE_URI": str(lake / "warehouse"),
            "RAGAS_OPS_PIPELINE_CHUNK_ROWS": str(chunk_rows),
            "RAGAS_OPS_PIPELINE_SEGMENTS": "",  # the synthetic rows have no segment columns
        }
        environment.pop("RAGAS_OPS_CONFIG", None)
        print(f"   input with {label}: {mb(size)} on disk")
        plan = child("plan", env=environment)
        print(
            f"     plan_day: {plan['seconds']:.3f} s; {plan['chunks']} chunks of "
            f"{plan['chunk_rows']:,} rows (max_chunks {plan['max_chunks']}); chunk list in "
            f"XCom {plan['xcom_bytes'] / 1e3:,.0f} kB; peak memory: tracemalloc "
            f"{mb(plan['tracemalloc_peak'])}, RSS +{plan['rss_peak_mb'] - plan['rss_before_mb']:.1f} MB"
        )
        for which in ("first", "last"):
            read = child("read", which, env=environment)
            print(
                f"     reading the {which} chunk's slice ({read['rows']:,} rows from row "
                f"{read['slice_start']:,} of a file, {read['batches']} batches): "
                f"{read['seconds']:.3f} s; peak Arrow memory {mb(read['arrow_peak'])}, "
                f"RSS +{read['rss_peak_mb'] - read['rss_before_mb']:.1f} MB"
            )
        if row_group is None:
            whole = child("read", "file", env=environment)
            print(
                f"     for scale: one whole file ({whole['rows']:,} rows) read at once: peak "
                f"Arrow memory {mb(whole['arrow_peak'])}, RSS "
                f"+{whole['rss_peak_mb'] - whole['rss_before_mb']:.1f} MB; the whole day "
                f"in memory would be about {mb(whole['table_bytes'] * files)}"
            )


def child_plan() -> dict[str, Any]:
    import tracemalloc

    from ragas_ops.config import settings_from_environment
    from ragas_ops.contract.layout import Lake
    from ragas_ops.pipeline.plan import chunk_to_dict, plan_day

    settings = settings_from_environment()
    lake = Lake(settings.pipeline)
    before = rss_mb()
    reset_peak_rss()
    tracemalloc.start()
    started = time.perf_counter()
    day_plan = plan_day(lake, DAY, settings)
    elapsed = time.perf_counter() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rss_peak = peak_rss_mb()
    xcom = {
        "day": DAY,
        "summary": day_plan.summary(),
        "chunks": [{**chunk_to_dict(chunk), "day": DAY} for chunk in day_plan.chunks],
    }
    return {
        "seconds": elapsed,
        "rows": day_plan.rows,
        "chunks": len(day_plan.chunks),
        "chunk_rows": day_plan.chunk_rows,
        "max_chunks": settings.pipeline.max_chunks,
        "tracemalloc_peak": peak,
        "rss_before_mb": before,
        "rss_peak_mb": rss_peak,
        "xcom_bytes": len(json.dumps(xcom)),
    }


def child_read(which: str) -> dict[str, Any]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from ragas_ops.config import settings_from_environment
    from ragas_ops.contract.layout import Lake
    from ragas_ops.pipeline.chunks import read_slices
    from ragas_ops.pipeline.plan import plan_day

    settings = settings_from_environment()
    lake = Lake(settings.pipeline)
    day_plan = plan_day(lake, DAY, settings)
    # Warm up: page the Parquet reader's code in by reading a few rows of the last file.
    warm = pq.ParquetFile(day_plan.files[-1].path)
    next(warm.iter_batches(batch_size=8, row_groups=[0]))
    pool = pa.default_memory_pool()
    pool.release_unused()
    base = pool.max_memory()
    before = rss_mb()
    reset_peak_rss()
    if which == "file":
        table = pq.read_table(day_plan.files[0].path)
        return {
            "rows": table.num_rows,
            "table_bytes": table.nbytes,
            "arrow_peak": max(pool.max_memory() - base, 0),
            "rss_before_mb": before,
            "rss_peak_mb": peak_rss_mb(),
        }
    chunk = day_plan.chunks[0] if which == "first" else day_plan.chunks[-1]
    started = time.perf_counter()
    rows = batches = 0
    for table in read_slices(
        lake, chunk, settings.columns
    ):  # consumed batch by batch, as score_chunk does
        rows += table.num_rows
        batches += 1
        del table
    elapsed = time.perf_counter() - started
    return {
        "rows": rows,
        "batches": batches,
        "slice_start": chunk.slices[0].start,
        "seconds": elapsed,
        "arrow_peak": max(pool.max_memory() - base, 0),
        "rss_before_mb": before,
        "rss_peak_mb": peak_rss_mb(),
    }


# -- 3. parsing the DAG folder ------------------------------------------------------------------


def dag_parsing(work: Path) -> None:
    environment = {
        **os.environ,
        "AIRFLOW_HOME": str(work / "airflow"),
        "AIRFLOW__CORE__DAGS_FOLDER": str(DAGS),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
    }
    started = time.perf_counter()
    parsed = child("dagbag", env=environment)
    process = time.perf_counter() - started
    print(
        f"\n3. Parsing the DAG folder in a fresh process: DagBag {parsed['seconds']:.2f} s "
        f"(airflow import {parsed['import_seconds']:.2f} s, whole process {process:.2f} s); "
        f"DAGs {parsed['dags']}, import errors {parsed['errors']}; heavy modules imported: "
        f"{parsed['heavy'] or 'none'}"
    )


def child_dagbag() -> dict[str, Any]:
    started = time.perf_counter()
    from airflow.dag_processing.dagbag import DagBag

    imported = time.perf_counter() - started
    before = set(sys.modules)
    started = time.perf_counter()
    bag = DagBag(str(DAGS))
    elapsed = time.perf_counter() - started
    loaded = {name.split(".")[0] for name in set(sys.modules) - before}
    heavy = sorted(loaded & {"numpy", "pyarrow", "pandas", "openai", "torch", "pydantic"})
    return {
        "seconds": elapsed,
        "import_seconds": imported,
        "dags": sorted(bag.dags),
        "errors": len(bag.import_errors),
        "heavy": heavy,
    }


# -- main ---------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="smaller runs, for a smoke test")
    parser.add_argument("--rows", type=int, help="rows of the DAG run (20,000; quick 2,000)")
    parser.add_argument("--chunk-rows", type=int, help="rows per mapped task (2,000; quick 500)")
    parser.add_argument("--plan-rows", type=int, help="rows of the planned day (1M; quick 100k)")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.child:
        kind, *rest = options.child
        if kind == "plan":
            result = child_plan()
        elif kind == "read":
            result = child_read(rest[0])
        else:
            result = child_dagbag()
        print(json.dumps(result))
        return
    rows = options.rows or (2_000 if options.quick else 20_000)
    chunk_rows = options.chunk_rows or (500 if options.quick else 2_000)
    plan_rows = options.plan_rows or (100_000 if options.quick else 1_000_000)
    started, load = time.perf_counter(), os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="ragas-ops-bench-") as folder:
        work = Path(folder)
        dag_day(work, rows, chunk_rows, files=4)
        planning(work, plan_rows, files=20, chunk_rows=2_000)
        dag_parsing(work)
    print(
        f"\n(benchmark ran in {time.perf_counter() - started:.0f} s; 1-minute load average "
        f"{load:.1f} at the start, {os.getloadavg()[0]:.1f} at the end, on {os.cpu_count()} CPUs)"
    )


if __name__ == "__main__":
    main()
