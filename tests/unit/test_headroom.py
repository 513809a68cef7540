"""Pacing to the provider's remaining tokens less what it may still count (`limits.headroom`):
what a process has in flight, when the headers describe the judge's bucket, the raise of the
account's buckets in the coordinator state, and the limiter's."""

from __future__ import annotations

import pytest

from ragas_ops.judge.limits.account_buckets import (
    AccountPlan,
    Rates,
    raised_to_headroom,
    take_from,
    taking,
)
from ragas_ops.judge.limits.headroom import (
    ENTRIES,
    ENTRY_TTL_SECONDS,
    GUARD_SECONDS,
    InFlight,
    InFlightReport,
    account_countable,
    in_reach,
    margin_tokens,
)
from ragas_ops.judge.limits.provider import RateLimitHeaders
from ragas_ops.judge.limits.rate_limit import RateLimiter
from ragas_ops.judge.limits.shared_budget import LocalCoordinator, SharedBudget
from tests.unit.test_rate_limit import START, FakeTime

TPM = 400_000
BURST = TPM / 60.0  # the provider's bucket: one second of its rate, 6,667 tokens
PLAN = AccountPlan(Rates(None, TPM), backfill_share=0.25)
WALL = 1_700_000_000.0


def said(remaining: int, limit: int = TPM) -> RateLimitHeaders:
    return RateLimitHeaders(remaining_tokens=remaining, limit_tokens=limit)


# -- what one process has in flight --------------------------------------------------------------


def test_in_flight_counts_every_completion_and_what_happened_within_the_guard():
    in_flight = InFlight()
    in_flight.admitted(1, 10.0, prompt=900, max_completion=500)
    in_flight.admitted(2, 10.3, prompt=800, max_completion=400)
    # At 10.35: both completions may still be counted; only the second prompt is recent.
    assert in_flight.countable(10.35) == 500 + 400 + 800
    in_flight.ended(1, 10.36)
    # The first is answered: its completion only within the guard after its end.
    assert in_flight.countable(10.37) == 400 + 800 + 500
    assert in_flight.countable(10.36 + GUARD_SECONDS + 0.01) == 400
    in_flight.ended(1, 10.5)  # idempotent: a request ends once
    in_flight.ended(2, 10.5)
    assert in_flight.max_completion == 0
    assert in_flight.countable(11.0) == 0


def test_a_report_is_told_until_the_coordinator_stored_it():
    in_flight = InFlight(reporting=True)
    in_flight.admitted(1, 0.0, prompt=100, max_completion=50)
    first = in_flight.report()
    in_flight.admitted(2, 0.01, prompt=200, max_completion=60)
    assert in_flight.report() == InFlightReport(110, (100, 200))
    in_flight.acknowledge(first)  # stored: only what came after it is news
    assert in_flight.report() == InFlightReport(110, (200,))


def test_what_no_coordinator_is_told_is_not_kept_and_the_recent_stays_short():
    in_flight = InFlight()
    for key in range(10_000):  # a long run of requests, 0.01 s apart
        in_flight.admitted(key, key * 0.01, prompt=100, max_completion=50)
        in_flight.ended(key, key * 0.01 + 0.005)
    assert in_flight.report().news == ()
    assert len(in_flight._recent) <= 2 * (GUARD_SECONDS / 0.01 + 1)


# -- when the headers describe the bucket the judge paces to ---------------------------------------


@pytest.mark.parametrize(
    ("headers", "tpm", "pace", "expected"),
    [
        (said(3_000), TPM, 1.0, True),  # a bucket of one second's budget
        (said(399_000), TPM, 1.0, False),  # OpenAI's minute-long window: says nothing of bursts
        (said(3_000), 200_000, 1.0, False),  # the judge's budget is a share: keep to it
        (said(3_000), None, 1.0, False),  # no token limit to pace
        (said(3_000), TPM, 0.5, False),  # a 429 slowed the pace: no raise until it recovers
        (RateLimitHeaders(remaining_tokens=3_000), TPM, 1.0, False),  # no limit said
    ],
)
def test_a_raise_needs_headers_about_the_judges_own_bucket(headers, tpm, pace, expected):
    assert in_reach(headers, tpm=tpm, burst_seconds=1.0, pace=pace) is expected


