"""Scoring tables: every input row comes out once, in order, unchanged, with scores attached."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from ragas_ops.contract.inputs import ColumnMapping, ContractError
from ragas_ops.contract.outputs import METRIC_SUFFIXES, ROW_COLUMNS, output_schema
from ragas_ops.contract.status import Status
from ragas_ops.judge.base import (
    CURRENT_ROW,
    Completion,
    Embeddings,
    JudgeRejectedError,
    RowTicket,
    Usage,
)
from ragas_ops.metrics import build_metrics
from ragas_ops.prompts import Prompt
from ragas_ops.scoring.scorer import Scorer
from ragas_ops.text import split_sentences

METRICS = ("faithfulness", "answer_relevance", "context_relevance")


class RuleJudge:
    """An in-process judge whose answers follow simple rules of the row's data.

    statements: the answer's sentences; verdicts: "yes" when the statement appears in a
    context; questions: n numbered questions; extraction: the first sentence of the first
    context; every vector points the same way. An answer containing "FILTER" is refused.
    """

    description = "rule:judge"
    embedding_description = "rule:embeddings"

    def __init__(self) -> None:
        self.events: Counter[str] = Counter()
        self.total = Usage()
        self.embed_calls = 0

    async def complete(
        self, prompt: Prompt[Any], data: Mapping[str, Any], *, n: int = 1
    ) -> Completion[Any]:
        await asyncio.sleep(0)
        if "FILTER" in str(data.get("answer", "")):
            raise JudgeRejectedError(f"{prompt.id}: refused by the content filter")
        if prompt.name == "faithfulness.statements":
            fields: dict[str, Any] = {"statements": split_sentences(data["answer"])}
        elif prompt.name == "faithfulness.verdicts":
            text = " ".join(data["contexts"])
            fields = {
                "verdicts": [
                    {"explanation": "", "verdict": "yes" if s in text else "no"}
                    for s in data["statements"]
                ]
            }
        elif prompt.name == "answer_relevance.questions":
            count = data["number_of_questions"]
            fields = {"questions": [f"Q{i}?" for i in range(count)], "noncommittal": False}
        elif prompt.name == "context_relevance.extract":
            fields = {"sentences": split_sentences(data["contexts"][0])[:1]}
        else:
            raise AssertionError(f"unexpected prompt {prompt.name}")
        usage = Usage(requests=1, prompt_tokens=50, completion_tokens=5, cost_usd=0.01)
        self.total.add(usage)
        return Completion([prompt.output_model(**fields)] * n, usage)

    async def embed(self, texts: Sequence[str]) -> Embeddings:
        self.embed_calls += 1
        vectors = {text: np.array([1.0, 1.0]) for text in texts}
        return Embeddings(vectors, Usage(embedding_requests=1, embedding_tokens=len(texts)))

    def usage_total(self) -> Usage:
        return self.total

    async def aclose(self) -> None:
        pass


def _log() -> pa.Table:
    return pa.table(
        {
            "id": pa.array([10, 11, 12, 13], pa.int64()),
            "query": ["When did it open?", "How tall is it?", None, "Where is it?"],
            "docs": pa.array(
                [
                    ["It opened in 2004. It is long."],
                    ["It is 343 m tall.", "It is 343 m tall."],
                    ["Anything."],
                    ["It is in France. It spans the Tarn."],
                ],
                pa.list_(pa.string()),
            ),
            "response": [
                "It opened in 2004.",
                "It is 343 m tall. It is red.",
                "Whatever.",
                "FILTER me.",
            ],
            "segment": pa.array(["a", "b", "a", None], pa.dictionary(pa.int8(), pa.string())),
            "logged_at": pa.array([1, 2, 3, 4], pa.timestamp("ms")),
        }
    )


MAPPING = ColumnMapping(question="query", contexts="docs", answer="response")


@pytest.fixture
def scored() -> tuple[pa.Table, pa.Table, Scorer, RuleJudge]:
    table = _log()
    judge = RuleJudge()
    scorer = Scorer(build_metrics(METRICS), judge, columns=MAPPING)
    return table, asyncio.run(scorer.score_table(table)), scorer, judge


def test_every_input_row_comes_out_once_in_order_with_its_columns_unchanged(scored):
    table, result, _, _ = scored
    assert result.num_rows == table.num_rows
    assert result.schema.names[: table.num_columns] == table.schema.names
    for name in table.schema.names:
        assert result.schema.field(name) == table.schema.field(name)
        assert result.column(name).combine_chunks().equals(table.column(name).combine_chunks())


def test_each_metric_adds_its_five_columns_then_the_row_accounting(scored):
    table, result, _, _ = scored
    added = result.schema.names[table.num_columns :]
    expected = [f"{m}_{suffix}" for m in METRICS for suffix, _ in METRIC_SUFFIXES]
    assert added == expected + [name for name, _ in ROW_COLUMNS]
    assert result.schema == output_schema(table.schema, build_metrics(METRICS))


def test_scores_statuses_and_reasons_per_row(scored):
    _, result, _, _ = scored
    rows = result.to_pylist()
    assert [r["faithfulness_status"] for r in rows] == [
        Status.OK,
        Status.OK,
        Status.INVALID_INPUT,
        Status.JUDGE_REJECTED,
    ]
    assert [r["faithfulness_score"] for r in rows] == [1.0, 0.5, None, None]
    assert rows[2]["faithfulness_reason"] == "question is missing (null)"
    assert rows[3]["faithfulness_reason"] == (
        "faithfulness.statements/v2: refused by the content filter"
    )
    assert rows[0]["faithfulness_reason"] is None  # no reason: null, not ""
    assert [r["answer_relevance_score"] for r in rows] == [
        pytest.approx(1.0),
        pytest.approx(1.0),
        None,
        None,
    ]
    # Context relevance does not read the answer, so row 4 is scored; row 2 counts the
    # duplicated context twice: 1 matched sentence out of 2.
    assert [r["context_relevance_status"] for r in rows] == ["ok", "ok", "invalid_input", "ok"]
    assert [r["context_relevance_score"] for r in rows] == [0.5, 0.5, None, 0.5]


def test_evidence_is_json_and_versions_are_written_beside_every_score(scored):
    _, result, scorer, _ = scored
    rows = result.to_pylist()
    evidence = json.loads(rows[1]["faithfulness_evidence"])
    assert evidence["supported"] == 1
    assert evidence["total"] == 2
    assert json.loads(rows[1]["context_relevance_evidence"])["duplicate_contexts"] == 1
    assert rows[2]["faithfulness_evidence"] is None
    for metric in scorer.metrics:
        assert set(result.column(f"{metric.name}_version").to_pylist()) == {metric.version_label}
    assert rows[0]["faithfulness_version"] == (
        "faithfulness/v2 (faithfulness.statements/v2, faithfulness.verdicts/v3)"
    )


def test_row_accounting_columns_add_up_each_rows_usage(scored):
    _, result, scorer, judge = scored
    rows = result.to_pylist()
    assert [r["judge"] for r in rows] == ["rule:judge"] * 4
    assert [r["embedding_model"] for r in rows] == ["rule:embeddings"] * 4
    # Row 1: statements + verdicts + questions + extraction; row 3: nothing; row 4: extraction.
    assert [r["judge_requests"] for r in rows] == [4, 4, 0, 1]
    assert [r["prompt_tokens"] for r in rows] == [200, 200, 0, 50]
    assert [r["cost_usd"] for r in rows] == [
        pytest.approx(0.04),
        pytest.approx(0.04),
        0.0,
        pytest.approx(0.01),
    ]
    assert rows[0]["embedding_tokens"] > 0
    assert len({r["scored_at"] for r in rows}) == 1
    assert rows[0]["scored_at"].tzinfo is not None
    assert all(r["ragas_ops_version"] for r in rows)
    assert judge.embed_calls == 1
    assert scorer.summary.rows == 4
    assert scorer.summary.usage.requests == 9
    assert scorer.summary.statuses["faithfulness"] == Counter(
        {"ok": 2, "invalid_input": 1, "judge_rejected": 1}
    )
    assert scorer.summary.mean("faithfulness") == pytest.approx(0.75)


async def test_a_table_in_several_chunks_and_an_empty_table_are_scored():
    judge = RuleJudge()
    scorer = Scorer(build_metrics(METRICS), judge, columns=MAPPING)
    log = _log()
    chunked = pa.concat_tables([log.slice(0, 1), log.slice(1, 2), log.slice(3)])
    assert chunked.column("id").num_chunks == 3
    result = await scorer.score_table(chunked)
    assert result.column("id").to_pylist() == [10, 11, 12, 13]
    assert result.column("faithfulness_score").to_pylist() == [1.0, 0.5, None, None]

    empty = await scorer.score_table(log.slice(0, 0))
    assert empty.num_rows == 0
    assert empty.schema == output_schema(log.schema, scorer.metrics)


async def test_score_stream_keeps_the_order_of_the_tables():
    scorer = Scorer(build_metrics(["context_relevance"]), RuleJudge(), columns=MAPPING)
    log = _log()
    parts = [log.slice(i, 1) for i in range(4)]
    results = [table async for table in scorer.score_stream(parts, in_flight=3)]
    assert [t.column("id").to_pylist() for t in results] == [[10], [11], [12], [13]]


class TicketJudge(RuleJudge):
    """Records the row (`CURRENT_ROW`) each chat request was made for."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[tuple[str, int]] = []
        self.tickets: list[RowTicket] = []

    async def complete(
        self, prompt: Prompt[Any], data: Mapping[str, Any], *, n: int = 1
    ) -> Completion[Any]:
        ticket = CURRENT_ROW.get()
        assert ticket is not None
        self.rows.append((prompt.name.split(".")[0], ticket.ordinal))
        self.tickets.append(ticket)
        return await super().complete(prompt, data, n=n)


