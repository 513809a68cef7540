"""The `ragas-ops` command line."""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ragas_ops.cli.benchmark import add_benchmark_parser
from ragas_ops.cli.compare import add_compare_parser, shadow_estimate_lines
from ragas_ops.cli.options import ESTIMATE, SCORE, add_setting_flags, settings_from_options
from ragas_ops.config import ConfigError, Settings
from ragas_ops.contract.inputs import ContractError
from ragas_ops.judge.base import JudgeFatalError, JudgeUnreachableError
from ragas_ops.secrets import mask_log_records
from ragas_ops.storage import StorageError
from ragas_ops.testkit import (
    INSTALL_TEST_KIT,
    LOCAL_AIRFLOW,
    MissingTestKitError,
    has_test_kit,
    require_test_kit,
)

EXIT_OK, EXIT_USAGE, EXIT_JUDGE, EXIT_UNREACHABLE = 0, 2, 3, 4
"""Exit codes: done; bad input, configuration or location; the judge refused (credentials,
model, quota); the judge endpoint or a storage location never answered (nothing was
written); and 143, stopped by SIGTERM (answers in flight kept in the cache, nothing
written)."""


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    if arguments[:1] == ["test-judge"]:
        if not has_test_kit():  # a distribution of its own: not installed with ragas-ops
            print(f"ragas-ops: error: {INSTALL_TEST_KIT}", file=sys.stderr)
            return EXIT_USAGE
        from ragas_ops_testing.judge_server import main as test_judge_main

        return int(test_judge_main(arguments[1:]))
    try:
        # building the parser checks the flags that metrics' options add (a ConfigError)
        options = build_parser().parse_args(arguments)
        logging.basicConfig(
            level=logging.DEBUG if options.verbose else logging.WARNING,
            format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        )
        mask_log_records()  # the key, once a Secret holds it, in no record of any library
        return int(options.run(options))
    except (ConfigError, ContractError, StorageError, MissingTestKitError, ValueError) as error:
        print(f"ragas-ops: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except (JudgeFatalError, OSError) as error:
        return _stopped(error)
    except KeyboardInterrupt:
        print("ragas-ops: interrupted; no output was written", file=sys.stderr)
        return 130


def _stopped(error: JudgeFatalError | OSError) -> int:
    """The message and exit code of a run the judge or a location stopped. For a location
    (`StorageError`s, the locations that are wrong, are caught before): the operating system
    refusing a local path (it has an errno: no such folder, permission, disk full) is a bad
    location; a store that failed (S3 unreachable, refusing, timing out: pyarrow's errors
    carry no errno) may answer later."""
    if isinstance(error, JudgeUnreachableError):
        message, code = f"the judge is unreachable, stopping: {error}", EXIT_UNREACHABLE
    elif isinstance(error, JudgeFatalError):
        message, code = f"the judge cannot be used, stopping: {error}", EXIT_JUDGE
    else:
        message = f"error: storage failed, nothing was written: {error}"
        code = EXIT_USAGE if error.errno is not None else EXIT_UNREACHABLE
    print(f"ragas-ops: {message}", file=sys.stderr)
    return code


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ragas-ops",
        description="Reference-free evaluation of RAG interactions (the RAGAS metrics).",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    score = commands.add_parser(
        "score",
        help="score a log file or folder (Parquet, JSON Lines, CSV) of logged interactions",
        description="Score logged RAG interactions. INPUT and OUTPUT are local paths, "
        "file:// or s3:// URIs; INPUT is a log file (Parquet, JSON Lines or CSV) or a folder "
        "of them.",
    )
    score.add_argument("input", metavar="INPUT")
    score.add_argument("output", metavar="OUTPUT", help="the scored Parquet file to write")
    add_setting_flags(score, SCORE)
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
    _add_airflow_parser(commands)
    add_benchmark_parser(commands)
    add_compare_parser(commands)
    from ragas_ops.capture.openinference import add_import_parser

    add_import_parser(commands)
    from ragas_ops.cli.labels import add_labels_parser

    add_labels_parser(commands)
    from ragas_ops.cli.warehouse import add_warehouse_parser

    add_warehouse_parser(commands)
    from ragas_ops.cli.init import add_init_parser

    add_init_parser(commands)
    commands.add_parser(
        "test-judge",
        help="serve the local OpenAI-compatible test double (see `ragas-ops test-judge --help`)",
        add_help=False,
    )
    return parser


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
    add_setting_flags(estimate, ESTIMATE)
    estimate.add_argument("--json", type=Path, metavar="PATH", help="also write it as JSON")
    estimate.add_argument("-v", "--verbose", action="store_true")
    estimate.set_defaults(run=_run_estimate)


def _run_score(options: argparse.Namespace) -> int:
    from ragas_ops.scoring.jobs import score_file
    from ragas_ops.scoring.stop import EXIT_STOPPED, GracefulStop, ScoringStopped

    settings = settings_from_options(options)
    _check_key_or_local(settings)
    stop = GracefulStop()
    job = score_file(options.input, options.output, settings, progress=not options.no_progress)
    with stop.on_sigterm():  # Airflow's, a scheduler's or a user's stop: see scoring/stop.py
        try:
            outcome = asyncio.run(stop.run(job))
        except ScoringStopped as stopped:
            job.close()  # never started when the stop came first
            print(f"ragas-ops: {stopped}", file=sys.stderr)
            return EXIT_STOPPED
    print("\n".join(outcome.summary_lines()))
    return EXIT_OK


def _check_key_or_local(settings: Settings) -> None:
    """Without an API key, say every way to score: the key, the local judge, an endpoint."""
    endpoint = settings.judge.endpoint
    from ragas_ops.judge.factory import api_key_env, capabilities  # only when scoring

    can = capabilities(settings.judge)
    if not can.endpoint or not can.key_in_api_key_env or endpoint.base_url is not None:
        return
    variable = api_key_env(settings.judge)
    if os.environ.get(variable):
        return
    raise JudgeFatalError(
        f"no API key: set ${variable} to score with {settings.judge.kind}; or score on this "
        "machine, with no key and no network, with `--judge local` (the local judge: "
        "sentence embeddings and lexical evidence, not an LLM); or point --base-url at an "
        "OpenAI-compatible endpoint (a local test double: `ragas-ops test-judge`)"
    )


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
        estimate_for = functools.partial(estimate_input, options.input)
    else:
        first, last = (options.day, options.day) if options.day else (options.first, options.last)
        estimate_for = functools.partial(estimate_days, first, last)
    estimate = estimate_for(settings)
    print("\n".join(estimate.lines() + shadow_estimate_lines(settings, estimate_for)))
    if options.json:
        options.json.write_text(json.dumps(estimate.to_dict(), indent=2) + "\n")
    return EXIT_OK


def _run_demo(options: argparse.Namespace) -> int:
    require_test_kit(LOCAL_AIRFLOW)  # a distribution of its own: not installed with ragas-ops
    from ragas_ops_testing.local_airflow.demo import run_demo

    return run_demo(options.folder, options.days, options.rows)


def _add_airflow_parser(commands: Any) -> None:
    airflow = commands.add_parser(
        "airflow",
        help="a real Airflow on this machine with the nightly DAG (see docs/airflow-local.md)",
    )
    actions = airflow.add_subparsers(dest="action", required=True, metavar="ACTION")
    up = actions.add_parser(
        "up",
        help="start Airflow standalone with the DAG, its pools and a demo lake; print the URL",
    )
    up.add_argument(
        "--home",
        type=Path,
        default=None,
        help="AIRFLOW_HOME and lake (default .airflow; with --raw or --config: .airflow-own)",
    )
    up.add_argument("--port", type=int, default=8080, help="api-server port (if taken: a free one)")
    up.add_argument(
        "--judge",
        choices=["auto", "openai", "local", "test"],
        default="auto",
        help="auto: openai if OPENAI_API_KEY is set, else local if installed, else test",
    )
    up.add_argument("--days", type=int, default=7, help="days of sample logs in a new lake")
    up.add_argument("--rows", type=int, default=200, help="interactions per day")
    up.add_argument("--timeout", type=float, default=240, help="seconds to wait for Airflow")
    up.add_argument(
        "--raw",
        metavar="URI",
        help="your own logs (<URI>/dt=YYYY-MM-DD/*.parquet|jsonl|csv) instead of a demo lake",
    )
    up.add_argument(
        "--segments",
        metavar="A,B",
        help="your segment columns, comma-separated (with --raw; default: the config's, or none)",
    )
    up.add_argument(
        "--config",
        type=Path,
        metavar="FILE",
        help="a ragas-ops config file for the pipeline ([columns], [pipeline]...)",
    )
    down = actions.add_parser("down", help="stop the Airflow that `up` started")
    down.add_argument(
        "--home", type=Path, default=None, help="default: every home `up` started from here"
    )
    for action in (up, down):
        action.add_argument("-v", "--verbose", action="store_true")
        action.set_defaults(run=_run_airflow)


def _run_airflow(options: argparse.Namespace) -> int:
    require_test_kit(LOCAL_AIRFLOW)
    from ragas_ops_testing.local_airflow import standalone
    from ragas_ops_testing.local_airflow.processes import LauncherError

    try:
        if options.action == "down":
            return standalone.down(options.home)
        segments = options.segments
        own = standalone.OwnLogs(
            raw=options.raw,
            segments=None if segments is None else tuple(filter(None, segments.split(","))),
            config=options.config,
        )
        return standalone.up(
            options.home,
            port=options.port,
            judge=options.judge,
            days=options.days,
            rows=options.rows,
            timeout=options.timeout,
            own=own,
        )
    except LauncherError as error:
        print(f"ragas-ops airflow {options.action}: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
