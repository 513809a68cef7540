"""The pipeline's scoring tasks sharing one account: before (`judge.shared_budget = none`, each
task its static 1/(pool slots) of the account) and after (`local`, the tasks share the account
through budget.sqlite, nightly first).

The project's test judge server runs in a process of its own and enforces ONE account-wide RPM
and TPM limit, counted as OpenAI counts (see `JudgeServer._admit`: a request, and its messages,
schema and `max_tokens` at admission). Days are planned with the pipeline's `plan_day`; each
chunk is scored by the real task code (`chunk_settings` + `run_score_chunk`, what
`ScoreChunkOperator` runs) in a process of its own, started as a LocalExecutor would when a slot
of its pool frees: `pool_slots` (4) nightly slots and `backfill_pool_slots` (2) backfill slots.
Like Airflow's LocalExecutor, which forks its task processes from a parent that has imported
Airflow, the tasks are forked from this script once it has imported the scoring code, so a
task's start is not a fresh interpreter's imports.

Scenarios: (a) a one-chunk day; (b) a ten-chunk day, four slots; (c) a nightly day that starts
while a backfill of two days runs. For each: attempts, the share answered 429, rows lost (not
fully scored: a metric `judge_unavailable`, or a task that failed), the share of the account's
bound achieved over the busy period (the larger of the RPM and the TPM share, as in
bench_shared_budget.py: `share_of_bound`), wall time,
and in (c) which finished first.

Usage: python benchmarks/bench_pipeline_budget.py [--scenarios abc] [--rpm 600] [--tpm 400000]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import tempfile
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from bench_shared_budget import METRICS, bound_shares
from ragas_ops_testing.judge_process import server_stats, test_judge_process

from ragas_ops.config import settings_from_environment
from ragas_ops.contract.layout import Lake
from ragas_ops.pipeline.plan import chunk_from_dict, plan_day, plan_result
from ragas_ops.pipeline.score import run_score_chunk
from ragas_ops.pipeline.share import chunk_settings
from ragas_ops.samples import sample_interactions

FORK = multiprocessing.get_context("fork")
KEY = "sk-" + "bench-0123456789abcdefghijklmnop"  # never a real key: the test double's
NIGHTLY_DAY = "2026-11-28"
BACKFILL_DAYS = ("2026-11-20", "2026-11-21")


@dataclass(frozen=True)
class Scenario:
    name: str
    title: str
    chunk_rows: int
    nightly_rows: int  # 0: no nightly day
    backfill_rows: int = 0  # per backfill day; 0: no backfill
    nightly_delay: float = 0.0  # seconds after the backfill starts


SCENARIOS = {
    "a": Scenario("a", "a one-chunk day", chunk_rows=36, nightly_rows=36),
    "b": Scenario("b", "a ten-chunk day, 4 slots", chunk_rows=12, nightly_rows=120),
    "c": Scenario(
        "c",
        "a nightly day during a backfill of two days",
        chunk_rows=12,
        nightly_rows=48,
        backfill_rows=48,
        nightly_delay=4.0,
    ),
}


@dataclass
class Task:
    pool: str  # "nightly" or "backfill"
    chunk: dict[str, Any]
    process: multiprocessing.process.BaseProcess | None = None
    ended: float | None = None


@dataclass
class Outcome:
    shared: str
    attempts: int
    rate_limited: int
    rows: int
    lost: int
    shares: tuple[float, float]  # of the RPM and of the TPM bound (`bound_shares`)
    wall: float
    busy: float  # the server's first request to its last
    cpu: float  # the scoring tasks' CPU seconds
    finished: dict[str, float] = field(default_factory=dict)  # pool -> seconds from start
    failed_tasks: int = 0

    @property
    def share_429(self) -> float:
        return self.rate_limited / self.attempts if self.attempts else 0.0


def environment(
    work: Path, base_url: str, scenario: Scenario, shared: str, options: argparse.Namespace
) -> dict[str, str]:
    """The scoring tasks' environment: one lake, one judge cache (so one budget.sqlite), the
    account's rpm and tpm (the pipeline divides them among its slots, or shares them)."""
    return {
        **os.environ,
        "OPENAI_API_KEY": KEY,
        "RAGAS_OPS_PIPELINE_RAW_URI": str(work / "lake" / "raw"),
        "RAGAS_OPS_PIPELINE_WAREHOUSE_URI": str(work / "lake" / "warehouse"),
        "RAGAS_OPS_PIPELINE_CHUNK_ROWS": str(scenario.chunk_rows),
        "RAGAS_OPS_JUDGE_BASE_URL": base_url,
        "RAGAS_OPS_JUDGE_MODEL": "test-judge",
        "RAGAS_OPS_JUDGE_EMBEDDING_MODEL": "test-embedding",
        "RAGAS_OPS_JUDGE_CACHE_PATH": str(work / "cache" / "judge.sqlite"),
        "RAGAS_OPS_JUDGE_SHARED_BUDGET": shared,
        "RAGAS_OPS_JUDGE_RPM": str(options.rpm),
        "RAGAS_OPS_JUDGE_TPM": str(options.tpm),
        "RAGAS_OPS_PIPELINE_POOL_SLOTS": str(options.pool_slots),
        "RAGAS_OPS_PIPELINE_BACKFILL_POOL_SLOTS": str(options.backfill_pool_slots),
    }


