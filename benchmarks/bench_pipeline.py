"""Pipeline benchmarks: the nightly DAG end to end, planning a big day, parsing the DAG folder.

Prints, for the README:
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
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

PROJECT = Path(__file__).resolve().parents[1]
DAGS = PROJECT / "dags"
DAG_ID = "ragas_ops_nightly"
DAY = "2026-11-28"
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


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def test_judge(*options: str) -> Iterator[str]:
    """`ragas-ops test-judge` in a process of its own; yields its base URL."""
    port = free_port()
    command = [sys.executable, "-m", "ragas_ops.cli", "test-judge", "--port", str(port), *options]
    process = subprocess.Popen(command, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(f"{base}/stats", timeout=1).read()
                break
            except OSError:
                time.sleep(0.1)
        yield f"{base}/v1"
    finally:
        process.terminate()
        process.wait(timeout=10)


def server_stats(base_url: str) -> dict[str, Any]:
    with urllib.request.urlopen(base_url.removesuffix("/v1") + "/stats", timeout=5) as reply:
        stats: dict[str, Any] = json.load(reply)
    return stats


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


def max_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: kilobytes


def mb(size: float) -> str:
    return f"{size / 1e6:,.1f} MB"


# -- 1. a day through the DAG -------------------------------------------------------------------


def pipeline_environment(work: Path, base_url: str, chunk_rows: int) -> dict[str, str]:
    lake = work / "lake"
    return {
        "AIRFLOW_HOME": str(work / "airflow"),
        "AIRFLOW__CORE__DAGS_FOLDER": str(DAGS),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__LOGGING__LOGGING_LEVEL": "WARNING",
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
        "OPENAI_API_KEY": "sk-bench-not-a-real-key",  # never send a real key to the test double
    }


def write_logs(raw_day: Path, rows: int, files: int) -> None:
    import pyarrow.parquet as pq

    from ragas_ops.samples import sample_interactions

    raw_day.mkdir(parents=True, exist_ok=True)
    per_file = -(-rows // files)
    for index in range(files):
        count = min(per_file, rows - index * per_file)
        table = sample_interactions(count, seed=index, day=DAY)
        pq.write_table(table, raw_day / f"part-{index}.parquet")


def seconds(ti: Any) -> float:
    return float((ti.end_date - ti.start_date).total_seconds())


def dag_day(work: Path, rows: int, chunk_rows: int, files: int) -> None:
    print(
        f"\n1. A day of {rows:,} rows through the DAG (dag.test(), SQLite, local lake, "
        f"{files} input files, chunk_rows {chunk_rows:,}; test judge in its own process, "
        "no latency, no limits, fresh cache)"
    )
    with test_judge() as base_url:
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
    outcome = str(getattr(run.state, "value", run.state))
    instances = [ti for ti in run.get_task_instances() if ti.start_date and ti.end_date]
    manifests = list((work / "lake" / "warehouse" / "runs" / f"dt={DAY}").glob("*.json"))
    manifest = json.loads(manifests[0].read_text()) if manifests else {}
    scoring = manifest.get("scoring", {})
    scoring_seconds = float(scoring.get("scoring_seconds", 0.0))

    print(
        f"   setup (not counted): airflow db migrate {migrate:.1f} s, DagBag parse {parse:.2f} s"
    )
    print(
        f"   run state: {outcome}; rows published: {manifest.get('published', {}).get('rows')}; "
        f"chunks: {manifest.get('plan', {}).get('chunks')}; judge requests: {requests:,}"
    )
    print(f"   wall time of dag.test():            {wall:8.1f} s  ({rows / wall:.0f} rows/s)")
    print(
        f"   inside scoring (chunks' own seconds): {scoring_seconds:8.1f} s  "
        f"({scoring_seconds / wall:.1%} of wall; {rows / max(scoring_seconds, 1e-9):.0f} rows/s)"
    )
    outside = wall - scoring_seconds
    verdict = "meets" if outside / wall < 0.10 else "MISSES"
    print(
        f"   outside scoring:                    {outside:8.1f} s  ({outside / wall:.1%} of wall; "
        f"target < 10%: {verdict})"
    )

    per_task: dict[str, list[float]] = defaultdict(list)
    for ti in instances:
        per_task[ti.task_id].append(seconds(ti))
    first_start = min(ti.start_date for ti in instances)
    last_end = max(ti.end_date for ti in instances)
    in_tasks = sum(sum(values) for values in per_task.values())
    span = (last_end - first_start).total_seconds()
    print("   where the wall time goes (Airflow task instances, start to end):")
    print(f"     {'task':<22}{'count':>6}{'seconds':>10}{'mean':>9}{'share':>8}")
    for task_id in sorted(per_task, key=lambda t: TASK_ORDER.index(t) if t in TASK_ORDER else 99):
        values = per_task[task_id]
        total = sum(values)
        print(
            f"     {task_id:<22}{len(values):>6}{total:>10.2f}{total / len(values):>9.2f}"
            f"{total / wall:>8.1%}"
        )
    scoring_tis = sum(sum(per_task.get(task, [])) for task in SCORING_TASKS)
    print(
        f"     {'inside score tasks, around scoring':<34}{scoring_tis - scoring_seconds:>10.2f}"
        f"{'':>9}{(scoring_tis - scoring_seconds) / wall:>8.1%}"
    )
    print(
        f"     {'between tasks (dag.test loop)':<34}{span - in_tasks:>10.2f}"
        f"{'':>9}{(span - in_tasks) / wall:>8.1%}"
    )
    print(
        f"     {'before first / after last task':<34}{wall - span:>10.2f}"
        f"{'':>9}{(wall - span) / wall:>8.1%}"
    )


# -- 2. planning a big day, and reading one chunk -----------------------------------------------


def write_synthetic_day(raw_day: Path, rows: int, files: int) -> tuple[int, int]:
    """`files` Parquet files of cheap synthetic rows in the input contract; (bytes, row groups)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    raw_day.mkdir(parents=True, exist_ok=True)
    per_file = rows // files
    words = "retrieval augmented generation answers questions from retrieved passages".split()
    size = row_groups = 0
    for index in range(files):
        offset = index * per_file
        ids = pa.array([f"row-{offset + row:07d}" for row in range(per_file)])
        question = pa.array(
            [f"What does {words[row % len(words)]} {row} mean?" for row in range(per_file)]
        )
        passage = " ".join(words) + ". "
        contexts = pa.array(
            [[passage * 2 + str(row), passage + words[row % len(words)]] for row in range(per_file)],
            pa.list_(pa.string()),
        )
        answer = pa.array([f"It means {passage}{row}" for row in range(per_file)])
        table = pa.table({"id": ids, "question": question, "contexts": contexts, "answer": answer})
        path = raw_day / f"part-{index:03d}.parquet"
        pq.write_table(table, path)
        size += path.stat().st_size
        row_groups += pq.ParquetFile(path).metadata.num_row_groups
    return size, row_groups


