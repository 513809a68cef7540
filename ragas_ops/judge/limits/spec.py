"""The judge's pacing and money (`LimitsSpec`) and the budget its processes share
(`SharedBudgetSpec`); `[judge]` keys of the config file (see `config.JudgeSettings`). A
settings module: it imports nothing of ragas_ops but the settings toolkit."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from ragas_ops.settings_fields import at_least_one, fraction, positive, setting

ProviderCounts = Literal["auto", "max_tokens", "usage"]
SharedBudgetMode = Literal["none", "local", "redis"]
BudgetPool = Literal["nightly", "backfill"]


class DefaultRate(int):
    """A rate no one configured (`rpm`/`tpm` left at their defaults): the judge starts at it
    and paces to the limits the provider's `x-ratelimit-limit-*` headers state, above or below
    it. A value set in the config file, the environment or a flag is a plain int: a share of
    the account the judge keeps to (lowered only to what the provider states)."""


@dataclass
class LimitsSpec:
    """What the judge may send and spend: the account's rates and a run's budget."""

    rpm: int | None = positive(DefaultRate(500))
    """Requests per minute this run may send; None: no limit. Not set: the provider's
    `x-ratelimit-limit-requests` from its first answer that states it (500, OpenAI's tier 1,
    until then, and for a provider that states none); set: a share the judge keeps to,
    lowered to the provider's stated limit when that is less."""
    tpm: int | None = positive(DefaultRate(200_000))
    """Tokens per minute this run may use; None: no limit. Not set: the provider's
    `x-ratelimit-limit-tokens` (200,000 until it states them, and if it never does); set: a
    share, lowered to the provider's stated limit when that is less."""
    max_concurrency: int = at_least_one(32)
    """Requests in flight at once."""
    rate_limit_patience_seconds: float = positive(3600.0)
    """How long a request answered 429 is asked again (each time after its Retry-After)
    before it gives up, counted from its first 429: a 429 is the account's pace, or another
    application's use of the same limits, not a reason to lose a row."""
    budget_usd: float | None = positive(None)
    """Most money one run may spend on the judge (a DAG run: shared between its chunks in
    proportion to their rows); rows past it get `budget_exhausted`. None: no limit."""
    budget_tokens: int | None = at_least_one(None)
    """Most tokens (prompt + completion + embedding) one run may spend; None: no limit."""
    provider_counts: ProviderCounts = "auto"
    """How the provider's token limit counts a chat request: `max_tokens`, as OpenAI and Azure
    do (the prompt and max_tokens x n when it admits it, kept whatever the reply uses); `usage`,
    as vLLM behind a gateway and most gateways do (the prompt, then the completion it used: the
    judge then holds the completion it expects, learnt per prompt, not max_tokens); `auto`:
    learnt from the provider's `x-ratelimit-remaining-tokens` headers (`max_tokens` until they
    say otherwise, and without them)."""
    provider_burst_seconds: float = positive(1.0)
    """How many seconds of its rates the provider lets through at once (OpenAI: about one):
    the judge's buckets, and the shared budget's, hold no more than that."""
    rate_margin: float = field(default=0.05, metadata={"minimum": 0, "maximum": 0.5})
    """Share of `rpm` and `tpm` the judge leaves unused: paced exactly at its limit, the
    provider's bucket stays empty and a request that a busy host or the network delays lands
    on top of the next one (a 429); paced under it, the bucket refills and absorbs that."""
    admission_margin: float = field(default=0.05, metadata={"minimum": 0, "maximum": 1})
    """Share added to a request's token count at admission (messages, the response_format
    schema, max_tokens x n), against a provider counting a little more than the estimate."""


@dataclass
class SharedBudgetSpec:
    """How the processes that use one account share its rates (docs/shared-budget.md)."""

    mode: SharedBudgetMode = setting("local", key="shared_budget")
    """`local`: the scoring processes of one machine that use one account (endpoint and model)
    share its `rpm` and `tpm` through a file beside the cache (`budget.sqlite`; see
    docs/shared-budget.md); `redis`: the processes of every machine share them through the
    Redis server at `shared_budget_url`; `none`: each process uses its static share alone."""
    backfill_share: float = field(default=0.25, metadata={"minimum": 0, "maximum": 1})
    """Under a shared budget: the share of the account kept for the backfill pool's processes
    while nightly ones have work (nightly ones have the rest); a pool alone has all of it."""
    pool: BudgetPool = setting("nightly", key="budget_pool")
    """The pool this process counts in for the shared budget: `nightly` or `backfill`."""
    static_share: float = fraction(1.0)
    """The share of `rpm` and `tpm` this process uses when the shared budget is off or its
    file fails; the pipeline sets 1/(pool_slots + backfill_pool_slots) for its chunks."""
    url: str | None = setting(None, key="shared_budget_url")
    """With `shared_budget = redis`: the server, `redis://host:6379/0` (`rediss://` for TLS);
    never with a password in it: that comes from `shared_budget_password_env`."""
    password_env: str = setting("REDIS_PASSWORD", key="shared_budget_password_env")
    """The environment variable holding the Redis password, if the server wants one."""
