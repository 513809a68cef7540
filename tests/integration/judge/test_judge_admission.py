"""Requests counted as the provider counts them at admission: the client's count of a request
equals the test server's (messages, the response_format schema, max_tokens x n), and
max_tokens follows what the output needs."""

from __future__ import annotations

import asyncio
import dataclasses
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from ragas_ops_testing.judge_server import JudgeServer

from ragas_ops.judge.engine.chat_request import (
    admission_tokens,
    chat_messages,
    chat_params,
    output_tokens_for,
)
from ragas_ops.judge.engine.wire import JudgeRuntime
from ragas_ops.judge.openai.shape import shape_for
from ragas_ops.judge.openai.wire import openai_judge
from ragas_ops.metrics.answer_relevance import QUESTION_SAMPLE_PROMPT
from ragas_ops.metrics.faithfulness import STATEMENTS_PROMPT
from tests.support import settings_for

SHORT = {"question": "When did it open?", "answer": "It opened in 1932."}
LONG = {"question": "When did it open?", "answer": "It opened in 1932, after years of work. " * 40}


def test_max_tokens_scales_with_the_input_and_stays_under_the_prompts_maximum() -> None:
    short, long = (
        output_tokens_for(STATEMENTS_PROMPT, SHORT),
        output_tokens_for(STATEMENTS_PROMPT, LONG),
    )
    assert 0 < short < long <= STATEMENTS_PROMPT.max_output_tokens
    assert short < STATEMENTS_PROMPT.max_output_tokens / 4
    huge = {**LONG, "answer": LONG["answer"] * 10}
    assert output_tokens_for(STATEMENTS_PROMPT, huge) == STATEMENTS_PROMPT.max_output_tokens


@pytest.mark.parametrize("model", ["test-judge", "gpt-5-mini"])
@pytest.mark.parametrize(
    ("prompt", "data", "n"),
    [(STATEMENTS_PROMPT, SHORT, 1), (QUESTION_SAMPLE_PROMPT, {"answer": "It opened in 1932."}, 3)],
)
def test_the_client_counts_a_request_as_the_server_does(
    start_judge_server: Callable[..., JudgeServer],
    tmp_path: Path,
    prompt: object,
    data: dict[str, str],
    n: int,
    model: str,
) -> None:
    """A reasoning model's `max_completion_tokens` holds its reasoning too: the TPM bucket
    counts it at admission, as the provider does."""
    server = start_judge_server(tpm=1_000_000)
    settings = settings_for(server, tmp_path, tpm=1_000_000, model=model)
    judge = openai_judge(settings.judge, JudgeRuntime(), settings.prices)
    shape = shape_for(settings.judge, Counter())
    messages = chat_messages(settings.judge.endpoint, prompt, data)  # type: ignore[arg-type]
    params = chat_params(settings.judge.endpoint, prompt, n, data, shape)  # type: ignore[arg-type]
    assert shape.reasoning_allowance() == (0 if model == "test-judge" else 24)

    async def ask() -> None:
        try:
            await judge.complete(prompt, data, n=n)  # type: ignore[arg-type]
        finally:
            await judge.aclose()

    asyncio.run(ask())
    counted = server.stats()["limiter_tokens"]
    assert params["max_tokens"] * n < counted  # the reservation is counted, and kept
    # The client's count, without its safety margin, is the server's within a few tokens.
    assert admission_tokens(messages, params) == pytest.approx(counted, abs=8)
    assert admission_tokens(messages, params, 0.05) >= counted


def test_a_reply_cut_at_its_budget_is_asked_again_with_room_and_never_scored_as_cut(
    start_judge_server: Callable[..., JudgeServer], tmp_path: Path
) -> None:
    server = start_judge_server()
    settings = settings_for(server, tmp_path)
    judge = openai_judge(settings.judge, JudgeRuntime(), settings.prices)
    tight = dataclasses.replace(STATEMENTS_PROMPT, output_budget=lambda data: 3)

    async def ask() -> list[str]:
        try:
            completion = await judge.complete(tight, LONG)
            return completion.outputs[0].statements
        finally:
            await judge.aclose()

    statements = asyncio.run(ask())
    assert statements  # parsed from the second, uncut reply
    assert judge.events["length_retry"] == 1
    assert judge.events["repair"] == 0
    assert server.stats()["requests"] == 2


def test_a_reply_whose_reasoning_ate_its_budget_is_asked_again_with_room_and_learnt(
    start_judge_server: Callable[..., JudgeServer], tmp_path: Path
) -> None:
    """A model no profile names, told to send max_completion_tokens, no temperature and no
    effort (the server's medium): the judge does not know it reasons, so the first reply's
    reasoning eats its budget (length, no content); it is asked again with room, and the
    next request holds room at once."""
    server = start_judge_server(model_aliases={"acme-reasoner": "gpt-5-mini"})
    settings = settings_for(
        server,
        tmp_path,
        model="acme-reasoner",
        limit_parameter="max_completion_tokens",
        send_temperature="no",
        reasoning_effort="provider",
    )
    judge = openai_judge(settings.judge, JudgeRuntime(), settings.prices)
    rows = [SHORT, {**SHORT, "answer": "The bridge opened in 1933. It is long."}]

    async def ask() -> list[list[str]]:
        try:
            return [
                (await judge.complete(STATEMENTS_PROMPT, row)).outputs[0].statements for row in rows
            ]
        finally:
            await judge.aclose()

    assert all(asyncio.run(ask()))
    assert judge.events["reasoning_cut_retry"] == 1
    assert judge.events["repair"] == 0
    stats = server.stats()
    assert stats["requests_by_endpoint"]["chat"] == 3  # the cut one, its retry, the second row
    assert stats["refused_by_param"] == {}
    assert judge.total.reasoning_tokens == stats["reasoning_tokens"]
