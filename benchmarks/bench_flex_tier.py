"""The flex service tier against the standard one: the same rows, the same test judge server
(a separate process) playing OpenAI's flex tier, priced as gpt-5-mini (flex: the Batch price).

The server answers every request after `--latency-ms`; flex requests wait `--flex-latency-ms`
more, and `--rate-unavailable` of them get a 429 "resource unavailable" (with a Retry-After of
`--retry-after` seconds). Prints, for docs/flex-tier.md, for each run: chat requests answered
by tier, capacity 429s, fall-backs, cost in USD and wall time. The scores of both runs are
compared row by row: they must be the same (the tier changes the price, not the answer).

Usage: python benchmarks/bench_flex_tier.py [--rows N]
"""

from __future__ import annotations

import argparse
import asyncio
import time
from typing import Any

import pyarrow as pa
from ragas_ops_testing.judge_process import server_stats, test_judge_process

from ragas_ops.config import Settings, apply_mapping
from ragas_ops.judge.engine.judge import EngineJudge
from ragas_ops.judge.engine.wire import JudgeRuntime
from ragas_ops.judge.openai.wire import openai_judge
from ragas_ops.metrics import build_metrics
from ragas_ops.samples import sample_interactions
from ragas_ops.scoring.scorer import Scorer
from ragas_ops.secrets import Secret

METRICS = ("faithfulness", "answer_relevance", "context_relevance")


async def score(base_url: str, table: pa.Table, **judge: Any) -> tuple[pa.Table, EngineJudge]:
    settings = Settings()
    settings.judge.endpoint.base_url = base_url
    settings.judge.endpoint.model = "gpt-5-mini"
    settings.judge.endpoint.embedding_model = "text-embedding-3-small"
    settings.judge.cache.path = None
    settings.judge.limits.rpm = None
    settings.judge.limits.tpm = None
    settings.judge.shared_budget.mode = "none"
    apply_mapping(settings, {"judge": judge}, source="settings_for")  # by their config keys
    client = openai_judge(settings.judge, JudgeRuntime(Secret("benchmark")), settings.prices)
    try:
        scorer = Scorer(build_metrics(METRICS), client)
        return await scorer.score_table(table), client
    finally:
        await client.aclose()


def run(arguments: argparse.Namespace, label: str, **judge: Any) -> pa.Table:
    table = sample_interactions(arguments.rows, seed=5)
    options = [
        "--latency-ms",
        str(arguments.latency_ms),
        "--flex-latency-ms",
        str(arguments.flex_latency_ms),
        "--rate-flex-unavailable",
        str(arguments.rate_unavailable),
        "--retry-after",
        str(arguments.retry_after),
    ]
    with test_judge_process(*options) as base_url:
        started = time.monotonic()
        scored, client = asyncio.run(score(base_url, table, **judge))
        seconds = time.monotonic() - started
        stats = server_stats(base_url)
    tiers = scored.column("judge_service_tier").to_pylist()
    by_tier = {tier: tiers.count(tier) for tier in sorted(set(tiers), key=str)}
    total = client.usage_total()
    print(
        f"{label:<28} rows {arguments.rows:>4}  chat answered {dict(stats['answered_by_tier'])}"
        f"  capacity 429s {client.events['retry_flex_capacity']:>4}"
        f"  fall-backs {client.events['flex_fallback']:>3}"
        f"  after deadline {client.events['flex_after_deadline']:>3}"
        f"  rows by tier {by_tier}"
        f"  cost ${total.cost_usd:.5f}  wall {seconds:.1f} s"
    )
    return scored


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=200)
    parser.add_argument("--latency-ms", type=float, default=20)
    parser.add_argument("--flex-latency-ms", type=float, default=200)
    parser.add_argument("--rate-unavailable", type=float, default=0.1)
    parser.add_argument("--retry-after", type=float, default=0.5)
    parser.add_argument("--fallback-after", type=float, default=1.0)
    arguments = parser.parse_args()
    standard = run(arguments, "default")
    flex = run(
        arguments,
        "flex",
        service_tier="flex",
        flex_fallback_after_seconds=arguments.fallback_after,
    )
    deadline = run(
        arguments,
        "flex, deadline 2s",
        service_tier="flex",
        flex_fallback_after_seconds=arguments.fallback_after,
        flex_deadline="2s",
    )
    for other in (flex, deadline):
        for metric in METRICS:
            column = f"{metric}_score"
            assert other.column(column).to_pylist() == standard.column(column).to_pylist()
    print("scores: identical row by row in all runs")


if __name__ == "__main__":
    main()
