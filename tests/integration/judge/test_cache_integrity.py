"""A cache that cannot lie (issue 41): an entry edited in place, in the local SQLite file or in
the shared object store (moto over HTTP), fails its digest and is asked again, with the score
of an honest run and a log line; a truncated cache file is set aside with one line and the
run goes on with a fresh one, no traceback."""

from __future__ import annotations

import logging
import os
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from ragas_ops_testing.judge_server import JudgeServer

from ragas_ops.cli.main import EXIT_OK, main
from ragas_ops.samples import sample_interactions
from tests.integration.e2e.test_score_e2e import score_args
from tests.support import TEST_KEY

METRICS = ("faithfulness", "answer_relevance", "context_relevance")
# A same-length edit inside a stored verdict: valid JSON still, and a supported statement
# becomes unsupported (faithfulness 1.0 -> 0.0 if it were believed).
YES, NO = '\\"verdict\\":\\"yes\\"', '\\"verdict\\":\\"no\\" '
BUCKET = "judge-cache-integrity"


@pytest.fixture
def logs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    path = tmp_path / "logs.parquet"
    pq.write_table(sample_interactions(8, seed=8), path)
    return path


def score(server: JudgeServer, logs: Path, cache: Path, name: str, *extra: str) -> Any:
    out = logs.parent / f"{name}.parquet"
    assert main(score_args(server, logs, out, cache, *extra)) == EXIT_OK
    return pq.read_table(out)


def assert_same_scores(first: Any, second: Any) -> None:
    for metric in METRICS:
        assert second.column(f"{metric}_score").equals(first.column(f"{metric}_score")), metric
        assert second.column(f"{metric}_status").equals(first.column(f"{metric}_status"))


def mismatch_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "fails its check" in r.getMessage()]


def test_an_edited_sqlite_entry_is_asked_again_and_scores_as_before(
    judge_server: JudgeServer, logs: Path, caplog: pytest.LogCaptureFixture
) -> None:
    cache = logs.parent / "cache" / "judge.sqlite"
    honest = score(judge_server, logs, cache, "honest")
    paid = judge_server.stats()["requests"]
    with sqlite3.connect(cache) as database:
        edited = database.execute(
            "UPDATE responses SET value = replace(value, ?, ?) WHERE instr(value, ?) > 0",
            (YES, NO, YES),
        ).rowcount
    assert edited > 0

    with caplog.at_level(logging.WARNING):
        rerun = score(judge_server, logs, cache, "rerun")

    assert judge_server.stats()["requests"] - paid == edited  # those, and only those
    assert_same_scores(honest, rerun)
    lines = mismatch_lines(caplog)
    assert len(lines) == edited
    assert str(cache) in lines[0]
    third = score(judge_server, logs, cache, "third")  # the entries were replaced
    assert judge_server.stats()["requests"] - paid == edited
    assert_same_scores(honest, third)


@pytest.fixture
def s3(start_s3: Callable[[], str]) -> Any:
    import boto3

    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    client = boto3.client("s3", endpoint_url=start_s3(), region_name="us-east-1")
    client.create_bucket(Bucket=BUCKET)
    return client


def test_an_edited_shared_object_is_asked_again_and_scores_as_before(
    judge_server: JudgeServer, logs: Path, s3: Any, caplog: pytest.LogCaptureFixture
) -> None:
    shared = ("--shared-cache", f"s3://{BUCKET}/prod")
    honest = score(judge_server, logs, logs.parent / "host-a" / "judge.sqlite", "a", *shared)
    paid = judge_server.stats()["requests"]
    pages = s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix="prod/")
    names = [item["Key"] for page in pages for item in page.get("Contents", [])]
    edited = 0
    for name in names:
        body = s3.get_object(Bucket=BUCKET, Key=name)["Body"].read()
        if name.endswith(".json") and YES.encode() in body:
            s3.put_object(Bucket=BUCKET, Key=name, Body=body.replace(YES.encode(), NO.encode()))
            edited += 1
        elif name.endswith(".f64") and edited == 1:  # one vector: a flipped byte of a value
            flipped = body[:-1] + bytes([body[-1] ^ 0x40])
            s3.put_object(Bucket=BUCKET, Key=name, Body=flipped)
            edited += 1
    assert edited > 2

    with caplog.at_level(logging.WARNING):
        host_b = score(judge_server, logs, logs.parent / "host-b" / "judge.sqlite", "b", *shared)

    assert judge_server.stats()["requests"] - paid == edited  # one embeddings request
    assert_same_scores(honest, host_b)
    assert len(mismatch_lines(caplog)) == edited
    assert f"s3://{BUCKET}/prod" in mismatch_lines(caplog)[0]
    # the answers asked again were written over the edited objects: a third host pays nothing
    score(judge_server, logs, logs.parent / "host-c" / "judge.sqlite", "c", *shared)
    assert judge_server.stats()["requests"] - paid == edited


def test_a_truncated_cache_file_is_set_aside_in_one_line_and_the_run_goes_on(
    judge_server: JudgeServer, logs: Path
) -> None:
    cache = logs.parent / "cache" / "judge.sqlite"
    honest = score(judge_server, logs, cache, "honest")
    paid = judge_server.stats()["requests"]
    assert paid > 0
    with sqlite3.connect(cache) as database:  # the file as the last process leaves it
        database.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    with cache.open("r+b") as handle:
        handle.truncate(cache.stat().st_size // 2)

    out = logs.parent / "rerun.parquet"
    done = subprocess.run(  # the command as a user runs it: its own stderr, its own logging
        [sys.executable, "-m", "ragas_ops.cli", *score_args(judge_server, logs, out, cache)],
        env={**os.environ, "OPENAI_API_KEY": TEST_KEY},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

    assert done.returncode == EXIT_OK, done.stderr
    assert "Traceback" not in done.stderr
    (line,) = done.stderr.splitlines()
    (aside,) = cache.parent.glob("judge.sqlite.unreadable-*[0-9]Z")
    assert f"{cache} cannot be read" in line
    assert f"set aside as {aside}" in line
    assert f"delete {aside.name}" in line
    # what was read before the damage showed passed its digests; the rest is asked again
    assert 0 < judge_server.stats()["requests"] - paid <= paid
    assert_same_scores(honest, pq.read_table(out))
