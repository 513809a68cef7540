"""The shared budget's buckets (pools, spill-over, burst, corrections), the limiter's changing
rates and AIMD, the coordinator's file shared by several processes, and the fallback when the
coordinator fails."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import time

import pytest

from ragas_ops.judge.limits.account_buckets import (
    AccountPlan,
    Rates,
    full_state,
    refilled,
    take_from,
)
from ragas_ops.judge.limits.rate_limit import MINIMUM_PACE, RateLimiter
from ragas_ops.judge.limits.shared_budget import (
    LocalCoordinator,
    SharedBudget,
    shared_budget_for,
    static_rates,
)
from ragas_ops.judge.limits.spec import LimitsSpec, SharedBudgetSpec
from tests.unit.test_rate_limit import START, FakeTime, _admit_for

ACCOUNT = Rates(rpm=600, tpm=400_000)
PLAN = AccountPlan(ACCOUNT, backfill_share=0.25)


# -- the account's buckets -----------------------------------------------------------------------


def _takes(pools, seconds, plan=PLAN, tokens=100.0, step=0.01):
    """Takes per pool over `seconds`, every pool in `pools` asking all the time (one request
    of `tokens` at a time, as soon as its bucket lets it)."""
    state, now, counts = None, START, dict.fromkeys(pools, 0)
    while now < START + seconds:
        for pool in pools:
            while True:
                state, wait = take_from(state, now, pool, requests=1, tokens=tokens, plan=plan)
                if wait:
                    break
                counts[pool] += 1
        now += step
    return counts


@pytest.mark.parametrize("pool", ["nightly", "backfill"])
def test_a_pool_alone_has_the_whole_account(pool):
    counts = _takes([pool], seconds=60)
    # 600 a minute, plus the buckets' start (one second of the account), nothing more.
    assert 600 <= counts[pool] <= 600 + 10 + 1


def test_both_pools_busy_get_their_shares_nightly_first():
    counts = _takes(["nightly", "backfill"], seconds=60)
    assert counts["nightly"] == pytest.approx(450, abs=10)
    assert counts["backfill"] == pytest.approx(150, abs=5)
    assert sum(counts.values()) <= 600 + 11


def test_what_one_pool_leaves_goes_to_the_other_at_once():
    """A nightly pool that asks for a third of what it could: the backfill takes the rest."""
    state, now, nightly, backfill = None, START, 0, 0
    while now < START + 60:
        if round((now - START) * 100) % 30 == 0:  # nightly asks every 0.3 s: ~200 a minute
            state, wait = take_from(state, now, "nightly", requests=1, tokens=1, plan=PLAN)
            nightly += wait == 0
        while True:
            state, wait = take_from(state, now, "backfill", requests=1, tokens=1, plan=PLAN)
            if wait:
                break
            backfill += 1
        now += 0.01
    assert nightly == pytest.approx(200, abs=3)
    assert nightly + backfill == pytest.approx(600, abs=12)  # the account is fully used


def test_the_buckets_hold_one_second_of_the_account_split_like_the_rates():
    state = full_state(PLAN, START)
    assert state["nightly"]["requests"] == pytest.approx(7.5)
    assert state["backfill"]["requests"] == pytest.approx(2.5)
    assert state["nightly"]["tokens"] + state["backfill"]["tokens"] == pytest.approx(400_000 / 60)
    # Long idle: still full, no more.
    assert refilled(state, START + 3600, PLAN) == {**full_state(PLAN, START + 3600)}


def test_a_request_bigger_than_the_bucket_waits_for_a_full_one_and_leaves_it_below_zero():
    plan = AccountPlan(Rates(None, 600), backfill_share=0.0)  # nightly: 10 tokens a second
    state, wait = take_from(None, START, "nightly", requests=1, tokens=25, plan=plan)
    assert wait == 0.0
    assert state["nightly"]["tokens"] == pytest.approx(10 - 25)
    state, wait = take_from(state, START + 1.0, "nightly", requests=1, tokens=5, plan=plan)
    assert wait == pytest.approx(0.25)  # -5 now, 5 needed: 1 s away, looked at again sooner
    state, wait = take_from(state, START + 2.0, "nightly", requests=1, tokens=5, plan=plan)
    assert wait == 0.0


def test_a_take_that_does_not_fit_takes_nothing_and_says_how_long_to_wait():
    plan = AccountPlan(Rates(60, None), backfill_share=0.5)  # 0.5 request a second per pool
    state, _ = take_from(None, START, "nightly", requests=1, tokens=0, plan=plan)
    before = dict(state["nightly"])
    after, wait = take_from(state, START, "nightly", requests=1, tokens=0, plan=plan)
    assert after["nightly"] == before
    # Short: the backfill bucket is full, so its refill spills over to nightly.
    assert wait == pytest.approx(0.25)  # capped at MAX_POLL_SECONDS


def test_a_negative_take_gives_back_up_to_the_capacity():
    state, _ = take_from(None, START, "backfill", requests=2, tokens=500, plan=PLAN)
    state, wait = take_from(state, START, "backfill", requests=-1, tokens=-10_000, plan=PLAN)
    assert wait == 0.0
    assert state["backfill"]["requests"] == pytest.approx(1.5)
    assert state["backfill"]["tokens"] == pytest.approx(PLAN.capacity("backfill", "tokens"))


@pytest.mark.parametrize("stored", [{}, {"updated": "x"}, {"updated": 1.0, "nightly": {}}])
def test_a_state_that_does_not_read_starts_full(stored):
    assert refilled(stored, START, PLAN) == full_state(PLAN, START)


# -- the limiter's rates while running -----------------------------------------------------------


async def test_set_rates_changes_the_pace_of_waiting_requests():
    time = FakeTime()
    limiter = RateLimiter(60, None, clock=time, sleep=time.sleep)
    first = await _admit_for(limiter, time, seconds=60)
    limiter.set_rates(120, None)
    second = [t for t in await _admit_for(limiter, time, seconds=180) if t >= START + 60]
    assert len(first) == pytest.approx(60, abs=2)
    assert len(second) == pytest.approx(120 * 2, abs=3)  # twice the pace, no burst granted


async def test_set_rates_from_unlimited_and_back():
    time = FakeTime()
    limiter = RateLimiter(None, None, clock=time, sleep=time.sleep)
    limiter.set_rates(30, 1000)
    assert limiter.current_rates() == pytest.approx((30, 1000))
    limiter.set_rates(None, None)
    assert limiter.current_rates() == (None, None)
    with pytest.raises(ValueError, match="positive"):
        limiter.set_rates(0, None)


async def test_a_429_halves_the_pace_once_per_burst_and_it_climbs_back():
    time = FakeTime()
    limiter = RateLimiter(600, 60_000, clock=time, sleep=time.sleep)
    for _ in range(5):  # five 429s of one burst: one decrease
        limiter.slow_down()
    assert limiter.decreases == 1
    assert limiter.current_rates() == pytest.approx((300, 30_000))
    time.now += 2.0
    limiter.slow_down()  # sustained: halved again
    assert limiter.pace == pytest.approx(0.25 + 0.05 * 2.0 * 0.5, abs=0.06)
    # Additive increase: without 429s the pace climbs back to the ceiling, not beyond.
    await _admit_for(limiter, time, seconds=60)
    assert limiter.pace == 1.0
    assert limiter.current_rates() == pytest.approx((600, 60_000))


async def test_the_pace_has_a_floor():
    time = FakeTime()
    limiter = RateLimiter(600, None, clock=time, sleep=time.sleep)
    limiter.decrease_interval = 0.0
    for _ in range(50):
        limiter.slow_down()
    assert limiter.pace == MINIMUM_PACE
    assert limiter.current_rates() == pytest.approx((600 * MINIMUM_PACE, None))


async def test_under_aimd_admissions_follow_the_lowered_rate():
    time = FakeTime()
    limiter = RateLimiter(600, None, clock=time, sleep=time.sleep)
    limiter.slow_down()
    admitted = await _admit_for(limiter, time, seconds=1)
    assert len(admitted) < 600 / 60 * 1.5  # about half of 10/s, plus the bucket


# -- the coordinator's file ----------------------------------------------------------------------


class FakeWall:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


def test_processes_take_from_one_account_in_the_file(tmp_path):
    path, wall = tmp_path / "budget.sqlite", FakeWall()
    plan = AccountPlan(Rates(60, None), backfill_share=0.25)  # buckets: 0.75 and 1 request
    first, second = LocalCoordinator(path, "acct", wall), LocalCoordinator(path, "acct", wall)
    other_account = LocalCoordinator(path, "other", wall)
    try:
        assert first.take("nightly", 1, 0, plan) == 0.0  # 1 of a full minimum bucket of 1
        assert second.take("nightly", 1, 0, plan) > 0.0  # the same bucket: empty now
        assert other_account.take("nightly", 1, 0, plan) == 0.0  # another account's own
        wall.now += 60 / 60 / 0.75 + 0.01
        assert second.take("nightly", 1, 0, plan) == 0.0
        assert first.state() == second.state()
    finally:
        for coordinator in (first, second, other_account):
            coordinator.close()


async def test_limiters_sharing_the_file_together_stay_within_the_account(tmp_path):
    """Three processes' limiters, each told the whole account, take through one file."""
    path = tmp_path / "budget.sqlite"
    plan = AccountPlan(Rates(1200, None), backfill_share=0.25)
    budgets = [
        SharedBudget(
            LocalCoordinator(path, "acct"),
            RateLimiter(1200, None),
            plan,
            pool="nightly" if index else "backfill",
            fallback=Rates(200, None),
            where=str(path),
        )
        for index in range(3)
    ]
    for budget in budgets:
        await budget.start()
        assert not budget.failed
    started = time.monotonic()

    async def ask(budget: SharedBudget) -> None:
        while time.monotonic() - started < 1.5:
            await budget.limiter.acquire(10)

    await asyncio.gather(*(ask(budget) for budget in budgets))
    elapsed = time.monotonic() - started
    for budget in budgets:
        await budget.stop()
    taken = sum(budget.taken for budget in budgets)
    bound = 1200 / 60 * elapsed + 20 + 3  # the rate, the buckets' one second, one in flight each
    assert taken <= bound
    assert taken >= 0.8 * 1200 / 60 * elapsed  # and they do use it
    nightly = budgets[1].taken + budgets[2].taken
    assert budgets[0].taken < nightly  # the backfill pool has the smaller share (a quarter)


