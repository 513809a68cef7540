"""`ragas-ops estimate` against real runs, metric by metric, on WikiEval-sized rows.

Builds WikiEval-sized rows (15-sentence contexts, 3-5 sentence answers) from BEGIN's cmu and
tc dev files (`ragas_ops.evaluation.sized_rows`; the estimate's coefficients were measured on
rows built from the wow and v1 dev files, never on these), estimates each metric alone, then
scores each metric alone against the project's test judge server (its own process, priced as
gpt-4o-mini), and prints estimate / actual - 1 for chat requests, prompt tokens, completion
tokens and cost (sync, embeddings included), per metric and for the three together.

The test server's replies size themselves from the input (statements from the answer's
sentences, the context sentences that share words with the question, questions from the
answer's topics): this checks the estimate's arithmetic and its model against that judge. The
error against a real LLM needs a run against a real provider.

Usage: python benchmarks/bench_estimate.py [--rows 200] [--data ../shared/data/begin]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from ragas_ops_testing.judge_process import test_judge_process

from ragas_ops.config import Settings
from ragas_ops.estimate import estimate_input
from ragas_ops.evaluation.sized_rows import sized_rows
from ragas_ops.metrics import DEFAULT_METRICS
from ragas_ops.scoring.jobs import score_file

VALIDATION_FILES = ("begin_v2_cmu_dev.jsonl", "begin_v2_tc_dev.jsonl")
DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "begin"


def settings_for(base_url: str, metrics: tuple[str, ...]) -> Settings:
    settings = Settings()
    settings.judge.endpoint.base_url = base_url
    settings.judge.endpoint.model = "gpt-4o-mini"  # priced: the test server echoes the model
    settings.judge.endpoint.embedding_model = "text-embedding-3-small"
    settings.judge.cache.path = None
    settings.judge.limits.rpm = None
    settings.judge.limits.tpm = None
    settings.metrics.names = metrics
    return settings


def compare(source: Path, target: Path, settings: Settings) -> dict[str, tuple[float, float]]:
    """(estimated, actual) requests, prompt and completion tokens and cost of one run."""
    estimated = estimate_input(str(source), settings)
    tally, prices = estimated.total, estimated.prices
    cost = prices.cost(tally, batch=False) or 0.0
    real = asyncio.run(score_file(str(source), str(target), settings, progress=False)).total
    return {
        "requests": (tally.chat_requests, real.requests),
        "prompt": (tally.prompt_tokens, real.prompt_tokens),
        "completion": (tally.completion_tokens, real.completion_tokens),
        "cost": (cost, real.cost_usd or 0.0),
    }


def error(pair: tuple[float, float]) -> str:
    estimated, actual = pair
    return f"{estimated / actual - 1:+.1%}" if actual else "n/a"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=200)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    args = parser.parse_args()
    table = sized_rows([args.data / name for name in VALIDATION_FILES], args.rows, seed=2, half=1)
    print(f"{table.num_rows} WikiEval-sized rows from {', '.join(VALIDATION_FILES)}")
    print(
        f"{'metric':<20}{'requests':>10}{'prompt tok':>22}{'compl. tok':>22}{'cost USD':>24}"
        "   (estimate/actual-1)"
    )
    with tempfile.TemporaryDirectory() as folder, test_judge_process() as url:
        source = Path(folder) / "rows.parquet"
        pq.write_table(table, source)
        runs: list[tuple[str, tuple[str, ...]]] = [(m, (m,)) for m in DEFAULT_METRICS]
        runs.append(("all three", tuple(DEFAULT_METRICS)))
        for label, metrics in runs:
            figures: dict[str, Any] = compare(
                source, Path(folder) / f"{label}.parquet", settings_for(url, metrics)
            )
            req, prompt, completion, cost = (
                figures[k] for k in ("requests", "prompt", "completion", "cost")
            )
            print(
                f"{label:<20}{error(req):>10}"
                f"{f'{prompt[1]:,} {error(prompt)}':>22}"
                f"{f'{completion[1]:,} {error(completion)}':>22}"
                f"{f'{cost[1]:.5f} {error(cost)}':>24}"
            )


if __name__ == "__main__":
    main()
