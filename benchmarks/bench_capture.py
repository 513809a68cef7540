"""Capture benchmarks: what logging an interaction costs the application.

Prints:
1. `LogWriter.append` on the calling thread, mean and percentiles in microseconds: alone (the
   background thread idle), then while the background thread writes Parquet files to a local
   folder (one application thread, then 4 at once); and how fast the background thread writes
   (rows/s). Target: under 50 us per call.
2. the LangChain handler: a retrieval chain (in-memory store, fake chat model) with and
   without the handler, and the difference per run;
3. the LlamaIndex handler: a query engine (mock embeddings and LLM) with and without it.

Usage: python benchmarks/bench_capture.py [--quick]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from typing import Any

from ragas_ops.capture import LogWriter

CONTEXTS = [
    "Paris is the capital and largest city of France, with about two million residents.",
    "France is a country in Western Europe; its capital is Paris.",
    "The Eiffel Tower, completed in 1889, is in Paris.",
]
ANSWER = "Paris is the capital of France."


def percentiles(samples_ns: list[int]) -> str:
    ordered = sorted(samples_ns)

    def at(share: float) -> float:
        return ordered[min(len(ordered) - 1, int(share * len(ordered)))] / 1000

    mean = statistics.fmean(ordered) / 1000
    return (
        f"mean {mean:6.2f} us   p50 {at(0.5):6.2f}   p99 {at(0.99):6.2f}   p99.9 {at(0.999):7.2f}"
    )


def bench_append(rows: int, threads: int, *, flushing: bool = True) -> None:
    """`flushing`: the background thread writes files while the application appends (files
    of 10,000 rows), else it is idle until the end (the cost of `append` alone)."""
    per_file = 10_000 if flushing else rows * threads + 1
    with tempfile.TemporaryDirectory() as folder:
        writer = LogWriter(
            folder,
            max_rows_per_file=per_file,
            flush_interval=1.0 if flushing else 3600.0,
            max_buffered_rows=max(100_000, rows * threads + 1),
            app="bench",
        )
        samples: list[list[int]] = [[] for _ in range(threads)]
        clock = time.perf_counter_ns

        def work(index: int) -> None:
            mine = samples[index]
            for number in range(rows):
                started = clock()
                writer.append(
                    f"What is the capital of France? ({index}-{number})",
                    CONTEXTS,
                    ANSWER,
                    model="gpt-4o-mini",
                    tenant="acme",
                )
                mine.append(clock() - started)

        started = time.perf_counter()
        workers = [threading.Thread(target=work, args=(index,)) for index in range(threads)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        appended = time.perf_counter() - started
        writer.flush(120)
        total = time.perf_counter() - started
        writer.close()
        merged = [value for part in samples for value in part]
        print(
            f"append, {threads} thread(s), {rows * threads:,} rows, "
            f"{'writing meanwhile' if flushing else 'writer idle     '}: {percentiles(merged)}; "
            f"dropped {writer.dropped}"
        )
        print(
            f"  appended in {appended:.2f} s; all written after {total:.2f} s "
            f"({writer.written_rows / total:,.0f} rows/s in {writer.written_files} files)"
        )


def timed(call: Callable[[int], Any], runs: int) -> float:
    """Mean seconds per call, after a warm-up."""
    for number in range(min(20, runs)):
        call(number)
    started = time.perf_counter()
    for number in range(runs):
        call(number)
    return (time.perf_counter() - started) / runs


def bench_langchain(runs: int) -> None:
    try:
        from langchain_core.documents import Document
        from langchain_core.embeddings import DeterministicFakeEmbedding
        from langchain_core.language_models import FakeListChatModel
        from langchain_core.output_parsers import StrOutputParser
        from langchain_core.prompts import ChatPromptTemplate
        from langchain_core.runnables import RunnablePassthrough
        from langchain_core.vectorstores import InMemoryVectorStore
    except ImportError:
        print("langchain: langchain-core is not installed (extra `langchain`)")
        return
    from ragas_ops.capture.langchain import RagasOpsCallbackHandler

    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=32))
    store.add_documents([Document(page_content=text) for text in CONTEXTS])
    retriever = store.as_retriever(search_kwargs={"k": 2})
    prompt = ChatPromptTemplate.from_template("Context: {context}\nQuestion: {question}")
    chain = (
        {
            "context": retriever | (lambda docs: "\n".join(d.page_content for d in docs)),
            "question": RunnablePassthrough(),
        }
        | prompt
        | FakeListChatModel(responses=[ANSWER])
        | StrOutputParser()
    )
    with tempfile.TemporaryDirectory() as folder:
        writer = LogWriter(folder)
        handler = RagasOpsCallbackHandler(writer, app="bench")
        bare = timed(lambda n: chain.invoke(f"question {n}"), runs)
        logged = timed(
            lambda n: chain.invoke(f"question {n}", config={"callbacks": [handler]}), runs
        )
        writer.close()
    print(
        f"langchain chain: {bare * 1e6:,.0f} us/run bare, {logged * 1e6:,.0f} us/run with the "
        f"handler: +{(logged - bare) * 1e6:,.0f} us/run (the callback machinery included)"
    )


def bench_llamaindex(runs: int) -> None:
    try:
        from llama_index.core import Document, VectorStoreIndex
        from llama_index.core.embeddings import MockEmbedding
        from llama_index.core.llms import MockLLM
    except ImportError:
        print("llamaindex: llama-index-core is not installed (extra `llamaindex`)")
        return
    from ragas_ops.capture.llamaindex import instrument

    index = VectorStoreIndex.from_documents(
        [Document(text=text) for text in CONTEXTS], embed_model=MockEmbedding(embed_dim=8)
    )
    engine = index.as_query_engine(llm=MockLLM(max_tokens=8), similarity_top_k=2)
    with tempfile.TemporaryDirectory() as folder:
        writer = LogWriter(folder)
        bare = timed(lambda n: engine.query(f"question {n}"), runs)
        handler = instrument(writer, engine, app="bench")
        logged = timed(lambda n: engine.query(f"question {n}"), runs)
        handler.remove()
        writer.close()
    print(
        f"llamaindex query engine: {bare * 1e6:,.0f} us/query bare, {logged * 1e6:,.0f} us/query "
        f"with the handler: +{(logged - bare) * 1e6:,.0f} us/query"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rows and runs")
    options = parser.parse_args()
    rows = 20_000 if options.quick else 200_000
    runs = 100 if options.quick else 500
    bench_append(rows, 1, flushing=False)
    bench_append(rows, 1)
    bench_append(rows // 4, 4)
    bench_langchain(runs)
    bench_llamaindex(runs)


if __name__ == "__main__":
    main()
