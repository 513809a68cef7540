"""Money budgets against the project's test judge server, run in its own process.

Scores generated rows with the three metrics, priced as gpt-4o-mini, once without a budget
(what the run costs) and then with a budget of about half that, at several `--batch-rows`.
Prints, for docs/cost.md, per batch size: the rows left with `budget_exhausted`, how many of
them are whole (no request was sent for them), whether they are the last
rows of the input (a suffix), and the budget used (spent / budget, never above 1).

Usage: python benchmarks/bench_budget.py [--rows 400] [--share 0.5] [--batch-rows 4 64 256]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from ragas_ops_testing.judge_process import test_judge_process

from ragas_ops.config import Settings, apply_mapping
from ragas_ops.metrics import DEFAULT_METRICS
from ragas_ops.samples import sample_interactions
from ragas_ops.scoring.jobs import score_file


def settings_for(base_url: str, **judge: Any) -> Settings:
    settings = Settings()
    settings.judge.endpoint.base_url = base_url
    settings.judge.endpoint.model = "gpt-4o-mini"  # priced: the test server echoes the model
    settings.judge.endpoint.embedding_model = "text-embedding-3-small"
    settings.judge.cache.path = None
    settings.judge.limits.rpm = None
    settings.judge.limits.tpm = None
    apply_mapping(settings, {"judge": judge}, source="settings_for")  # by their config keys
    return settings


def run(source: Path, target: Path, settings: Settings) -> float:
    """Score `source` into `target`; what the run cost (USD)."""
    outcome = asyncio.run(score_file(str(source), str(target), settings, progress=False))
    return outcome.total.cost_usd or 0.0


def left_rows(target: Path) -> tuple[list[int], list[int], int]:
    """Rows with some `budget_exhausted`, those of them that are whole (no request sent for
    them: their other metrics are `invalid_input` or were answered free, from replies to
    identical requests of earlier rows), and the row count."""
    table = pq.read_table(target)
    statuses = [
        [table.column(f"{metric}_status")[row].as_py() for metric in DEFAULT_METRICS]
        for row in range(table.num_rows)
    ]
    requests = table.column("judge_requests").to_pylist()
    left = [row for row, of_row in enumerate(statuses) if "budget_exhausted" in of_row]
    whole = [row for row in left if requests[row] == 0]
    return left, whole, table.num_rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=400)
    parser.add_argument("--share", type=float, default=0.5, help="budget / full run's cost")
    parser.add_argument("--batch-rows", type=int, nargs="+", default=[4, 64, 256])
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder, test_judge_process() as url:
        work = Path(folder)
        source = work / "logs.parquet"
        pq.write_table(sample_interactions(args.rows, seed=9), source)
        full = run(source, work / "full.parquet", settings_for(url))
        budget = round(full * args.share, 6)
        print(f"{args.rows} rows, three metrics: the full run costs ${full:.6f}; budget ${budget}")
        print(
            f"{'batch rows':>10}{'left':>7}{'whole':>7}{'whole %':>9}{'suffix':>8}"
            f"{'spent USD':>12}{'used':>8}"
        )
        for batch_rows in args.batch_rows:
            settings = settings_for(url, budget_usd=budget, max_concurrency=args.concurrency)
            settings.batch_rows = batch_rows
            target = work / f"budget-{batch_rows}.parquet"
            spent = run(source, target, settings)
            left, whole, rows = left_rows(target)
            suffix = bool(left) and left == list(range(left[0], rows))
            share = len(whole) / len(left) if left else 1.0
            print(
                f"{batch_rows:>10}{len(left):>7}{len(whole):>7}{share:>9.1%}{suffix!s:>8}"
                f"{spent:>12.6f}{spent / budget:>8.2%}"
            )


if __name__ == "__main__":
    main()
