"""Models the project does not list by name: profiles by family, refusals named only in a
gateway's message, shutdown dates the endpoint does not give, the successors' prices."""

from __future__ import annotations

from collections import Counter
from datetime import date

import pytest

from ragas_ops.config import JudgeSettings
from ragas_ops.judge.chat_completions.profiles import profile_for
from ragas_ops.judge.chat_completions.shape import RequestShape, refused_in_message
from ragas_ops.judge.openai.lifecycle import announced_shutdown
from ragas_ops.pricing import DEFAULT_PRICES, price_for, successor_of


@pytest.mark.parametrize(
    ("model", "profile"),
    [
        ("gpt-6.1-terra", "gpt-6"),
        ("gpt-6.1-sol", "gpt-6"),
        ("gpt-6-luna", "gpt-6"),
        ("gpt-5.6-terra", "gpt-6"),
        ("gpt-6.2-nova", "gpt-6"),  # a size OpenAI has not named yet: its version's family
        ("openai/gpt-6.1-terra", "gpt-6"),  # a gateway's provider prefix
        ("GPT-6.1-Terra", "gpt-6"),
        ("gpt-5.4-mini", "gpt-5.1"),
        ("gpt-5.2-codex", "gpt-5.1"),
        ("gpt-5-mini-2025-08-07", "gpt-5"),
        ("o3-pro", "o-series"),
        ("gpt-4o-mini", "classic"),
        ("gpt-7", "generic"),  # a version no family holds
        ("acme-thinker-2", "generic"),
    ],
)
def test_a_model_gets_its_familys_profile(model: str, profile: str) -> None:
    assert profile_for(model).name == profile


def test_the_gpt_6_family_reasons_from_none_to_max_with_a_temperature_only_at_none() -> None:
    profile = profile_for("gpt-6.1-terra")

    assert profile.efforts == ("none", "low", "medium", "high", "xhigh", "max")
    assert profile.lowest_effort == "none"
    assert profile.temperature == "with_effort_none"


@pytest.mark.parametrize(
    ("message", "named"),
    [
        (
            "Unsupported parameter: 'max_tokens' is not supported with this model. Use "
            "'max_completion_tokens' instead.",
            ("unsupported_parameter", "max_tokens"),
        ),
        (
            "Unsupported value: 'temperature' does not support 0.7 with this model. Only the "
            "default (1) value is supported.",
            ("unsupported_value", "temperature"),
        ),
        (
            "Unrecognized request argument supplied: reasoning_effort",
            ("unsupported_parameter", "reasoning_effort"),
        ),
        ("This model's maximum context length is 128000 tokens.", None),
    ],
)
def test_a_refused_parameter_is_read_from_openais_message(
    message: str, named: tuple[str, str] | None
) -> None:
    assert refused_in_message(message) == named


def test_a_shape_learns_the_parameter_a_message_names() -> None:
    shape = RequestShape(profile_for("acme"), "acme", JudgeSettings().model, Counter())
    code, param = refused_in_message("Unsupported parameter: 'max_tokens' is not supported.") or (
        "",
        "",
    )

    assert shape.learn(param, code, "")
    assert shape.fit({"max_tokens": 10}) == {"max_completion_tokens": 10}


def test_the_projects_own_shutdown_dates_when_the_endpoint_says_nothing() -> None:
    assert announced_shutdown("gpt-5-mini") == date(2026, 12, 11)
    assert announced_shutdown("gpt-5-nano-2025-08-07") == date(2026, 12, 11)
    assert announced_shutdown("o3") == date(2026, 12, 11)
    assert announced_shutdown("gpt-4o-mini-2024-07-18") == date(2027, 1, 14)
    assert announced_shutdown("gpt-5.4-mini") is None


def test_openais_replacements_are_the_successors_and_have_prices() -> None:
    assert successor_of("gpt-5-mini", DEFAULT_PRICES) == "gpt-6.1-terra"
    assert successor_of("gpt-5", DEFAULT_PRICES) == "gpt-6.1-sol"
    assert successor_of("gpt-5-nano-2025-08-07", DEFAULT_PRICES) == "gpt-6-luna"
    assert successor_of("o3", DEFAULT_PRICES) == "gpt-6.1-sol"
    terra = price_for("gpt-6.1-terra", DEFAULT_PRICES)
    assert terra is not None
    assert (terra.input_per_million, terra.output_per_million) == (1.00, 5.00)
    assert price_for("gpt-5.6-sol", DEFAULT_PRICES) is None, "no price found that agrees"
