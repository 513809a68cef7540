"""The judge's pacing against the strictest provider the test judge plays (issue 26).

Each run scores rows (three metrics) against the test judge, its own process, with a 1-second
burst and 400 ms latency, and prints one JSON line: rows complete, attempts and the share
answered 429, admitted and used tokens per row, rows/min, and the share of the account's bound
reached. The bound is min(RPM / answered requests per row, TPM / tokens per row), the tokens
being what the server's limiter counted (with `--admission max_tokens`, what it admitted:
prompt + max_tokens; with `usage`, prompt + completion).

Scenarios (`--scenario`):
- `limits` (default): the server enforces 600 RPM / 400k TPM, the client is told the same.
- `default`: the client keeps its default budget (500 RPM / 200k TPM), the server has no
  limits; the bound is the default budget's.
- `random-429`: as `default`, but `--rate-429` of the requests (default 0.2) are answered 429
  with `Retry-After: 1` whatever the rate; print the time against a no-fault run of the same rows.
- `processes`: `--processes N` score processes share the account (the local coordinator, one
  cache folder), each told the account's limits; their rows add up.
- `cpu`: no limits anywhere, 20 ms latency: the client's CPU per attempt and per row (printed
  by every scenario; the bound here is meaningless).

Rows are WikiEval-sized (15-sentence contexts in three passages, 3-5 sentence answers) built
from BEGIN's dev files (`--data`; about 4 requests and 4,900 tokens a row); without them, the
package's generated samples (much smaller rows).

`--code DIR` runs the client from another checkout (e.g. an older commit, for a "before"
column); the server is always this checkout's. `--client-counts` is the client's
`provider_counts`: by default none is set (its default, `auto`, learns the server's counting
from its headers); `told` sets the server's `--admission` (what a client from before `auto`
needed).

`--logs DIR` keeps each score process's log (`-v`: DEBUG) as DIR/score-N.log.

`--headers-window minute` has the test judge state its limits as OpenAI does (headers of a
minute-long window) while its one-second burst refuses; `--client-limits unset` gives the
client no `rpm`/`tpm` (its defaults: it paces to the limits the headers state), and
`--rpm`/`--tpm` set the server's limits (600 / 400,000 by default) and so the bound. With no
setting at all: `--client-limits unset` and `--client-counts default`.

`--model` names the judge model, which the test judge plays: a classic one (`gpt-4o-mini`) or
a reasoning one as strict as OpenAI (`gpt-5-mini`: its hidden reasoning tokens count in the
TPM bucket, `reasoning_tokens_per_row`).

Usage: python benchmarks/bench_pacing.py [--scenario S] [--rows N] [--admission usage]
       [--processes N] [--rate-429 F] [--code DIR] [--client-counts told] [--model M]
       [--headers-window minute] [--client-limits unset] [--rpm N] [--tpm N]
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
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from ragas_ops_testing.judge_process import server_stats, test_judge_process

from ragas_ops.evaluation.sized_rows import sized_rows
from ragas_ops.samples import sample_interactions

RPM, TPM = 600, 400_000
DEFAULT_RPM, DEFAULT_TPM = 500, 200_000  # JudgeSettings' defaults


def _begin_data() -> Path:
    """BEGIN's dev files in the shared data folder beside the project: /work/shared/data/begin
    from /work/main and from a worktree /work/wt/NAME alike (the first parent that has it)."""
    for parent in Path(__file__).resolve().parents[1:]:
        candidate = parent / "shared" / "data" / "begin"
        if candidate.is_dir():
            return candidate
    return Path(__file__).resolve().parents[2] / "shared" / "data" / "begin"


DATA = _begin_data()
DATA_FILES = ("begin_v2_cmu_dev.jsonl", "begin_v2_tc_dev.jsonl", "begin_v2_wow_dev.jsonl")
METRICS = ("faithfulness", "answer_relevance", "context_relevance")


def rows_table(count: int, data: Path) -> pa.Table:
    paths = [data / name for name in DATA_FILES]
    if all(path.exists() for path in paths):
        table = sized_rows(paths, count, seed=4)
        if table.num_rows >= count:
            return table
    return sample_interactions(count, seed=9)


def score_processes(
    work: Path, url: str, parts: list[Path], client: tuple[int, int] | None, options: Any
) -> tuple[float, float]:
    """Run one `score` process per part at once (one cache folder: one local coordinator),
    told how the server counts tokens; returns the seconds until the last one finished and
    the CPU seconds they used (the server, a child too, is still running: not counted)."""
    env = {**os.environ, "PYTHONPATH": str(options.code), "OPENAI_API_KEY": "sk-bench"}
    if options.client_counts == "told":  # a client from before `auto` must be told
        env["RAGAS_OPS_JUDGE_PROVIDER_COUNTS"] = options.admission
    elif options.client_counts != "default":
        env["RAGAS_OPS_JUDGE_PROVIDER_COUNTS"] = options.client_counts
    if options.model is not None:  # through the environment: an older client reads it too
        env["RAGAS_OPS_JUDGE_MODEL"] = options.model
    budget = [] if client is None else ["--rpm", str(client[0]), "--tpm", str(client[1])]
    if options.scenario == "cpu":
        budget = ["--rpm", "none", "--tpm", "none"]
    started, cpu_before = time.monotonic(), _children_cpu_seconds()
    running = []
    for index, source in enumerate(parts):
        command = [sys.executable, "-m", "ragas_ops.cli", "score", str(source)]
        command += [str(work / f"scored-{index}.parquet"), "--base-url", url, *budget]
        command += ["--cache", str(work / "cache" / f"judge-{index}.sqlite")]
        command += ["--metrics", ",".join(METRICS)]
        if options.logs is not None:
            command.append("-v")
        running.append(
            subprocess.Popen(
                command, env=env, cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
            )
        )
    for index, process in enumerate(running):
        _, stderr = process.communicate()
        if options.logs is not None:
            options.logs.mkdir(parents=True, exist_ok=True)
            (options.logs / f"score-{index}.log").write_bytes(stderr)
        if process.returncode != 0:
            raise SystemExit(f"score failed ({process.returncode}): {stderr.decode()[-2000:]}")
    return time.monotonic() - started, _children_cpu_seconds() - cpu_before


def _children_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(
    options: argparse.Namespace,
    table: pa.Table,
    *,
    server: list[str],
    client: tuple[int, int] | None,
    bound_limits: tuple[int, int],
    processes: int = 1,
) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        (work / "cache").mkdir()
        per_process = -(-table.num_rows // processes)
        parts = []
        for index in range(processes):
            part = work / f"logs-{index}.parquet"
            pq.write_table(table.slice(index * per_process, per_process), part)
            parts.append(part)
        latency = "20" if options.scenario == "cpu" else "400"
        server += ["--latency-ms", latency, "--burst-seconds", "1", "--retry-after", "1"]
        server += ["--admission", options.admission, "--headers-window", options.headers_window]
        with test_judge_process(*server) as url:
            seconds, cpu_seconds = score_processes(work, url, parts, client, options)
            stats = server_stats(url)
        scored = [
            row
            for index in range(processes)
            for row in pq.read_table(work / f"scored-{index}.parquet").to_pylist()
        ]
    result = figures(stats, scored, seconds, bound_limits, float(latency) / 1000)
    result["client_cpu_ms_per_attempt"] = round(cpu_seconds * 1000 / stats["requests"], 2)
    result["client_cpu_ms_per_row"] = round(cpu_seconds * 1000 / len(scored), 2)
    return result


def figures(
    stats: dict[str, Any],
    scored: list[dict[str, Any]],
    seconds: float,
    limits: tuple[int, int],
    latency_seconds: float = 0.0,
) -> dict[str, Any]:
    rows = len(scored)
    answered = sum(stats["answered_by_endpoint"].values())
    attempts = stats["requests"]
    limited = stats["rate_limited"] + stats["injected"]["429"]
    complete = sum(all(row[f"{m}_status"] == "ok" for m in METRICS) for row in scored)
    # A row is lost when the judge gave up on it; other statuses are the row's own answer
    # (a refusal, no statements to check) and come the same in every scenario.
    not_ok = Counter(
        row[f"{m}_status"] for row in scored for m in METRICS if row[f"{m}_status"] != "ok"
    )
    lost = sum(any(row[f"{m}_status"] == "judge_unavailable" for m in METRICS) for row in scored)
    rpm, tpm = limits
    bound = min(rpm / (answered / rows), tpm / (stats["limiter_tokens"] / rows))
    first, last = stats.get("first_request_at"), stats.get("last_request_at")
    busy = (last - first + latency_seconds) if first is not None and last is not None else 0.0
    achieved = rows / seconds * 60
    return {
        "rows": rows,
        "rows_all_metrics_ok": complete,
        "rows_lost": lost,
        "other_statuses": dict(not_ok),
        "attempts": attempts,
        "answered_429_by_limit": stats["rate_limited"],
        "answered_429_injected": stats["injected"]["429"],
        "share_429_by_limit": round(stats["rate_limited"] / attempts, 4),
        "share_429": round(limited / attempts, 4),
        "requests_per_row": round(answered / rows, 2),
        "counted_tokens_per_row": round(stats["limiter_tokens"] / rows),
        "used_tokens_per_row": round((stats["prompt_tokens"] + stats["completion_tokens"]) / rows),
        "reasoning_tokens_per_row": round(stats["reasoning_tokens"] / rows),
        "seconds": round(seconds, 1),
        "rows_per_min": round(achieved, 1),
        "bound_rows_per_min": round(bound, 1),
        "of_bound": round(achieved / bound, 3),
        # over the server's busy period (its first request to its last answer), without the
        # score processes' start-up, which weighs in a short run at a high rate
        "busy_seconds": round(busy, 1),
        "of_bound_busy": round(rows / busy * 60 / bound, 3) if busy > 0 else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--scenario",
        choices=("limits", "default", "random-429", "processes", "cpu"),
        default="limits",
    )
    parser.add_argument("--code", type=Path, default=Path(__file__).resolve().parents[1])
    parser.add_argument("--rows", type=int, default=200)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--admission", choices=("max_tokens", "usage"), default="max_tokens")
    parser.add_argument(
        "--client-counts",
        choices=("default", "told", "auto", "max_tokens", "usage"),
        default="default",
        help="the client's provider_counts: its default (no setting), told the server's "
        "--admission, or a value",
    )
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument(
        "--logs", type=Path, default=None, help="keep each score process's -v log in this folder"
    )
    parser.add_argument("--rate-429", type=float, default=0.2)
    parser.add_argument(
        "--model",
        default=None,
        help="the judge model (e.g. gpt-4o-mini, gpt-5-mini); default: the client's",
    )
    parser.add_argument("--headers-window", choices=("burst", "minute"), default="burst")
    parser.add_argument(
        "--client-limits",
        choices=("told", "unset"),
        default="told",
        help="the client told the server's rpm/tpm, or given none (it paces to the headers)",
    )
    parser.add_argument("--rpm", type=int, default=RPM, help="the server's requests a minute")
    parser.add_argument("--tpm", type=int, default=TPM, help="the server's tokens a minute")
    options = parser.parse_args()
    table = rows_table(options.rows, options.data)
    limits = ["--rpm", str(options.rpm), "--tpm", str(options.tpm)]
    account = (options.rpm, options.tpm)
    told = account if options.client_limits == "told" else None
    result: dict[str, Any] = {"scenario": options.scenario, "code": str(options.code)}
    result["admission"] = options.admission
    result["client_counts"] = options.client_counts
    result["model"] = options.model or "the client's default"
    result["headers_window"] = options.headers_window
    result["client_limits"] = options.client_limits
    result["server_limits"] = {"rpm": options.rpm, "tpm": options.tpm}
    if options.scenario == "cpu":
        result |= run(options, table, server=[], client=None, bound_limits=account)
    elif options.scenario == "limits":
        result |= run(options, table, server=limits, client=told, bound_limits=account)
    elif options.scenario == "processes":
        result["processes"] = options.processes
        result |= run(
            options,
            table,
            server=limits,
            client=told,
            bound_limits=account,
            processes=options.processes,
        )
    else:
        default = (DEFAULT_RPM, DEFAULT_TPM)
        clean = run(options, table, server=[], client=None, bound_limits=default)
        if options.scenario == "default":
            result |= clean
        else:
            faults = ["--rate-429", str(options.rate_429)]
            result["rate_429"] = options.rate_429
            result |= run(options, table, server=faults, client=None, bound_limits=default)
            result["no_fault_seconds"] = clean["seconds"]
            result["time_vs_no_fault"] = round(result["seconds"] / clean["seconds"], 2)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