async def test_every_request_carries_its_row_numbered_across_the_tables_of_a_run():
    judge = TicketJudge()
    scorer = Scorer(build_metrics(METRICS), judge, columns=MAPPING)
    log = _log()
    async for _ in scorer.score_stream([log.slice(0, 2), log.slice(2)], in_flight=2):
        pass
    by_metric: dict[str, set[int]] = {}
    for metric, ordinal in judge.rows:
        by_metric.setdefault(metric, set()).add(ordinal)
    # Row 2 has no question (no request); row 3 is refused by the content filter after its
    # first request. The second table's rows go on from the first's.
    assert by_metric["faithfulness"] == {0, 1, 3}
    assert by_metric["answer_relevance"] == {0, 1, 3}
    assert by_metric["context_relevance"] == {0, 1, 3}
    assert all(ticket.finished for ticket in judge.tickets), "every metric let go of its rows"
    assert CURRENT_ROW.get() is None


async def test_a_missing_mapped_column_fails_before_any_call():
    judge = RuleJudge()
    scorer = Scorer(build_metrics(METRICS), judge)  # default names: the log has none of them
    with pytest.raises(ContractError, match="Its columns are"):
        await scorer.score_table(_log())
    assert judge.total.requests == 0


@pytest.mark.parametrize("clash", ["faithfulness_score", "context_relevance_evidence", "cost_usd"])
def test_output_schema_refuses_an_input_that_already_has_output_columns(clash):
    schema = _log().schema.append(pa.field(clash, pa.string()))
    with pytest.raises(ContractError, match=f"already has output column.*{clash}"):
        output_schema(schema, build_metrics(METRICS))


def test_output_schema_only_clashes_with_the_metrics_being_scored():
    schema = _log().schema.append(pa.field("answer_relevance_score", pa.float64()))
    names = output_schema(schema, build_metrics(["faithfulness"])).names
    assert names.count("answer_relevance_score") == 1
