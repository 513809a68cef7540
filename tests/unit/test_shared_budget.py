"""The shared budget's arithmetic, the limiter's changing rates and AIMD, and the coordinator's
file: registration, heartbeats, dead participants, and the fallback when the file fails."""

from __future__ import annotations

import logging
import sqlite3
import time
from pathlib import Path

import pytest

from ragas_ops.config import JudgeSettings
from ragas_ops.judge.rate_limit import MINIMUM_PACE, RateLimiter
from ragas_ops.judge.shared_budget import (
    DEAD_AFTER_BEATS,
    LocalCoordinator,
    Rates,
    SharedBudget,
    share_fraction,
    share_of,
    shared_budget_for,
)
from tests.unit.test_rate_limit import START, FakeTime, _admit_for

ACCOUNT = Rates(rpm=600, tpm=400_000)


# -- share arithmetic ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pool", "live", "expected"),
    [
        ("nightly", {"nightly": 1}, 1.0),  # alone: the whole account
        ("backfill", {"backfill": 1}, 1.0),  # a backfill alone has it all too
        ("nightly", {"nightly": 3}, 1 / 3),
        ("backfill", {"backfill": 4}, 1 / 4),
        ("nightly", {"nightly": 1, "backfill": 2}, 0.75),  # nightly first
        ("backfill", {"nightly": 1, "backfill": 2}, 0.125),  # 0.25 split by two
        ("nightly", {"nightly": 2, "backfill": 1}, 0.375),
        ("nightly", {}, 1.0),  # itself not yet counted: never divides by zero
    ],
)
def test_share_fraction(pool, live, expected):
    assert share_fraction(pool, live, backfill_share=0.25) == pytest.approx(expected)


def test_shares_of_all_live_participants_add_up_to_the_account():
    for live in ({"nightly": 3}, {"nightly": 2, "backfill": 3}, {"backfill": 5}):
        total = sum(
            share_fraction(pool, live, backfill_share=0.3) * count  # type: ignore[arg-type]
            for pool, count in live.items()
        )
        assert total == pytest.approx(1.0)


def test_share_of_scales_both_limits_and_keeps_unlimited():
    assert share_of(ACCOUNT, "nightly", {"nightly": 2}, 0.25) == Rates(300, 200_000)
    assert share_of(Rates(None, 1000), "backfill", {"nightly": 1, "backfill": 1}, 0.25) == Rates(
        None, 250
    )


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


def _coordinator(path: Path, pool="nightly", clock=None, account="acct") -> LocalCoordinator:
    return LocalCoordinator(path, account, pool, heartbeat_seconds=2.0, clock=clock or FakeWall())


class FakeWall:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


def test_participants_join_count_by_pool_and_account_and_leave(tmp_path):
    path = tmp_path / "budget.sqlite"
    wall = FakeWall()
    first, second = _coordinator(path, clock=wall), _coordinator(path, clock=wall)
    backfill = _coordinator(path, "backfill", clock=wall)
    other_account = _coordinator(path, clock=wall, account="other")
    assert first.join() == {"nightly": 1}
    second.join()
    backfill.join()
    other_account.join()
    assert first.join() == {"nightly": 2, "backfill": 1}
    second.leave()
    assert first.join() == {"nightly": 1, "backfill": 1}


def test_a_participant_without_heartbeat_drops_out(tmp_path):
    path = tmp_path / "budget.sqlite"
    wall = FakeWall()
    alive, dead = _coordinator(path, clock=wall), _coordinator(path, clock=wall)
    alive.join()
    dead.join()
    wall.now += (DEAD_AFTER_BEATS - 1) * 2.0
    assert alive.join() == {"nightly": 2}  # late, not dead yet
    wall.now += 2.0 + 0.1
    assert alive.join() == {"nightly": 1}


async def test_shared_budget_sets_the_limiter_to_its_share(tmp_path):
    path = tmp_path / "budget.sqlite"
    _coordinator(path, clock=time.time).join()  # another live process
    limiter = RateLimiter(100, 100)
    budget = SharedBudget(
        _coordinator(path, clock=time.time),
        limiter,
        ACCOUNT,
        fallback=ACCOUNT.scaled(1 / 6),
        backfill_share=0.25,
    )
    await budget.start()
    try:
        assert budget.live == {"nightly": 2}
        assert limiter.current_rates() == pytest.approx((300, 200_000))
        assert not budget.failed
    finally:
        await budget.stop()
    # It left: the other process and a newcomer are live, not three.
    assert _coordinator(path, clock=time.time).join() == {"nightly": 2}


async def test_an_unwritable_budget_file_falls_back_to_the_static_share(tmp_path, caplog):
    folder = tmp_path / "a-file"
    folder.write_text("not a folder: the budget file cannot be created under it")
    limiter = RateLimiter(600, 400_000)
    budget = SharedBudget(
        _coordinator(folder / "budget.sqlite"),
        limiter,
        ACCOUNT,
        fallback=ACCOUNT.scaled(1 / 6),
        backfill_share=0.25,
    )
    with caplog.at_level(logging.WARNING):
        await budget.start()
        await budget.start()
        await budget.stop()
    assert budget.failed
    assert limiter.current_rates() == pytest.approx((100, 400_000 / 6))
    warnings = [r for r in caplog.records if "shared judge budget is unavailable" in r.message]
    assert len(warnings) == 1
    assert "100 rpm" in warnings[0].getMessage()


async def test_a_budget_file_locked_too_long_falls_back(tmp_path, monkeypatch, caplog):
    monkeypatch.setattr("ragas_ops.judge.shared_budget.LOCK_TIMEOUT_SECONDS", 0.1)
    path = tmp_path / "budget.sqlite"
    _coordinator(path).join()
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # another process holds the file
    limiter = RateLimiter(600, None)
    budget = SharedBudget(
        _coordinator(path), limiter, Rates(600, None), Rates(100, None), backfill_share=0.25
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


def test_shared_budget_for_follows_the_settings(tmp_path):
    settings = JudgeSettings(cache_path=str(tmp_path / "c" / "judge.sqlite"), rpm=600, tpm=None)
    limiter = RateLimiter(600, None)
    budget = shared_budget_for(settings, "http://127.0.0.1:1/v1", limiter)
    assert budget is not None
    assert budget.coordinator.path == tmp_path / "c" / "budget.sqlite"
    assert budget.coordinator.account == "http://127.0.0.1:1/v1 gpt-4o-mini"
    settings.shared_budget = "none"
    assert shared_budget_for(settings, "x", limiter) is None
    settings.shared_budget, settings.cache_path = "local", None
    assert shared_budget_for(settings, "x", limiter) is None  # no file to share


# -- the pipeline's chunks ------------------------------------------------------------------------


def test_a_chunk_keeps_the_account_under_the_shared_budget_and_falls_back_to_its_slot():
    from ragas_ops.config import Settings
    from ragas_ops.pipeline.steps import chunk_settings

    settings = Settings()
    settings.judge.rpm, settings.judge.tpm = 600, 400_000
    share = chunk_settings(settings, chunk_rows=10, day_rows=40, pool="backfill").judge
    assert (share.rpm, share.tpm) == (600, 400_000)  # the coordinator divides it
    assert share.budget_pool == "backfill"
    slots = settings.pipeline.pool_slots + settings.pipeline.backfill_pool_slots
    assert share.static_share == pytest.approx(1 / slots)

    settings.judge.shared_budget = "none"
    static = chunk_settings(settings, chunk_rows=10, day_rows=40).judge
    assert (static.rpm, static.tpm) == (600 // slots, 400_000 // slots)  # as before
    assert static.budget_pool == "nightly"