async def test_requests_arriving_while_the_budget_starts_all_take_from_the_account(tmp_path):
    """The judge's first requests start the shared budget together: none may pass on the
    process's own full bucket while the first one is still opening the coordinator."""
    path = tmp_path / "budget.sqlite"
    plan = AccountPlan(Rates(1200, None), backfill_share=0.0)  # one second: 20 requests
    other = LocalCoordinator(path, "acct")
    assert other.take("nightly", 20, 0, plan) == 0.0  # another process just spent the bucket
    other.close()
    budget = SharedBudget(
        LocalCoordinator(path, "acct"),
        RateLimiter(1200, None),  # its own bucket full: 20 requests at once
        plan,
        pool="nightly",
        fallback=Rates(200, None),
        where=str(path),
    )

    async def first_request() -> None:
        await budget.start()
        await budget.limiter.acquire(1)

    await asyncio.gather(*(first_request() for _ in range(10)))
    await budget.stop()
    assert budget.taken == 10  # every one of them took from the account's (spent) buckets


async def test_corrections_are_settled_with_the_next_take(tmp_path):
    path = tmp_path / "budget.sqlite"
    plan = AccountPlan(Rates(None, 6000), backfill_share=0.0)  # 100 tokens a second
    coordinator = LocalCoordinator(path, "acct")
    limiter = RateLimiter(None, 6000)
    budget = SharedBudget(
        coordinator, limiter, plan, pool="nightly", fallback=Rates(None, 1000), where="x"
    )
    await budget.start()
    await limiter.acquire(10)
    limiter.settle(10, 40)  # the reply cost 30 more than estimated
    limiter.refund(5)  # and a 429 gives back a request of 5 tokens
    await limiter.acquire(1)
    state = coordinator.state()
    await budget.stop()
    assert state is not None
    assert state["nightly"]["tokens"] == pytest.approx(100 - 10 - 30 + 5 - 1, abs=1.0)


