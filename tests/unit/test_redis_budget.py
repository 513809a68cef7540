"""The Redis coordinator's settings (a URL without credentials, the password from the
environment, never in a message) and its buckets, against fakeredis' TCP server on 127.0.0.1."""

from __future__ import annotations

import pytest
from ragas_ops_testing.judge_process import free_port

from ragas_ops.config import ConfigError
from ragas_ops.judge.limits.account_buckets import AccountPlan, CoordinatorError, Rates
from ragas_ops.judge.limits.rate_limit import RateLimiter
from ragas_ops.judge.limits.redis_budget import RedisCoordinator, RedisTarget, redis_url_for
from ragas_ops.judge.limits.shared_budget import shared_budget_for
from ragas_ops.judge.limits.spec import LimitsSpec, SharedBudgetSpec

fakeredis = pytest.importorskip("fakeredis", reason="the redis extra's test server")

PASSWORD = "budget-" + "pass-0123456789"
PLAN = AccountPlan(Rates(60, None), backfill_share=0.25)


def _settings(url: str | None) -> SharedBudgetSpec:
    return SharedBudgetSpec(mode="redis", url=url)


def test_the_url_must_be_a_redis_url_without_credentials():
    with pytest.raises(ConfigError, match="needs the server's URL"):
        redis_url_for(_settings(None))
    with pytest.raises(ConfigError, match="redis://host"):
        redis_url_for(_settings("http://127.0.0.1:6379"))
    with pytest.raises(ConfigError, match="REDIS_PASSWORD") as refused:
        redis_url_for(_settings(f"redis://:{PASSWORD}@127.0.0.1:6379/0"))
    assert PASSWORD not in str(refused.value)


def test_the_password_comes_from_the_environment_and_does_not_show():
    target = redis_url_for(_settings("redis://10.0.0.5:6380/2"), {"REDIS_PASSWORD": PASSWORD})
    assert target.where == "10.0.0.5:6380"
    assert target.password is not None
    assert target.password.reveal() == PASSWORD
    assert PASSWORD not in repr(target.password) + str(vars(target))


def test_two_coordinators_take_from_one_key(fake_redis_url):
    first = RedisCoordinator(RedisTarget(fake_redis_url, None), "acct")
    second = RedisCoordinator(RedisTarget(fake_redis_url, None), "acct")
    try:
        assert first.take("nightly", 1, 0, PLAN) == 0.0  # nightly's bucket: its minimum of 1
        assert second.take("nightly", 1, 0, PLAN) > 0.0  # the same bucket, empty now
        assert first.state() == second.state()
        assert second.take("backfill", 1, 0, PLAN) == 0.0  # the other pool's own bucket
    finally:
        first.close()
        second.close()


def test_a_redis_that_is_down_is_a_coordinator_failure_without_the_password():
    target = RedisTarget(f"redis://127.0.0.1:{free_port()}/0", None)
    target.password = redis_url_for(_settings(target.url), {"REDIS_PASSWORD": PASSWORD}).password
    coordinator = RedisCoordinator(target, "acct")
    with pytest.raises(CoordinatorError, match=r"redis at 127\.0\.0\.1") as failed:
        coordinator.take("nightly", 1, 0, PLAN)
    assert PASSWORD not in str(failed.value)


def test_shared_budget_for_redis_needs_no_cache_folder(fake_redis_url):
    limits = LimitsSpec(rpm=60, tpm=None)
    account = "http://127.0.0.1:1/v1 gpt-4o-mini"
    budget = shared_budget_for(
        _settings(fake_redis_url), limits, account, None, RateLimiter(60, None)
    )
    assert budget is not None
    assert isinstance(budget.coordinator, RedisCoordinator)
    assert budget.where.startswith("redis at 127.0.0.1:")
