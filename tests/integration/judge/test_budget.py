"""The run's budget: the Budget ledger, and a sync run over HTTP that it stops."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest
from ragas_ops_testing.judge_server import JudgeServer

from ragas_ops.cli.main import main
from ragas_ops.judge.limits.budget import Budget, BudgetExhaustedError, Spend
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


@pytest.mark.parametrize("batch_rows", ["4", "256"])
def test_a_money_budget_is_used_almost_whole_never_exceeded_and_leaves_the_last_rows_whole(
    judge_server: JudgeServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, batch_rows: str
) -> None:
    """A run that needs about $0.05 with $0.02: it spends 95-100% of it; the rows left over
    are the last rows of the input, a suffix, and whole: no request was sent for any of them
    (a metric of theirs may still be answered, free, by an earlier row's identical request)."""
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    monkeypatch.setenv("RAGAS_OPS_JUDGE_BUDGET_USD", "0.02")
    source = tmp_path / "logs.parquet"
    logs = write_sample(source, 160, seed=9)
    target = tmp_path / "scored.parquet"
    args = score_args(judge_server, source, target, tmp_path / "cache.sqlite")
    args[args.index("test-judge")] = "gpt-4o-mini"  # priced models
    args[args.index("test-embedding")] = "text-embedding-3-small"

    main([*args, "--batch-rows", batch_rows])

    scored = pq.read_table(target)
    assert_every_row_once(logs, scored)
    spent = sum(scored.column("cost_usd").to_pylist())
    assert 0.95 * 0.02 <= spent <= 0.02
    statuses = [
        [scored.column(f"{metric}_status")[row].as_py() for metric in METRICS]
        for row in range(scored.num_rows)
    ]
    left = [row for row, of_row in enumerate(statuses) if "budget_exhausted" in of_row]
    assert 10 <= len(left) <= scored.num_rows - 10
    assert left == list(range(left[0], scored.num_rows))  # the last rows
    requests = scored.column("judge_requests").to_pylist()
    assert [requests[row] for row in left] == [0] * len(left)  # whole: nothing paid for them
    assert all(requests[row] > 0 for row in range(left[0]) if "ok" in statuses[row])
