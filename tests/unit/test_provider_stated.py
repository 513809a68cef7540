"""What the provider stated of an account, kept beside the cache between runs
(ragas_ops.judge.limits.stated)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from ragas_ops.judge.limits.spec import DefaultRate, LimitsSpec
from ragas_ops.judge.limits.stated import Stated, read_stated, remember, stated_file

ACCOUNT = "https://api.example.test/v1 gpt-5.4-mini"


def test_what_a_run_learnt_is_read_by_the_next_and_no_url_is_written(tmp_path: Path) -> None:
    cache = str(tmp_path / "cache" / "judge.sqlite")
    assert read_stated(cache, ACCOUNT) is None
    remember(cache, ACCOUNT, rpm=3_000, tpm=2_000_000)
    remember(cache, ACCOUNT, counts="usage")
    known = read_stated(cache, ACCOUNT)
    assert known is not None
    assert (known.rpm, known.tpm, known.counts) == (3_000, 2_000_000, "usage")
    assert known.learnt_within(1)
    assert read_stated(cache, "another endpoint gpt-5.4-mini") is None
    path = stated_file(cache)
    assert path == tmp_path / "cache" / "provider_account.json"
    assert "example" not in path.read_text()
    assert sorted(p.name for p in path.parent.iterdir()) == ["provider_account.json"]


def test_a_broken_file_or_a_cache_in_memory_costs_nothing(tmp_path: Path) -> None:
    cache = str(tmp_path / "judge.sqlite")
    (tmp_path / "provider_account.json").write_text("{not json")
    assert read_stated(cache, ACCOUNT) is None
    remember(cache, ACCOUNT, tpm=150_000)  # written afresh
    known = read_stated(cache, ACCOUNT)
    assert known is not None
    assert known.tpm == 150_000
    assert read_stated(None, ACCOUNT) is None
    remember(None, ACCOUNT, tpm=1)  # nowhere to keep it: nothing happens


def test_an_old_statement_is_not_recent() -> None:
    old = (datetime.now(UTC) - timedelta(days=30)).isoformat()
    assert not Stated(rpm=1, tpm=1, learnt_at=old).learnt_within(7)
    assert not Stated().learnt_within(7)


def test_the_default_rates_are_marked_as_no_ones_setting() -> None:
    limits = LimitsSpec()
    assert isinstance(limits.rpm, DefaultRate)
    assert isinstance(limits.tpm, DefaultRate)
    assert (limits.rpm, limits.tpm) == (500, 200_000)
    assert not isinstance(LimitsSpec(rpm=500).rpm, DefaultRate)
