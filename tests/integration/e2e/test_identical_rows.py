"""Identical rows get one answer and one status (issue 30), in one run and in every rerun:
over real HTTP against the test judge, with half of its replies, repairs included, unusable."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from ragas_ops_testing.judge_server import JudgeServer

from ragas_ops.cli.main import EXIT_OK, main
from ragas_ops.samples import sample_interactions
from tests.support import TEST_KEY

METRICS = ("faithfulness", "answer_relevance", "context_relevance")
GROUPS, COPIES = 10, 6


def identical_rows(path: Path) -> list[list[int]]:
    """GROUPS distinct interactions, each logged COPIES times under its own id."""
    distinct = sample_interactions(GROUPS, seed=30)
    table = pa.concat_tables([distinct] * COPIES)
    table = table.set_column(0, "id", pa.array([f"row-{i}" for i in range(table.num_rows)]))
    pq.write_table(table, path)
    return [[copy * GROUPS + group for copy in range(COPIES)] for group in range(GROUPS)]


STORED = " (stored; --retry-failed asks again)"  # what a rerun adds to a reused failure


def outcomes(table: pa.Table, metric: str, rows: list[int]) -> set[tuple[object, ...]]:
    def outcome(row: int) -> tuple[object, ...]:
        score, status, reason, evidence = (
            table.column(f"{metric}_{part}")[row].as_py()
            for part in ("score", "status", "reason", "evidence")
        )
        return score, status, (reason or "").removesuffix(STORED), evidence

    return {outcome(row) for row in rows}


def test_identical_rows_get_one_outcome_in_a_run_and_the_same_in_its_rerun(
    start_judge_server: Callable[..., JudgeServer],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    server = start_judge_server(rate_malformed=0.5)
    groups = identical_rows(tmp_path / "logs.parquet")
    scored = {}
    for run in ("first", "rerun"):
        target = tmp_path / f"{run}.parquet"
        code = main(
            ["score", str(tmp_path / "logs.parquet"), str(target), "--base-url", server.base_url,
             "--model", "test-judge", "--embedding-model", "test-embedding",
             "--cache", str(tmp_path / "cache.sqlite"), "--rpm", "none", "--tpm", "none",
             "--no-progress"]
        )  # fmt: skip
        assert code == EXIT_OK
        scored[run] = pq.read_table(target)
        if run == "first":
            requests = server.stats()["requests"]
    assert server.stats()["requests"] == requests, "the rerun is served from the cache"

    first = scored["first"]
    statuses = {status for metric in METRICS for status in first[f"{metric}_status"].to_pylist()}
    assert "judge_output_invalid" in statuses, "the faults reached some rows"
    for metric in METRICS:
        for rows in groups:
            assert len(outcomes(first, metric, rows)) == 1, (metric, rows)
            assert outcomes(scored["rerun"], metric, rows) == outcomes(first, metric, rows)
