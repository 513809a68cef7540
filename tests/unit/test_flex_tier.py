"""The small pieces of the flex tier: the deadline's two forms, the price per tier, a row's
tier from its requests', telling a capacity 429 from a rate-limit 429, and the tier a reply
names."""

from __future__ import annotations

import json
import random
from collections import Counter
from datetime import UTC, datetime

import httpx
import openai
import pytest

from ragas_ops.config import ConfigError, JudgeSettings, load_settings, updated_section
from ragas_ops.judge.base import Usage
from ragas_ops.judge.engine.spec import parse_flex_deadline
from ragas_ops.judge.engine.tiers import (
    TierPolicy,
    TierState,
    answered_tier,
    may_lack_capacity,
    seconds_to_deadline,
)
from ragas_ops.judge.engine.wire import BadReplyError
from ragas_ops.judge.openai.replies import read_chat_reply
from ragas_ops.judge.openai.wire import is_capacity_error
from ragas_ops.pricing import Price

AT_0530 = datetime(2026, 12, 1, 5, 30, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("06:30", ("utc_time", 23_400.0)),
        ("00:00", ("utc_time", 0.0)),
        ("5400s", ("after_seconds", 5400.0)),
        ("0.5s", ("after_seconds", 0.5)),
    ],
)
def test_a_deadline_is_a_utc_time_of_day_or_seconds_after_the_start(text, parsed):
    assert parse_flex_deadline(text) == parsed


@pytest.mark.parametrize("text", ["6.30", "24:00", "06:60", "6:3", "soon", "-5s", "5400", ""])
def test_a_deadline_in_another_form_is_refused_with_the_forms_accepted(text):
    with pytest.raises(ConfigError, match="HH:MM"):
        parse_flex_deadline(text)


def test_a_bad_deadline_is_refused_when_the_settings_are_read():
    with pytest.raises(ConfigError, match=r"FLEX_DEADLINE: .dawn. is no deadline"):
        load_settings(environ={"RAGAS_OPS_JUDGE_FLEX_DEADLINE": "dawn"})
    assert load_settings(environ={"RAGAS_OPS_JUDGE_FLEX_DEADLINE": "06:30"}).judge.flex.deadline


@pytest.mark.parametrize(
    ("deadline", "now", "seconds"),
    [
        ("06:30", AT_0530, 3600.0),  # ahead, later the same morning
        ("06:30", datetime(2026, 12, 1, 23, 0, tzinfo=UTC), 7.5 * 3600),  # tomorrow morning
        ("06:30", datetime(2026, 12, 1, 7, 0, tzinfo=UTC), 0.0),  # passed half an hour ago
        ("06:30", datetime(2026, 12, 1, 18, 29, tzinfo=UTC), 0.0),  # passed < 12 h ago
        ("06:30", datetime(2026, 12, 1, 18, 31, tzinfo=UTC), 11.98 * 3600),  # the next one
        ("600s", AT_0530, 600.0),
    ],
)
def test_seconds_to_the_deadline(deadline, now, seconds):
    assert seconds_to_deadline(deadline, now) == pytest.approx(seconds, abs=60)


def policy(clock: list[float], **settings) -> TierPolicy:
    """The policy of the `[judge]` settings given by their config keys."""
    judge = updated_section(JudgeSettings(), settings, "test")
    return TierPolicy(
        judge.flex, judge.endpoint, random.Random(0), Counter(), clock=lambda: clock[0], now=AT_0530
    )


def test_default_sends_no_tier_and_no_timeout_of_its_own():
    tiers = policy([0.0])
    assert tiers.tier_to_send(TierState()) is None
    assert tiers.options(None) == {}


def test_flex_falls_back_once_it_has_waited_and_never_waits_past_that():
    clock = [0.0]
    tiers = policy(clock, service_tier="flex", flex_fallback_after_seconds=10)
    state = TierState()
    assert tiers.options(tiers.tier_to_send(state)) == {"service_tier": "flex", "timeout": 900.0}
    assert 0.5 <= tiers.after_capacity_429(state) <= 1.0  # backoff from 1 s, equal jitter
    clock[0] = 9.0
    assert tiers.after_capacity_429(state, retry_after=5.0) == pytest.approx(1.0)
    clock[0] = 10.0
    assert tiers.tier_to_send(state) == "default"
    assert tiers.options("default") == {"service_tier": "default", "timeout": 60.0}
    assert not tiers.gives_up(state)


