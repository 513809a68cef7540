"""The `ragas-ops` command line."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ragas_ops.benchmarking.cli import add_benchmark_parser
from ragas_ops.config import ConfigError, Settings, apply_mapping, load_settings
from ragas_ops.contract import ContractError
from ragas_ops.judge.base import JudgeFatalError
from ragas_ops.storage import StorageError

EXIT_OK, EXIT_USAGE, EXIT_JUDGE = 0, 2, 3


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
    score.add_argument("--no-progress", action="store_true", help="no progress bar")
    score.add_argument("-v", "--verbose", action="store_true", help="log every retry")
    score.set_defaults(run=_run_score)
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


def settings_from_options(options: argparse.Namespace) -> Settings:
    """Defaults < config file < environment < command-line options."""
    settings = load_settings(options.config)
    judge = {
        "model": options.model,
        "embedding_model": options.embedding_model,
        "base_url": options.base_url,
        "api_key_env": options.api_key_env,
        "max_concurrency": options.concurrency,
        "timeout_seconds": options.timeout,
        "max_attempts": options.max_attempts,
        "structured_output": options.structured_output,
        "rpm": options.rpm,
        "tpm": options.tpm,
        "cache_path": options.cache,
        "kind": options.judge,
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
    from ragas_ops.jobs import score_file

    settings = settings_from_options(options)
    outcome = asyncio.run(
        score_file(options.input, options.output, settings, progress=not options.no_progress)
    )
    print("\n".join(outcome.summary_lines()))
    return EXIT_OK


def _run_demo(options: argparse.Namespace) -> int:
    from ragas_ops.demo import run_demo

    return run_demo(options.folder, options.days, options.rows)


if __name__ == "__main__":
    sys.exit(main())
