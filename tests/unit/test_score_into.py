"""The one scoring loop (`scoring.run.score_into`): a file published whole or not at all."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ragas_ops.config import Settings
from ragas_ops.contract.inputs import ContractError
from ragas_ops.contract.outputs import output_schema
from ragas_ops.scoring.run import RowCountMismatch, score_into, scorer_for
from ragas_ops.storage import locate
from tests.unit.test_scoring import MAPPING, RuleJudge


class ClosingJudge(RuleJudge):
    def __init__(self) -> None:
        super().__init__()
        self.closed = 0

    async def aclose(self) -> None:
        self.closed += 1


INPUT = pa.schema(
    [("query", pa.string()), ("docs", pa.list_(pa.string())), ("response", pa.string())]
)


def rows(count: int, start: int = 0) -> pa.Table:
    return pa.Table.from_pydict(
        {
            "query": [f"Question {i}?" for i in range(start, start + count)],
            "docs": pa.array(
                [[f"Fact {i}. More."] for i in range(start, start + count)],
                pa.list_(pa.string()),
            ),
            "response": [f"Fact {i}." for i in range(start, start + count)],
        },
        schema=INPUT,
    )


def settings() -> Settings:
    settings = Settings()
    settings.metrics.names = ["faithfulness", "context_relevance"]
    settings.columns = MAPPING
    return settings


def run(tables: list[pa.Table], target: Path, expected: int, **options: object) -> object:
    judge = ClosingJudge()
    scorer = scorer_for(settings(), judge)
    schema = output_schema(INPUT, scorer.metrics)
    result = asyncio.run(
        score_into(
            scorer, iter(tables), locate(str(target)), schema, expected_rows=expected, **options
        )  # type: ignore[arg-type]
    )
    return result, scorer, judge


def leftovers(folder: Path) -> list[str]:
    return sorted(path.name for path in folder.iterdir())


def test_every_row_is_written_in_order_and_the_judge_closed(tmp_path: Path) -> None:
    target = tmp_path / "scored.parquet"
    seen: list[int] = []
    result, _, judge = run(
        [rows(3), rows(2, start=3)], target, 5, on_table=lambda table: seen.append(table.num_rows)
    )
    written = pq.read_table(target)
    assert result is True
    assert written.column("query").to_pylist() == [f"Question {i}?" for i in range(5)]
    assert set(written.column("faithfulness_status").to_pylist()) == {"ok"}
    assert seen == [3, 2]
    assert judge.closed == 1
    assert leftovers(tmp_path) == ["scored.parquet"]


def test_a_stream_without_rows_publishes_an_empty_file_with_the_output_columns(
    tmp_path: Path,
) -> None:
    target = tmp_path / "scored.parquet"
    result, scorer, judge = run([], target, 0)
    written = pq.read_table(target)
    assert result is True
    assert written.num_rows == 0
    assert written.schema == output_schema(INPUT, scorer.metrics)
    assert judge.closed == 1


def test_a_row_count_other_than_expected_publishes_nothing(tmp_path: Path) -> None:
    target = tmp_path / "scored.parquet"
    with pytest.raises(RowCountMismatch, match="read 4 rows but scored 3"):
        run([rows(3)], target, 4)
    assert leftovers(tmp_path) == []


def test_the_caller_words_the_mismatch(tmp_path: Path) -> None:
    with pytest.raises(RowCountMismatch, match=r"^chunk 7: 4 planned, 3 scored$"):
        run(
            [rows(3)],
            tmp_path / "part.parquet",
            4,
            mismatch=lambda expected, scored: f"chunk 7: {expected} planned, {scored} scored",
        )


def test_a_failure_mid_stream_keeps_the_previous_file_and_closes_the_judge(
    tmp_path: Path,
) -> None:
    target = tmp_path / "scored.parquet"
    pq.write_table(pa.table({"before": [1]}), target)
    broken = rows(2).drop_columns(["response"])
    judge = ClosingJudge()
    scorer = scorer_for(settings(), judge)

    def tables() -> Iterator[pa.Table]:
        yield rows(2)
        yield broken

    with pytest.raises(ContractError):
        asyncio.run(
            score_into(
                scorer,
                tables(),
                locate(str(target)),
                output_schema(INPUT, scorer.metrics),
                expected_rows=4,
            )
        )
    assert pq.read_table(target).column_names == ["before"]
    assert leftovers(tmp_path) == ["scored.parquet"]
    assert judge.closed == 1


def test_an_incomplete_pass_is_discarded_without_a_row_count_check(tmp_path: Path) -> None:
    target = tmp_path / "part.parquet"
    result, _, judge = run([rows(3)], target, 99, complete=lambda: False)
    assert result is False
    assert leftovers(tmp_path) == []
    assert judge.closed == 1
