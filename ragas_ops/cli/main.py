"""The `ragas-ops` command line."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ragas_ops.config import ConfigError, Settings, apply_mapping, load_settings
from ragas_ops.contract.inputs import ContractError
from ragas_ops.evaluation.cli import add_benchmark_parser
from ragas_ops.judge.base import JudgeFatalError, JudgeUnreachableError
from ragas_ops.storage import StorageError

EXIT_OK, EXIT_USAGE, EXIT_JUDGE, EXIT_UNREACHABLE = 0, 2, 3, 4
"""Exit codes: done; bad input or configuration; the judge refused (credentials, model,
quota); the judge endpoint never answered (nothing was written)."""


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    if arguments[:1] == ["test-judge"]:
        from ragas_ops.testing.judge_server import main as test_judge_main

        return int(test_judge_main(arguments[1:]))
    parser = _parser()
    options = parser.parse_args(arguments)
    logging.basicConfig(
        level=logging.DEBUG if options.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        return int(options.run(options))
    except (ConfigError, ContractError, StorageError, ValueError) as error:
        print(f"ragas-ops: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except JudgeUnreachableError as error:
        print(f"ragas-ops: the judge is unreachable, stopping: {error}", file=sys.stderr)
        return EXIT_UNREACHABLE
    except JudgeFatalError as error:
        print(f"ragas-ops: the judge cannot be used, stopping: {error}", file=sys.stderr)
        return EXIT_JUDGE
    except KeyboardInterrupt:
        print("ragas-ops: interrupted; no output was written", file=sys.stderr)
        return 130


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ragas-ops",
        description="Reference-free evaluation of RAG interactions (the RAGAS metrics).",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    score = commands.add_parser(
        "score",
        help="score a Parquet file or folder of logged interactions",
        description="Score logged RAG interactions. INPUT and OUTPUT are local paths, "
        "file:// or s3:// URIs; INPUT is a Parquet file or a folder of them.",
    )
    score.add_argument("input", metavar="INPUT")
    score.add_argument("output", metavar="OUTPUT", help="the scored Parquet file to write")
    score.add_argument("--config", type=Path, help="TOML config file (see README, Configuration)")
    score.add_argument("--metrics", help="comma-separated, e.g. faithfulness,answer_relevance")
    score.add_argument("--model", help="judge chat model")
    score.add_argument("--embedding-model", help="embedding model for answer relevance")
    score.add_argument(
        "--base-url", help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8787/v1"
    )
    score.add_argument("--api-key-env", help="environment variable holding the API key")
    score.add_argument("--rpm", help="requests per minute budget ('none': no limit)")
    score.add_argument("--tpm", help="tokens per minute budget ('none': no limit)")
    score.add_argument("--concurrency", type=int, help="requests in flight at once")
    score.add_argument("--timeout", type=float, help="seconds before a request is retried")
    score.add_argument("--max-attempts", type=int, help="tries per request")
    score.add_argument("--structured-output", choices=["json_schema", "json_object", "none"])
    score.add_argument("--questions", type=int, help="questions generated for answer relevance")
    score.add_argument("--question-strategy", choices=["list", "sample"])
    score.add_argument(
        "--column",
        action="append",
        default=[],
        metavar="FIELD=COLUMN",
        help="map a contract field to your column, e.g. --column question=query (repeatable)",
    )
    score.add_argument("--cache", help="judge cache file ('none': in memory for this run only)")
    score.add_argument("--judge", choices=["openai", "local"], help="judge kind (judge.kind)")
    score.add_argument("--batch-rows", type=int, help="rows scored together")
    score.add_argument(
        "--retry-failed",
        action="store_true",
        default=None,
        help="ask again the requests whose cached reply was unusable (judge.retry_failed)",
    )
    score.add_argument("--sample-fraction", help=_SAMPLE_FRACTION_HELP)
    score.add_argument("--no-progress", action="store_true", help="no progress bar")
    score.add_argument("-v", "--verbose", action="store_true", help="log every retry")
    score.set_defaults(run=_run_score)
    _add_estimate_parser(commands)
    demo = commands.add_parser(
        "demo",
        help="run the nightly DAG on a generated local lake of several days (no API key needed)",
    )
    demo.add_argument("--folder", type=Path, default=Path("demo"), help="where to build it")
    demo.add_argument("--days", type=int, default=7, help="days of sample logs")
    demo.add_argument("--rows", type=int, default=200, help="interactions per day")
    demo.add_argument("-v", "--verbose", action="store_true")
    demo.set_defaults(run=_run_demo)
    add_benchmark_parser(commands)
    from ragas_ops.capture.openinference import add_import_parser

    add_import_parser(commands)
    commands.add_parser(
        "test-judge",
        help="serve the local OpenAI-compatible test double (see `ragas-ops test-judge --help`)",
        add_help=False,
    )
    return parser


_SAMPLE_FRACTION_HELP = (
    "share of rows to score, in (0, 1], chosen by a hash of the row id (pipeline.sample_fraction)"
)


def _add_estimate_parser(commands: Any) -> None:
    estimate = commands.add_parser(
        "estimate",
        help="estimate the requests, tokens and cost of a run, without calling the judge",
        description="Estimate what scoring would cost, in sync and in batch mode, from the "
        "real prompts built with each row's data. Nothing is sent and nothing is spent. "
        "Give INPUT (a Parquet file or folder, as for `score`), or --day / --from and --to "
        "for days of the pipeline's raw lake (pipeline.raw_uri).",
    )
    estimate.add_argument("input", metavar="INPUT", nargs="?")
    days = estimate.add_mutually_exclusive_group()
    days.add_argument("--day", help="one day of the raw lake, YYYY-MM-DD")
    days.add_argument("--from", dest="first", metavar="DAY", help="first day of a range")
    estimate.add_argument("--to", dest="last", metavar="DAY", help="last day of the range")
    estimate.add_argument("--raw-uri", help="the raw lake (pipeline.raw_uri)")
    estimate.add_argument("--config", type=Path, help="TOML config file")
    estimate.add_argument("--metrics", help="comma-separated, e.g. faithfulness,answer_relevance")
    estimate.add_argument("--model", help="judge chat model (for its price)")
    estimate.add_argument("--embedding-model", help="embedding model (for its price)")
    estimate.add_argument("--questions", type=int, help="questions generated for answer relevance")
    estimate.add_argument("--question-strategy", choices=["list", "sample"])
    estimate.add_argument(
        "--column", action="append", default=[], metavar="FIELD=COLUMN", help="as for score"
    )
    estimate.add_argument("--batch-rows", type=int, help="rows scored together")
    estimate.add_argument("--sample-fraction", help=_SAMPLE_FRACTION_HELP)
    estimate.add_argument("--json", type=Path, metavar="PATH", help="also write it as JSON")
    estimate.add_argument("-v", "--verbose", action="store_true")
    estimate.set_defaults(run=_run_estimate)


def settings_from_options(options: argparse.Namespace) -> Settings:
    """Defaults < config file < environment < command-line options."""
    settings = load_settings(options.config)
    given = vars(options)
    judge = {
        "model": given.get("model"),
        "embedding_model": given.get("embedding_model"),
        "base_url": given.get("base_url"),
        "api_key_env": given.get("api_key_env"),
        "max_concurrency": given.get("concurrency"),
        "timeout_seconds": given.get("timeout"),
        "max_attempts": given.get("max_attempts"),
        "structured_output": given.get("structured_output"),
        "rpm": given.get("rpm"),
        "tpm": given.get("tpm"),
        "cache_path": given.get("cache"),
        "kind": given.get("judge"),
        "retry_failed": given.get("retry_failed"),
    }
    pipeline = {
        "sample_fraction": given.get("sample_fraction"),
        "raw_uri": given.get("raw_uri"),
    }
    overrides: dict[str, Any] = {
        "judge": {key: value for key, value in judge.items() if value is not None},
        "metrics": {
            key: value
            for key, value in {
                "names": options.metrics,
                "answer_relevance_questions": options.questions,
                "question_strategy": options.question_strategy,
            }.items()
            if value is not None
        },
        "columns": dict(_column_pair(pair) for pair in options.column),
        "pipeline": {key: value for key, value in pipeline.items() if value is not None},
    }
    if options.batch_rows is not None:
        overrides["batch_rows"] = options.batch_rows
    apply_mapping(settings, overrides, source="command line")
    return settings


def _column_pair(pair: str) -> tuple[str, str]:
    field, separator, column = pair.partition("=")
    if not separator or not field or not column:
        raise ConfigError(f"--column expects FIELD=COLUMN, got {pair!r}")
    return field, column


def _run_score(options: argparse.Namespace) -> int:
    from ragas_ops.scoring.jobs import score_file

    settings = settings_from_options(options)
    outcome = asyncio.run(
        score_file(options.input, options.output, settings, progress=not options.no_progress)
    )
    print("\n".join(outcome.summary_lines()))
    return EXIT_OK


def _run_estimate(options: argparse.Namespace) -> int:
    from ragas_ops.estimate import estimate_days, estimate_input

    settings = settings_from_options(options)
    if options.last and not options.first:
        raise ValueError("--to needs --from")
    if options.first and not options.last:
        raise ValueError("--from needs --to")
    from_lake = options.day or options.first
    if bool(options.input) == bool(from_lake):
        raise ValueError("give either INPUT or --day / --from and --to (the raw lake)")
    if options.input:
        estimate = estimate_input(options.input, settings)
    else:
        first, last = (options.day, options.day) if options.day else (options.first, options.last)
        estimate = estimate_days(first, last, settings)
    print("\n".join(estimate.lines()))
    if options.json:
        options.json.write_text(json.dumps(estimate.to_dict(), indent=2) + "\n")
    return EXIT_OK


def _run_demo(options: argparse.Namespace) -> int:
    from ragas_ops.airflow.demo import run_demo

    return run_demo(options.folder, options.days, options.rows)


if __name__ == "__main__":
    sys.exit(main())
