"""Each scoring task's share of the judge: of the account's rate limits (both pools' slots
run at once) and of the run's budget (in proportion to the chunk's rows)."""

from __future__ import annotations

import dataclasses

from ragas_ops.config import Settings
from ragas_ops.judge.limits.spec import BudgetPool


def judge_share(settings: Settings, pool: BudgetPool = "nightly") -> Settings:
    """Settings for one of the scoring tasks that may run at once (the slots of both pools).

    The task keeps the account's rpm and tpm and a static share of 1/(slots of both pools)
    (`judge.static_share`, applied in one place: `limits.shared_budget.static_rates`). Under a
    shared budget (`judge.shared_budget = local` or `redis`) the tasks take every request from
    the account's buckets (nightly first, see docs/shared-budget.md) and the static share is
    only what a task falls back to; with `none` it is what each task uses, so that together
    they stay within the account.
    """
    share = dataclasses.replace(settings)
    slots = settings.pipeline.pool_slots + settings.pipeline.backfill_pool_slots
    shared = settings.judge.shared_budget
    shared = dataclasses.replace(shared, pool=pool, static_share=shared.static_share / slots)
    share.judge = dataclasses.replace(settings.judge, shared_budget=shared)
    return share


def chunk_settings(
    settings: Settings, chunk_rows: int, day_rows: int, pool: BudgetPool = "nightly"
) -> Settings:
    """Settings for one chunk's scoring task in `pool`: its share of the judge's rate limits
    (see `judge_share`) and of the run's budget, in proportion to its rows."""
    share = judge_share(settings, pool)
    fraction = chunk_rows / day_rows if day_rows else 1.0
    limits = settings.judge.limits
    budget_usd, budget_tokens = limits.budget_usd, limits.budget_tokens
    limits = dataclasses.replace(
        limits,
        budget_usd=None if budget_usd is None else budget_usd * fraction,
        budget_tokens=None if budget_tokens is None else max(1, int(budget_tokens * fraction)),
    )
    share.judge = dataclasses.replace(share.judge, limits=limits)
    return share
