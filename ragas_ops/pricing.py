"""Token prices, per model, to turn usage into money.

The defaults are OpenAI's published list prices in USD per million tokens at the time of
writing; providers change them, so the config file's `[prices."MODEL"]` tables override them.
A model with no price gets a cost of None ("unknown"), never 0.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Price:
    """USD per million tokens. Cached prompt tokens cost `cached_input_per_million`; requests
    sent through the Batch API cost `batch_discount` times the same rates (OpenAI: half)."""

    input_per_million: float
    output_per_million: float = 0.0
    cached_input_per_million: float | None = None
    batch_discount: float = 0.5

    def cost(
        self,
        prompt_tokens: int,
        completion_tokens: int,
        cached_prompt_tokens: int = 0,
        *,
        batch: bool = False,
    ) -> float:
        cached_rate = (
            self.input_per_million
            if self.cached_input_per_million is None
            else self.cached_input_per_million
        )
        uncached = prompt_tokens - cached_prompt_tokens
        full_price = (
            uncached * self.input_per_million
            + cached_prompt_tokens * cached_rate
            + completion_tokens * self.output_per_million
        ) / 1_000_000
        return full_price * self.batch_discount if batch else full_price


DEFAULT_PRICES: Mapping[str, Price] = {
    "gpt-4o-mini": Price(0.15, 0.60, 0.075),
    "gpt-4o": Price(2.50, 10.00, 1.25),
    "gpt-4o-2024-05-13": Price(5.00, 15.00),
    "gpt-4.1": Price(2.00, 8.00, 0.50),
    "gpt-4.1-mini": Price(0.40, 1.60, 0.10),
    "gpt-4.1-nano": Price(0.10, 0.40, 0.025),
    "gpt-3.5-turbo": Price(0.50, 1.50),
    "text-embedding-3-small": Price(0.02),
    "text-embedding-3-large": Price(0.13),
    "text-embedding-ada-002": Price(0.10),
}


_SNAPSHOT_DATE = re.compile(r"-\d{4}(-\d{2}-\d{2})?")


def price_for(model: str, prices: Mapping[str, Price]) -> Price | None:
    """The price of `model`, also for its dated snapshots (`gpt-4o-mini-2024-07-18`).

    Only a date may follow a known name: `gpt-3.5-turbo-16k` is another model with another
    price, not a snapshot of `gpt-3.5-turbo`.
    """
    if model in prices:
        return prices[model]
    for name, price in prices.items():
        if model.startswith(name) and _SNAPSHOT_DATE.fullmatch(model[len(name) :]):
            return price
    return None
