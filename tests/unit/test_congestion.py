"""Which 429s slow the judge down: the provider's headers, else the share of 429s."""

from __future__ import annotations

import random

from ragas_ops.judge.limits.congestion import CongestionControl
from ragas_ops.judge.limits.provider import (
    RateLimitHeaders,
    cause_of_429,
    duration_seconds,
    rate_limit_headers,
)


def test_openai_reset_durations_are_read_in_seconds() -> None:
    assert duration_seconds("1s") == 1.0
    assert duration_seconds("6m0s") == 360.0
    assert duration_seconds("20ms") == 0.02
    assert duration_seconds("1h2m3.5s") == 3723.5
    assert duration_seconds("0.5") == 0.5
    assert duration_seconds("soon") is None
    assert duration_seconds("1s later") is None


def test_a_429_with_budget_left_is_not_ours_and_one_without_is() -> None:
    room = rate_limit_headers(
        {"x-ratelimit-remaining-requests": "40", "x-ratelimit-remaining-tokens": "9000"}
    )
    assert cause_of_429(room, tokens=2_000) == "not_ours"
    assert cause_of_429(room, tokens=20_000) == "ours"
    spent = RateLimitHeaders(remaining_requests=0, remaining_tokens=9000)
    assert cause_of_429(spent, tokens=10) == "ours"
    assert cause_of_429(RateLimitHeaders(), tokens=10) == "unknown"


def test_a_steady_share_of_429s_whatever_the_pace_stops_slowing_down() -> None:
    control = CongestionControl()
    draw = random.Random(7)
    slow_downs, restored = 0, []
    pace = 1.0
    for _ in range(3_000):
        if draw.random() < 0.2:  # 20% of attempts refused by a limit not ours, at any pace
            reaction, restore = control.refused("unknown", pace)
            slow_downs += reaction == "slow_down"
            pace = pace / 2 if reaction == "slow_down" else pace
        else:
            restore = control.answered()
        if restore is not None:
            restored.append(restore)
            pace = restore
    assert 0.15 < control.background < 0.3
    assert restored
    assert restored[0] == 1.0
    assert slow_downs <= 3  # the trials that learnt the background, then none
    assert pace == 1.0


def test_429s_that_fall_when_the_pace_falls_keep_the_judge_slowed() -> None:
    control = CongestionControl()
    draw = random.Random(3)
    pace = 1.0
    for _ in range(1_000):  # a third refused above 0.6 of the ceiling, none below
        if pace > 0.6 and draw.random() < 1 / 3:
            reaction, restore = control.refused("unknown", pace)
            pace = pace / 2 if reaction == "slow_down" else pace
        else:
            restore = control.answered()
        pace = restore if restore is not None else pace
    assert pace <= 0.6
    assert control.background < 0.1


def test_a_429_whose_headers_say_our_budget_is_spent_always_slows_down() -> None:
    control = CongestionControl()
    assert control.refused("ours", 1.0)[0] == "slow_down"
    assert control.refused("not_ours", 1.0)[0] == "keep_pace"


def test_room_in_a_window_longer_than_the_burst_says_nothing_of_the_burst() -> None:
    """OpenAI's headers describe a minute (149,984 of 150,000 left) while its burst refuses:
    the room they show is no proof that another limit refused the request."""
    minute = left_of(requests=59, tokens=149_984)
    assert cause_of_429(minute, tokens=2_000, burst_seconds=1.0) == "unknown"
    assert cause_of_429(minute, tokens=2_000) == "not_ours"  # no burst given: as before
    burst = left_of(requests=1, tokens=2_400)  # within a second of 60 RPM / 150k TPM
    assert cause_of_429(burst, tokens=2_000, burst_seconds=1.0) == "not_ours"
    assert cause_of_429(burst, tokens=3_000, burst_seconds=1.0) == "ours"


def left_of(requests: int, tokens: int) -> RateLimitHeaders:
    """Headers of an account of 60 RPM and 150k TPM with this much left."""
    return rate_limit_headers(
        {
            "x-ratelimit-limit-requests": "60",
            "x-ratelimit-remaining-requests": str(requests),
            "x-ratelimit-limit-tokens": "150000",
            "x-ratelimit-remaining-tokens": str(tokens),
        }
    )
