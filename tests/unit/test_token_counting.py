"""How the provider counts a chat request's completion tokens, and what the judge holds."""

from __future__ import annotations

from ragas_ops.judge.limits.provider import TokenCounting


def test_max_tokens_counting_holds_and_keeps_the_whole_reservation() -> None:
    counting = TokenCounting("max_tokens")
    counting.learn("statements", 400, 40)
    assert counting.at_admission("statements", 400) == 400  # learning changes nothing here
    assert counting.counted(400, 40) == 400  # kept, though 40 were used
    assert counting.counted(400, 450) == 450  # a longer reply costs more


def test_usage_counting_holds_all_of_max_tokens_until_a_reply_was_seen() -> None:
    counting = TokenCounting("usage")
    assert counting.at_admission("statements", 400) == 400
    assert counting.counted(400, 40) == 40  # the provider counts what was used


def test_usage_counting_follows_a_longer_reply_at_once_and_a_shorter_one_slowly() -> None:
    counting = TokenCounting("usage")
    counting.learn("verdicts", 200, 50)  # first reply: a quarter
    assert counting.at_admission("verdicts", 200) == 50
    counting.learn("verdicts", 200, 150)  # three quarters: half-way up at once
    assert counting.at_admission("verdicts", 200) == 100
    counting.learn("verdicts", 200, 0)  # an empty one: 5% of the way down
    assert counting.at_admission("verdicts", 200) == 95
    assert counting.at_admission("questions", 200) == 200  # each prompt learns apart


def test_usage_counting_never_holds_more_than_max_tokens() -> None:
    counting = TokenCounting("usage")
    counting.learn("statements", 100, 500)  # a provider ignoring max_tokens
    assert counting.at_admission("statements", 100) == 100
    counting.learn("statements", 0, 10)  # no completion asked: nothing to learn
    assert counting.at_admission("statements", 100) == 100
