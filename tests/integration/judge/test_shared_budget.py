"""Two real `ragas-ops score` processes, each given the whole account's budget, against the
test server's account-wide RPM/TPM limit: taking from the account's buckets in budget.sqlite,
they stay within it."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from ragas_ops_testing.judge_server import JudgeServer

from ragas_ops.judge.engine.wire import JudgeRuntime
from ragas_ops.judge.openai.wire import openai_judge
from ragas_ops.metrics.faithfulness import STATEMENTS_PROMPT
from ragas_ops.samples import sample_interactions
from tests.support import TEST_KEY, settings_for

METRICS = ("faithfulness", "answer_relevance", "context_relevance")
RPM, TPM = 1200, 800_000


def score_at_once(
    server: JudgeServer,
    folder: Path,
    rows: int,
    shared: str,
    extra: dict[str, str] | None = None,
    caches: tuple[str, str] = ("cache", "cache"),
) -> tuple[list[Path], list[str]]:
    """Start two scoring processes together (each told the account's budget, its cache in
    the folder `caches` names); wait for both."""
    environ = {**os.environ, "OPENAI_API_KEY": TEST_KEY, "RAGAS_OPS_JUDGE_SHARED_BUDGET": shared}
    environ.update(extra or {})
    running, targets, logs = [], [], []
    for index in range(2):
        source, target = folder / f"logs-{index}.parquet", folder / f"scored-{index}.parquet"
        pq.write_table(sample_interactions(rows, seed=10 + index), source)
        targets.append(target)
        command = [
            sys.executable, "-m", "ragas_ops.cli", "score", str(source), str(target),
            "--base-url", server.base_url, "--model", "test-judge",
            "--embedding-model", "test-embedding",
            "--cache", str(folder / caches[index] / f"judge-{index}.sqlite"),
            "--rpm", str(RPM), "--tpm", str(TPM), "--no-progress",
        ]  # fmt: skip
        running.append(
            subprocess.Popen(command, env=environ, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        )
    for process in running:
        out, err = process.communicate(timeout=300)
        assert process.returncode == 0, err.decode()
        assert TEST_KEY not in (out + err).decode()
        logs.append(err.decode())
    return targets, logs


def test_two_processes_given_the_account_each_share_it_and_lose_no_row(
    start_judge_server, tmp_path
):
    server = start_judge_server(rpm=RPM, tpm=TPM, latency_ms=100)
    targets, _ = score_at_once(server, tmp_path, rows=30, shared="local")

    assert_within_the_account(server, targets)
    # One account, one set of buckets, in the file beside the cache.
    budget = tmp_path / "cache" / "budget.sqlite"
    with sqlite3.connect(budget) as db:
        assert db.execute("SELECT COUNT(*) FROM buckets").fetchone() == (1,)


def test_an_unusable_budget_file_falls_back_with_one_warning_and_loses_no_row(
    start_judge_server, tmp_path
):
    server = start_judge_server(rpm=RPM, tpm=TPM, latency_ms=100)
    (tmp_path / "cache" / "budget.sqlite").mkdir(parents=True)  # not a database: unusable
    targets, logs = score_at_once(server, tmp_path, rows=30, shared="local")
    for log in logs:
        assert log.count("shared judge budget is unavailable") == 1, log
        assert "static share, 1140 rpm and 760000 tpm" in log  # less rate_margin
    # Each alone at the account's budget: AIMD on the 429s keeps every row.
    assert_rows_scored(targets)


def assert_within_the_account(server: JudgeServer, targets: list[Path]) -> None:
    stats = server.stats()
    answered = stats["answered_by_endpoint"]["chat"] + stats["answered_by_endpoint"]["embeddings"]
    attempts = answered + stats["rate_limited"]
    assert answered > 150  # enough traffic to exceed the server's burst: the limit mattered
    assert stats["rate_limited"] <= 0.02 * attempts, stats["rate_limited_by"]
    assert_rows_scored(targets)


def assert_rows_scored(targets: list[Path]) -> None:
    for target in targets:
        rows = pq.read_table(target).to_pylist()
        assert len(rows) == 30
        for row in rows:
            for metric in METRICS:
                assert row[f"{metric}_status"] != "judge_unavailable", row[f"{metric}_reason"]


@pytest.mark.parametrize("model", ["test-judge", "gpt-5-mini"])
def test_a_judge_told_too_much_paces_to_the_stated_limit_and_answers_every_request(
    start_judge_server, tmp_path, model
):
    """One process believing it has 10x the account's rate: the first answer's
    `x-ratelimit-limit-requests` says 300, and it paces to that from then on. A model the
    judge knows (gpt-5-mini) sends its first burst before any answer: AIMD and Retry-After
    absorb those 429s; the test judge's unknown model is asked once alone first, and meets
    none. No request runs out of attempts."""
    server = start_judge_server(rpm=300, burst_seconds=1.0, latency_ms=20)
    settings = settings_for(
        server, tmp_path, rpm=3000, shared_budget="none", max_attempts=8, model=model
    )
    rows = [
        {"question": f"When did bridge {i} open?", "answer": f"Bridge {i} opened in {1900 + i}."}
        for i in range(40)
    ]

    async def run() -> tuple[int, Counter[str]]:
        judge = openai_judge(settings.judge, JudgeRuntime(), settings.prices)
        try:
            await asyncio.gather(*(judge.complete(STATEMENTS_PROMPT, row) for row in rows))
            return judge.rate_limit_slowdowns, judge.events
        finally:
            await judge.aclose()

    slowdowns, events = asyncio.run(run())
    stats = server.stats()
    assert stats["answered_by_endpoint"]["chat"] == 40
    assert events["limits_lowered_to_headers"] == 1
    assert events["retry_429"] == stats["rate_limited"]
    if model == "test-judge":
        assert stats["rate_limited"] == 0
    else:
        assert stats["rate_limited"] > 0
        assert slowdowns >= 1


def test_a_judge_told_too_much_keeps_to_the_limit_openais_headers_state(
    start_judge_server, tmp_path
):
    """OpenAI's headers describe a minute (remaining 59,000 of 60,000) while a 1-second burst
    refuses: their room says nothing of the burst, but their limit does. Told 3x the
    account, the judge paces to the stated limit (before: 679 of 739 attempts answered 429,
    every one taken for another limit's)."""
    server = start_judge_server(
        rpm=300, tpm=60_000, burst_seconds=1.0, latency_ms=50, headers_window="minute"
    )
    settings = settings_for(
        server, tmp_path, rpm=900, tpm=180_000, shared_budget="none", max_attempts=8
    )
    rows = [
        {"question": f"When did bridge {i} open?", "answer": f"Bridge {i} opened in {1900 + i}."}
        for i in range(60)
    ]

    async def run() -> Counter[str]:
        judge = openai_judge(settings.judge, JudgeRuntime(), settings.prices)
        try:
            await asyncio.gather(*(judge.complete(STATEMENTS_PROMPT, row) for row in rows))
            return judge.events
        finally:
            await judge.aclose()

    events = asyncio.run(run())
    stats = server.stats()
    assert stats["answered_by_endpoint"]["chat"] == 60
    assert events["limits_lowered_to_headers"] == 1
    assert stats["rate_limited"] <= 0.1 * stats["requests"]
