"""The judge's pacing against the strictest provider the test judge plays (issue 26).

Each scenario runs `score` (three metrics) against the test judge with a 1-second burst,
400 ms latency and `max_tokens` counted at admission, the client's budget set to the server's
limits, and prints: rows complete, attempts and the share answered 429, rows/min, and the
share of the account's bound reached, the bound computed from what the server admitted
(min(RPM / answered requests per row, TPM / admitted tokens per row)).

`--code DIR` runs the client from another checkout (e.g. an older commit, for a "before"
column); the server is always this checkout's.

Usage: python benchmarks/bench_pacing.py [--code DIR] [--rows N] [--rate-429 F]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq

from ragas_ops.samples import sample_interactions
from ragas_ops.testing.judge_process import server_stats, test_judge_process

RPM, TPM = 600, 400_000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--code", type=Path, default=Path(__file__).resolve().parents[1])
    parser.add_argument("--rows", type=int, default=60)
    parser.add_argument("--rate-429", type=float, default=0.0)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        source = work / "logs.parquet"
        pq.write_table(sample_interactions(options.rows, seed=9), source)
        server = ["--latency-ms", "400", "--rpm", str(RPM), "--tpm", str(TPM)]
        server += ["--burst-seconds", "1", "--rate-429", str(options.rate_429)]
        server += ["--retry-after", "1"]
        with test_judge_process(*server) as url:
            started = time.monotonic()
            command = [sys.executable, "-m", "ragas_ops.cli", "score", str(source)]
            command += [str(work / "scored.parquet"), "--base-url", url, "--rpm", str(RPM)]
            command += ["--tpm", str(TPM), "--cache", str(work / "cache.sqlite")]
            env = {**os.environ, "PYTHONPATH": str(options.code), "OPENAI_API_KEY": "sk-bench"}
            subprocess.run(command, env=env, check=True, capture_output=True, cwd=work)
            seconds = time.monotonic() - started
            stats = server_stats(url)
        scored = pq.read_table(work / "scored.parquet").to_pylist()
    rows = options.rows
    answered = sum(stats["answered_by_endpoint"].values())
    attempts = stats["requests"]
    limited = stats["rate_limited"] + stats["injected"]["429"]
    complete = sum(
        all(row[f"{m}_status"] == "ok" for m in ("faithfulness", "answer_relevance"))
        for row in scored
    )
    bound = min(RPM / (answered / rows), TPM / (stats["limiter_tokens"] / rows))
    achieved = rows / seconds * 60
    print(
        json.dumps(
            {
                "code": str(options.code),
                "rows": rows,
                "rows_ok_faithfulness_and_answer_relevance": complete,
                "attempts": attempts,
                "answered_429_by_limit": stats["rate_limited"],
                "answered_429_injected": stats["injected"]["429"],
                "share_429": round(limited / attempts, 4),
                "admitted_tokens_per_row": round(stats["limiter_tokens"] / rows),
                "used_tokens_per_row": round(
                    (stats["prompt_tokens"] + stats["completion_tokens"]) / rows
                ),
                "seconds": round(seconds, 1),
                "rows_per_min": round(achieved, 1),
                "bound_rows_per_min": round(bound, 1),
                "of_bound": round(achieved / bound, 3),
            }
        )
    )


if __name__ == "__main__":
    main()
