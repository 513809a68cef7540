"""A big day through the nightly DAG under a real scheduler (issue 39): wall time, CPU per
judge request, peak memory per task.

`ragas-ops airflow up` starts Airflow as `make airflow` does (scheduler with the LocalExecutor,
SQLite metadata, api-server, dag-processor, triggerer) on a lake of your own logs (`--raw`):
one day, yesterday, of `--rows` generated interactions in `--files` Parquet files. The judge
is the project's test judge in a process of its own, with `--latency-ms` added to every answer
and no rate limits, reached as an OpenAI-compatible endpoint (`--judge openai` and
RAGAS_OPS_JUDGE_BASE_URL), its cache fresh. The DAG is unpaused on creation, so the scheduler
scores yesterday by itself: nothing is triggered by hand. The score tasks run in the judge pool
(`pipeline.pool_slots`, 4), chunks of `pipeline.chunk_rows` (2,000) rows.

While it runs, every task's process (Airflow titles it `airflow worker -- <task instance id>`)
is sampled twice a second from /proc: its peak resident memory (VmHWM, the kernel's own
high-water mark, so a peak between two samples is not missed unless the process ends within
the half second) and its CPU time. At the end it prints, from the REST API, the manifest and
the test judge's counters: the run's wall time, rows published and their distinct ids, the
judge requests the server answered against those the tasks counted, and per task: count,
seconds, CPU seconds and peak memory.

Usage: python benchmarks/bench_nightly_dag.py [--rows 200000] [--files 8] [--latency-ms 20]
       [--work DIR] [--timeout SECONDS]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench_pipeline import write_logs  # the same generated day as the dag.test() benchmark
from ragas_ops_testing.judge_process import server_stats, test_judge_process
from ragas_ops_testing.local_airflow.standalone import (
    STATE_FILE,
    AirflowApi,
    admin_password,
    running_groups,
)

PROJECT = Path(__file__).resolve().parents[1]
DAG_ID = "ragas_ops_nightly"
TASK_TITLE = re.compile(r"^airflow worker -- ([0-9a-f-]{36})")
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
PAGE = 100


@dataclass
class TaskProcess:
    peak_mib: float = 0.0
    cpu_seconds: float = 0.0


@dataclass
class Sampler:
    """Peak memory and CPU of every task process, by task instance id, from /proc."""

    seen: dict[str, TaskProcess] = field(default_factory=lambda: defaultdict(TaskProcess))
    stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        while not self.stop.wait(0.5):
            for pid in filter(str.isdigit, os.listdir("/proc")):
                with contextlib.suppress(OSError, ValueError, IndexError):
                    self.sample(pid)

    def sample(self, pid: str) -> None:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            title = handle.read().replace(b"\0", b" ").decode(errors="replace")
        found = TASK_TITLE.match(title)
        if not found:
            return
        with open(f"/proc/{pid}/status") as handle:
            status = dict(line.split(":", 1) for line in handle if ":" in line)
        with open(f"/proc/{pid}/stat") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
        task = self.seen[found.group(1)]
        task.peak_mib = max(task.peak_mib, int(status["VmHWM"].split()[0]) / 1024)
        task.cpu_seconds = max(task.cpu_seconds, (int(fields[11]) + int(fields[12])) / CLOCK_TICKS)


def environment(base_url: str) -> dict[str, str]:
    """This process's environment without Airflow's, ragas-ops's or OpenAI's settings, the
    test judge as the OpenAI-compatible endpoint, no rate limits."""
    kept = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("AIRFLOW", "RAGAS_OPS_", "OPENAI_"))
    }
    return {
        **kept,
        "PYTHONPATH": f"{PROJECT}:{PROJECT / 'testkit'}",
        "RAGAS_OPS_JUDGE_BASE_URL": base_url,
        "RAGAS_OPS_JUDGE_MODEL": "test-judge",
        "RAGAS_OPS_JUDGE_EMBEDDING_MODEL": "test-embedding",
        "RAGAS_OPS_JUDGE_RPM": "none",
        "RAGAS_OPS_JUDGE_TPM": "none",
        "OPENAI_API_KEY": "sk-" + "bench-not-a-real-key",  # never a real key to the double
    }


def ragas_ops(env: dict[str, str], *arguments: str, timeout: float) -> str:
    finished = subprocess.run(
        [sys.executable, "-m", "ragas_ops.cli", *arguments],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if finished.returncode != 0:
        raise RuntimeError(f"ragas-ops {' '.join(arguments)}:\n{finished.stdout}{finished.stderr}")
    return finished.stdout


def run_of_day(api: AirflowApi, day: str, timeout: float) -> dict[str, Any]:
    """The DAG's run that scores `day`, once it has ended (bounded)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for run in api.call(f"dags/{DAG_ID}/dagRuns?limit=100")["dag_runs"]:
            scored = (run.get("conf") or {}).get("day") or day_of(run)
            if scored == day and run["state"] in ("success", "failed"):
                return dict(run)
        time.sleep(5)
    raise TimeoutError(f"no finished run of {day} after {timeout:.0f} s")


