"""The flex service tier over real HTTP against the test server: requests name the tier, the
tier that answered is in every row and prices it (half the standard price), capacity 429s are
retried without using attempts or slowing the limiter, a request waiting too long falls back
to the standard tier, the deadline sends new requests there, and the cache ignores the tier."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from ragas_ops_testing.judge_server import JudgeServer, parse_config

from ragas_ops.cli.main import main
from ragas_ops.config import JudgeSettings
from ragas_ops.contract.status import Status
from ragas_ops.judge.base import JudgeUnavailableError
from ragas_ops.judge.cache import open_cache
from ragas_ops.judge.engine.chat_request import chat_cache_key, chat_messages, chat_params
from ragas_ops.judge.engine.judge import EngineJudge
from ragas_ops.judge.engine.spec import FlexSpec
from ragas_ops.judge.engine.wire import JudgeRuntime
from ragas_ops.judge.openai.wire import openai_judge
from ragas_ops.judge.spec import EndpointSpec
from ragas_ops.metrics import build_metrics
from ragas_ops.metrics.faithfulness import STATEMENTS_PROMPT
from ragas_ops.pricing import Price
from ragas_ops.scoring.scorer import Scorer
from tests.integration.e2e.test_score_e2e import score_args, write_sample
from tests.support import TEST_KEY, settings_for

PRICES = {"test-judge": Price(1.0, 4.0), "test-embedding": Price(0.0)}
PRICES_TOML = (
    '[judge]\nmodel_profile = "gpt-5"\n'
    '[prices."test-judge"]\ninput_per_million = 1.0\noutput_per_million = 4.0\n'
    '[prices."test-embedding"]\ninput_per_million = 0.0\n'
)
ROW = {"question": "When did the bridge open?", "answer": "The bridge opened in 1932. It is long."}
CHAT_METRICS = ("faithfulness", "context_relevance")  # chat requests only: all of them tiered


REASONING_MODELS = {"test-judge": "gpt-5-mini", "m": "gpt-5-mini"}
"""Flex is offered on reasoning models only: the test judge plays these names as gpt-5-mini,
and the judge asks them as the `gpt-5` profile says."""


@pytest.fixture
def start_judge_server(
    start_judge_server: Callable[..., JudgeServer],
) -> Callable[..., JudgeServer]:
    def start(**config: Any) -> JudgeServer:
        return start_judge_server(model_aliases=REASONING_MODELS, **config)

    return start


def judge_for(server: JudgeServer, tmp_path: Path, **judge: Any) -> EngineJudge:
    options = {"unreachable_after": 0, "model_profile": "gpt-5", **judge}
    settings = settings_for(server, tmp_path, **options)
    return openai_judge(settings.judge, JudgeRuntime(), PRICES, open_cache(settings.judge.cache))


def clean_table(rows: int) -> pa.Table:
    """Rows that every metric can score (no bad input): each sends its requests."""
    return pa.table(
        {
            "question": [f"When did bridge {i} open?" for i in range(rows)],
            "contexts": [
                [f"Bridge {i} opened in {1900 + i}. It spans the river."] for i in range(rows)
            ],
            "answer": [f"Bridge {i} opened in {1900 + i}. It is long." for i in range(rows)],
        }
    )


def score_rows(judge: EngineJudge, rows: int, metrics: tuple[str, ...] = CHAT_METRICS) -> Any:
    """Score `rows` clean interactions in-process; the scored rows as dicts."""

    async def run() -> pa.Table:
        try:
            scorer = Scorer(build_metrics(metrics), judge)
            return await scorer.score_table(clean_table(rows))
        finally:
            await judge.aclose()

    return asyncio.run(run()).to_pylist()


def assert_scored(rows: list[dict[str, Any]], metrics: tuple[str, ...] = CHAT_METRICS) -> None:
    """No row failed at the judge (sample rows that break the contract keep their status)."""
    seen = {row[f"{metric}_status"] for row in rows for metric in metrics}
    assert Status.OK.value in seen
    assert not {status for status in seen if status.startswith("judge_")}, seen


def tiers(rows: list[dict[str, Any]]) -> set[str | None]:
    """The tiers of the rows that sent requests (rows of bad input send none)."""
    return {row["judge_service_tier"] for row in rows if row["judge_requests"]}


def run_cli(server: JudgeServer, tmp_path: Path, name: str, *extra: str) -> list[dict[str, Any]]:
    config = tmp_path / "prices.toml"
    config.write_text(PRICES_TOML)
    source, target = tmp_path / "logs.parquet", tmp_path / f"{name}.parquet"
    if not source.exists():
        write_sample(source, 12)
    cache = tmp_path / f"{name}-cache.sqlite"
    args = score_args(server, source, target, cache, "--config", str(config), *extra)
    assert main(args) == 0
    return pq.read_table(target).to_pylist()


def test_a_flex_row_costs_half_a_default_row_for_the_same_tokens(
    start_judge_server: Callable[..., JudgeServer],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    server = start_judge_server()
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)

    standard = run_cli(server, tmp_path, "default")
    answered = server.stats()["answered_by_tier"]
    assert answered["none"] == server.stats()["answered_by_endpoint"]["chat"] > 0  # none sent
    server.reset_stats()
    assert "service tiers" not in "".join(capsys.readouterr())
    flex = run_cli(server, tmp_path, "flex", "--service-tier", "flex")
    stats = server.stats()
    summary = "".join(capsys.readouterr())
    answered = f"service tiers: flex {stats['answered_by_tier']['flex']:,} answered"
    assert answered + "; 0 fell back after waiting on flex, 0 after the deadline" in summary

    assert stats["answered_by_tier"]["flex"] == stats["answered_by_endpoint"]["chat"] > 0
    assert tiers(standard) == {"default"}
    assert tiers(flex) == {"flex"}
    for slow, fast in zip(flex, standard, strict=True):
        assert slow["judge_requests"] == fast["judge_requests"]
        if not fast["judge_requests"]:
            continue  # a row of bad input: no request, no cost
        assert (slow["prompt_tokens"], slow["completion_tokens"]) == (
            fast["prompt_tokens"],
            fast["completion_tokens"],
        )
        assert fast["cost_usd"] > 0
        assert slow["cost_usd"] == pytest.approx(fast["cost_usd"] / 2, rel=1e-12)
    flex_total = sum(row["cost_usd"] for row in flex)
    assert flex_total == pytest.approx(sum(row["cost_usd"] for row in standard) / 2)


def test_capacity_429s_are_retried_without_using_attempts_and_every_row_is_scored(
    start_judge_server: Callable[..., JudgeServer], tmp_path: Path
) -> None:
    server = start_judge_server(rate_flex_unavailable=0.5, seed=7)
    # One attempt per request: had a capacity 429 used it, half the rows would fail.
    judge = judge_for(server, tmp_path, service_tier="flex", max_attempts=1)

    rows = score_rows(judge, 16)

    assert_scored(rows)
    capacity = server.stats()["injected"]["flex_unavailable"]
    assert capacity >= 10
    assert judge.events["retry_flex_capacity"] == capacity
    assert judge.events["flex_fallback"] == 0
    assert tiers(rows) == {"flex"}
    # Every attempt is charged to its row, the refused ones too; only answers cost money.
    assert sum(row["judge_requests"] for row in rows) == server.stats()["requests"]
    assert judge.total.requests_by_tier == {"flex": server.stats()["answered_by_tier"]["flex"]}


def test_capacity_429s_do_not_cut_the_limiters_rate_but_rate_limit_429s_do(
    start_judge_server: Callable[..., JudgeServer], tmp_path: Path
) -> None:
    server = start_judge_server(rate_flex_unavailable=0.5, seed=3)
    judge = judge_for(server, tmp_path, service_tier="flex", rpm=60_000, max_attempts=1)
    score_rows(judge, 8)
    assert judge.events["retry_flex_capacity"] > 0
    assert judge.rate_limit_slowdowns == 0
    assert judge.current_rates[0] == pytest.approx(60_000 * 0.95)  # less rate_margin

    # The same share of rate-limit 429s (the account's pace) does slow it down.
    control = start_judge_server(rate_429=0.5, seed=3)
    paced = judge_for(control, tmp_path / "control", rpm=60_000, max_attempts=1)
    score_rows(paced, 8)
    assert paced.events["retry_429"] > 0
    assert paced.rate_limit_slowdowns > 0


def test_a_request_falls_back_to_the_standard_tier_after_waiting_on_flex(
    start_judge_server: Callable[..., JudgeServer], tmp_path: Path
) -> None:
    server = start_judge_server(rate_flex_unavailable=1.0, retry_after_seconds=0.05)
    judge = judge_for(server, tmp_path, service_tier="flex", flex_fallback_after_seconds=0.3)

    started = time.monotonic()
    rows = score_rows(judge, 6)
    elapsed = time.monotonic() - started

    assert_scored(rows)
    stats = server.stats()
    answered = stats["answered_by_endpoint"]["chat"]
    assert stats["answered_by_tier"]["default"] == answered  # sent explicitly as default
    assert judge.events["flex_fallback"] == answered
    assert judge.events["retry_flex_capacity"] == stats["injected"]["flex_unavailable"]
    assert stats["injected"]["flex_unavailable"] > answered  # retried on flex, then fell back
    assert elapsed >= 0.3
    assert tiers(rows) == {"default"}
    for row in rows:  # priced at the standard rate
        expected = PRICES["test-judge"].cost(row["prompt_tokens"], row["completion_tokens"])
        assert row["cost_usd"] == pytest.approx(expected)


def test_without_a_fall_back_persistent_capacity_429s_end_in_a_status(
    start_judge_server: Callable[..., JudgeServer], tmp_path: Path
) -> None:
    server = start_judge_server(rate_flex_unavailable=1.0, retry_after_seconds=0.001)
    judge = judge_for(server, tmp_path, service_tier="flex", flex_fallback_after_seconds=0)

    async def once() -> Any:
        try:
            return await judge.complete(STATEMENTS_PROMPT, ROW)
        finally:
            await judge.aclose()

    with pytest.raises(JudgeUnavailableError, match="flex capacity unavailable") as raised:
        asyncio.run(once())
    attempts = EndpointSpec().max_attempts
    # 4 x max_attempts free capacity 429s, then each uses one of the max_attempts.
    assert server.stats()["injected"]["flex_unavailable"] == 4 * attempts + attempts - 1
    assert raised.value.usage.requests == server.stats()["requests"]
    assert raised.value.usage.cost_usd == 0.0  # refused requests cost nothing
    assert server.stats()["answered_by_tier"]["default"] == 0  # it never fell back


def test_after_the_deadline_new_requests_go_to_the_standard_tier(
    start_judge_server: Callable[..., JudgeServer], tmp_path: Path
) -> None:
    # Faithfulness asks twice per row, one after the other: each first request is sent on
    # flex at once (a second before its answer), each second one after the 0.5 s deadline.
    server = start_judge_server(flex_latency_ms=1000)
    judge = judge_for(server, tmp_path, service_tier="flex", flex_deadline="0.5s")

    rows = score_rows(judge, 4, ("faithfulness",))

    assert_scored(rows, ("faithfulness",))
    answered = server.stats()["answered_by_tier"]
    assert answered["flex"] == 4
    assert answered["default"] == judge.events["flex_after_deadline"] == 4
    assert tiers(rows) == {"mixed"}
    for row in rows:  # half of a row at half the price, the other half at full price
        assert (
            0
            < row["cost_usd"]
            < PRICES["test-judge"].cost(row["prompt_tokens"], row["completion_tokens"])
        )


def test_a_deadline_already_passed_sends_everything_to_the_standard_tier(
    start_judge_server: Callable[..., JudgeServer], tmp_path: Path
) -> None:
    server = start_judge_server(flex_latency_ms=500)
    judge = judge_for(server, tmp_path, service_tier="flex", flex_deadline="0s")
    rows = score_rows(judge, 3)
    answered = server.stats()["answered_by_tier"]
    assert answered["flex"] == 0
    assert answered["default"] == judge.events["flex_after_deadline"] > 0
    assert tiers(rows) == {"default"}


def test_auto_is_priced_at_the_tier_the_reply_names(
    start_judge_server: Callable[..., JudgeServer], tmp_path: Path
) -> None:
    server = start_judge_server(auto_tier="flex")  # a project whose default tier is flex
    rows = score_rows(judge_for(server, tmp_path, service_tier="auto"), 3)
    assert tiers(rows) == {"flex"}
    for row in rows:
        full = PRICES["test-judge"].cost(row["prompt_tokens"], row["completion_tokens"])
        assert row["cost_usd"] == pytest.approx(full / 2)


def test_a_cached_answer_is_reused_whatever_the_tier(
    start_judge_server: Callable[..., JudgeServer], tmp_path: Path
) -> None:
    server = start_judge_server()
    first = score_rows(judge_for(server, tmp_path), 5)
    sent = server.stats()["requests"]
    again = score_rows(judge_for(server, tmp_path, service_tier="flex"), 5)

    assert server.stats()["requests"] == sent  # nothing asked again
    assert tiers(first) == {"default"}
    assert all(row["judge_requests"] == 0 and row["judge_cache_hits"] > 0 for row in again)
    assert {row["judge_service_tier"] for row in again} == {None}  # no tier answered
    assert [row["faithfulness_score"] for row in again] == [
        row["faithfulness_score"] for row in first
    ]


def test_the_cache_key_and_the_request_are_unchanged_for_default() -> None:
    # The tier goes with each attempt, never into the request's parameters or its key.
    keys = set()
    for tier in ("default", "flex", "auto"):
        settings = JudgeSettings(flex=FlexSpec(service_tier=tier))  # type: ignore[arg-type]
        params = chat_params(settings.endpoint, STATEMENTS_PROMPT, 1, ROW)
        assert "service_tier" not in params
        messages = chat_messages(settings.endpoint, STATEMENTS_PROMPT, ROW)
        keys.add(chat_cache_key("api.openai.com", STATEMENTS_PROMPT, params, messages))
    assert len(keys) == 1


def test_the_test_server_plays_the_flex_tier(start_judge_server: Any) -> None:
    import openai

    server = start_judge_server(flex_latency_ms=300, rate_flex_unavailable=0.0)
    client = openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0)
    messages = STATEMENTS_PROMPT.messages(ROW)
    started = time.monotonic()
    flex = client.chat.completions.create(
        model="m",
        messages=messages,  # type: ignore[arg-type]
        service_tier="flex",
    )
    assert time.monotonic() - started >= 0.3
    assert flex.service_tier == "flex"
    standard = client.chat.completions.create(model="m", messages=messages)  # type: ignore[arg-type]
    assert standard.service_tier is None  # none asked, none named

    server.update(rate_flex_unavailable=1.0, flex_latency_ms=0)
    with pytest.raises(openai.RateLimitError) as refused:
        client.chat.completions.create(
            model="m",
            messages=messages,  # type: ignore[arg-type]
            service_tier="flex",
        )
    assert refused.value.code == "resource_unavailable"
    assert "retry-after" in refused.value.response.headers
    with pytest.raises(openai.BadRequestError):
        client.chat.completions.create(
            model="m",
            messages=messages,  # type: ignore[arg-type]
            service_tier="cheapest",  # type: ignore[arg-type]
        )
    client.close()
    config = parse_config(
        ["--flex-latency-ms", "250", "--rate-flex-unavailable", "0.2", "--auto-tier", "flex"]
    )
    assert (config.flex_latency_ms, config.rate_flex_unavailable, config.auto_tier) == (
        250.0,
        0.2,
        "flex",
    )


def test_flex_requests_get_the_longer_timeout(
    start_judge_server: Callable[..., JudgeServer], tmp_path: Path
) -> None:
    server = start_judge_server(flex_latency_ms=600)
    slow = judge_for(
        server, tmp_path, service_tier="flex", timeout_seconds=0.2, flex_timeout_seconds=30
    )
    rows = score_rows(slow, 2, ("context_relevance",))
    assert_scored(rows, ("context_relevance",))
    assert slow.events["retry_timeout"] == 0

    # The same wait on the standard timeout times out (a fall-back gets the standard one).
    impatient = judge_for(
        server,
        tmp_path / "b",
        service_tier="flex",
        timeout_seconds=0.2,
        flex_timeout_seconds=0.2,
        max_attempts=2,
    )
    with pytest.raises(JudgeUnavailableError, match=r"timed out after 0.2s"):
        asyncio.run(impatient_once(impatient))


async def impatient_once(judge: EngineJudge) -> Any:
    try:
        return await judge.complete(STATEMENTS_PROMPT, ROW)
    finally:
        await judge.aclose()
