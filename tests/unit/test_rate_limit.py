"""RPM and TPM pacing, on a simulated clock: no test here waits for real time."""

from __future__ import annotations

import asyncio
import bisect

import pytest

from ragas_ops.judge.limits.rate_limit import RateLimiter

START = 1_000.0
EPSILON = 1e-6


class FakeTime:
    """A clock that only moves when someone sleeps on it.

    Like a real sleep, a fake one always lets at least `granularity` pass (the last test
    checks the limiter with an exact clock that can stand still).
    """

    def __init__(self, granularity: float = 1e-6, max_sleeps: int = 100_000) -> None:
        self.now = START
        self.sleeps: list[float] = []
        self.granularity = granularity
        self.max_sleeps = max_sleeps

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        assert seconds > 0, "the limiter never sleeps for nothing"
        assert len(self.sleeps) < self.max_sleeps, "the limiter spins without admitting"
        self.sleeps.append(seconds)
        self.now += max(seconds, self.granularity)
        await asyncio.sleep(0)  # let other tasks run, as a real sleep would


def _limiter(time: FakeTime, rpm=None, tpm=None, burst_seconds=1.0) -> RateLimiter:
    return RateLimiter(rpm, tpm, burst_seconds=burst_seconds, clock=time, sleep=time.sleep)


async def _admit_for(limiter: RateLimiter, time: FakeTime, seconds: float, tokens=1) -> list[float]:
    """Admission times of back-to-back requests (demand always above the limit)."""
    admitted = []
    while True:
        await limiter.acquire(tokens)
        if time.now >= START + seconds:
            return admitted
        admitted.append(time.now)


def _busiest_minute(times: list[float]) -> int:
    """Most admissions in any half-open 60-second window."""
    return max(bisect.bisect_left(times, t + 60 - EPSILON) - i for i, t in enumerate(times))


async def test_over_ten_minutes_rpm_is_never_exceeded_and_fully_used():
    time = FakeTime()
    limiter = _limiter(time, rpm=120)
    admitted = await _admit_for(limiter, time, seconds=600)

    burst = limiter.requests.capacity
    assert burst == pytest.approx(2.0)  # one second of budget
    assert _busiest_minute(admitted) <= 120 + burst
    # Every minute after the first runs at the limit: the budget is used, not wasted.
    for minute in range(1, 10):
        in_minute = [t for t in admitted if START + 60 * minute <= t < START + 60 * (minute + 1)]
        assert len(in_minute) == pytest.approx(120, abs=1)
    assert len(admitted) == pytest.approx(10 * 120 + burst, abs=1)


async def test_concurrent_callers_share_one_rpm_budget():
    time = FakeTime()
    limiter = _limiter(time, rpm=60)
    admitted: list[float] = []

    async def caller():
        while time.now < START + 300:
            await limiter.acquire(1)
            admitted.append(time.now)

    await asyncio.gather(*(caller() for _ in range(8)))
    admitted = sorted(t for t in admitted if t < START + 300)
    assert _busiest_minute(admitted) <= 60 + limiter.requests.capacity
    assert len(admitted) == pytest.approx(5 * 60 + 1, abs=2)


async def test_small_rpm_still_admits_one_request_at_once():
    time = FakeTime()
    limiter = _limiter(time, rpm=6)  # 0.1 per second: the bucket holds at least one request
    await limiter.acquire(1)
    assert time.now == START
    await limiter.acquire(1)
    assert time.now == pytest.approx(START + 10)


async def test_tpm_paces_by_estimated_tokens():
    time = FakeTime()
    limiter = _limiter(time, tpm=60_000)  # 1000 tokens per second, bucket of 1000
    admitted = await _admit_for(limiter, time, seconds=600, tokens=250)
    tokens = [250] * len(admitted)
    assert len(admitted) * 250 == pytest.approx(600 * 1000 + 1000, abs=250)
    # In any minute, at most the TPM plus the burst.
    for i, t in enumerate(admitted):
        end = bisect.bisect_left(admitted, t + 60 - EPSILON)
        assert sum(tokens[i:end]) <= 60_000 + 1000


async def test_both_limits_apply_and_the_tighter_one_wins():
    time = FakeTime()
    limiter = _limiter(time, rpm=600, tpm=6_000)  # 10 req/s but only 100 tokens/s
    admitted = await _admit_for(limiter, time, seconds=60, tokens=50)
    assert len(admitted) == pytest.approx(60 * 2 + 2, abs=1)  # token-bound: 2 requests/s


