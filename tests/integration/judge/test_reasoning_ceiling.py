"""A ceiling on what one row may cost (issue 49, finding 1), over HTTP against the test judge
playing a reasoning model that reasons to its limit: every reply spends all of its
`max_completion_tokens` on hidden reasoning (billed) and comes back `finish_reason: length`
with no answer. Before: 720 requests for 30 rows, `max_completion_tokens` grown to
2,060,642,832, $202,455 in the run's own accounting, exit 0. Now each request's room is at
most `room_ceiling` of its prompt (4 x (its output room + twice the typical reasoning at the
effort), never past the model's output limit), a prompt is asked at most 1 + 3 times, the
reasoning learnt comes from complete replies only, and the row ends `judge_output_cut`."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from ragas_ops_testing.judge_server import JudgeServer

from ragas_ops.cli.main import main
from ragas_ops.judge.chat_completions.profiles import GPT5, JUDGE_REASONING_TOKENS
from ragas_ops.judge.chat_completions.shape import REASONING_HEADROOM
from ragas_ops.judge.engine.judge import MAX_ROOM_REQUESTS
from ragas_ops.judge.engine.wire import ROOM_CEILING_FACTOR
from ragas_ops.metrics import build_metrics
from ragas_ops.pricing import DEFAULT_PRICES, price_for
from tests.integration.e2e.test_score_e2e import (
    METRICS,
    assert_every_row_once,
    score_args,
    write_sample,
)
from tests.support import TEST_KEY

ROWS = 30
MODEL = "gpt-5-mini"  # effort `minimal` (its lowest): 12 reasoning tokens a reply, typically


def largest_room() -> int:
    """The most `max_completion_tokens` any request of the three metrics may get."""
    allowance = REASONING_HEADROOM * JUDGE_REASONING_TOKENS["minimal"]
    rooms = [
        ROOM_CEILING_FACTOR * (prompt.max_output_tokens + allowance)
        for metric in build_metrics(METRICS)
        for prompt in metric.prompts
    ]
    assert GPT5.max_output_tokens is not None
    return int(min(max(rooms), GPT5.max_output_tokens))


@pytest.fixture
def thinker(
    start_judge_server: Callable[..., JudgeServer], monkeypatch: pytest.MonkeyPatch
) -> JudgeServer:
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    return start_judge_server(reason_to_limit=True, request_log=True)


def score(server: JudgeServer, tmp_path: Path, *extra: str) -> tuple[int, pq.Table]:
    source, target = tmp_path / "logs.parquet", tmp_path / "scored.parquet"
    logs = write_sample(source, ROWS)
    code = main([*score_args(server, source, target, tmp_path / "cache.sqlite"), *extra])
    scored = pq.read_table(target)
    assert_every_row_once(logs, scored)
    return code, scored


def test_a_model_that_reasons_to_its_limit_costs_a_bounded_amount_per_row(
    thinker: JudgeServer, tmp_path: Path
) -> None:
    code, scored = score(thinker, tmp_path, "--model", MODEL, "--rpm", "none", "--tpm", "none")

    assert code == 0, "the run completes"
    chat = [entry for entry in thinker.requests() if entry["endpoint"] == "chat"]
    rooms = [int(json.loads(entry["body"])["max_completion_tokens"]) for entry in chat]
    calls_per_row = 3  # each metric's first prompt is cut: the row's metric ends there
    assert len(chat) <= ROWS * calls_per_row * (1 + MAX_ROOM_REQUESTS), len(chat)
    assert max(rooms) <= largest_room(), (max(rooms), largest_room())
    for metric in METRICS:
        statuses = set(scored.column(f"{metric}_status").to_pylist())
        assert statuses <= {"judge_output_cut", "invalid_input"}, (metric, statuses)
        assert "judge_output_cut" in statuses
        reasons = scored.column(f"{metric}_reason").to_pylist()
        assert any("cut at its output limit" in str(reason) for reason in reasons)
    price = price_for(MODEL, DEFAULT_PRICES)
    assert price is not None
    spent = sum(value or 0.0 for value in scored.column("cost_usd").to_pylist())
    prompt_tokens = sum(scored.column("prompt_tokens").to_pylist())
    bound = price.cost(prompt_tokens, sum(rooms))  # every request's whole room paid
    assert 0 < spent <= bound
    print(
        f"{len(chat)} chat requests for {ROWS} rows, largest max_completion_tokens "
        f"{max(rooms):,} (bound {largest_room():,}), spent ${spent:.4f} (bound ${bound:.4f})"
    )


def test_the_budget_holds_what_requests_reserve_not_only_what_was_spent(
    thinker: JudgeServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    budget = 0.01
    monkeypatch.setenv("RAGAS_OPS_JUDGE_BUDGET_USD", str(budget))

    code, scored = score(thinker, tmp_path, "--model", MODEL, "--rpm", "none", "--tpm", "none")

    assert code == 0
    spent = sum(value or 0.0 for value in scored.column("cost_usd").to_pylist())
    assert spent <= budget
    statuses = {s for metric in METRICS for s in scored.column(f"{metric}_status").to_pylist()}
    assert "budget_exhausted" in statuses
    print(f"budget ${budget}: spent ${spent:.4f}; statuses {sorted(statuses)}")
