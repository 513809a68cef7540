"""Two judges sharing one account over HTTP (one budget file, each its own process entry)
against the test judge's 1-second token bucket: they raise their buckets to what the server's
headers say is left less what it may still count of both judges' requests in flight
(`limits.headroom`), against a server counting the tokens used and one counting `max_tokens`
alike, with no more 429s than the pacing allows and every request answered; a judge whose
`tpm` is a share of the account keeps to it."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from ragas_ops.judge.engine.judge import EngineJudge
from ragas_ops.judge.engine.wire import JudgeRuntime
from ragas_ops.judge.limits.headroom import ENTRIES
from ragas_ops.judge.limits.shared_budget import budget_file
from ragas_ops.judge.openai.wire import openai_judge
from ragas_ops.metrics.faithfulness import STATEMENTS_PROMPT
from tests.support import settings_for

RPM, TPM = 600, 120_000  # a 1-second burst of 2,000 tokens: a handful of requests


def rows(judge: int, count: int) -> list[dict[str, str]]:
    return [
        {
            "question": f"When did bridge {judge}-{index} open, and who built it?",
            "answer": f"Bridge {judge}-{index} opened in {1900 + index}. "
            f"It was built by the company of engineer number {index}.",
        }
        for index in range(count)
    ]


def score_side_by_side(server: Any, folder: Path, *, tpm: int, count: int) -> list[EngineJudge]:
    """Two judges on one account (one budget file), each asking `count` rows at once."""
    settings = settings_for(server, folder, rpm=RPM, tpm=tpm, shared_budget="local", max_attempts=8)

    async def run() -> list[EngineJudge]:
        judges = [openai_judge(settings.judge, JudgeRuntime(), settings.prices) for _ in range(2)]
        try:
            await asyncio.gather(
                *(
                    judge.complete(STATEMENTS_PROMPT, row)
                    for index, judge in enumerate(judges)
                    for row in rows(index, count)
                )
            )
        finally:
            for judge in judges:
                await judge.aclose()
        return judges

    return asyncio.run(run())


def entries_left(folder: Path) -> dict[str, Any]:
    path = budget_file(str(folder / "cache" / "judge.sqlite"))
    assert path is not None
    with sqlite3.connect(path) as db:
        (state,) = db.execute("SELECT state FROM buckets").fetchone()
    return json.loads(state).get(ENTRIES, {})


@pytest.mark.parametrize("admission", ["usage", "max_tokens"])
def test_two_judges_pace_to_what_the_account_has_left(start_judge_server, tmp_path, admission):
    server = start_judge_server(
        rpm=RPM, tpm=TPM, burst_seconds=1.0, latency_ms=150, admission=admission
    )
    judges = score_side_by_side(server, tmp_path, tpm=TPM, count=24)

    stats = server.stats()
    assert stats["answered_by_endpoint"]["chat"] == 48  # every request answered
    assert stats["rate_limited"] <= 0.02 * stats["requests"]
    assert entries_left(tmp_path) == {}  # both stopped: nothing left in flight
    if admission == "usage":  # it counts less than the judges hold: the headers say so
        assert all(judge.events["paced_to_headroom"] > 0 for judge in judges)  # their own
        assert sum(raised_tokens(judge) for judge in judges) > 0  # the account's, in the file


def test_a_judge_given_a_share_of_the_account_keeps_to_it(start_judge_server, tmp_path):
    server = start_judge_server(
        rpm=RPM, tpm=TPM, burst_seconds=1.0, latency_ms=150, admission="usage"
    )
    judges = score_side_by_side(server, tmp_path, tpm=TPM // 2, count=6)

    assert server.stats()["answered_by_endpoint"]["chat"] == 12
    for judge in judges:
        assert judge.events["paced_to_headroom"] == 0
        assert raised_tokens(judge) == 0


def raised_tokens(judge: EngineJudge) -> float:
    budget = judge._admission.shared_budget
    assert budget is not None
    return budget.raised_tokens


def test_headers_of_a_minute_long_window_raise_nothing(start_judge_server, tmp_path):
    """As OpenAI's: remaining 119,000 of 120,000 says nothing of the 1-second burst that
    refuses; the judges pace as before, and the burst's 429s cost no row."""
    server = start_judge_server(
        rpm=RPM,
        tpm=TPM,
        burst_seconds=1.0,
        latency_ms=150,
        admission="usage",
        headers_window="minute",
    )
    judges = score_side_by_side(server, tmp_path, tpm=TPM, count=12)

    assert server.stats()["answered_by_endpoint"]["chat"] == 24
    for judge in judges:
        assert judge.events["paced_to_headroom"] == 0
        assert raised_tokens(judge) == 0
