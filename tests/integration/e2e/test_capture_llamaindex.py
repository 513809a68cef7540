"""The LlamaIndex handler with the real llama-index-core, offline: a vector index over a few
documents with its mock embeddings and a query engine with its mock LLM (which answers with
the prompt it was given, so each answer names its own question and contexts)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("llama_index.core")

from llama_index.core import Document, VectorStoreIndex
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import CustomQueryEngine
from ragas_ops_testing.judge_server import JudgeServer

from ragas_ops.capture import LogWriter
from ragas_ops.capture.llamaindex import RagasOpsSpanHandler, instrument
from tests.fixtures.capture_pipeline import partition_rows, score_partition

FACTS = [
    "Paris is the capital of France.",
    "Berlin is the capital of Germany.",
    "Madrid is the capital of Spain.",
    "Rome is the capital of Italy.",
]


@pytest.fixture
def query_engine() -> Any:
    index = VectorStoreIndex.from_documents(
        [Document(text=fact, id_=f"doc-{n}", metadata={"n": n}) for n, fact in enumerate(FACTS)],
        embed_model=MockEmbedding(embed_dim=8),
    )
    return index.as_query_engine(llm=MockLLM(), similarity_top_k=2)


@pytest.fixture
def handlers() -> Iterator[list[RagasOpsSpanHandler]]:
    """Handlers the test installs, taken off LlamaIndex's global dispatcher afterwards."""
    installed: list[RagasOpsSpanHandler] = []
    yield installed
    for handler in installed:
        handler.remove()


def observed(response: Any, question: str) -> tuple[str, list[str], str]:
    return question, [node.node.get_content() for node in response.source_nodes], str(response)


def test_every_query_is_logged_once_with_its_own_question_contexts_and_answer(
    tmp_path: Path,
    query_engine: Any,
    handlers: list[RagasOpsSpanHandler],
    judge_server: JudgeServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    raw = tmp_path / "raw"
    writer = LogWriter(str(raw), flush_interval=0.2)
    handlers.append(instrument(writer, query_engine, app="atlas-bot"))
    seen = []
    for fact in FACTS:
        question = f"Which city is meant in: {fact}"
        seen.append(observed(query_engine.query(question), question))
    threaded = [f"Thread asks about {fact}" for fact in FACTS] * 2
    with ThreadPoolExecutor(max_workers=4) as pool:
        for question, response in zip(
            threaded, pool.map(query_engine.query, threaded), strict=True
        ):
            seen.append(observed(response, question))

    async def many() -> None:
        questions = [f"Coroutine asks about {fact}" for fact in FACTS]
        responses = await asyncio.gather(*(query_engine.aquery(q) for q in questions))
        seen.extend(observed(r, q) for q, r in zip(questions, responses, strict=True))

    asyncio.run(many())
    writer.close()

    day = datetime.now(UTC).date().isoformat()
    rows = partition_rows(raw, day)
    assert len(rows) == len(seen) == 16
    assert sorted((row["question"], row["contexts"], row["answer"]) for row in rows) == sorted(seen)
    assert all(row["question"] in row["answer"] for row in rows)  # the mock LLM echoes its prompt
    assert all(len(row["contexts"]) == 2 for row in rows)
    assert {row["app"] for row in rows} == {"atlas-bot"}
    assert len({row["id"] for row in rows}) == 16
    assert all(row["context_ids"].startswith('["') for row in rows)
    handler = handlers[0]
    assert not handler._tracker.parents  # nothing left behind
    assert not handler._tracker.queries

    scored = score_partition(raw, day, judge_server, tmp_path, monkeypatch)
    assert sorted((r["id"], r["question"], r["contexts"], r["answer"]) for r in scored) == sorted(
        (r["id"], r["question"], r["contexts"], r["answer"]) for r in rows
    )


def test_only_the_outermost_query_is_logged_and_other_engines_are_not(
    tmp_path: Path, query_engine: Any, handlers: list[RagasOpsSpanHandler]
) -> None:
    class Router(CustomQueryEngine):
        inner: Any

        def custom_query(self, query_str: str) -> Any:
            return self.inner.query(query_str)

    router = Router(inner=query_engine)
    other = VectorStoreIndex.from_documents(
        [Document(text="Unrelated.")], embed_model=MockEmbedding(embed_dim=8)
    ).as_query_engine(llm=MockLLM())
    with LogWriter(str(tmp_path)) as writer:
        handlers.append(instrument(writer, router, query_engine))
        router.query("Where is Paris?")
        other.query("Not logged: this engine was not instrumented")
    rows = partition_rows(tmp_path, datetime.now(UTC).date().isoformat())
    assert [row["question"] for row in rows] == ["Where is Paris?"]
    assert len(rows[0]["contexts"]) == 2


def test_removed_handlers_log_nothing(
    tmp_path: Path, query_engine: Any, handlers: list[RagasOpsSpanHandler]
) -> None:
    with LogWriter(str(tmp_path)) as writer:
        handler = instrument(writer)
        query_engine.query("Logged")
        handler.remove()
        query_engine.query("Not logged")
    rows = partition_rows(tmp_path, datetime.now(UTC).date().isoformat())
    assert [row["question"] for row in rows] == ["Logged"]
