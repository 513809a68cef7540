"""A judge with no settings over HTTP against the test judge stating its limits as OpenAI does
(`x-ratelimit-*` of a minute-long window while a 1-second burst refuses): with no `rpm`/`tpm`
it paces to the limits the headers state, above or below its defaults (a provider that states
none: the defaults, said in the log); configured rates stay a share; `provider_counts = auto`
learns how the server counts from how `remaining` moves, and the next run starts from it.
No timing is asserted: what the judge learnt, and that 429s stay few and cost no request."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import pytest

from ragas_ops.config import Settings
from ragas_ops.judge.engine.judge import EngineJudge
from ragas_ops.judge.engine.wire import JudgeRuntime
from ragas_ops.judge.limits.account_buckets import Rates
from ragas_ops.judge.limits.spec import LimitsSpec
from ragas_ops.judge.limits.stated import read_stated
from ragas_ops.judge.openai.wire import openai_judge
from ragas_ops.metrics.faithfulness import STATEMENTS_PROMPT
from tests.support import settings_for

ACCOUNT_MODEL = "test-judge"


def no_rates(server: Any, folder: Path, **judge: Any) -> Settings:
    """Settings with `rpm`/`tpm` left at their defaults, as a user who set none has them."""
    settings = settings_for(server, folder, **judge)
    if "rpm" not in judge:
        settings.judge.limits.rpm = LimitsSpec().rpm
    if "tpm" not in judge:
        settings.judge.limits.tpm = LimitsSpec().tpm
    return settings


def rows(count: int, tag: str = "") -> list[dict[str, str]]:
    return [
        {
            "question": f"When did bridge {tag}{index} open, and who built it?",
            "answer": f"Bridge {tag}{index} opened in {1900 + index % 100}. It was built by "
            f"the company of engineer number {index}, whose firm also built {index + 7} others.",
        }
        for index in range(count)
    ]


def score(settings: Settings, count: int, tag: str = "") -> EngineJudge:
    async def run() -> EngineJudge:
        judge = openai_judge(settings.judge, JudgeRuntime(), settings.prices)
        try:
            asked = (judge.complete(STATEMENTS_PROMPT, row) for row in rows(count, tag))
            await asyncio.gather(*asked)
        finally:
            await judge.aclose()
        return judge

    return asyncio.run(run())


def account_of(settings: Settings) -> str:
    return f"{settings.judge.endpoint.base_url} {ACCOUNT_MODEL}"


@pytest.mark.parametrize(("rpm", "tpm"), [(1_200, 400_000), (300, 60_000)])
def test_with_no_rates_set_the_judge_paces_to_the_limits_the_headers_state(
    start_judge_server, tmp_path, rpm, tpm
):
    server = start_judge_server(
        rpm=rpm, tpm=tpm, burst_seconds=1.0, latency_ms=50, headers_window="minute"
    )
    settings = no_rates(server, tmp_path)
    judge = score(settings, 30)

    stats = server.stats()
    assert stats["answered_by_endpoint"]["chat"] == 30
    assert stats["rate_limited"] <= 0.02 * stats["requests"] + 1
    assert judge.events["limits_from_headers"] == 1  # said once
    assert judge._admission.stated == Rates(rpm, tpm)
    assert judge.current_rates == (pytest.approx(rpm * 0.95), pytest.approx(tpm * 0.95))
    kept = read_stated(settings.judge.cache.path, judge._admission._account)
    assert kept is not None
    assert (kept.rpm, kept.tpm) == (rpm, tpm)


def test_configured_rates_stay_a_share_of_what_the_headers_state(start_judge_server, tmp_path):
    server = start_judge_server(
        rpm=1_200, tpm=400_000, burst_seconds=1.0, latency_ms=50, headers_window="minute"
    )
    judge = score(no_rates(server, tmp_path, rpm=600, tpm=100_000), 12)

    assert judge.events["limits_from_headers"] == 0
    assert judge.events["limits_lowered_to_headers"] == 0
    assert judge.current_rates == (pytest.approx(570), pytest.approx(95_000))


def test_a_provider_stating_no_limits_keeps_the_defaults_and_says_so(
    start_judge_server, tmp_path, caplog
):
    server = start_judge_server(latency_ms=20)  # no limits: no x-ratelimit-* headers
    with caplog.at_level(logging.WARNING, logger="ragas_ops.judge.engine.admission"):
        judge = score(no_rates(server, tmp_path), 6)

    assert judge.events["limits_defaults_kept"] == 1
    assert judge.current_rates == (pytest.approx(475), pytest.approx(190_000))
    said = [record.getMessage() for record in caplog.records]
    assert any("stated no rate limits" in line and "500" in line for line in said)


@pytest.mark.parametrize("admission", ["usage", "max_tokens"])
def test_the_way_of_counting_is_learnt_from_minute_headers_and_kept_for_the_next_run(
    start_judge_server, tmp_path, admission
):
    server = start_judge_server(
        rpm=1_200,
        tpm=30_000,  # the tokens bind: the server's bucket is drained, its headers say how
        burst_seconds=1.0,
        latency_ms=400,
        admission=admission,
        headers_window="minute",
    )
    settings = no_rates(server, tmp_path)
    judge = score(settings, 40)

    stats = server.stats()
    assert stats["answered_by_endpoint"]["chat"] == 40  # every request answered
    # bounded (a loaded host delays a request onto the next one's heels now and then; the
    # 2% of the benchmarks is over hundreds of requests)
    assert stats["rate_limited"] <= 0.1 * stats["requests"]
    assert judge._admission.provider_counts == admission
    assert judge.events[f"provider_counts_{admission}"] >= 1
    kept = read_stated(settings.judge.cache.path, judge._admission._account)
    assert kept is not None
    assert kept.counts == admission

    # the next night starts decided
    following = openai_judge(settings.judge, JudgeRuntime(), settings.prices)
    assert following._admission.provider_counts == admission
    asyncio.run(following.aclose())


def test_estimate_prices_the_time_at_the_limits_a_recent_run_kept(start_judge_server, tmp_path):
    import pyarrow.parquet as pq

    from ragas_ops.estimate import estimate_input, judge_pace
    from ragas_ops.samples import sample_interactions

    server = start_judge_server(
        rpm=1_200, tpm=400_000, burst_seconds=1.0, latency_ms=20, headers_window="minute"
    )
    settings = no_rates(server, tmp_path)
    logs = tmp_path / "logs.parquet"
    pq.write_table(sample_interactions(20, seed=3), logs)
    before = estimate_input(str(logs), settings)
    assert judge_pace(settings, before.total).limits == "default"

    score(settings, 3)  # a run: the provider states its limits, kept beside the cache

    after = estimate_input(str(logs), settings)
    pace = judge_pace(settings, after.total)
    assert (pace.limits, pace.rpm, pace.tpm) == ("stated", 1_200, 400_000)
    assert any("as the provider stated them" in line for line in after.lines())
    assert after.to_dict()["pace"]["tpm"] == 400_000
    configured = no_rates(server, tmp_path, rpm=100, tpm=50_000)
    assert judge_pace(configured, after.total).limits == "configured"
