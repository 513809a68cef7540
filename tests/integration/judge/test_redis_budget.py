"""The shared budget across hosts: two real `ragas-ops score` processes that share no file (each
its own cache folder, as on two machines) take from one account's buckets in a Redis server on
127.0.0.1 (fakeredis' TCP server; a real `redis-server` when one is installed), and a Redis
that is down makes them fall back to their static share without losing a row."""

from __future__ import annotations

import shutil
import subprocess
import time

import pytest
from ragas_ops_testing.judge_process import free_port

from ragas_ops.judge.limits.redis_budget import KEY_PREFIX
from tests.integration.judge.test_shared_budget import (
    RPM,
    TPM,
    assert_rows_scored,
    assert_within_the_account,
    score_at_once,
)

fakeredis = pytest.importorskip(
    "fakeredis", reason="the redis extra's test server: pip install fakeredis"
)
redis = pytest.importorskip("redis", reason="the redis extra: pip install 'ragas-ops[redis]'")

PASSWORD = "budget-" + "pass-0123456789"  # never a real one
TWO_HOSTS = ("host-a", "host-b")  # cache folders: no budget.sqlite in common


def redis_environment(url: str) -> dict[str, str]:
    return {"RAGAS_OPS_JUDGE_SHARED_BUDGET_URL": url}


def test_two_hosts_share_the_account_through_redis(start_judge_server, tmp_path, fake_redis_url):
    server = start_judge_server(rpm=RPM, tpm=TPM, latency_ms=100)
    targets, logs = score_at_once(
        server, tmp_path, rows=30, shared="redis", extra=redis_environment(fake_redis_url),
        caches=TWO_HOSTS,
    )  # fmt: skip
    assert_within_the_account(server, targets)
    for log in logs:
        assert "unavailable" not in log, log
    keys = redis.Redis.from_url(fake_redis_url).keys(f"{KEY_PREFIX}*")
    assert len(keys) == 1  # one account: one key, named by a hash (no URL, no model in it)
    assert not any((tmp_path / host / "budget.sqlite").exists() for host in TWO_HOSTS)


def test_redis_down_falls_back_to_the_static_share_and_loses_no_row(start_judge_server, tmp_path):
    server = start_judge_server(rpm=RPM, tpm=TPM, latency_ms=100)
    down = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there
    extra = {**redis_environment(down), "REDIS_PASSWORD": PASSWORD}
    targets, logs = score_at_once(
        server, tmp_path, rows=30, shared="redis", extra=extra, caches=TWO_HOSTS
    )
    for log in logs:
        assert log.count("shared judge budget is unavailable") == 1, log
        assert "redis at 127.0.0.1" in log
        assert "static share, 1140 rpm and 760000 tpm" in log
        assert PASSWORD not in log
    assert_rows_scored(targets)


@pytest.mark.skipif(shutil.which("redis-server") is None, reason="no redis-server binary here")
def test_two_hosts_share_the_account_through_a_real_redis(start_judge_server, tmp_path):
    port = free_port()
    process = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", ""],
        stdout=subprocess.DEVNULL,
    )
    try:
        url = f"redis://127.0.0.1:{port}/0"
        for _ in range(100):
            try:
                redis.Redis.from_url(url).ping()
                break
            except redis.ConnectionError:
                time.sleep(0.05)
        server = start_judge_server(rpm=RPM, tpm=TPM, latency_ms=100)
        targets, _ = score_at_once(
            server, tmp_path, rows=30, shared="redis", extra=redis_environment(url),
            caches=TWO_HOSTS,
        )  # fmt: skip
        assert_within_the_account(server, targets)
    finally:
        process.terminate()
        process.wait(timeout=10)
