"""Rows the size of WikiEval's, built from BEGIN's knowledge snippets: to check the cost
estimate against real runs on rows of a realistic size (15-sentence contexts, 3-5 sentence
answers), which the generated samples are not.

A row's context is the sentences of consecutive BEGIN knowledge snippets, 15 of them, cut into
passages of 5; its question is the dialogue turn a BEGIN response answered (a person's words
on the snippet's topic); its answer is that response followed by 2-4 sentences of the context,
the way a RAG system's answer restates what it retrieved.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator, Sequence
from pathlib import Path

import pyarrow as pa

from ragas_ops.text import split_sentences

CONTEXT_SENTENCES = 15
PASSAGE_SENTENCES = 5
ANSWER_SENTENCES = (3, 5)


def _records(paths: Sequence[Path], half: int | None) -> Iterator[dict[str, str]]:
    for path in paths:
        lines = [line for line in path.read_text(encoding="utf-8").split("\n") if line.strip()]
        if half is not None:
            middle = len(lines) // 2
            lines = lines[:middle] if half == 0 else lines[middle:]
        for line in lines:
            record = json.loads(line)
            yield {
                "knowledge": str(record.get("knowledge") or record.get("evidence") or ""),
                "turn": str(record.get("message") or record.get("previous turn") or ""),
                "response": str(record.get("response") or ""),
            }


def sized_rows(
    paths: Sequence[Path], rows: int, seed: int = 0, half: int | None = None
) -> pa.Table:
    """Up to `rows` WikiEval-sized rows (id, question, contexts, answer) from BEGIN files;
    `half` 0 or 1: from the first or the second half of each file only (two disjoint sets:
    one to measure the estimate's coefficients on, one to check it on)."""
    rng = random.Random(seed)
    ids: list[str] = []
    questions: list[str] = []
    contexts: list[list[str]] = []
    answers: list[str] = []
    sentences: list[str] = []
    for record in _records(paths, half):
        if len(ids) >= rows:
            break
        sentences += [s for s in split_sentences(record["knowledge"]) if s not in sentences]
        if len(sentences) < CONTEXT_SENTENCES or not record["turn"] or not record["response"]:
            continue
        context, sentences = sentences[:CONTEXT_SENTENCES], []
        restated = rng.sample(context, rng.randint(*ANSWER_SENTENCES) - 1)
        response = record["response"].strip()
        if response[-1:] not in ".!?":
            response += "."
        ids.append(f"sized-{seed}-{len(ids):05d}")
        questions.append(record["turn"].strip())
        contexts.append(
            [
                " ".join(context[start : start + PASSAGE_SENTENCES])
                for start in range(0, CONTEXT_SENTENCES, PASSAGE_SENTENCES)
            ]
        )
        answers.append(" ".join([response, *restated]))
    return pa.table(
        {
            "id": ids,
            "question": questions,
            "contexts": pa.array(contexts, pa.list_(pa.string())),
            "answer": answers,
        }
    )
