"""The run's budget: the Budget ledger, and a sync run over HTTP that it stops."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from ragas_ops.cli.main import main
from ragas_ops.judge.budget import Budget, BudgetExhaustedError, Spend
from ragas_ops.testing.judge_server import JudgeServer
from tests.integration.e2e.test_score_e2e import (
    METRICS,
    assert_every_row_once,
    score_args,
    write_sample,
)
from tests.support import TEST_KEY


def test_requests_in_flight_count_against_the_budget() -> None:
    budget = Budget(usd=1.0)
    first = budget.reserve(Spend(0.6, 10), "first")
    with pytest.raises(BudgetExhaustedError, match=r"budget \(\$1\) is spent"):
        budget.reserve(Spend(0.6, 10), "second")  # the first has not answered yet
    budget.settle(first, Spend(0.3, 8))  # it cost less than expected
    budget.reserve(Spend(0.6, 10), "third")
    assert budget.spent == Spend(0.3, 8)
    assert budget.refused == 1


def test_a_failed_request_gives_its_reservation_back() -> None:
    budget = Budget(tokens=100)
    held = budget.reserve(Spend(0.0, 90), "first")
    budget.settle(held, Spend())
    budget.reserve(Spend(0.0, 90), "again")


def test_no_limit_admits_everything() -> None:
    budget = Budget()
    for _ in range(1000):
        budget.reserve(Spend(1e6, 10**9), "any")
    assert not budget.limited


def test_a_sync_run_stops_at_its_token_budget_and_says_which_rows_were_left(
    judge_server: JudgeServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    monkeypatch.setenv("RAGAS_OPS_JUDGE_BUDGET_TOKENS", "30000")
    source = tmp_path / "logs.parquet"
    logs = write_sample(source, 40)
    target = tmp_path / "scored.parquet"

    main(score_args(judge_server, source, target, tmp_path / "cache.sqlite"))

    scored = pq.read_table(target)
    assert_every_row_once(logs, scored)
    statuses = {s for metric in METRICS for s in scored.column(f"{metric}_status").to_pylist()}
    assert {"ok", "budget_exhausted"} <= statuses
    spent = sum(
        sum(scored.column(column).to_pylist())
        for column in ("prompt_tokens", "completion_tokens", "embedding_tokens")
    )
    assert spent <= 30_000
