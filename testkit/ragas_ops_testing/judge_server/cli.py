"""The test judge's command line (`ragas-ops test-judge`)."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from collections.abc import Callable
from types import FrameType

from ragas_ops_testing.judge_server.config import (
    AUTO_TIERS,
    DEFAULT_CLI_PORT,
    JudgeServerConfig,
    validate_config,
)
from ragas_ops_testing.judge_server.server import JudgeServer


def _fraction(text: str) -> float:
    value = float(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"{text} is not a fraction in [0, 1]")
    return value


def _positive_int(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text} is not a positive integer")
    return value


def build_parser() -> argparse.ArgumentParser:
    """The `ragas-ops test-judge` argument parser."""
    parser = argparse.ArgumentParser(
        prog="ragas-ops test-judge",
        description="Serve a deterministic TEST DOUBLE of an LLM judge (OpenAI-compatible, "
        "lexical heuristics, not a real LLM) on 127.0.0.1, with optional injected faults.",
    )
    add = parser.add_argument
    add("--port", type=int, default=DEFAULT_CLI_PORT, help="port on 127.0.0.1; 0 picks a free one")
    add("--latency-ms", type=float, default=0.0, help="added to every request")
    add("--rpm", type=_positive_int, help="requests-per-minute limit")
    add("--tpm", type=_positive_int, help="tokens-per-minute limit")
    add("--burst-seconds", type=float, default=1.0, help="bucket capacity, in seconds of limit")
    add(
        "--admission",
        choices=("max_tokens", "usage"),
        default="max_tokens",
        help="tokens counted at admission: prompt + max_tokens (OpenAI) or the prompt, then usage",
    )
    add(
        "--headers-window",
        choices=("burst", "minute"),
        default="burst",
        help="what x-ratelimit-* describe: the burst bucket, or a minute's window (OpenAI)",
    )
    add("--rate-429", type=_fraction, default=0.0, help="fraction answered 429 anyway")
    add("--rate-5xx", type=_fraction, default=0.0, help="fraction answered 500/503")
    add("--rate-timeout", type=_fraction, default=0.0, help="fraction that hang first")
    add("--hang-seconds", type=float, default=30.0, help="how long a hanging request hangs")
    add("--rate-malformed", type=_fraction, default=0.0, help="fraction of malformed chat replies")
    add("--rate-html", type=_fraction, default=0.0, help="fraction answered 200 with HTML")
    add("--rate-text-plain", type=_fraction, default=0.0, help="fraction answered 200 text/plain")
    add("--rate-truncated-body", type=_fraction, default=0.0, help="fraction of cut JSON bodies")
    add("--rate-no-choices", type=_fraction, default=0.0, help="fraction of JSON with no choices")
    add("--rate-wrong-types", type=_fraction, default=0.0, help="fraction of JSON of wrong types")
    add("--rate-reset", type=_fraction, default=0.0, help="fraction reset after the headers")
    add("--retry-after", type=float, default=0.05, help="Retry-After of injected 429s, seconds")
    add(
        "--require-api-key-env",
        metavar="NAME",
        help="require `Authorization: Bearer <key>`, the key read from this environment variable",
    )
    add("--ignore-n", action="store_true", help="answer one choice whatever `n` asks")
    add(
        "--request-log",
        action="store_true",
        help="keep every chat and embeddings request (times, status, body) for GET /requests",
    )
    add(
        "--refusal-param-null",
        action="store_true",
        help="pass refusals on as some gateways do: param and code null, the parameter named "
        "only in the message",
    )
    add(
        "--echo-key",
        action="store_true",
        help="reflect the caller's key in every reply's headers and body, as a leaky gateway does",
    )
    add(
        "--prompt-cache-min-tokens",
        type=_positive_int,
        help="report cached prompt tokens for first messages this long, seen before (OpenAI: 1024)",
    )
    add("--seed", type=int, default=0, help="seed of the fault generator")
    add("--batch-seconds", type=float, default=0.2, help="how long a batch stays in progress")
    add("--batch-failure-rate", type=_fraction, default=0.0, help="fraction of batch lines 500")
    add("--batch-expire-after", type=_fraction, help="answer this fraction of a batch, expire")
    add("--batch-fail", action="store_true", help="every batch fails as a whole")
    add("--batch-max-requests", type=_positive_int, default=50_000, help="more lines fail a batch")
    add("--batch-max-bytes", type=_positive_int, default=200 * 1024 * 1024, help="larger fails")
    add("--flex-latency-ms", type=float, default=0.0, help="added to each flex-tier request")
    add(
        "--rate-flex-unavailable",
        type=_fraction,
        default=0.0,
        help="fraction of flex-tier requests answered 429 resource unavailable",
    )
    add(
        "--auto-tier",
        choices=AUTO_TIERS,
        default="default",
        help="the tier that serves service_tier=auto (the project's setting)",
    )
    return parser


def parse_config(argv: list[str] | None = None) -> JudgeServerConfig:
    """The server settings from command-line arguments (exits on bad arguments, like argparse)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    api_key = None
    if args.require_api_key_env:
        api_key = os.environ.get(args.require_api_key_env)
        if not api_key:
            parser.error(f"environment variable {args.require_api_key_env} is not set or empty")
    config = JudgeServerConfig(
        port=args.port,
        latency_ms=args.latency_ms,
        rpm=args.rpm,
        tpm=args.tpm,
        burst_seconds=args.burst_seconds,
        admission=args.admission,
        headers_window=args.headers_window,
        rate_429=args.rate_429,
        rate_5xx=args.rate_5xx,
        rate_timeout=args.rate_timeout,
        hang_seconds=args.hang_seconds,
        rate_malformed=args.rate_malformed,
        rate_html=args.rate_html,
        rate_text_plain=args.rate_text_plain,
        rate_truncated_body=args.rate_truncated_body,
        rate_no_choices=args.rate_no_choices,
        rate_wrong_types=args.rate_wrong_types,
        rate_reset=args.rate_reset,
        retry_after_seconds=args.retry_after,
        api_key=api_key,
        ignore_n=args.ignore_n,
        request_log=args.request_log,
        echo_key=args.echo_key,
        refusal_param_null=args.refusal_param_null,
        prompt_cache_min_tokens=args.prompt_cache_min_tokens,
        seed=args.seed,
        batch_seconds=args.batch_seconds,
        batch_failure_rate=args.batch_failure_rate,
        batch_expire_after=args.batch_expire_after,
        batch_fail=args.batch_fail,
        batch_max_requests=args.batch_max_requests,
        batch_max_bytes=args.batch_max_bytes,
        flex_latency_ms=args.flex_latency_ms,
        rate_flex_unavailable=args.rate_flex_unavailable,
        auto_tier=args.auto_tier,
    )
    try:
        validate_config(config)
    except ValueError as error:
        parser.error(str(error))
    return config