async def test_a_request_larger_than_the_bucket_waits_for_a_full_bucket_then_goes_into_debt():
    time = FakeTime()
    limiter = _limiter(time, tpm=6_000)  # 100 tokens/s, bucket of 100
    await limiter.acquire(100)
    await limiter.acquire(500)  # bigger than the bucket: waits one refill, not forever
    assert time.now == pytest.approx(START + 1)
    await limiter.acquire(1)  # the debt of 400 is paid first
    assert time.now == pytest.approx(START + 1 + 4.01)


async def test_settle_with_actual_above_estimate_delays_later_requests():
    time = FakeTime()
    limiter = _limiter(time, tpm=6_000)
    await limiter.acquire(100)
    limiter.settle(estimated_tokens=100, actual_tokens=400)  # it cost 300 more
    await limiter.acquire(100)
    assert time.now == pytest.approx(START + 4)  # 300 debt + 100 needed at 100/s


async def test_settle_with_actual_below_estimate_gives_the_difference_back():
    time = FakeTime()
    limiter = _limiter(time, tpm=6_000)
    await limiter.acquire(100)
    limiter.settle(estimated_tokens=100, actual_tokens=20)
    await limiter.acquire(80)
    assert time.now == START


async def test_refund_returns_the_request_and_its_tokens():
    time = FakeTime()
    limiter = _limiter(time, rpm=60, tpm=6_000)  # 1 request and 100 tokens per second
    await limiter.acquire(100)
    limiter.refund(100)  # the provider refused it (a 429): nothing was used
    await limiter.acquire(100)
    assert time.now == START


async def test_refund_never_fills_a_bucket_above_its_capacity():
    time = FakeTime()
    limiter = _limiter(time, rpm=60, tpm=6_000)
    limiter.refund(10_000)
    assert limiter.requests.level == limiter.requests.capacity
    assert limiter.tokens.level == limiter.tokens.capacity


async def test_pause_for_holds_every_request_even_with_budget_left():
    time = FakeTime()
    limiter = _limiter(time, rpm=6_000, tpm=None)
    limiter.pause_for(7.5)
    await limiter.acquire(1)
    assert time.now == pytest.approx(START + 7.5)
    await limiter.acquire(1)  # the pause is over and the bucket is full
    assert time.now == pytest.approx(START + 7.5)


async def test_pause_for_with_no_limits_at_all_still_holds_requests():
    time = FakeTime()
    limiter = _limiter(time)
    limiter.pause_for(3)
    limiter.pause_for(1)  # a shorter pause never cuts a longer one short
    await limiter.acquire(1)
    assert time.now == pytest.approx(START + 3)


async def test_observe_remaining_only_lowers_what_the_buckets_believe():
    time = FakeTime()
    limiter = _limiter(time, rpm=600, tpm=60_000)  # buckets of 10 requests, 1000 tokens
    limiter.observe_remaining(requests=10_000, tokens=10_000_000)
    assert limiter.requests.level == pytest.approx(10)
    assert limiter.tokens.level == pytest.approx(1000)
    limiter.observe_remaining(requests=0, tokens=None)
    assert limiter.requests.level == 0
    assert limiter.tokens.level == pytest.approx(1000)
    await limiter.acquire(1)
    assert time.now == pytest.approx(START + 0.1)  # waits for one request at 10/s


async def test_no_limits_never_wait():
    time = FakeTime()
    limiter = _limiter(time)
    for _ in range(10_000):
        await limiter.acquire(1_000_000)
    limiter.settle(1, 10**9)
    limiter.observe_remaining(0, 0)
    await limiter.acquire(1)
    assert time.now == START
    assert time.sleeps == []


@pytest.mark.parametrize(("rpm", "tpm"), [(0, None), (-5, None), (None, 0), (100, -1)])
def test_a_limit_that_is_not_positive_is_refused(rpm, tpm):
    with pytest.raises(ValueError, match="must be positive"):
        RateLimiter(rpm, tpm)


async def test_requests_are_admitted_in_arrival_order():
    time = FakeTime()
    limiter = _limiter(time, rpm=60)
    order: list[int] = []

    async def caller(number: int):
        await limiter.acquire(1)
        order.append(number)

    await asyncio.gather(*(caller(n) for n in range(20)))
    assert order == list(range(20))


async def test_a_wait_below_the_clock_resolution_does_not_spin():
    # Regression: 4.01 s computed in floats left a wait of 9e-15 s at t=1005, which sleeping
    # does not add to the clock, and acquire() spun forever.
    time = FakeTime(granularity=0.0, max_sleeps=1_000)  # an exact clock: sleeping d adds d
    limiter = _limiter(time, tpm=6_000)
    await limiter.acquire(100)
    await limiter.acquire(500)
    await limiter.acquire(1)  # 4.01 s, computed in floats
    assert time.now == pytest.approx(START + 5.01)
