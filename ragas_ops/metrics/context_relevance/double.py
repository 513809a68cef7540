"""The test judge's answer to context relevance's prompt: the context sentences that share
enough content words with the question, else "Insufficient Information"."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ragas_ops.contract.inputs import CONTEXTS, QUESTION
from ragas_ops.metrics.context_relevance.metric import EXTRACT_PROMPT, INSUFFICIENT_INFORMATION
from ragas_ops.metrics.lexical import Measure, field_strings, field_text, stems
from ragas_ops.metrics.registry import double_answer
from ragas_ops.text import split_sentences


def relevant_sentences(question: str, contexts: list[str]) -> tuple[list[str], int]:
    """Context sentences sharing enough content words with the question, and how many there are.

    Enough is two shared words, or a third of the question's words (rounded up) when that is
    fewer: one word for a question with at most three content words.
    """
    asked = stems(question)
    needed = min(2, max(1, math.ceil(len(asked) / 3)))
    relevant: list[str] = []
    total = 0
    for context in contexts:
        for sentence in split_sentences(context):
            total += 1
            if asked and len(stems(sentence) & asked) >= needed:
                relevant.append(sentence)
    return relevant, total


@double_answer(EXTRACT_PROMPT)
def extract(data: Mapping[str, Any], sample: int) -> dict[str, Any]:
    relevant, _ = relevant_sentences(field_text(data[QUESTION]), field_strings(data[CONTEXTS]))
    return {"sentences": list(dict.fromkeys(relevant)) or [INSUFFICIENT_INFORMATION]}


def measure(question: str, answer: str, contexts: list[str]) -> Measure:
    """The quality in one step, for the baselines (GPT Score, GPT Ranking)."""
    relevant, total = relevant_sentences(question, contexts)
    ratio = len(relevant) / total if total else 0.0
    return Measure(
        ratio, f"{len(relevant)} of {total} context sentences share enough words with the question."
    )
