"""The API key in no log line at any level: `ragas-ops score -v` (DEBUG: the SDK's and the HTTP
stack's own records, headers included) against a gateway that reflects the key in every
reply's headers and body, and in its error messages (the test judge's `echo_key`)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pyarrow.parquet as pq
from ragas_ops_testing.judge_server import JudgeServer

from ragas_ops.samples import sample_interactions
from tests.integration.e2e.test_score_e2e import score_args
from tests.support import TEST_KEY


def key_pieces(key: str) -> list[str]:
    """The key and what identifies it without its prefix, as a reader would search a log."""
    bare = key.removeprefix("sk-")
    return [key, bare, bare.upper(), bare[-12:]]


def test_score_at_debug_writes_the_key_in_no_line_of_stderr(
    tmp_path: Path, start_judge_server: Callable[..., JudgeServer]
) -> None:
    # 429s with the key in their message make the judge log its retries, too
    server = start_judge_server(api_key=TEST_KEY, echo_key=True, rate_429=0.2, seed=4)
    source = tmp_path / "logs.parquet"
    pq.write_table(sample_interactions(6, seed=8), source)
    args = score_args(server, source, tmp_path / "out.parquet", tmp_path / "cache.sqlite", "-v")
    environ = {**os.environ, "OPENAI_API_KEY": TEST_KEY}
    done = subprocess.run(
        [sys.executable, "-m", "ragas_ops.cli", *args],
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

    assert done.returncode == 0, done.stderr[-2000:]
    stats = server.stats()
    assert stats["auth_failures"] == 0
    assert stats["injected"]["429"] > 0
    # the gateway's echo reached the logs: the HTTP stack's DEBUG headers are there, masked
    assert "x-echo-key" in done.stderr
    assert "[redacted]" in done.stderr
    lines = done.stderr.splitlines() + done.stdout.splitlines()
    # every reply's headers (the echo among them) were logged at DEBUG, masked
    replies = [line for line in lines if "HTTP Response: POST" in line]
    assert len(replies) >= stats["answered_by_endpoint"]["chat"] > 0
    for piece in key_pieces(TEST_KEY):
        assert not [line for line in lines if piece in line], piece