def main(argv: list[str] | None = None) -> int:
    """Serve the test double until Ctrl-C or SIGTERM; returns the exit code."""
    config = parse_config(argv)
    _register_criteria()
    server = JudgeServer(config)
    # Before the banner: whoever reads it may send SIGTERM at once (it was handled only once
    # the main thread got past the banner, and a quick SIGTERM killed the process instead).
    stop = threading.Event()
    restore = _stop_on_sigterm(stop)
    try:
        server.start()
    except OSError as error:
        restore()
        print(f"test judge: cannot listen on 127.0.0.1:{config.port}: {error}", file=sys.stderr)
        return 1
    print(
        "test judge: a deterministic TEST DOUBLE (lexical heuristics), not a real LLM, "
        f"serving {server.base_url}",
        file=sys.stderr,
        flush=True,
    )
    try:
        while not stop.wait(0.5):  # a timeout, so that Ctrl-C is noticed promptly
            pass
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
        restore()
    return 0


def _register_criteria() -> None:
    """Know the criteria of the config file RAGAS_OPS_CONFIG names (`[criteria.<name>]`), as
    the processes that score them do: their prompts are built from it."""
    from ragas_ops.config import settings_from_environment
    from ragas_ops.metrics.criteria import register_criteria

    register_criteria(settings_from_environment().criteria)


def _stop_on_sigterm(stop: threading.Event) -> Callable[[], None]:
    """Turn SIGTERM into a clean stop; returns what puts the previous handler back.

    Signal handlers can only be set from the main thread; elsewhere this does nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def on_sigterm(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous = signal.signal(signal.SIGTERM, on_sigterm)

    def restore() -> None:
        signal.signal(signal.SIGTERM, previous)

    return restore
