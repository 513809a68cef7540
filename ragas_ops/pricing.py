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
    sent through the Batch API cost `batch_discount` times the same rates (OpenAI: half), and
    requests answered on the flex tier `flex_discount` times them (OpenAI: the Batch price)."""

    input_per_million: float
    output_per_million: float = 0.0
    cached_input_per_million: float | None = None
    batch_discount: float = 0.5
    flex_discount: float = 0.5
    cache_write_per_million: float | None = None
    """Prompt tokens written to the provider's prompt cache (Anthropic: 1.25 x input for the
    5-minute cache); None: billed as input."""

    def cost(
        self,
        prompt_tokens: int,
        completion_tokens: int,
        cached_prompt_tokens: int = 0,
        *,
        batch: bool = False,
        cache_write_tokens: int = 0,
    ) -> float:
        cached_rate = (
            self.input_per_million
            if self.cached_input_per_million is None
            else self.cached_input_per_million
        )
        write_rate = (
            self.input_per_million
            if self.cache_write_per_million is None
            else self.cache_write_per_million
        )
        uncached = prompt_tokens - cached_prompt_tokens - cache_write_tokens
        full_price = (
            uncached * self.input_per_million
            + cached_prompt_tokens * cached_rate
            + cache_write_tokens * write_rate
            + completion_tokens * self.output_per_million
        ) / 1_000_000
        return full_price * self.batch_discount if batch else full_price

    def cost_at_tier(
        self,
        tier: str,
        prompt_tokens: int,
        completion_tokens: int,
        cached_prompt_tokens: int = 0,
        cache_write_tokens: int = 0,
    ) -> float | None:
        """The cost of a request answered on `tier` (`SERVICE_TIER_PRICES`); None for a tier
        with no known price (OpenAI's `priority`, `scale`): unknown, not the standard price."""
        share = SERVICE_TIER_PRICES.get(tier)
        if share is None:
            return None
        full_price = self.cost(
            prompt_tokens,
            completion_tokens,
            cached_prompt_tokens,
            cache_write_tokens=cache_write_tokens,
        )
        return full_price * self.flex_discount if share == "flex" else full_price


SERVICE_TIER_PRICES: Mapping[str, str] = {
    "default": "standard",
    "auto": "standard",  # sent as auto, the reply did not say: the higher price, not a guess
    "flex": "flex",
}
"""Which rates a request answered on a service tier pays (the tier a reply names, or the
tier sent when it names none)."""


DEFAULT_PRICES: Mapping[str, Price] = {
    "gpt-4o-mini": Price(0.15, 0.60, 0.075),
    "gpt-4o": Price(2.50, 10.00, 1.25),
    "gpt-4o-2024-05-13": Price(5.00, 15.00),
    "gpt-4.1": Price(2.00, 8.00, 0.50),
    "gpt-4.1-mini": Price(0.40, 1.60, 0.10),
    "gpt-4.1-nano": Price(0.10, 0.40, 0.025),
    "gpt-3.5-turbo": Price(0.50, 1.50),
    # Models that OpenAI serves on the flex tier too (at the Batch price: flex_discount 0.5).
    "gpt-5": Price(1.25, 10.00, 0.125),
    "gpt-5-mini": Price(0.25, 2.00, 0.025),
    "gpt-5-nano": Price(0.05, 0.40, 0.005),
    "o3": Price(2.00, 8.00, 0.50),
    "o4-mini": Price(1.10, 4.40, 0.275),
    # The gpt-5.4 family (released 2026-03; no shutdown date announced as of 2026-12-05):
    # OpenAI's list prices as published pages quoted them in April-June 2026, taken here on
    # 2026-12-05 (docs/judge.md#the-default-judge).
    "gpt-5.4": Price(2.50, 15.00, 0.25),
    "gpt-5.4-mini": Price(0.75, 4.50, 0.075),
    "gpt-5.5": Price(5.00, 30.00, 0.50),
    # The models OpenAI's deprecations page names as replacements of gpt-5, gpt-5-mini,
    # gpt-5-nano and o3 (shut down 2026-12-11), and their families, as published pages quoted
    # OpenAI's list prices, taken here on 2026-12-06 (docs/judge.md#successors-and-their-prices):
    # gpt-6.1-terra (2026-10-26) and gpt-6.1-sol: LiteLLM's launch note and price table, and
    # two token-cost tools' releases citing OpenAI's pricing page; gpt-6 sol and luna
    # (2026-09-22): a token-cost tool's release citing OpenAI's pricing page, LiteLLM's
    # announcement; gpt-5.6 luna and terra after their 2026-07-30 cuts: OpenAI's gpt-5.6-luna
    # model page and a gateway's notice. gpt-5.6-sol has none: the pages found disagree.
    "gpt-6.1-sol": Price(2.00, 10.00, 0.10),
    "gpt-6.1-terra": Price(1.00, 5.00, 0.05),
    "gpt-6-sol": Price(2.00, 10.00, 0.20),
    "gpt-6-luna": Price(0.10, 0.50, 0.01),
    "gpt-5.6-terra": Price(2.00, 12.00, 0.20),
    "gpt-5.6-luna": Price(0.20, 1.20, 0.02),
    # Anthropic's Claude models (the `anthropic` judge): list prices per million tokens as
    # platform.claude.com/docs/en/about-claude/pricing gave them, taken 2026-12-05: input,
    # output, cache hits, and 5-minute cache writes (1.25 x input); the Message Batches API
    # halves input and output. Haiku 5.5's rates are those of prompts up to 100,000 tokens.
    "claude-haiku-5-5": Price(0.10, 0.50, 0.01, cache_write_per_million=0.125),
    "claude-sonnet-5-5": Price(2.00, 10.00, 0.10, cache_write_per_million=2.50),
    "claude-opus-5-5": Price(4.00, 20.00, 0.20, cache_write_per_million=5.00),
    "claude-opus-5": Price(5.00, 25.00, 0.50, cache_write_per_million=6.25),
    "claude-sonnet-4-5": Price(3.00, 15.00, 0.30, cache_write_per_million=3.75),
    "claude-haiku-4-5": Price(1.00, 5.00, 0.10, cache_write_per_million=1.25),
    "text-embedding-3-small": Price(0.02),
    "text-embedding-3-large": Price(0.13),
    "text-embedding-ada-002": Price(0.10),
}


SUCCESSORS: Mapping[str, str] = {
    "gpt-4o-mini": "gpt-5.4-mini",
    "gpt-4.1-mini": "gpt-5.4-mini",
    "gpt-4.1-nano": "gpt-5.4-mini",
    "o4-mini": "gpt-5.4-mini",
    "gpt-4o": "gpt-5.4",
    "gpt-4.1": "gpt-5.4",
    # OpenAI's recommended replacements (deprecations page, "2026-06-11: GPT-5 and o3 model
    # deprecations", as read 2026-12-06; copies from before October name gpt-5.6-*).
    "gpt-5": "gpt-6.1-sol",
    "gpt-5-mini": "gpt-6.1-terra",
    "gpt-5-nano": "gpt-6-luna",
    "o3": "gpt-6.1-sol",
}
"""The model a user of a model shutting down moves to (the same size, still served), as far as
the price table knows: a shutdown warning names it when it has a price."""


def successor_of(model: str, prices: Mapping[str, Price]) -> str | None:
    """The successor of `model` (or of the model it is a dated snapshot of) that has a price."""
    for name, successor in SUCCESSORS.items():
        if (
            model == name
            or (model.startswith(name) and _SNAPSHOT_DATE.fullmatch(model[len(name) :]))
        ) and price_for(successor, prices) is not None:
            return successor
    return None


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
