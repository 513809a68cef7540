"""The local judge's vector plumbing: each distinct text encoded once, vectors identical to the
model's own, results in the order asked, an encoder error reaching every caller, and the same
scores whether vectors are shared across rows and metrics or every call encodes its own."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from ragas_ops.judge.local.judge import EncodingStats, LocalJudge
from ragas_ops.judge.local.onnx_embedder import OnnxEmbedder, onnx_available
from ragas_ops.metrics import build_metrics
from ragas_ops.samples import PADDING, TOPICS, sample_interactions
from ragas_ops.scoring.scorer import Scorer

pytestmark = pytest.mark.skipif(not onnx_available(), reason="the [local] extra is not installed")

TEXTS = [
    "The Millau Viaduct opened to traffic on 16 December 2004.",
    "Who designed the bridge?",
    "It was designed by the structural engineer Michel Virlogeux.",
    "Refunds are paid within 14 days.",
    "Who designed the bridge?",  # asked twice in one call
    "I don't know.",
]


class RecordingEmbedder:
    """The real ONNX model, recording every batch it is given."""

    name = "all-MiniLM-L6-v2-onnx-fused-int8"

    def __init__(self, failures: int = 0) -> None:
        self.model = OnnxEmbedder()
        self.batches: list[list[str]] = []
        self.failures = failures

    def encode(self, texts: Sequence[str]) -> np.ndarray[Any, np.dtype[np.float32]]:
        self.batches.append(list(texts))
        if self.failures:
            self.failures -= 1
            raise RuntimeError("the model ran out of memory")
        return self.model.encode(texts)

    @property
    def encoded(self) -> list[str]:
        return [text for batch in self.batches for text in batch]


def _rows_at_once(judge: LocalJudge, calls: list[list[str]]) -> list[Any]:
    async def run() -> list[Any]:
        return list(await asyncio.gather(*(judge.vectors(texts) for texts in calls)))

    return asyncio.run(run())


def test_vectors_are_the_models_own_whatever_they_are_batched_with() -> None:
    embedder = RecordingEmbedder()
    judge = LocalJudge(embedder=embedder, encode_batch_size=2)
    calls = [TEXTS[:3], TEXTS[2:], TEXTS[::-1]]

    results = _rows_at_once(judge, calls)

    direct = OnnxEmbedder().encode(TEXTS)
    for texts, found in zip(calls, results, strict=True):
        for text in texts:
            assert np.array_equal(found[text], direct[TEXTS.index(text)]), text


def test_each_distinct_text_is_encoded_once_across_concurrent_and_later_calls() -> None:
    embedder = RecordingEmbedder()
    judge = LocalJudge(embedder=embedder, encode_batch_size=3)

    _rows_at_once(judge, [TEXTS[:4], TEXTS[1:], TEXTS])
    _rows_at_once(judge, [TEXTS[3:]])

    distinct = list(dict.fromkeys(TEXTS))
    assert sorted(embedder.encoded) == sorted(distinct)
    assert all(len(batch) <= 3 for batch in embedder.batches)
    stats = judge.encoding
    assert stats.asked == 4 + 5 + 6 + 3
    assert stats.encoded == len(distinct) == stats.asked - stats.reused
    assert stats.calls == len(embedder.batches)
    assert stats.largest_batch == max(map(len, embedder.batches))


def test_results_come_in_the_order_asked_each_under_its_own_text() -> None:
    judge = LocalJudge(embedder=RecordingEmbedder())
    asked = TEXTS[::-1]

    (found,) = _rows_at_once(judge, [asked])

    assert list(found) == list(dict.fromkeys(asked))
    direct = OnnxEmbedder().encode(asked)
    assert all(np.array_equal(found[text], direct[asked.index(text)]) for text in asked)


def test_an_encoder_error_reaches_every_waiter_and_the_texts_are_tried_again() -> None:
    embedder = RecordingEmbedder(failures=1)
    judge = LocalJudge(embedder=embedder)

    async def run() -> list[Any]:
        calls = [judge.vectors(TEXTS[:2]), judge.vectors(TEXTS[1:3]), judge.vectors(TEXTS[:1])]
        return list(await asyncio.gather(*calls, return_exceptions=True))

    outcomes = asyncio.run(run())

    assert [type(outcome) for outcome in outcomes] == [RuntimeError] * 3
    assert all("out of memory" in str(outcome) for outcome in outcomes)
    (again,) = _rows_at_once(judge, [TEXTS[:3]])  # nothing failed is kept
    assert list(again) == TEXTS[:3]
    assert len(embedder.batches) == 2


def test_a_cancelled_caller_does_not_cancel_the_vector_others_wait_for() -> None:
    judge = LocalJudge(embedder=RecordingEmbedder())

    async def run() -> Any:
        first = asyncio.create_task(judge.vectors(TEXTS[:2]))
        second = asyncio.create_task(judge.vectors(TEXTS[:2]))
        await asyncio.sleep(0)
        first.cancel()
        return await second

    found = asyncio.run(run())

    assert list(found) == TEXTS[:2]


def test_the_vector_cache_keeps_the_most_recently_used_texts() -> None:
    embedder = RecordingEmbedder()
    judge = LocalJudge(embedder=embedder, vector_cache_size=2)

    for texts in (["a one."], ["b two."], ["a one."], ["c three."], ["a one."], ["b two."]):
        _rows_at_once(judge, [texts])

    # "a" stayed (used again before "c" came), "b" was the least recently used and went
    assert embedder.encoded == ["a one.", "b two.", "c three.", "b two."]


def test_a_full_batch_goes_to_the_model_while_other_rows_still_run() -> None:
    embedder = RecordingEmbedder()
    judge = LocalJudge(embedder=embedder, encode_batch_size=2)
    started: list[int] = []

    async def row(index: int) -> None:
        started.append(len(embedder.batches))
        await judge.vectors([f"Row {index} asks about the bridge.", f"Row {index} again."])

    async def run() -> None:
        await asyncio.gather(*(row(index) for index in range(4)))

    asyncio.run(run())

    # the first row's two texts made a full batch, handed over before the later rows ran
    assert started[-1] >= 1
    assert [len(batch) for batch in embedder.batches] == [2, 2, 2, 2]


def test_a_second_batch_runs_while_the_first_one_finishes() -> None:
    second_started = threading.Event()

    class TwoAtOnce(RecordingEmbedder):
        batches_at_once = 2

        def encode(self, texts: Sequence[str]) -> np.ndarray[Any, np.dtype[np.float32]]:
            first = not self.batches
            self.batches.append(list(texts))
            if first:  # holds its batch until the second one reaches the model
                assert second_started.wait(10), "the second batch waited for the first"
            else:
                second_started.set()
            return self.model.encode(texts)

    embedder = TwoAtOnce()
    judge = LocalJudge(embedder=embedder, encode_batch_size=2)

    (found,) = _rows_at_once(judge, [TEXTS[:4]])

    assert [len(batch) for batch in embedder.batches] == [2, 2]
    direct = OnnxEmbedder().encode(TEXTS[:4])
    assert all(np.array_equal(found[text], direct[i]) for i, text in enumerate(TEXTS[:4]))
    assert judge.encoding.calls == 2


def test_a_one_batch_embedder_gets_one_batch_at_a_time() -> None:
    running = threading.Semaphore(1)

    class OneAtOnce(RecordingEmbedder):
        def encode(self, texts: Sequence[str]) -> np.ndarray[Any, np.dtype[np.float32]]:
            assert running.acquire(blocking=False), "a second batch while one runs"
            try:
                return super().encode(texts)
            finally:
                running.release()

    embedder = OneAtOnce()
    judge = LocalJudge(embedder=embedder, encode_batch_size=2)

    _rows_at_once(judge, [TEXTS[:2], TEXTS[2:4], TEXTS[3:]])

    assert len(embedder.batches) >= 2


def test_the_stats_count_mean_batch() -> None:
    stats = EncodingStats(encoded=10, calls=4)

    assert stats.mean_batch == 2.5
    assert EncodingStats().mean_batch == 0.0


def _long_rows() -> pa.Table:
    """Rows of WikiEval size: 15-sentence contexts from several passages, 3-5 sentence
    answers (copied, paraphrased, made up), and rows sharing contexts and questions."""
    passages = [topic.passage for topic in TOPICS]
    rows = []
    for index in range(12):  # each topic twice: rows that share contexts and questions
        mixed = [passages[(index + k) % len(passages)] for k in range(4)]
        context = [" ".join(mixed[:2]), " ".join([mixed[2], *PADDING[:2]]), mixed[3]]
        topic = TOPICS[index % len(TOPICS)]
        answer = [topic.answer, topic.incomplete_answer, topic.unfaithful_answer][index % 3]
        extra = " It also won a design award in 2009." if index % 2 else ""
        rows.append(
            {"question": topic.question, "contexts": context, "answer": answer + extra + " "}
        )
    return pa.Table.from_pylist(rows)


def test_sharing_vectors_across_rows_and_metrics_changes_no_score() -> None:
    names = ["faithfulness", "answer_relevance", "context_relevance", "gpt_score_faithfulness"]
    # 16 sample rows (their ok, not-applicable and invalid-input rows) and the 12 long ones:
    # each row is then scored again alone for every metric, so the table stays small.
    table = pa.concat_tables(
        [sample_interactions(16).select(["question", "contexts", "answer"]), _long_rows()]
    )
    shared_judge = LocalJudge(embedder=RecordingEmbedder())
    shared = asyncio.run(Scorer(build_metrics(names), shared_judge).score_table(table))

    # Off: one row and one metric at a time, nothing kept, so every call encodes its own texts.
    alone_judge = LocalJudge(embedder=RecordingEmbedder(), vector_cache_size=0)

    def alone(metric: str, index: int) -> pa.Table:
        scorer = Scorer(build_metrics([metric]), alone_judge)
        return asyncio.run(scorer.score_table(table.slice(index, 1)))

    assert shared_judge.encoding.reused > 0
    for name in names:
        one_by_one = pa.concat_tables([alone(name, index) for index in range(len(table))])
        for suffix in ("score", "status", "reason", "evidence"):
            column = f"{name}_{suffix}"
            assert shared.column(column).to_pylist() == one_by_one.column(column).to_pylist()
    assert alone_judge.encoding.encoded > shared_judge.encoding.encoded
    assert shared.column("faithfulness_status").to_pylist().count("ok") > 21  # of 28 rows


def test_a_judge_outlives_an_event_loop_that_died_while_encoding() -> None:
    release = threading.Event()

    class Stalling(RecordingEmbedder):
        def encode(self, texts: Sequence[str]) -> np.ndarray[Any, np.dtype[np.float32]]:
            if not self.batches:
                release.wait(10)
            return super().encode(texts)

    judge = LocalJudge(embedder=Stalling())
    first = asyncio.new_event_loop()
    with pytest.raises(TimeoutError):
        first.run_until_complete(asyncio.wait_for(judge.vectors(TEXTS[:2]), 0.2))
    first.close()  # the encode still runs in its thread, its loop gone
    release.set()

    (found,) = _rows_at_once(judge, [TEXTS[:2]])

    assert list(found) == TEXTS[:2]