def day_of(run: dict[str, Any]) -> str:
    """The day a scheduled run scores: its data interval's start (the logical date's day)."""
    start = run.get("data_interval_start") or run["logical_date"]
    return str(start)[:10]


def instant(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def task_instances(api: AirflowApi, run_id: str) -> list[dict[str, Any]]:
    """Every task instance of the run (the REST API gives at most 100 a page)."""
    path = f"dags/{DAG_ID}/dagRuns/{run_id}/taskInstances"
    found: list[dict[str, Any]] = []
    while True:
        page = api.call(f"{path}?limit={PAGE}&offset={len(found)}")["task_instances"]
        found.extend(page)
        if len(page) < PAGE:
            return found


def manifest(warehouse: Path, day: str) -> dict[str, Any]:
    folder = warehouse / "runs" / f"dt={day}"
    names = sorted(folder.glob("*.json"), key=lambda path: path.stat().st_mtime)
    return json.loads(names[-1].read_text()) if names else {}


def published_ids(warehouse: Path, day: str) -> tuple[int, int]:
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    ids = pq.read_table(warehouse / "scored" / f"dt={day}", columns=["id"]).column("id")
    return len(ids), int(pc.count_distinct(ids).as_py())


def report(
    run: dict[str, Any],
    instances: list[dict[str, Any]],
    sampled: dict[str, TaskProcess],
    served: dict[str, Any],
    written: dict[str, Any],
    ids: tuple[int, int],
) -> None:
    wall = (instant(run["end_date"]) - instant(run["start_date"])).total_seconds()
    rows, distinct = ids
    scoring = written.get("scoring") or {}
    usage = scoring.get("usage") or {}
    counted = (usage.get("requests"), usage.get("embedding_requests"))
    by_endpoint = served.get("requests_by_endpoint") or {}
    answered = served.get("requests")
    print(f"run {run['dag_run_id']}: {run['state']} in {wall:,.0f} s ({rows / wall:,.1f} rows/s)")
    print(f"rows published {rows:,}, distinct ids {distinct:,}; chunks {written['plan']['chunks']}")
    print(
        f"judge requests answered by the server {answered:,} (chat {by_endpoint.get('chat')}, "
        f"embeddings {by_endpoint.get('embeddings')}); counted by the tasks: chat {counted[0]}, "
        f"embeddings {counted[1]}"
    )
    for metric, statuses in sorted((scoring.get("statuses") or {}).items()):
        print(f"  {metric}: {dict(sorted(statuses.items()))}")
    per_task: dict[str, list[tuple[float, TaskProcess, int]]] = defaultdict(list)
    for ti in instances:
        if ti.get("duration") is not None:
            process = sampled.get(ti["id"], TaskProcess())
            per_task[ti["task_id"]].append((float(ti["duration"]), process, int(ti["try_number"])))
    print(f"{'task':<24}{'count':>6}{'seconds':>10}{'min-max':>14}{'CPU s':>9}{'peak MiB':>10}")
    sampled_count = sum(1 for ti in instances if ti["id"] in sampled)
    for task_id, done in sorted(per_task.items(), key=lambda item: min_start(instances, item[0])):
        seconds = [entry[0] for entry in done]
        spread = f"{min(seconds):.1f}-{max(seconds):.1f}" if len(done) > 1 else ""
        cpu = sum(entry[1].cpu_seconds for entry in done)
        peak = max(entry[1].peak_mib for entry in done)  # 0: ended before a sample
        retried = sum(1 for entry in done if entry[2] > 1)
        note = f"  ({retried} retried)" if retried else ""
        print(
            f"{task_id:<24}{len(done):>6}{sum(seconds):>10.1f}{spread:>14}{cpu:>9.1f}"
            f"{f'{peak:.0f}' if peak else '-':>10}"
            f"{note}"
        )
    print(f"task processes sampled: {sampled_count} of {len(instances)} task instances")
    score_cpu = sum(
        entry[1].cpu_seconds for task in ("score_chunk",) for entry in per_task.get(task, [])
    )
    if answered:
        print(
            f"score tasks' CPU per judge request: {1000 * score_cpu / answered:.2f} ms "
            f"({score_cpu:,.0f} s for {answered:,} requests: the whole task process, Airflow "
            "and the metrics included)"
        )


def min_start(instances: list[dict[str, Any]], task_id: str) -> str:
    return min(str(ti.get("start_date") or "~") for ti in instances if ti["task_id"] == task_id)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--files", type=int, default=8)
    parser.add_argument("--latency-ms", type=float, default=20.0)
    parser.add_argument("--work", type=Path, help="kept after the run (default: a temp folder)")
    parser.add_argument("--timeout", type=float, default=3 * 3600, help="for the run, seconds")
    options = parser.parse_args()
    work = options.work or Path(tempfile.mkdtemp(prefix="bench-nightly-"))
    day = (datetime.now(UTC).date() - timedelta(days=1)).isoformat()  # what the scheduler scores
    raw, home = work / "raw", work / "airflow"
    started = time.perf_counter()
    write_logs(raw / f"dt={day}", options.rows, options.files, day)
    print(
        f"{options.rows:,} rows of {day} in {options.files} files: {time.perf_counter() - started:.0f} s"
    )
    sampler = Sampler()
    threading.Thread(target=sampler.run, daemon=True).start()
    with test_judge_process("--latency-ms", str(options.latency_ms)) as base_url:
        env = environment(base_url)
        try:
            started = time.perf_counter()
            ragas_ops(
                env,
                *("airflow", "up", "--home", str(home), "--port", "0", "--judge", "openai"),
                *("--raw", str(raw), "--segments", "app,model_version", "--timeout", "600"),
                timeout=900,
            )
            print(f"airflow up: {time.perf_counter() - started:.0f} s")
            state = json.loads((home / STATE_FILE).read_text())
            api = AirflowApi(state["url"], admin_password(home))
            run = run_of_day(api, day, options.timeout)
            instances = task_instances(api, run["dag_run_id"])
            time.sleep(1)
            sampler.stop.set()
            warehouse = home / "lake" / "warehouse"
            report(
                run,
                instances,
                sampler.seen,
                server_stats(base_url),
                manifest(warehouse, day),
                published_ids(warehouse, day),
            )
        finally:
            sampler.stop.set()
            with contextlib.suppress(Exception):
                ragas_ops(env, "airflow", "down", "--home", str(home), timeout=120)
            for group in running_groups(home):
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(group, signal.SIGKILL)
    print(f"work folder: {work}")


if __name__ == "__main__":
    main()
