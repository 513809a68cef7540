"""Scoring benchmarks against the project's test judge server, run in its own process.

Prints, for docs/benchmarks.md:
1. requests and tokens per row, per metric;
2. throughput in rows/s with no latency and no limits;
3. with 400 ms latency and RPM/TPM limits on the server (and the same budget in the client):
   achieved rows/min against the bound min(RPM / requests per row, TPM / tokens per row), and
   the share of requests answered 429;
4. requests made by a rerun over the same cache (should be 0);
5. at a client budget equal to the server's limit, the server counting tokens at admission as
   OpenAI does (messages + the response_format schema + max_tokens x n, released by the usage):
   the share of attempts answered 429, the metric results lost, and rows/min against the bound.

Usage: python benchmarks/bench_scoring.py [--quick] [--only-limit ROWS]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from ragas_ops_testing.judge_process import server_stats, test_judge_process

from ragas_ops.config import Settings, apply_mapping
from ragas_ops.metrics import DEFAULT_METRICS
from ragas_ops.samples import sample_interactions
from ragas_ops.scoring.jobs import ScoreOutcome, score_file


def settings_for(base_url: str, cache: Path | None, **judge: Any) -> Settings:
    settings = Settings()
    settings.judge.endpoint.base_url = base_url
    settings.judge.endpoint.model = (
        "gpt-4o-mini"  # priced as gpt-4o-mini: the test server echoes it
    )
    settings.judge.endpoint.embedding_model = "text-embedding-3-small"
    settings.judge.cache.path = str(cache) if cache else None
    settings.judge.limits.rpm = None
    settings.judge.limits.tpm = None
    apply_mapping(settings, {"judge": judge}, source="settings_for")  # by their config keys
    return settings


def run(source: Path, target: Path, settings: Settings) -> ScoreOutcome:
    return asyncio.run(score_file(str(source), str(target), settings, progress=False))


def per_metric(source: Path, rows: int, work: Path) -> None:
    print(f"\n1. Requests and tokens per row, per metric ({rows} rows, no cache)")
    print(
        f"{'metric':<20}{'chat req':>10}{'emb req':>10}{'prompt tok':>12}{'compl tok':>11}{'emb tok':>9}"
    )
    with test_judge_process() as url:
        totals = [0.0] * 5
        for metric in DEFAULT_METRICS:
            settings = settings_for(url, None)
            settings.metrics.names = (metric,)
            usage = run(source, work / f"{metric}.parquet", settings).total
            figures = [
                usage.requests / rows,
                usage.embedding_requests / rows,
                usage.prompt_tokens / rows,
                usage.completion_tokens / rows,
                usage.embedding_tokens / rows,
            ]
            totals = [a + b for a, b in zip(totals, figures, strict=True)]
            print(
                f"{metric:<20}{figures[0]:>10.2f}{figures[1]:>10.3f}{figures[2]:>12.0f}{figures[3]:>11.0f}{figures[4]:>9.0f}"
            )
        print(
            f"{'all three':<20}{totals[0]:>10.2f}{totals[1]:>10.3f}{totals[2]:>12.0f}{totals[3]:>11.0f}{totals[4]:>9.0f}"
        )


def throughput(source: Path, rows: int, work: Path) -> None:
    print(f"\n2. Throughput, no latency, no limits ({rows} rows, three metrics, concurrency 64)")
    with test_judge_process() as url:
        cache = work / "throughput-cache.sqlite"
        outcome = run(
            source, work / "throughput.parquet", settings_for(url, cache, max_concurrency=64)
        )
        print(
            f"   {rows / outcome.seconds:.1f} rows/s ({outcome.seconds:.1f} s, "
            f"{outcome.total.requests + outcome.total.embedding_requests} requests)"
        )
        before = server_stats(url)["requests"]
        rerun = run(source, work / "rerun.parquet", settings_for(url, cache, max_concurrency=64))
        made = server_stats(url)["requests"] - before
        print(
            f"\n4. Cached rerun: {made} requests to the server, {rows / rerun.seconds:.0f} rows/s"
        )


def rate_limited(rows: int, rpm: int, tpm: int, work: Path) -> None:
    print(
        f"\n3. 400 ms latency, server limits {rpm} RPM / {tpm:,} TPM, client budget the same ({rows} rows)"
    )
    source = work / f"limited-{rpm}-{tpm}.parquet"
    pq.write_table(sample_interactions(rows, seed=9), source)
    with test_judge_process("--latency-ms", "400", "--rpm", str(rpm), "--tpm", str(tpm)) as url:
        settings = settings_for(url, None, rpm=rpm, tpm=tpm, max_concurrency=32)
        outcome = run(source, work / "limited.parquet", settings)
        stats = server_stats(url)
    usage = outcome.total
    # Answered requests: the row's attempts (usage.requests) include the ones answered 429.
    requests_per_row = sum(stats["answered_by_endpoint"].values()) / rows
    tokens_per_row = usage.tokens / rows
    bound = min(rpm / requests_per_row, tpm / tokens_per_row)
    achieved = rows / (outcome.seconds / 60)
    answered_429 = stats["responses"].get("429", 0)
    print(
        f"   requests/row {requests_per_row:.2f}, tokens/row {tokens_per_row:.0f} -> bound {bound:.1f} rows/min "
        f"({'RPM' if rpm / requests_per_row < tpm / tokens_per_row else 'TPM'}-bound)"
    )
    print(
        f"   achieved {achieved:.1f} rows/min = {achieved / bound:.1%} of the bound in {outcome.seconds:.0f} s; "
        f"429s: {answered_429} of {stats['requests']} requests ({answered_429 / stats['requests']:.2%})"
    )


def at_the_limit(rows: int, rpm: int, tpm: int, work: Path) -> None:
    print(
        f"\n5. Client budget = server limit ({rpm} RPM / {tpm:,} TPM, both with 1 s of burst), the "
        f"server counting like OpenAI at admission, 400 ms latency ({rows} rows, concurrency 32)"
    )
    source = work / f"at-limit-{rows}.parquet"
    pq.write_table(sample_interactions(rows, seed=9), source)
    target = work / "at-limit-scored.parquet"
    limits = ("--rpm", str(rpm), "--tpm", str(tpm), "--burst-seconds", "1")
    with test_judge_process("--latency-ms", "400", *limits) as url:
        settings = settings_for(url, None, rpm=rpm, tpm=tpm, max_concurrency=32)
        outcome = run(source, target, settings)
        stats = server_stats(url)
    scored = pq.read_table(target)
    lost = sum(
        status == "judge_unavailable"
        for metric in DEFAULT_METRICS
        for status in scored.column(f"{metric}_status").to_pylist()
    )
    answered = sum(stats["answered_by_endpoint"].values())
    # The bound: the server's own budgets over what a row really needs of them (answered
    # requests; tokens the bucket kept once reservations were released).
    bound = min(rpm / (answered / rows), tpm / (stats["limiter_tokens"] / rows))
    achieved = rows / (outcome.seconds / 60)
    answered_429 = stats["responses"].get("429", 0)
    print(
        f"   429s: {answered_429} of {stats['requests']} attempts "
        f"({answered_429 / stats['requests']:.2%}); metric results lost: {lost}; achieved "
        f"{achieved:.1f} rows/min = {achieved / bound:.1%} of the bound {bound:.1f} rows/min "
        f"({outcome.seconds:.0f} s)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="smaller runs, for a smoke test")
    parser.add_argument(
        "--only-limit", type=int, metavar="ROWS", help="run only point 5, with ROWS rows"
    )
    options = parser.parse_args()
    if options.only_limit:
        with tempfile.TemporaryDirectory() as folder:
            at_the_limit(options.only_limit, rpm=3000, tpm=3_000_000, work=Path(folder))
        return
    rows = 100 if options.quick else 400
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        source = work / "sample.parquet"
        pq.write_table(sample_interactions(rows, seed=1), source)
        per_metric(source, rows, work)
        throughput(source, rows, work)
        if options.quick:
            rate_limited(60, rpm=600, tpm=400_000, work=work)
        else:
            rate_limited(300, rpm=600, tpm=400_000, work=work)
            rate_limited(200, rpm=600, tpm=150_000, work=work)
        at_the_limit(200 if options.quick else 2000, rpm=3000, tpm=3_000_000, work=work)


if __name__ == "__main__":
    main()