async def test_an_unwritable_budget_file_falls_back_to_the_static_share(tmp_path, caplog):
    folder = tmp_path / "a-file"
    folder.write_text("not a folder: the budget file cannot be created under it")
    limiter = RateLimiter(600, 400_000)
    budget = SharedBudget(
        LocalCoordinator(folder / "budget.sqlite", "acct"),
        limiter,
        PLAN,
        pool="nightly",
        fallback=ACCOUNT.scaled(1 / 6),
        where="x",
    )
    with caplog.at_level(logging.WARNING):
        await budget.start()
        await budget.start()
        await limiter.acquire(10)  # scoring goes on
        await budget.stop()
    assert budget.failed
    assert limiter.current_rates() == pytest.approx((100, 400_000 / 6))
    warnings = [r for r in caplog.records if "shared judge budget is unavailable" in r.message]
    assert len(warnings) == 1
    assert "100 rpm" in warnings[0].getMessage()


async def test_a_budget_file_locked_too_long_falls_back(tmp_path, monkeypatch, caplog):
    monkeypatch.setattr("ragas_ops.judge.limits.shared_budget.LOCK_TIMEOUT_SECONDS", 0.1)
    path = tmp_path / "budget.sqlite"
    LocalCoordinator(path, "acct").take("nightly", 0, 0, PLAN)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # another process holds the file
    limiter = RateLimiter(600, None)
    plan = AccountPlan(Rates(600, None), 0.25)
    budget = SharedBudget(
        LocalCoordinator(path, "acct"),
        limiter,
        plan,
        pool="nightly",
        fallback=Rates(100, None),
        where="x",
    )
    try:
        with caplog.at_level(logging.WARNING):
            await budget.start()
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert budget.failed
    assert limiter.current_rates() == pytest.approx((100, None))
    assert "locked" in caplog.text