def plan(work: Path, environ: dict[str, str], scenario: Scenario) -> list[Task]:
    """Write the scenario's logs and plan its days with the pipeline's own `plan_day`."""

    days = [(day, "backfill", scenario.backfill_rows) for day in BACKFILL_DAYS]
    days.append((NIGHTLY_DAY, "nightly", scenario.nightly_rows))
    settings = settings_from_environment(environ)
    lake = Lake(settings.pipeline)
    tasks = []
    for seed, (day, pool, rows) in enumerate(days):
        if not rows:
            continue
        folder = work / "lake" / "raw" / f"dt={day}"
        folder.mkdir(parents=True)
        pq.write_table(sample_interactions(rows, seed=seed, day=day), folder / "part-0.parquet")
        result = plan_result(plan_day(lake, day, settings), backfill=pool == "backfill")
        tasks += [Task(pool, chunk) for chunk in result["chunks"]]
    return tasks


def launch(task: Task, work: Path, environ: dict[str, str]) -> None:
    spec = work / f"task-{task.chunk['day']}-{task.chunk['index']}.json"
    spec.write_text(json.dumps({"pool": task.pool, "chunk": task.chunk}))
    task.process = FORK.Process(target=child, args=(str(spec), environ))
    task.process.start()


def run_tasks(
    tasks: list[Task], work: Path, environ: dict[str, str], slots: dict[str, int], delay: float
) -> tuple[float, dict[str, float]]:
    """Run the tasks with at most `slots[pool]` at once per pool, nightly ones only after
    `delay` seconds when a backfill runs; returns the wall time and when each pool ended."""
    waiting = {pool: deque(t for t in tasks if t.pool == pool) for pool in slots}
    running: list[Task] = []
    started = time.monotonic()
    while any(waiting.values()) or running:
        now = time.monotonic() - started
        for task in [t for t in running if t.process is not None and not t.process.is_alive()]:
            task.ended = now
            running.remove(task)
        for pool, queue in waiting.items():
            backfill = any(t.pool == "backfill" for t in tasks)
            if pool == "nightly" and backfill and now < delay:
                continue
            while queue and sum(t.pool == pool for t in running) < slots[pool]:
                task = queue.popleft()
                launch(task, work, environ)
                running.append(task)
        time.sleep(0.02)
    ended = {}
    for pool in slots:
        times = [t.ended for t in tasks if t.pool == pool and t.ended is not None]
        if times:
            ended[pool] = max(times)
    return time.monotonic() - started, ended


def rows_lost(tasks: list[Task], work: Path) -> tuple[int, int, int, float]:
    """(rows planned, rows not fully scored, failed tasks, the tasks' CPU seconds) over the
    scenario's chunks."""
    total = lost = failed = 0
    cpu = 0.0
    for task in tasks:
        rows = sum(int(piece["rows"]) for piece in task.chunk["slices"])
        total += rows
        result = work / f"task-{task.chunk['day']}-{task.chunk['index']}.result.json"
        if task.process is None or task.process.exitcode != 0 or not result.exists():
            lost += rows
            failed += 1
            continue
        outcome = json.loads(result.read_text())
        cpu += outcome["cpu_seconds"]
        scored = pq.read_table(outcome["file"]).to_pylist()
        complete = sum(
            all(row[f"{m}_status"] != "judge_unavailable" for m in METRICS) for row in scored
        )
        lost += rows - complete
    return total, lost, failed, cpu


