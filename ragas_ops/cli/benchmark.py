"""`ragas-ops benchmark wikieval|begin`: the command line of the benchmarks."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from tqdm import tqdm

from ragas_ops.cli.options import BENCHMARK, add_setting_flags, settings_from_options
from ragas_ops.config import Settings
from ragas_ops.evaluation.results import RowResults
from ragas_ops.judge.base import Judge, JudgeIdentity, Usage


def add_benchmark_parser(commands: Any) -> None:
    """Add `benchmark` and its two subcommands to the main parser's subcommands."""
    benchmark = commands.add_parser(
        "benchmark", help="agreement of the metrics with human judgements (WikiEval, BEGIN)"
    )
    kinds = benchmark.add_subparsers(dest="benchmark", required=True, metavar="BENCHMARK")
    wikieval = kinds.add_parser(
        "wikieval", help="the paper's Table 1 on a WikiEval file (JSON lines or Parquet)"
    )
    wikieval.add_argument("file", type=Path, metavar="FILE")
    begin = kinds.add_parser(
        "begin", help="faithfulness as an attribution classifier on BEGIN dev/test files"
    )
    begin.add_argument("files", type=Path, nargs="+", metavar="FILE")
    perturb = kinds.add_parser(
        "perturb",
        help="labelled pairs built by changing good answers and contexts (sample logs, BEGIN)",
    )
    perturb.add_argument(
        "--begin", type=Path, nargs="*", default=[], metavar="FILE",
        help="BEGIN files whose question turns and attributable responses add pairs",
    )  # fmt: skip
    perturb.add_argument("--begin-rows", type=int, default=None, help="BEGIN rows to use")
    for parser, run in ((wikieval, _run_wikieval), (begin, _run_begin), (perturb, _run_perturb)):
        add_setting_flags(parser, BENCHMARK, columns=False)
        parser.add_argument(
            "--results", type=Path, help="per-row results (JSON lines; a rerun resumes from it)"
        )
        parser.add_argument("--json", type=Path, help="write the table as JSON to this file")
        parser.add_argument("--no-progress", action="store_true", help="no progress bar")
        parser.add_argument("-v", "--verbose", action="store_true")
        parser.set_defaults(run=run)


def benchmark_settings(options: argparse.Namespace) -> Settings:
    """Defaults < config file < environment < these options (the same flags as `score`'s)."""
    return settings_from_options(options)


def scoring_identity(judge: Judge, identity: JudgeIdentity) -> str:
    """What a stored result depends on: the judge, its rules (local judge) and every metric and
    prompt version. A rerun reuses stored rows only when all of them are the same, so a new
    rule or prompt never reports an old score."""
    from ragas_ops.metrics import ALL_PROMPTS, build_metrics

    metrics = build_metrics(["faithfulness", "answer_relevance", "context_relevance"])
    versions = [f"{metric.name}/v{metric.version}" for metric in metrics]
    versions += [prompt.id for prompt in ALL_PROMPTS]
    if identity.rules_version is not None:
        versions.append(identity.rules_version)
    return f"{judge.description} [{', '.join(versions)}]"


def _default_results(name: str) -> Path:
    return Path(".ragas-ops-cache") / "benchmarks" / f"{name}.jsonl"


def _spend(judge: Judge) -> str:
    total: Usage = judge.usage_total()
    cost = (
        "unknown (no price for a model in use)"
        if total.cost_usd is None
        else f"${total.cost_usd:.4f}"
    )
    return (
        f"requests: {total.requests:,} chat + {total.embedding_requests:,} embeddings; "
        f"tokens: {total.tokens:,} ({total.prompt_tokens:,} prompt, "
        f"{total.completion_tokens:,} completion, {total.embedding_tokens:,} embeddings); "
        f"cache hits: {judge.events['cache_hit']:,}; cost: {cost}"
    )


def _write_json(path: Path | None, payload: dict[str, Any]) -> None:
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def _run_wikieval(options: argparse.Namespace) -> int:
    from ragas_ops.evaluation.wikieval import load_wikieval, run_wikieval, table, table_lines

    rows = load_wikieval(options.file)
    return _run_benchmark(
        options, "wikieval", rows, score=run_wikieval, summarize=table, lines=table_lines
    )


def _run_begin(options: argparse.Namespace) -> int:
    from ragas_ops.evaluation.begin import load_begin, report, report_lines, run_begin

    rows = [row for path in options.files for row in load_begin(path)]
    return _run_benchmark(
        options, "begin", rows, score=run_begin, summarize=report, lines=report_lines
    )


def _run_perturb(options: argparse.Namespace) -> int:
    from ragas_ops.evaluation.perturb import (
        BEGIN_CASES,
        begin_checks,
        run_perturb,
        sample_checks,
        summary,
        summary_lines,
    )

    limit = BEGIN_CASES if options.begin_rows is None else options.begin_rows
    checks = [*sample_checks(), *begin_checks(options.begin, limit)]
    # The checks are rebuilt and rescored on every run (the judge's cache makes that cheap):
    # the results file lists this run's pairs only, for reading the ones that disagree.
    options.results = options.results or _default_results("perturb")
    options.results.unlink(missing_ok=True)
    return _run_benchmark(
        options, "perturb", checks, score=run_perturb, summarize=summary, lines=summary_lines
    )


def _run_benchmark(
    options: argparse.Namespace,
    name: str,
    rows: list[Any],
    *,
    score: Callable[..., Awaitable[list[dict[str, Any]]]],
    summarize: Callable[[list[dict[str, Any]]], dict[str, Any]],
    lines: Callable[[dict[str, Any], str], list[str]],
) -> int:
    """Score `rows` with the judge the options describe (resuming from the per-row results),
    print the summary with the spend, and write it as JSON when asked."""
    from ragas_ops.judge.factory import build_judge, judge_identity

    settings = benchmark_settings(options)
    judge = build_judge(settings)
    identity = scoring_identity(judge, judge_identity(settings.judge))
    results = RowResults(options.results or _default_results(name), identity)

    async def run() -> list[dict[str, Any]]:
        with tqdm(total=len(rows), unit="row", disable=options.no_progress, file=sys.stderr) as bar:
            try:
                return await score(rows, judge, results, bar.update)
            finally:
                await judge.aclose()

    summary = summarize(asyncio.run(run()))
    spend = _spend(judge)
    print(
        "\n".join([*lines(summary, judge.description), spend, f"per-row results: {results.path}"])
    )
    _write_json(options.json, {"judge": judge.description, **summary, "spend": spend})
    return 0