def planning(work: Path, rows: int, files: int) -> None:
    print(
        f"\n2. Planning a day of {rows:,} synthetic rows ({files} Parquet files of "
        f"{rows // files:,} rows, never scored)"
    )
    lake = work / "plan-lake"
    size, row_groups = write_synthetic_day(lake / "raw" / f"dt={DAY}", rows, files)
    print(f"   input: {mb(size)} on disk, {row_groups} row groups")
    environment = {
        **os.environ,
        "RAGAS_OPS_PIPELINE_RAW_URI": str(lake / "raw"),
        "RAGAS_OPS_PIPELINE_WAREHOUSE_URI": str(lake / "warehouse"),
    }
    environment.pop("RAGAS_OPS_PIPELINE_CHUNK_ROWS", None)
    environment.pop("RAGAS_OPS_CONFIG", None)
    plan = child("plan", env=environment)
    print(
        f"   plan_day: {plan['seconds']:.2f} s; {plan['chunks']} chunks of {plan['chunk_rows']:,} "
        f"rows (max_chunks {plan['max_chunks']}); XCom payload {plan['xcom_bytes'] / 1e3:,.0f} kB"
    )
    print(
        f"   plan_day peak memory: tracemalloc {mb(plan['tracemalloc_peak'])}, Arrow pool "
        f"{mb(plan['arrow_peak'])}, max RSS {plan['rss_before_mb']:.0f} -> "
        f"{plan['rss_after_mb']:.0f} MB"
    )
    for which in ("first", "last"):
        read = child("read", which, env=environment)
        print(
            f"   reading the {which} chunk ({read['rows']:,} rows, slice starts at row "
            f"{read['slice_start']:,} of its file) batch by batch: {read['seconds']:.2f} s, "
            f"{read['batches']} batches; Arrow pool peak {mb(read['arrow_peak'])}, "
            f"max RSS {read['rss_before_mb']:.0f} -> {read['rss_after_mb']:.0f} MB"
        )
    whole = child("read", "file", env=environment)
    print(
        f"   for scale: one whole input file ({whole['rows']:,} rows) read at once: Arrow pool "
        f"peak {mb(whole['arrow_peak'])}; the whole day in memory would be about "
        f"{mb(whole['table_bytes'] * files)}"
    )


def child_plan() -> dict[str, Any]:
    import tracemalloc

    import pyarrow as pa

    from ragas_ops.config import settings_from_environment
    from ragas_ops.pipeline.lake import Lake
    from ragas_ops.pipeline.plan import chunk_to_dict, plan_day

    settings = settings_from_environment()
    lake = Lake(settings.pipeline)
    before = max_rss_mb()
    tracemalloc.start()
    started = time.perf_counter()
    day_plan = plan_day(lake, DAY, settings)
    elapsed = time.perf_counter() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
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
        "arrow_peak": pa.default_memory_pool().max_memory(),
        "rss_before_mb": before,
        "rss_after_mb": max_rss_mb(),
        "xcom_bytes": len(json.dumps(xcom)),
    }


def child_read(which: str) -> dict[str, Any]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from ragas_ops.config import settings_from_environment
    from ragas_ops.pipeline.lake import Lake
    from ragas_ops.pipeline.plan import plan_day
    from ragas_ops.pipeline.steps import read_slices

    settings = settings_from_environment()
    lake = Lake(settings.pipeline)
    day_plan = plan_day(lake, DAY, settings)
    pool = pa.default_memory_pool()
    pool.release_unused()
    if which == "file":
        before = max_rss_mb()
        table = pq.read_table(day_plan.files[0].path)
        return {
            "rows": table.num_rows,
            "table_bytes": table.nbytes,
            "arrow_peak": pool.max_memory(),
            "rss_before_mb": before,
            "rss_after_mb": max_rss_mb(),
        }
    chunk = day_plan.chunks[0] if which == "first" else day_plan.chunks[-1]
    before = max_rss_mb()
    base = pool.max_memory()
    started = time.perf_counter()
    rows = batches = 0
    for table in read_slices(lake, chunk):
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
        "rss_after_mb": max_rss_mb(),
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
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="ragas-ops-bench-") as folder:
        work = Path(folder)
        dag_day(work, rows, chunk_rows, files=4)
        planning(work, plan_rows, files=20)
        dag_parsing(work)
    print(f"\n(benchmark ran in {time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
