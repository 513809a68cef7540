"""Token prices: turning usage into money, for models and their dated snapshots."""

from __future__ import annotations

import pytest

from ragas_ops.pricing import DEFAULT_PRICES, Price, price_for


def test_cost_is_per_million_tokens_for_input_and_output():
    price = Price(input_per_million=2.0, output_per_million=8.0)
    assert price.cost(1_000_000, 0) == pytest.approx(2.0)
    assert price.cost(0, 1_000_000) == pytest.approx(8.0)
    assert price.cost(1_500, 500) == pytest.approx((1_500 * 2.0 + 500 * 8.0) / 1_000_000)
    assert price.cost(0, 0) == 0.0


def test_cached_prompt_tokens_cost_the_cached_rate_and_the_rest_the_full_rate():
    price = Price(input_per_million=0.15, output_per_million=0.60, cached_input_per_million=0.075)
    # 1M prompt tokens of which 400k cached, plus 1M completion tokens.
    assert price.cost(1_000_000, 1_000_000, cached_prompt_tokens=400_000) == pytest.approx(
        0.6 * 0.15 + 0.4 * 0.075 + 0.60
    )


def test_without_a_cached_rate_cached_tokens_cost_the_full_input_rate():
    price = Price(input_per_million=0.5, output_per_million=1.5)
    assert price.cost(1_000, 0, cached_prompt_tokens=600) == price.cost(1_000, 0)


def test_an_embedding_price_has_no_output_rate():
    assert DEFAULT_PRICES["text-embedding-3-small"].cost(1_000_000, 0) == pytest.approx(0.02)


def test_price_for_an_exact_model_name():
    assert price_for("gpt-4o-mini", DEFAULT_PRICES) == Price(0.15, 0.60, 0.075)
    assert price_for("gpt-4o", DEFAULT_PRICES) == Price(2.50, 10.00, 1.25)


@pytest.mark.parametrize(
    ("snapshot", "model"),
    [
        ("gpt-4o-mini-2024-07-18", "gpt-4o-mini"),  # not gpt-4o: the longest name wins
        ("gpt-4o-2024-08-06", "gpt-4o"),
        ("gpt-4.1-mini-2025-04-14", "gpt-4.1-mini"),
        ("gpt-4.1-2025-04-14", "gpt-4.1"),
        ("gpt-3.5-turbo-0125", "gpt-3.5-turbo"),
    ],
)
def test_price_for_a_dated_snapshot_is_the_price_of_its_model(snapshot, model):
    assert price_for(snapshot, DEFAULT_PRICES) is DEFAULT_PRICES[model]


@pytest.mark.parametrize(
    "model", ["llama3.1:8b", "gpt-4omini", "gpt-7", "my-gpt-4o", "GPT-4o-mini", ""]
)
def test_an_unknown_model_has_no_price_rather_than_a_wrong_one(model):
    assert price_for(model, DEFAULT_PRICES) is None


def test_price_for_uses_the_table_it_is_given():
    prices = {"my-model": Price(1.0, 2.0)}
    assert price_for("my-model", prices) == Price(1.0, 2.0)
    assert price_for("my-model-2025-01-01", prices) == Price(1.0, 2.0)
    assert price_for("gpt-4o-mini", prices) is None


@pytest.mark.parametrize("model", ["gpt-3.5-turbo-16k", "gpt-4o-realtime-preview"])
def test_a_different_model_that_shares_a_prefix_has_no_price(model):
    # Only a date may follow a known name; these are other models with other prices.
    assert price_for(model, DEFAULT_PRICES) is None