def test_the_margin_is_the_rate_margin_of_the_providers_burst():
    assert margin_tokens(said(0), rate_margin=0.05, burst_seconds=1.0) == pytest.approx(
        0.05 * BURST
    )


# -- the account's buckets, in the coordinator's state -------------------------------------------


def test_a_raise_fills_the_pools_up_to_the_remaining_less_every_process_in_flight():
    state, _ = take_from(None, WALL, "nightly", requests=0, tokens=5_000, plan=PLAN)
    before = state["nightly"]["tokens"] + state["backfill"]["tokens"]
    other = ("other", InFlightReport(max_completion=1_000, news=(700.0,)))
    state, _ = take_from(state, WALL, "backfill", requests=0, tokens=0, plan=PLAN, report=other)
    ours = ("ours", InFlightReport(max_completion=500, news=()))
    raised, added = raised_to_headroom(
        state, WALL + 0.01, "nightly", plan=PLAN, report=ours, remaining=6_000, margin=300
    )
    # The provider has 6,000 left; it may still count 1,000 + 700 (the other process's
    # completions and its prompt just admitted) and 500 (ours), and 300 stay unused.
    expected_total = 6_000 - 1_000 - 700 - 500 - 300
    total = raised["nightly"]["tokens"] + raised["backfill"]["tokens"]
    assert total == pytest.approx(expected_total)
    assert added == pytest.approx(expected_total - before, abs=0.01 * TPM / 60)
    assert set(raised[ENTRIES]) == {"other", "ours"}


def test_a_raise_never_lowers_the_buckets():
    state, _ = take_from(None, WALL, "nightly", requests=0, tokens=0, plan=PLAN)
    report = ("ours", InFlightReport(max_completion=0, news=()))
    raised, added = raised_to_headroom(
        state, WALL, "nightly", plan=PLAN, report=report, remaining=100, margin=0
    )
    assert added == 0
    assert raised["nightly"] == state["nightly"]
    assert raised["backfill"] == state["backfill"]


def test_what_the_pool_cannot_hold_goes_to_the_other_pool():
    state, _ = take_from(None, WALL, "nightly", requests=0, tokens=5_000, plan=PLAN)
    state, _ = take_from(state, WALL, "backfill", requests=0, tokens=1_600, plan=PLAN)
    report = ("ours", InFlightReport(max_completion=0, news=()))
    raised, _ = raised_to_headroom(
        state, WALL, "nightly", plan=PLAN, report=report, remaining=6_600, margin=0
    )
    assert raised["nightly"]["tokens"] == pytest.approx(PLAN.capacity("nightly", "tokens"))
    total = raised["nightly"]["tokens"] + raised["backfill"]["tokens"]
    assert total == pytest.approx(6_600)


def test_news_age_out_and_processes_gone_are_forgotten():
    report = ("gone", InFlightReport(max_completion=2_000, news=(900.0,)))
    state, _ = take_from(None, WALL, "nightly", requests=0, tokens=0, plan=PLAN, report=report)
    assert account_countable(state, WALL) == 2_900
    assert account_countable(state, WALL + GUARD_SECONDS + 0.01) == 2_000  # its prompt: seen
    later = WALL + ENTRY_TTL_SECONDS + 1
    assert account_countable(state, later) == 0  # killed long ago: nothing in flight
    ours = ("ours", InFlightReport(max_completion=0, news=()))
    state, _ = raised_to_headroom(
        state, later, "nightly", plan=PLAN, report=ours, remaining=0, margin=0
    )
    assert set(state[ENTRIES]) == {"ours"}


def test_a_take_that_must_wait_stores_nothing_and_a_taken_one_its_report():
    report = ("ours", InFlightReport(max_completion=400, news=(600.0,)))
    change = taking("nightly", 0, 6_000, PLAN, report)
    state, wait = change(None, WALL)
    assert wait == 0.0
    assert state is not None
    assert state[ENTRIES]["ours"]["max_completion"] == 400
    again, wait = taking("nightly", 0, 6_000, PLAN, report)(state, WALL)
    assert wait > 0.0
    assert again is None  # nothing taken: nothing to store


