"""A graceful stop (issue 41): SIGTERM to `ragas-ops score` mid-run, over HTTP against a slow
test judge that logs every request. The command stops sending, lets the answers in flight land
in the cache, removes its temporary file, says what it kept and exits 143 within 10 s; the
rerun pays for no request that was answered before the stop."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from ragas_ops_testing.judge_server import JudgeServer

from ragas_ops.samples import sample_interactions
from tests.integration.e2e.test_score_e2e import score_args
from tests.support import TEST_KEY


def asked(entries: list[dict[str, Any]]) -> list[str]:
    """Each request's identity: its endpoint and body as JSON with sorted keys."""
    return [
        entry["endpoint"] + json.dumps(json.loads(entry["body"]), sort_keys=True)
        for entry in entries
    ]


def mid_run(stats: dict[str, Any]) -> bool:
    return bool(stats["answered_by_endpoint"]["chat"] >= 20 and stats["in_flight"] > 0)


def wait_for(condition: Callable[[], bool], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_sigterm_mid_run_keeps_the_answers_in_flight_and_the_rerun_pays_only_the_rest(
    tmp_path: Path, start_judge_server: Callable[..., JudgeServer]
) -> None:
    server = start_judge_server(latency_ms=1500, request_log=True)
    source = tmp_path / "logs.parquet"
    pq.write_table(sample_interactions(40, seed=12), source)
    out = tmp_path / "out" / "scored.parquet"
    out.parent.mkdir()
    cache = tmp_path / "cache.sqlite"
    args = score_args(server, source, out, cache)
    process = subprocess.Popen(
        [sys.executable, "-m", "ragas_ops.cli", *args],
        env={**os.environ, "OPENAI_API_KEY": TEST_KEY},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        # mid-run: some answers in, more in flight
        wait_for(lambda: mid_run(server.stats()), 60)
        stopped_at = time.time()
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=10)
        took = time.time() - stopped_at
    finally:
        if process.poll() is None:
            process.kill()
    first = server.requests()

    assert process.returncode == 143, err
    assert took < 10
    assert "Traceback" not in err
    (line,) = err.strip().splitlines()
    assert line.startswith("ragas-ops: stopped on request: the judge was asked nothing more")
    assert "landed in the cache" in line
    assert "not waited for" not in line  # 1.5 s answers land within the 5 s grace
    assert sorted(path.name for path in out.parent.iterdir()) == []  # no .tmp, no output
    answered_before = [e for e in first if e["status"] == 200 and e["ended_at"] <= stopped_at]
    # nothing sent once the process saw the signal (within tens of ms: requests already on
    # their way when it came reach the server a little later; measured up to 0.07 s)
    after_stop = [e for e in first if e["started_at"] > stopped_at + 0.5]
    assert answered_before
    assert after_stop == []

    server.update(latency_ms=0)
    server.reset_stats()
    done = subprocess.run(
        [sys.executable, "-m", "ragas_ops.cli", *args],
        env={**os.environ, "OPENAI_API_KEY": TEST_KEY},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert pq.read_metadata(out).num_rows == 40
    rerun = set(asked(server.requests()))
    paid_twice = [request for request in asked(answered_before) if request in rerun]
    answered_at_all = [request for request in asked(first) if request in rerun]
    assert rerun
    assert paid_twice == []
    assert answered_at_all == []  # the ones in flight at the stop landed too
