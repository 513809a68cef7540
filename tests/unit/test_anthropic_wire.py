"""Anthropic's wire, piece by piece: the Messages API body built from the engine's canonical
request, a reply read into the engine's values, what each error means, the rate-limit
headers, and the settings Anthropic refuses, refused at start."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from ragas_ops.config import JudgeSettings
from ragas_ops.judge.anthropic.provider import api_key_env, shape_for
from ragas_ops.judge.anthropic.wire import (
    AnthropicConnectionError,
    AnthropicShape,
    AnthropicStatusError,
    failure_of,
    message_body,
    rate_limits,
    read_message,
)
from ragas_ops.judge.engine.chat_request import chat_messages, chat_params
from ragas_ops.judge.engine.wire import BadReplyError
from ragas_ops.metrics.faithfulness import STATEMENTS_PROMPT
from ragas_ops.pricing import DEFAULT_PRICES
from ragas_ops.settings_fields import ConfigError

DATA = {"question": "When did it open?", "answer": "It opened in 1932."}
OFF = AnthropicShape("off", 1024, None)


def canonical(n: int = 1, structured: str = "json_schema") -> tuple[list[Any], dict[str, Any]]:
    settings = JudgeSettings()
    settings.endpoint.structured_output = structured  # type: ignore[assignment]
    messages = chat_messages(settings.endpoint, STATEMENTS_PROMPT, DATA)
    return messages, chat_params(settings.endpoint, STATEMENTS_PROMPT, n, DATA)


def test_the_body_has_a_cached_system_prompt_a_forced_tool_and_no_n_or_seed() -> None:
    messages, params = canonical(n=3)
    body = message_body("claude-haiku-5-5", messages, {**params, "seed": 2}, OFF, caching=True)
    assert body["system"] == [
        {"type": "text", "text": messages[0]["content"], "cache_control": {"type": "ephemeral"}}
    ]
    assert body["messages"] == [{"role": "user", "content": messages[1]["content"]}]
    assert body["max_tokens"] == params["max_tokens"]
    assert body["temperature"] == params["temperature"]
    (tool,) = body["tools"]
    assert tool["input_schema"] == STATEMENTS_PROMPT.json_schema
    assert body["tool_choice"] == {"type": "tool", "name": tool["name"]}
    assert not {"n", "seed", "response_format", "model_profile"} & set(body)


def test_with_thinking_no_forced_tool_and_no_temperature_are_sent() -> None:
    messages, params = canonical(structured="json_object")
    budget = message_body(
        "claude-sonnet-4-5", messages, params, AnthropicShape("budget", 2048, None), caching=False
    )
    assert budget["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert not {"temperature", "tools", "tool_choice"} & set(budget)
    assert "cache_control" not in budget["system"][0]
    adaptive = message_body(
        "claude-opus-5", messages, params, AnthropicShape("adaptive", 1024, "low"), caching=True
    )
    assert adaptive["thinking"] == {"type": "adaptive"}
    assert adaptive["output_config"] == {"effort": "low"}


def reply(**overrides: Any) -> bytes:
    payload: dict[str, Any] = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "hm", "signature": "s"},
            {"type": "tool_use", "id": "toolu_1", "name": "x", "input": {"statements": ["a"]}},
        ],
        "stop_reason": "tool_use",
        "usage": {
            "input_tokens": 40,
            "cache_creation_input_tokens": 300,
            "cache_read_input_tokens": 0,
            "output_tokens": 25,
        },
        **overrides,
    }
    return json.dumps(payload).encode()


def test_a_reply_is_read_into_the_answer_and_every_input_token_billed() -> None:
    read = read_message("application/json", reply())
    (choice,) = read.choices
    assert json.loads(choice.content) == {"statements": ["a"]}
    assert choice.finish_reason == "stop"
    assert read.usage.prompt_tokens == 340  # input_tokens leaves the cache's tokens out
    assert (read.usage.cache_write_tokens, read.usage.cached_prompt_tokens) == (300, 0)
    assert read.usage.completion_tokens == 25


@pytest.mark.parametrize(
    ("stop", "finish"), [("max_tokens", "length"), ("refusal", "content_filter")]
)
def test_stop_reasons_map_to_the_engines_finish_reasons(stop: str, finish: str) -> None:
    text = [{"type": "text", "text": "{"}]
    assert (
        read_message("", reply(stop_reason=stop, content=text)).choices[0].finish_reason == finish
    )


@pytest.mark.parametrize(
    ("body", "kind"),
    [
        (b"<html>bad gateway</html>", "not_json"),
        (reply(type="error"), "wrong_type"),
        (reply(usage={"input_tokens": -1}), "wrong_type"),
        (reply(content=[{"type": "image"}]), "wrong_type"),
    ],
)
def test_a_body_that_is_no_message_is_a_bad_reply(body: bytes, kind: str) -> None:
    with pytest.raises(BadReplyError) as raised:
        read_message("text/html", body)
    assert raised.value.kind == kind


@pytest.mark.parametrize(
    ("status", "error_type", "code", "kind"),
    [
        (429, "rate_limit_error", None, "rate_limited"),
        (429, "rate_limit_error", "enforced_spend_limit_reached", "quota_exhausted"),
        (402, "billing_error", None, "quota_exhausted"),
        (529, "overloaded_error", None, "server"),
        (500, "api_error", None, "server"),
        (401, "authentication_error", None, "credentials"),
        (403, "permission_error", None, "credentials"),
        (404, "not_found_error", None, "unknown_model"),
        (400, "invalid_request_error", None, "refused"),
        (413, "request_too_large", None, "refused"),
    ],
)
def test_each_error_means_what_anthropic_says(
    status: int, error_type: str, code: str | None, kind: str
) -> None:
    error = AnthropicStatusError(status, error_type, "m", {"retry-after": "7"}, code)
    failure = failure_of(error)
    assert failure is not None
    assert (failure.kind, failure.status, failure.retry_after) == (kind, status, 7.0)


def test_a_connection_never_made_is_no_request() -> None:
    failure = failure_of(AnthropicConnectionError("refused", timed_out=False, sent=False))
    assert failure is not None
    assert (failure.kind, failure.sent) == ("connection", False)
    assert failure_of(KeyError("a bug")) is None  # not the wire's: let through


def test_the_rate_limit_headers_read_the_most_restrictive_tokens_limit() -> None:
    now = datetime(2026, 12, 6, 5, 0, 0, tzinfo=UTC)
    headers = {
        "anthropic-ratelimit-requests-limit": "1000",
        "anthropic-ratelimit-requests-remaining": "998",
        "anthropic-ratelimit-requests-reset": "2026-12-06T05:00:03Z",
        "anthropic-ratelimit-input-tokens-limit": "80000",
        "anthropic-ratelimit-input-tokens-remaining": "79000",
        "anthropic-ratelimit-input-tokens-reset": "2026-12-06T05:00:01Z",
        "anthropic-ratelimit-tokens-limit": "16000",
        "anthropic-ratelimit-tokens-remaining": "15000",
        "anthropic-ratelimit-tokens-reset": "2026-12-06T05:00:30Z",
    }
    said = rate_limits(headers, now)
    assert (said.limit_requests, said.remaining_requests) == (1000, 998)
    assert said.reset_requests_seconds == pytest.approx(3.0)
    assert (said.limit_tokens, said.remaining_tokens) == (16000, 15000)
    assert said.reset_tokens_seconds == pytest.approx(30.0)
    # Without the combined tokens headers, the input tokens' stand in.
    input_only = {k: v for k, v in headers.items() if not k.startswith("anthropic-ratelimit-tok")}
    assert rate_limits(input_only, now).remaining_tokens == 79000
    assert rate_limits({}, now).said_anything is False


def anthropic_settings(**endpoint: Any) -> JudgeSettings:
    settings = JudgeSettings(kind="anthropic")
    settings.endpoint.model = "claude-haiku-5-5"
    for name, value in endpoint.items():
        setattr(settings.endpoint, name, value)
    return settings


def test_what_anthropic_refuses_is_refused_at_start() -> None:
    with pytest.raises(ConfigError, match="set a Claude model"):
        shape_for(JudgeSettings(kind="anthropic"))
    thinking = anthropic_settings()
    thinking.anthropic.thinking = "budget"
    with pytest.raises(ConfigError, match="refuses a forced tool"):
        shape_for(thinking)
    thinking.endpoint.structured_output = "json_object"
    with pytest.raises(ConfigError, match="takes only adaptive thinking"):
        shape_for(thinking)  # claude-haiku-5-5
    thinking.endpoint.model = "claude-sonnet-4-5"
    assert shape_for(thinking).reasoning_allowance() == 1024
    thinking.anthropic.thinking = "adaptive"
    with pytest.raises(ConfigError, match="takes only a thinking budget"):
        shape_for(thinking)


def test_the_key_is_anthropics_unless_the_settings_name_another() -> None:
    assert api_key_env(anthropic_settings()) == "ANTHROPIC_API_KEY"
    assert api_key_env(anthropic_settings(api_key_env="CLAUDE_KEY")) == "CLAUDE_KEY"


def test_cache_writes_and_hits_are_priced_apart() -> None:
    price = DEFAULT_PRICES["claude-haiku-5-5"]
    # 1M input of which 0.2M written to the cache and 0.5M read from it, 0.1M output.
    cost = price.cost(1_000_000, 100_000, 500_000, cache_write_tokens=200_000)
    assert cost == pytest.approx(0.3 * 0.10 + 0.2 * 0.125 + 0.5 * 0.01 + 0.1 * 0.50)