async def test_a_coordinator_failing_mid_run_falls_back_and_the_request_goes_on(tmp_path, caplog):
    path = tmp_path / "budget.sqlite"
    limiter = RateLimiter(600, None)
    coordinator = LocalCoordinator(path, "acct")
    budget = SharedBudget(
        coordinator, limiter, PLAN, pool="nightly", fallback=Rates(100, None), where="x"
    )
    await budget.start()
    await limiter.acquire(1)
    coordinator.close()
    path.unlink()
    path.mkdir()  # the file is gone and cannot come back: the next take fails
    with caplog.at_level(logging.WARNING):
        await asyncio.wait_for(limiter.acquire(1), timeout=5)
    assert budget.failed
    assert limiter.current_rates() == pytest.approx((100, None))


def test_shared_budget_for_follows_the_settings(tmp_path):
    spec, limits = SharedBudgetSpec(), LimitsSpec(rpm=600, tpm=None)
    cache_path = str(tmp_path / "c" / "judge.sqlite")
    account = "http://127.0.0.1:1/v1 gpt-4o-mini"
    limiter = RateLimiter(600, None)
    budget = shared_budget_for(spec, limits, account, cache_path, limiter)
    assert budget is not None
    assert isinstance(budget.coordinator, LocalCoordinator)
    assert budget.coordinator.path == tmp_path / "c" / "budget.sqlite"
    assert budget.coordinator.account == account
    assert budget.plan == AccountPlan(Rates(570, None), 0.25)  # less rate_margin (5%)
    spec.mode = "none"
    assert shared_budget_for(spec, limits, "x", cache_path, limiter) is None
    spec.mode = "local"
    assert shared_budget_for(spec, limits, "x", None, limiter) is None  # no file to share
    limits.rpm = None
    assert shared_budget_for(spec, limits, "x", cache_path, limiter) is None  # no limit to share


# -- the pipeline's chunks ------------------------------------------------------------------------


def test_a_chunk_keeps_the_account_under_the_shared_budget_and_falls_back_to_its_slot():
    from ragas_ops.config import Settings
    from ragas_ops.pipeline.share import chunk_settings

    settings = Settings()
    settings.judge.limits.rpm, settings.judge.limits.tpm = 600, 400_000
    share = chunk_settings(settings, chunk_rows=10, day_rows=40, pool="backfill").judge
    assert (share.limits.rpm, share.limits.tpm) == (600, 400_000)  # the coordinator divides it
    assert share.shared_budget.pool == "backfill"
    slots = settings.pipeline.pool_slots + settings.pipeline.backfill_pool_slots
    assert share.shared_budget.static_share == pytest.approx(1 / slots)

    settings.judge.shared_budget.mode = "redis"
    across_hosts = chunk_settings(settings, chunk_rows=10, day_rows=40).judge
    assert (across_hosts.limits.rpm, across_hosts.shared_budget.pool) == (600, "nightly")

    settings.judge.shared_budget.mode = "none"
    static = chunk_settings(settings, chunk_rows=10, day_rows=40).judge
    alone = static_rates(static.limits, static.shared_budget)
    paced = 1 - settings.judge.limits.rate_margin
    assert (alone.rpm, alone.tpm) == pytest.approx((600 * paced / slots, 400_000 * paced / slots))
    assert static.shared_budget.pool == "nightly"