def measure(scenario: Scenario, shared: str, options: argparse.Namespace) -> Outcome:
    limits = ("--rpm", str(options.rpm), "--tpm", str(options.tpm))
    server_options = (*limits, "--latency-ms", str(options.latency_ms))
    with test_judge_process(*server_options) as base_url, tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        slots = {"nightly": options.pool_slots, "backfill": options.backfill_pool_slots}
        environ = environment(work, base_url, scenario, shared, options)
        tasks = plan(work, environ, scenario)
        wall, ended = run_tasks(tasks, work, environ, slots, scenario.nightly_delay)
        stats = server_stats(base_url)
        total, lost, failed, cpu = rows_lost(tasks, work)
    answered = stats["answered_by_endpoint"]["chat"] + stats["answered_by_endpoint"]["embeddings"]
    limited = stats["rate_limited"]
    return Outcome(
        shared,
        answered + limited,
        limited,
        total,
        lost,
        bound_shares(stats, options.rpm, options.tpm),
        wall,
        (stats["last_request_at"] or 0.0) - (stats["first_request_at"] or 0.0),
        cpu,
        ended,
        failed,
    )


def child(spec_path: str, environ: dict[str, str]) -> None:
    """One scoring task (a forked process): what `ScoreChunkOperator.execute` runs in sync
    mode."""
    os.environ.clear()
    os.environ.update(environ)
    spec = json.loads(Path(spec_path).read_text())
    chunk = spec["chunk"]
    rows = sum(int(piece["rows"]) for piece in chunk["slices"])
    settings = chunk_settings(settings_from_environment(), rows, chunk["day_rows"], spec["pool"])
    lake = Lake(settings.pipeline)
    run_id = "bench"
    result = run_score_chunk(
        lake, chunk["day"], run_id, chunk=chunk_from_dict(chunk), settings=settings
    )
    scored = lake.chunk_file(chunk["day"], run_id, chunk["index"])
    result["file"] = scored.path
    times = os.times()
    result["cpu_seconds"] = times.user + times.system
    Path(spec_path.removesuffix(".json") + ".result.json").write_text(json.dumps(result))


def report(scenario: Scenario, outcomes: list[Outcome]) -> None:
    print(f"\n({scenario.name}) {scenario.title}")
    header = f"{'shared_budget':<14}{'attempts':>9}{'429s':>7}{'429 share':>10}"
    print(
        f"{header}{'rows lost':>12}{'of bound':>9}{'rpm/tpm':>10}{'busy s':>8}{'wall s':>8}{'cpu s':>7}  finished"
    )
    for outcome in outcomes:
        order = sorted(outcome.finished.items(), key=lambda item: item[1])
        finished = ", ".join(f"{pool} {at:.1f}s" for pool, at in order)
        failed = f" ({outcome.failed_tasks} tasks failed)" if outcome.failed_tasks else ""
        print(
            f"{outcome.shared:<14}{outcome.attempts:>9}{outcome.rate_limited:>7}"
            f"{outcome.share_429:>10.1%}{outcome.lost:>6}/{outcome.rows:<5}"
            f"{max(outcome.shares):>9.0%}{outcome.shares[0]:>5.0%}/{outcome.shares[1]:<4.0%}"
            f"{outcome.busy:>8.1f}{outcome.wall:>8.1f}{outcome.cpu:>7.1f}"
            f"  {finished}{failed}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", default="abc", help="which of a, b, c to run")
    parser.add_argument("--modes", default="none,local", help="shared_budget values to compare")
    parser.add_argument("--rpm", type=int, default=600, help="the account's requests per minute")
    parser.add_argument("--tpm", type=int, default=400_000, help="the account's tokens per minute")
    parser.add_argument("--latency-ms", type=float, default=200.0)
    parser.add_argument("--pool-slots", type=int, default=4)
    parser.add_argument("--backfill-pool-slots", type=int, default=2)
    options = parser.parse_args()
    print(
        f"the account: {options.rpm} RPM / {options.tpm} TPM for every task together; server "
        f"latency {options.latency_ms:g} ms; {options.pool_slots} nightly + "
        f"{options.backfill_pool_slots} backfill slots; load average {os.getloadavg()[0]:.2f}"
    )
    for name in options.scenarios:
        scenario = SCENARIOS[name]
        outcomes = [measure(scenario, mode, options) for mode in options.modes.split(",")]
        report(scenario, outcomes)
    print(f"\nload average at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
