"""The test judge plays today's models: a classic one, reasoning models of each kind as strict
as OpenAI's on Chat Completions (what they refuse, in OpenAI's words and codes; hidden
reasoning tokens by effort, out of `max_completion_tokens` first, reported and billed), and a
retired one; `GET /v1/models/{id}` says when a model shuts down. Over HTTP, with urllib."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

import pytest
from ragas_ops_testing.judge_server import JudgeServer

from ragas_ops.metrics.faithfulness import STATEMENTS_PROMPT

DATA = {
    "question": "When did the Millau Viaduct open to traffic?",
    "answer": "The Millau Viaduct opened to traffic on 16 December 2004. It is in France.",
}


def post(server: JudgeServer, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(
        f"{server.base_url}/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def get(server: JudgeServer, path: str) -> tuple[int, dict[str, Any]]:
    try:
        with urllib.request.urlopen(f"{server.base_url}{path}", timeout=10) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def chat(model: str, **params: Any) -> dict[str, Any]:
    return {"model": model, "messages": STATEMENTS_PROMPT.messages(DATA), **params}


@pytest.fixture
def server(start_judge_server: Callable[..., JudgeServer]) -> JudgeServer:
    return start_judge_server()


def test_a_classic_model_takes_what_it_always_took(server: JudgeServer) -> None:
    status, reply = post(server, chat("gpt-4o-mini", max_tokens=300, temperature=0.0, n=2))
    assert status == 200
    assert [choice["finish_reason"] for choice in reply["choices"]] == ["stop", "stop"]
    assert reply["usage"]["completion_tokens_details"]["reasoning_tokens"] == 0


@pytest.mark.parametrize(
    ("model", "params", "code", "param", "words"),
    [
        ("gpt-5-mini", {"max_tokens": 300}, "unsupported_parameter", "max_tokens",
         "Use 'max_completion_tokens' instead."),
        ("gpt-5-mini", {"temperature": 0.0}, "unsupported_value", "temperature",
         "Only the default (1) value is supported."),
        ("gpt-5-mini", {"reasoning_effort": "none"}, "unsupported_value", "reasoning_effort",
         "Supported values are: 'minimal', 'low', 'medium', and 'high'."),
        ("gpt-5.4-mini", {"reasoning_effort": "minimal"}, "unsupported_value",
         "reasoning_effort", "Supported values are: 'none', 'low', 'medium', 'high', and 'xhigh'."),
        ("gpt-5.4-mini", {"reasoning_effort": "low", "temperature": 0.7}, "unsupported_value",
         "temperature", "does not support 0.7"),
        ("gpt-4o-mini", {"service_tier": "flex"}, "invalid_value", "service_tier", "flex"),
        ("gpt-4o-mini", {"reasoning_effort": "low"}, "unsupported_parameter",
         "reasoning_effort", "reasoning_effort"),
    ],
)  # fmt: skip
def test_a_model_refuses_what_openai_refuses_in_its_words(
    server: JudgeServer, model: str, params: dict[str, Any], code: str, param: str, words: str
) -> None:
    status, reply = post(server, chat(model, **params))
    assert status == 400
    error = reply["error"]
    assert (error["type"], error["code"], error["param"]) == ("invalid_request_error", code, param)
    assert words in error["message"]
    assert server.stats()["refused_by_param"] == {param: 1}


def test_temperature_is_taken_with_effort_none_on_the_newer_kind(server: JudgeServer) -> None:
    body = chat("gpt-5.4-mini", reasoning_effort="none", temperature=0.0)
    status, reply = post(server, body)
    assert status == 200
    assert reply["usage"]["completion_tokens_details"]["reasoning_tokens"] == 0


def test_reasoning_tokens_by_effort_are_reported_and_billed_as_output(
    server: JudgeServer,
) -> None:
    spent = {}
    for effort in ("minimal", "low", None, "high"):
        extra = {} if effort is None else {"reasoning_effort": effort}
        status, reply = post(server, chat("gpt-5-mini", max_completion_tokens=4000, **extra))
        assert status == 200
        usage = reply["usage"]
        reasoning = usage["completion_tokens_details"]["reasoning_tokens"]
        visible = reply["choices"][0]["message"]["content"]
        assert STATEMENTS_PROMPT.parse(DATA, visible).statements
        assert usage["completion_tokens"] > reasoning > 0  # counted in the output
        spent[effort or "medium (the default)"] = reasoning
    assert list(spent.values()) == sorted(spent.values())  # more effort, more tokens
    assert server.stats()["reasoning_tokens"] == sum(spent.values())


def test_reasoning_comes_out_of_the_budget_first(server: JudgeServer) -> None:
    """A budget the reasoning uses up: `length`, empty content, the budget billed."""
    status, reply = post(server, chat("gpt-5-mini", max_completion_tokens=20))
    assert status == 200
    [choice] = reply["choices"]
    assert (choice["finish_reason"], choice["message"]["content"]) == ("length", "")
    usage = reply["usage"]
    assert usage["completion_tokens"] == usage["completion_tokens_details"]["reasoning_tokens"]
    assert usage["completion_tokens"] == 20


def test_flex_is_taken_by_a_reasoning_model(server: JudgeServer) -> None:
    status, reply = post(server, chat("o4-mini", service_tier="flex"))
    assert (status, reply["service_tier"]) == (200, "flex")


def test_a_retired_model_is_not_found_and_says_so(server: JudgeServer) -> None:
    status, reply = post(server, chat("gpt-4.5-preview", max_tokens=300))
    assert status == 404
    assert reply["error"]["code"] == "model_not_found"
    assert get(server, "/models/gpt-4.5-preview")[0] == 404


def test_a_model_says_its_shutdown_date(start_judge_server: Callable[..., JudgeServer]) -> None:
    server = start_judge_server(shutdown_dates={"acme-judge": "2026-12-25"})
    assert get(server, "/models/gpt-5-mini") == (
        200,
        {
            "id": "gpt-5-mini",
            "object": "model",
            "created": 0,
            "owned_by": "ragas-ops-test-double",
            "shutdown_date": "2026-12-11",
        },
    )
    assert get(server, "/models/acme-judge")[1]["shutdown_date"] == "2026-12-25"
    assert "shutdown_date" not in get(server, "/models/test-judge")[1]


def test_an_unknown_gateway_model_is_played_as_a_known_one(
    start_judge_server: Callable[..., JudgeServer],
) -> None:
    server = start_judge_server(model_aliases={"acme-reasoner": "gpt-5.4-mini"})
    status, reply = post(server, chat("acme-reasoner", max_tokens=300))
    assert (status, reply["error"]["param"]) == (400, "max_tokens")
    status, reply = post(server, chat("acme-reasoner", max_completion_tokens=2000))
    assert (status, reply["model"]) == (200, "acme-reasoner")
    assert reply["usage"]["completion_tokens_details"]["reasoning_tokens"] > 0