def test_an_unreadable_entry_counts_as_gone():
    state, _ = take_from(None, WALL, "nightly", requests=0, tokens=0, plan=PLAN)
    state[ENTRIES] = {"broken": {"seen": "yesterday"}, "also": "not an entry"}
    assert account_countable(state, WALL) == 0


# -- the processes' side ---------------------------------------------------------------------------


def test_the_limiter_is_raised_but_never_lowered_nor_above_its_burst():
    clock = FakeTime(START)
    limiter = RateLimiter(None, TPM, clock=clock)
    assert limiter.tokens is not None
    limiter.tokens.level = 1_000
    assert limiter.raise_tokens(500) == 0.0
    assert limiter.tokens.level == 1_000
    assert limiter.raise_tokens(4_000) == pytest.approx(3_000)
    assert limiter.raise_tokens(1e9) == pytest.approx(BURST - 4_000)
    assert limiter.tokens.level == pytest.approx(BURST)


async def started_budget(path):
    """A process's shared budget of the account in `path`, started; its coordinator."""
    coordinator = LocalCoordinator(path, "acct")
    limiter = RateLimiter(None, TPM)
    budget = SharedBudget(
        coordinator, limiter, PLAN, pool="nightly", fallback=Rates(None, TPM), where="x"
    )
    await budget.start()
    return budget, coordinator, limiter


async def test_a_process_that_stops_leaves_nothing_in_flight_in_the_file(tmp_path):
    path = tmp_path / "budget.sqlite"
    budget, coordinator, limiter = await started_budget(path)
    admitted = lambda: budget.in_flight.admitted(1, 0.0, 900, 500)  # noqa: E731
    await limiter.acquire(1_400, admitted)
    state = coordinator.state()
    assert state is not None
    assert state[ENTRIES][budget.process]["max_completion"] == 500
    await budget.stop()
    reader = LocalCoordinator(path, "acct")
    after = reader.state()
    reader.close()
    assert after is not None
    assert budget.process not in after[ENTRIES]


async def test_an_offered_headroom_raises_the_accounts_buckets(tmp_path):
    budget, coordinator, limiter = await started_budget(tmp_path / "budget.sqlite")
    await limiter.acquire(6_000)  # the account's buckets: nearly spent
    budget.offer_headroom(remaining=5_000, margin=300)
    assert budget._raising is not None
    await budget._raising
    state = coordinator.state()
    await budget.stop()
    assert state is not None
    total = state["nightly"]["tokens"] + state["backfill"]["tokens"]
    assert total == pytest.approx(5_000 - 300, abs=0.05 * BURST)  # nothing in flight here
    assert budget.raised_tokens > 4_000


def test_headers_of_a_minute_are_seen_as_the_burst_they_charge_alike():
    """OpenAI states a minute's window (393,000 of 400,000 left) while its burst of one
    second (6,667 at 400k TPM) refuses: what the minute is owed, the burst is owed."""
    from ragas_ops.judge.limits.headroom import BurstView

    view = BurstView(burst_seconds=1.0)
    burst = RateLimitHeaders(remaining_tokens=5_000, limit_tokens=400_000)
    assert view.of(burst) == burst  # a burst's own headers: as they are
    minute = RateLimitHeaders(
        remaining_tokens=398_000, limit_tokens=400_000, remaining_requests=597, limit_requests=600
    )
    seen = view.of(minute)
    assert seen.remaining_tokens == 6_667 - 2_000
    assert seen.remaining_requests == 10 - 3
    # once a longer window was seen, a nearly spent one is no burst's: owed more than it holds
    assert view.of(RateLimitHeaders(remaining_tokens=5_000, limit_tokens=400_000)) == (
        RateLimitHeaders(remaining_tokens=6_667 - 395_000, limit_tokens=400_000)
    )
    assert in_reach(seen, tpm=400_000, burst_seconds=1.0, pace=1.0)
    assert not in_reach(minute, tpm=400_000, burst_seconds=1.0, pace=1.0)
