"""Two `ragas-ops score` processes, each given the whole account's budget, against the test
server's account-wide RPM/TPM limit: before (`judge.shared_budget = none`, each process alone
with AIMD only) and after (`local`, the processes share the account through budget.sqlite).

Prints, for docs/shared-budget.md: attempts, the share answered 429, rows with all three scores,
wall time, and the share of the account's bound achieved over the busy period
(`share_of_bound`: the same definition as bench_pipeline_budget.py).

Usage: python benchmarks/bench_shared_budget.py [--rows 80] [--rpm 600] [--tpm 400000]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from ragas_ops_testing.judge_server import JudgeServer, JudgeServerConfig

from ragas_ops.samples import sample_interactions

METRICS = ("faithfulness", "answer_relevance", "context_relevance")
KEY = "sk-" + "bench-0123456789abcdefghijklmnop"


@dataclass
class Result:
    attempts: int
    rate_limited: int
    rows: int
    fully_scored: int
    seconds: float
    exit_codes: list[int]
    shares: tuple[float, float]  # of the RPM and of the TPM bound
    busy: float

    @property
    def share_429(self) -> float:
        return self.rate_limited / self.attempts if self.attempts else 0.0


def bound_shares(stats: dict[str, Any], rpm: int, tpm: int) -> tuple[float, float]:
    """(requests, tokens): over the busy period (the server's first request to its last), the
    requests answered per minute over the RPM limit, and the tokens the server's limiter was
    charged per minute (as OpenAI counts them at admission) over the TPM limit."""
    first, last = stats["first_request_at"], stats["last_request_at"]
    if first is None or last is None or last <= first:
        return 0.0, 0.0
    minutes = (last - first) / 60.0
    answered = stats["answered_by_endpoint"]["chat"] + stats["answered_by_endpoint"]["embeddings"]
    return answered / minutes / rpm, stats["limiter_tokens"] / minutes / tpm


def share_of_bound(stats: dict[str, Any], rpm: int, tpm: int) -> float:
    """The share of the account's bound a run achieved: the larger of `bound_shares`, the
    binding limit. 1.0 is the account fully used; the buckets start full, so a short run may
    pass 1.0 by their burst (the client's: one second of the account)."""
    return max(bound_shares(stats, rpm, tpm))


def run_processes(
    base_url: str, folder: Path, rows: int, rpm: int, tpm: int, shared: str, processes: int = 2
) -> tuple[list[Path], list[int], float]:
    """Score `processes` files of `rows` rows at once, each process given the account's
    budget; returns the scored files, the exit codes and the wall time."""
    environ = {**os.environ, "OPENAI_API_KEY": KEY, "RAGAS_OPS_JUDGE_SHARED_BUDGET": shared}
    running, targets = [], []
    started = time.monotonic()
    for index in range(processes):
        source = folder / f"logs-{index}.parquet"
        pq.write_table(sample_interactions(rows, seed=100 + index), source)
        target = folder / f"scored-{index}.parquet"
        targets.append(target)
        command = [
            sys.executable, "-m", "ragas_ops.cli", "score", str(source), str(target),
            "--base-url", base_url, "--model", "test-judge",
            "--embedding-model", "test-embedding",
            "--cache", str(folder / "cache" / f"judge-{index}.sqlite"),
            "--rpm", str(rpm), "--tpm", str(tpm), "--no-progress",
        ]  # fmt: skip
        running.append(subprocess.Popen(command, env=environ, stdout=subprocess.DEVNULL))
    codes = [process.wait() for process in running]
    return targets, codes, time.monotonic() - started


def fully_scored(targets: list[Path]) -> tuple[int, int]:
    """(rows, rows whose three metrics all reached a verdict: none `judge_unavailable`, the
    status of a request that ran out of attempts) over the scored files that exist."""
    total = complete = 0
    for target in targets:
        if not target.exists():
            continue
        table = pq.read_table(target).to_pylist()
        total += len(table)
        complete += sum(
            all(row[f"{m}_status"] != "judge_unavailable" for m in METRICS) for row in table
        )
    return total, complete


def measure(shared: str, rows: int, rpm: int, tpm: int, latency_ms: float) -> Result:
    config = JudgeServerConfig(rpm=rpm, tpm=tpm, latency_ms=latency_ms)
    with JudgeServer(config) as server, tempfile.TemporaryDirectory() as tmp:
        targets, codes, seconds = run_processes(server.base_url, Path(tmp), rows, rpm, tpm, shared)
        stats = server.stats()
        total, complete = fully_scored(targets)
    attempts = stats["answered_by_endpoint"]["chat"] + stats["answered_by_endpoint"]["embeddings"]
    limited = stats["rate_limited"]
    busy = (stats["last_request_at"] or 0.0) - (stats["first_request_at"] or 0.0)
    shares = bound_shares(stats, rpm, tpm)
    return Result(attempts + limited, limited, total, complete, seconds, codes, shares, busy)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=80, help="rows per process")
    parser.add_argument("--rpm", type=int, default=600, help="the account's requests per minute")
    parser.add_argument("--tpm", type=int, default=400_000, help="the account's tokens per minute")
    parser.add_argument("--latency-ms", type=float, default=200.0)
    options = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f}")
    print(
        f"two processes x {options.rows} rows, each given the account's {options.rpm} RPM / "
        f"{options.tpm} TPM; server latency {options.latency_ms:g} ms"
    )
    print(f"{'shared_budget':<14}{'attempts':>9}{'429s':>7}{'429 share':>10}"
          f"{'fully scored':>14}{'busy s':>8}{'wall s':>8}{'of bound':>9}{'rpm/tpm':>10}  exit")  # fmt: skip
    for shared in ("none", "local"):
        result = measure(shared, options.rows, options.rpm, options.tpm, options.latency_ms)
        print(
            f"{shared:<14}{result.attempts:>9}{result.rate_limited:>7}{result.share_429:>10.1%}"
            f"{result.fully_scored:>7}/{result.rows:<6}{result.busy:>8.1f}{result.seconds:>8.1f}"
            f"{max(result.shares):>9.0%}{result.shares[0]:>5.0%}/{result.shares[1]:<4.0%}"
            f"  {result.exit_codes}"
        )
    print(f"load average at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
