"""The LangChain handler with the real langchain-core, offline: a retrieval chain over an
in-memory vector store (deterministic fake embeddings) and langchain-core's fake chat model,
invoked one by one, in a thread-pooled batch and concurrently on an event loop."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langchain_core")

from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models import FakeListChatModel
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import Runnable, RunnableLambda, RunnablePassthrough
from langchain_core.vectorstores import InMemoryVectorStore
from ragas_ops_testing.judge_server import JudgeServer

from ragas_ops.capture import LogWriter
from ragas_ops.capture.langchain import RagasOpsCallbackHandler
from tests.fixtures.capture_pipeline import partition_rows, score_partition

FACTS = [
    "Paris is the capital of France.",
    "Berlin is the capital of Germany.",
    "Madrid is the capital of Spain.",
    "Rome is the capital of Italy.",
    "Lisbon is the capital of Portugal.",
    "Vienna is the capital of Austria.",
]


def build_chain() -> tuple[Runnable[Any, str], Any]:
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=32))
    store.add_documents(
        [
            Document(page_content=fact, id=f"doc-{number}", metadata={"source": "atlas"})
            for number, fact in enumerate(FACTS)
        ]
    )
    retriever = store.as_retriever(search_kwargs={"k": 2})
    prompt = ChatPromptTemplate.from_template("Context:\n{context}\n\nQuestion: {question}")
    llm = FakeListChatModel(responses=["The answer is in the context."])

    def format_documents(documents: list[Document]) -> str:
        return "\n".join(document.page_content for document in documents)

    chain = (
        {"context": retriever | format_documents, "question": RunnablePassthrough()}
        | RunnablePassthrough.assign(answer=prompt | llm | StrOutputParser())
        | RunnableLambda(lambda state: f"{state['answer']} (asked: {state['question']})")
    )
    return chain, retriever


def expected(retriever: Any, question: str) -> tuple[str, list[str], str]:
    contexts = [document.page_content for document in retriever.invoke(question)]
    return question, contexts, f"The answer is in the context. (asked: {question})"


def test_every_run_is_logged_once_with_its_own_question_contexts_and_answer(
    tmp_path: Path, judge_server: JudgeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    chain, retriever = build_chain()
    raw = tmp_path / "raw"
    writer = LogWriter(str(raw), flush_interval=0.2)
    handler = RagasOpsCallbackHandler(writer, app="atlas-bot", retriever="in-memory")
    sequential = [f"What about {fact}" for fact in FACTS]
    batched = [f"Tell me: {fact}" for fact in FACTS] * 2
    concurrent = [f"Quick: {fact}" for fact in FACTS]
    for question in sequential:
        chain.invoke(question, config={"callbacks": [handler], "metadata": {"tenant": "acme"}})
    chain.batch(batched, config={"callbacks": [handler], "max_concurrency": 6})

    async def many() -> list[str]:
        return await asyncio.gather(
            *(chain.ainvoke(q, config={"callbacks": [handler]}) for q in concurrent)
        )

    asyncio.run(many())
    with pytest.raises(ZeroDivisionError):  # a failing run is not logged
        (chain | RunnableLambda(lambda _: 1 / 0)).invoke("boom", config={"callbacks": [handler]})
    writer.close()

    day = datetime.now(UTC).date().isoformat()
    rows = partition_rows(raw, day)
    questions = sequential + batched + concurrent
    assert len(rows) == len(questions)
    assert sorted((row["question"], row["contexts"], row["answer"]) for row in rows) == sorted(
        expected(retriever, question) for question in questions
    )
    assert all(len(row["contexts"]) == 2 for row in rows)
    assert {row["app"] for row in rows} == {"atlas-bot"}
    assert sorted(row["tenant"] for row in rows if row["tenant"]) == ["acme"] * len(sequential)
    assert len({row["id"] for row in rows}) == len(rows)  # run ids
    assert all(row["context_ids"].startswith('["doc-') for row in rows)
    assert all('"source": "atlas"' in row["context_metadata"] for row in rows)
    assert not handler._runs  # nothing left behind
    assert not handler._root_of

    scored = score_partition(raw, day, judge_server, tmp_path, monkeypatch)
    assert sorted((r["id"], r["question"], r["contexts"], r["answer"]) for r in scored) == sorted(
        (r["id"], r["question"], r["contexts"], r["answer"]) for r in rows
    )
    assert {row["faithfulness_status"] for row in scored} == {"ok"}


def test_a_dict_input_and_output_chain(tmp_path: Path) -> None:
    _, retriever = build_chain()
    chain = RunnablePassthrough.assign(
        documents=lambda state: retriever.invoke(state["query"])
    ) | RunnableLambda(lambda state: {"result": "Paris.", "sources": state["documents"]})
    with LogWriter(str(tmp_path)) as writer:
        chain.invoke(
            {"query": FACTS[0], "k": 2}, config={"callbacks": [RagasOpsCallbackHandler(writer)]}
        )
    rows = partition_rows(tmp_path, datetime.now(UTC).date().isoformat())
    assert [(row["question"], row["answer"]) for row in rows] == [(FACTS[0], "Paris.")]
    assert rows[0]["contexts"][0] == FACTS[0]


def test_reserved_metadata_names_are_refused() -> None:
    with pytest.raises(ValueError, match="metadata may not be named"):
        RagasOpsCallbackHandler(None, answer="x")


def lcel_chain_with_a_plain_search_function() -> Runnable[Any, str]:
    """The common LCEL shape `RunnableLambda(search) | format_docs`: no `BaseRetriever`."""
    index = {fact.split()[0]: number for number, fact in enumerate(FACTS)}

    def search(question: str) -> list[Document]:
        hits = [word.strip("?.,") for word in question.split() if word.strip("?.,") in index]
        return [
            Document(page_content=FACTS[index[hit]], id=f"doc-{index[hit]}", metadata={"k": 1})
            for hit in hits
        ]

    def format_docs(documents: list[Document]) -> str:
        return "\n\n".join(document.page_content for document in documents)

    prompt = ChatPromptTemplate.from_template("Context:\n{context}\n\nQuestion: {question}")
    llm = FakeListChatModel(responses=["Paris is the capital of France."])
    return (
        {"context": RunnableLambda(search) | format_docs, "question": RunnablePassthrough()}
        | prompt
        | llm
        | StrOutputParser()
    )


def test_documents_returned_by_any_step_are_the_contexts(
    tmp_path: Path, judge_server: JudgeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    chain = lcel_chain_with_a_plain_search_function()
    raw = tmp_path / "raw"
    writer = LogWriter(str(raw), flush_interval=0.2)
    handler = RagasOpsCallbackHandler(writer, app="lcel-bot")
    questions = ["What is Paris?", "Is Paris bigger than Rome?"]
    chain.batch(questions, config={"callbacks": [handler]})
    # a retriever wrapped in a lambda: its documents are seen twice, logged once
    _, retriever = build_chain()
    wrapped = RunnableLambda(lambda q: retriever.invoke(q)) | RunnableLambda(
        lambda docs: " ".join(d.page_content for d in docs)
    )
    wrapped.invoke(FACTS[2], config={"callbacks": [handler]})
    writer.close()

    day = datetime.now(UTC).date().isoformat()
    rows = {row["question"]: row for row in partition_rows(raw, day)}
    assert rows["What is Paris?"]["contexts"] == [FACTS[0]]
    assert rows["Is Paris bigger than Rome?"]["contexts"] == [FACTS[0], FACTS[3]]
    assert rows["Is Paris bigger than Rome?"]["context_ids"] == '["doc-0", "doc-3"]'
    assert rows[FACTS[2]]["contexts"] == [d.page_content for d in retriever.invoke(FACTS[2])]
    assert not handler._runs

    scored = score_partition(raw, day, judge_server, tmp_path, monkeypatch)
    assert {row["faithfulness_status"] for row in scored} == {"ok"}
    assert {row["context_relevance_status"] for row in scored} == {"ok"}


def test_a_chain_without_documents_is_named_once_in_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    chain = (
        RunnableLambda(lambda q: {"context": "Paris is the capital.", "question": q})
        | ChatPromptTemplate.from_template("{context} {question}")
        | FakeListChatModel(responses=["Paris."])
        | StrOutputParser()
    ).with_config(run_name="support-answer")
    with LogWriter(str(tmp_path)) as writer:
        handler = RagasOpsCallbackHandler(writer)
        with caplog.at_level("WARNING", logger="ragas_ops.capture.langchain"):
            for question in ("Capital of France?", "And Spain?", "And Italy?"):
                chain.invoke(question, config={"callbacks": [handler]})
    warnings = [r for r in caplog.records if r.name == "ragas_ops.capture.langchain"]
    assert len(warnings) == 1
    assert warnings[0].levelname == "WARNING"
    assert "'support-answer'" in warnings[0].getMessage()
    assert "contexts=[]" in warnings[0].getMessage()
    rows = partition_rows(tmp_path, datetime.now(UTC).date().isoformat())
    assert [row["contexts"] for row in rows] == [[], [], []]  # still logged, not dropped
