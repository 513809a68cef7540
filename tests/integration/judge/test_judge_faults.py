"""The judge meets the real world: every fault a gateway, a proxy or a provider produces, over
real HTTP against the test server, ends as a retry and, if it persists, a row status with a
reason; never a crash, never "bad input"; every attempt is charged to its row."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import openai
import pytest
from ragas_ops_testing.judge_server import JudgeServer

from ragas_ops.judge.base import JudgeOutputError, JudgeUnavailableError, Usage
from ragas_ops.judge.engine.judge import EngineJudge
from ragas_ops.judge.engine.wire import JudgeRuntime
from ragas_ops.judge.openai.transport import never_sent
from ragas_ops.judge.openai.wire import openai_judge
from ragas_ops.metrics.faithfulness import STATEMENTS_PROMPT
from tests.support import settings_for

ROW = {"question": "When did the bridge open?", "answer": "The bridge opened in 1932. It is long."}
ATTEMPTS = 3
MODELS = ("test-judge", "gpt-5-mini")
"""A classic model, and a reasoning one the test judge plays as strictly as OpenAI."""


def judge_for(server: JudgeServer, tmp_path: Path, **judge: Any) -> EngineJudge:
    options = {"max_attempts": ATTEMPTS, "unreachable_after": 0, **judge}
    settings = settings_for(server, tmp_path, **options)
    return openai_judge(settings.judge, JudgeRuntime(), settings.prices)


async def complete_once(judge: EngineJudge) -> Any:
    try:
        return await judge.complete(STATEMENTS_PROMPT, ROW)
    finally:
        await judge.aclose()


@pytest.mark.parametrize(
    ("fault", "kind"),
    [
        ("rate_html", "html"),
        ("rate_text_plain", "text"),
        ("rate_truncated_body", "truncated"),
        ("rate_no_choices", "missing_field"),
        ("rate_wrong_types", "wrong_type"),
    ],
)
def test_a_status_200_that_is_no_api_reply_is_retried_then_unavailable(
    start_judge_server: Callable[..., JudgeServer], tmp_path: Path, fault: str, kind: str
) -> None:
    server = start_judge_server(**{fault: 1.0})
    judge = judge_for(server, tmp_path)
    with pytest.raises(JudgeUnavailableError, match="not an API reply") as raised:
        asyncio.run(complete_once(judge))
    assert judge.events["retry_bad_reply"] == ATTEMPTS
    assert judge.events[f"bad_reply_{kind}"] == ATTEMPTS
    # The row is charged every attempt, and so is the run: both equal what the server received.
    received = server.stats()["requests_by_endpoint"]["chat"]
    assert raised.value.usage.requests == judge.total.requests == received == ATTEMPTS


@pytest.mark.parametrize(
    ("fault", "kind"),
    [
        ("rate_html", "html"),
        ("rate_no_choices", "missing_field"),
        ("rate_wrong_types", "wrong_type"),
    ],
)
def test_embeddings_meet_the_same_faults(
    start_judge_server: Callable[..., JudgeServer], tmp_path: Path, fault: str, kind: str
) -> None:
    server = start_judge_server(**{fault: 1.0})
    judge = judge_for(server, tmp_path)

    async def embed() -> Any:
        try:
            return await judge.embed(["a question", "another question"])
        finally:
            await judge.aclose()

    with pytest.raises(JudgeUnavailableError, match="not an API reply") as raised:
        asyncio.run(embed())
    assert judge.events[f"bad_reply_{kind}"] == ATTEMPTS
    received = server.stats()["requests_by_endpoint"]["embeddings"]
    assert raised.value.usage.embedding_requests == received == ATTEMPTS


def test_a_connection_reset_after_the_headers_is_retried(
    start_judge_server: Callable[..., JudgeServer], tmp_path: Path
) -> None:
    server = start_judge_server(rate_reset=1.0)
    judge = judge_for(server, tmp_path)
    with pytest.raises(JudgeUnavailableError, match="connection failed") as raised:
        asyncio.run(complete_once(judge))
    assert judge.events["retry_connection"] == ATTEMPTS
    assert raised.value.usage.requests == server.stats()["requests_by_endpoint"]["chat"]


def test_a_hang_past_the_timeout_is_retried(
    start_judge_server: Callable[..., JudgeServer], tmp_path: Path
) -> None:
    server = start_judge_server(rate_timeout=1.0, hang_seconds=5.0)
    judge = judge_for(server, tmp_path, timeout_seconds=0.3)
    with pytest.raises(JudgeUnavailableError, match="timed out") as raised:
        asyncio.run(complete_once(judge))
    assert judge.events["retry_timeout"] == ATTEMPTS
    assert raised.value.usage.requests == ATTEMPTS == server.stats()["requests"]


@pytest.mark.parametrize("model", MODELS)
def test_a_fault_that_passes_leaves_a_good_answer_and_every_attempt_counted(
    start_judge_server: Callable[..., JudgeServer], tmp_path: Path, model: str
) -> None:
    # Half the replies are gateway pages (seeded): the judge answers on a later attempt.
    server = start_judge_server(rate_html=0.5, seed=3)
    judge = judge_for(server, tmp_path, max_attempts=8, model=model)

    async def several() -> list[Any]:
        try:
            rows = [{**ROW, "answer": f"The bridge opened in {1900 + i}."} for i in range(12)]
            return [await judge.complete(STATEMENTS_PROMPT, row) for row in rows]
        finally:
            await judge.aclose()

    completions = asyncio.run(several())
    stats = server.stats()
    assert stats["injected"]["html"] > 0
    assert judge.events["bad_reply_html"] == stats["injected"]["html"]
    row_usage = Usage()
    for completion in completions:
        assert completion.output.statements
        row_usage.add(completion.usage)
    assert row_usage.requests == judge.total.requests == stats["requests_by_endpoint"]["chat"]
    assert row_usage.prompt_tokens == judge.total.prompt_tokens == stats["prompt_tokens"]
    assert row_usage.completion_tokens == stats["completion_tokens"]
    assert row_usage.reasoning_tokens == stats["reasoning_tokens"]
    assert (stats["reasoning_tokens"] > 0) == (model != "test-judge")


def test_a_failed_repair_keeps_the_first_replys_cost_on_the_row(
    start_judge_server: Callable[..., JudgeServer], tmp_path: Path
) -> None:
    server = start_judge_server(rate_malformed=1.0)
    judge = judge_for(server, tmp_path, model="gpt-4o-mini")
    with pytest.raises(JudgeOutputError) as raised:
        asyncio.run(complete_once(judge))
    usage, stats = raised.value.usage, server.stats()
    assert usage.requests == 2 == stats["requests_by_endpoint"]["chat"]  # reply and repair
    assert usage.prompt_tokens == stats["prompt_tokens"]
    assert usage.completion_tokens == stats["completion_tokens"]
    assert usage.cost_usd == pytest.approx(judge.total.cost_usd)
    assert usage.cost_usd is not None
    assert usage.cost_usd > 0


def test_the_test_judge_command_takes_every_bad_reply_fault() -> None:
    from ragas_ops_testing.judge_server import JudgeServerConfig, parse_config

    faults = {
        "html": "0.02",
        "text-plain": "0.01",
        "truncated-body": "0.02",
        "no-choices": "0.01",
        "wrong-types": "0.01",
        "reset": "0.01",
    }
    config = parse_config([part for k, v in faults.items() for part in (f"--rate-{k}", v)])
    assert (config.rate_html, config.rate_truncated_body, config.rate_reset) == (0.02, 0.02, 0.01)
    with pytest.raises(ValueError, match="add up to at most 1"):
        JudgeServer(JudgeServerConfig(rate_html=0.6, rate_reset=0.6))


def test_a_connection_never_made_is_retried_and_charges_no_request(
    start_judge_server: Callable[..., JudgeServer], tmp_path: Path
) -> None:
    server = start_judge_server()
    judge = judge_for(server, tmp_path)
    server.stop()  # the port refuses connections: no attempt reaches an endpoint
    with pytest.raises(JudgeUnavailableError, match="connection failed") as raised:
        asyncio.run(complete_once(judge))
    assert judge.events["retry_connection"] == ATTEMPTS
    assert raised.value.usage.requests == judge.total.requests == 0


@pytest.mark.parametrize("transport", ["httpx", "httpx2"])
def test_which_failures_never_left_this_machine(transport: str) -> None:
    httpx = pytest.importorskip(transport)  # the SDK's transport: httpx2, httpx before openai 2
    request = httpx.Request("POST", "http://127.0.0.1:1/v1/chat/completions")

    def failed(error_class: type[openai.APIConnectionError], cause: Exception) -> Exception:
        try:
            raise error_class(request=request) from cause
        except openai.APIConnectionError as error:
            return error

    assert never_sent(failed(openai.APIConnectionError, httpx.ConnectError("refused")))
    assert never_sent(failed(openai.APITimeoutError, httpx.ConnectTimeout("slow")))
    assert never_sent(failed(openai.APITimeoutError, httpx.PoolTimeout("busy")))
    # sent, then lost: the endpoint may have received (and billed) it
    assert not never_sent(failed(openai.APITimeoutError, httpx.ReadTimeout("hung")))
    assert not never_sent(failed(openai.APIConnectionError, httpx.ReadError("reset")))


def test_429s_use_no_attempt_until_the_patience_runs_out(
    start_judge_server: Callable[..., JudgeServer], tmp_path: Path
) -> None:
    """A 429 is the account's pace or another application's use of it: the request is asked
    again past `max_attempts` for `rate_limit_patience_seconds`, then its row is unavailable."""
    server = start_judge_server(rate_429=1.0, retry_after_seconds=0.05)
    judge = judge_for(server, tmp_path, max_attempts=1, rate_limit_patience_seconds=1.0)
    with pytest.raises(JudgeUnavailableError, match="429") as raised:
        asyncio.run(complete_once(judge))
    received = server.stats()["requests_by_endpoint"]["chat"]
    assert received > 4  # past max_attempts (and the 4 x max_attempts of old): 429s used none
    assert raised.value.usage.requests == received


@pytest.mark.parametrize("model", MODELS)
def test_a_steady_share_of_429s_costs_no_row_with_a_single_attempt(
    start_judge_server: Callable[..., JudgeServer], tmp_path: Path, model: str
) -> None:
    server = start_judge_server(rate_429=0.5, retry_after_seconds=0.01, seed=3)
    judge = judge_for(server, tmp_path, max_attempts=1, model=model)

    async def many() -> list[Any]:
        try:
            rows = [{**ROW, "question": f"When did bridge {i} open?"} for i in range(12)]
            return [await judge.complete(STATEMENTS_PROMPT, row) for row in rows]
        finally:
            await judge.aclose()

    answers = asyncio.run(many())
    assert len(answers) == 12
    assert server.stats()["injected"]["429"] > 0  # the 429s came, and cost no row