def test_the_deadline_sends_new_requests_to_the_standard_tier():
    clock = [0.0]
    tiers = policy(clock, service_tier="auto", flex_deadline="06:00")  # in 30 min
    assert tiers.tier_to_send(TierState()) == "auto"
    clock[0] = 1800.0
    assert tiers.deadline_passed()
    assert tiers.tier_to_send(TierState()) == "default"


def test_without_a_fall_back_capacity_429s_give_up_after_four_per_attempt():
    tiers = policy([0.0], service_tier="flex", flex_fallback_after_seconds=0, max_attempts=2)
    state = TierState()
    for _ in range(7):
        tiers.after_capacity_429(state)
        assert not tiers.gives_up(state)
    tiers.after_capacity_429(state)
    assert tiers.gives_up(state)
    assert tiers.tier_to_send(state) == "flex"  # it never falls back


def test_each_tier_has_its_price_and_an_unknown_tier_has_none():
    price = Price(1.0, 4.0)
    full = price.cost(1_000_000, 1_000_000)
    assert price.cost_at_tier("default", 1_000_000, 1_000_000) == full == 5.0
    assert price.cost_at_tier("flex", 1_000_000, 1_000_000) == 2.5
    assert Price(1.0, 4.0, flex_discount=0.4).cost_at_tier("flex", 1_000_000, 0) == 0.4
    assert price.cost_at_tier("priority", 10, 10) is None
    assert answered_tier(None, None) == "default"
    assert answered_tier(None, "flex") == "flex"
    assert answered_tier("default", "auto") == "default"


def test_a_rows_tier_is_the_one_its_requests_were_answered_on_or_mixed():
    row = Usage()
    assert row.service_tier is None  # nothing answered (cache hits only)
    row.add(Usage(requests=1, requests_by_tier={"flex": 1}))
    row.add(Usage(requests=1, requests_by_tier={"flex": 1}))
    assert row.service_tier == "flex"
    assert row.requests_by_tier == {"flex": 2}
    row.add(Usage(requests=1, requests_by_tier={"default": 1}))
    assert row.service_tier == "mixed"


def rate_limit_error(body: dict) -> openai.RateLimitError:
    request = httpx.Request("POST", "http://127.0.0.1/v1/chat/completions")
    response = httpx.Response(429, json=body, request=request)
    return openai.RateLimitError("429", response=response, body=body)


@pytest.mark.parametrize(
    "body",
    [
        {
            "error": {
                "message": "x",
                "type": "invalid_request_error",
                "code": "resource_unavailable",
            }
        },
        {"error": {"message": "Resource Unavailable. Retry later.", "type": None, "code": None}},
        {"message": "x", "type": "resource_unavailable"},
    ],
)
def test_a_capacity_429_is_told_from_a_rate_limit_429(body):
    assert is_capacity_error(rate_limit_error(body))


@pytest.mark.parametrize(
    "body",
    [
        {"error": {"message": "Rate limit reached for requests", "code": "rate_limit_exceeded"}},
        {"error": {"message": "You exceeded your quota", "code": "insufficient_quota"}},
        {"error": "a string"},
    ],
)
def test_a_rate_limit_or_quota_429_is_no_capacity_429(body):
    assert not is_capacity_error(rate_limit_error(body))


def test_a_reply_names_the_tier_that_served_it():
    chat = {"choices": [{"message": {"content": "{}"}, "finish_reason": "stop"}]}
    assert read_chat_reply("application/json", json.dumps(chat).encode()).service_tier is None
    named = {**chat, "service_tier": "flex"}
    assert read_chat_reply("application/json", json.dumps(named).encode()).service_tier == "flex"
    with pytest.raises(BadReplyError, match="service_tier"):
        read_chat_reply("application/json", json.dumps({**chat, "service_tier": 2}).encode())


def test_only_a_request_sent_on_a_flexible_tier_meets_capacity_429s():
    # On the standard tier a "resource unavailable" 429 is an ordinary 429 (attempts are used,
    # the limiter pauses): nothing to fall back to, so it must not wait without end.
    assert may_lack_capacity("flex")
    assert may_lack_capacity("auto")
    assert not may_lack_capacity("default")
    assert not may_lack_capacity(None)
