"""Every number a provider sends is read by one function that ignores what is not a finite
number in range (issue 49, finding 2): every IEEE oddity, in every place it arrives."""

from __future__ import annotations

import json

import pytest

from ragas_ops.judge.chat_completions.replies import BadReplyError, read_chat_reply, retry_after
from ragas_ops.judge.limits.provider import (
    MAX_COUNT,
    duration_seconds,
    provider_number,
    rate_limit_headers,
)

ODDITIES = [
    "inf",
    "-inf",
    "Infinity",
    "nan",
    "NaN",
    "-nan",
    "1e999",
    "-1e999",
    "1e308",
    "-1e20",
    "-1",
    "-0.5",
    "",
    "   ",
    "garbage",
    "0x10",
    "1_000",
    "12abc",
    "9" * 400,
    str(10**40),
    str(-(10**40)),
    float("inf"),
    float("-inf"),
    float("nan"),
    1e308,
    -1e20,
    10**40,
    -1,
    True,
    None,
    [1],
    {"n": 1},
]


@pytest.mark.parametrize("value", ODDITIES, ids=repr)
def test_an_oddity_is_no_number(value: object) -> None:
    assert provider_number(value, lowest=0, highest=MAX_COUNT, integer=True) is None
    assert provider_number(value, lowest=0.0, highest=86_400.0) is None


@pytest.mark.parametrize(
    ("value", "integer", "expected"),
    [
        ("42", True, 42),
        (" 42 ", True, 42),
        ("12.7", True, 12),
        ("1e3", True, 1000),
        ("+5", True, 5),
        (str(MAX_COUNT), True, MAX_COUNT),
        ("0", True, 0),
        ("0.25", False, 0.25),
        (7, False, 7.0),
        (0.5, False, 0.5),
    ],
)
def test_a_number_in_range_is_read(value: object, integer: bool, expected: float) -> None:
    got = provider_number(value, lowest=0, highest=MAX_COUNT, integer=integer)
    assert got == expected
    assert type(got) is (int if integer else float)


def test_one_above_the_range_is_ignored_not_clamped_to_a_wrong_value() -> None:
    assert provider_number(str(MAX_COUNT + 1), lowest=0, highest=MAX_COUNT) is None


@pytest.mark.parametrize("value", [v for v in ODDITIES if isinstance(v, str)], ids=repr)
def test_every_rate_limit_header_holding_an_oddity_is_unsaid(value: str) -> None:
    names = [
        f"x-ratelimit-{what}-{kind}"
        for what in ("limit", "remaining", "reset")
        for kind in ("requests", "tokens")
    ]
    said = rate_limit_headers(dict.fromkeys(names, value))

    assert said == rate_limit_headers({})
    assert retry_after({"retry-after": value, "retry-after-ms": value}) is None


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("1s", 1.0), ("6m0s", 360.0), ("20ms", 0.02), ("1h2m3.5s", 3723.5), ("2.5", 2.5)],
)
def test_durations_still_read(text: str, seconds: float) -> None:
    assert duration_seconds(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["99999999h", "25h", "1e308s", "inf", "-1s", "1s1s1s" * 20])
def test_a_duration_past_a_day_or_odd_is_unsaid(text: str) -> None:
    assert duration_seconds(text) is None


@pytest.mark.parametrize("count", ["1e308", "NaN", "Infinity", "-1", str(10**30), "1.5", "true"])
def test_a_replys_usage_out_of_range_is_a_bad_reply_not_a_crash(count: str) -> None:
    body = (
        '{"choices": [{"index": 0, "message": {"role": "assistant", "content": "{}"}, '
        f'"finish_reason": "stop"}}], "usage": {{"prompt_tokens": {count}, '
        '"completion_tokens": 1}}'
    ).encode()
    json.loads(body)  # valid JSON as Python reads it (NaN, Infinity included)

    with pytest.raises(BadReplyError, match=r"usage.prompt_tokens. is not a count"):
        read_chat_reply("application/json", body)
