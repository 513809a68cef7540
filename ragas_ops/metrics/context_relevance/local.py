"""The local judge's answers to context relevance's prompt: the context sentences that share
the question's words or hold the kind of item a part of it asks for (`evidence.needed_sentences`),
else the prompt's "Insufficient Information"."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ragas_ops.contract.inputs import CONTEXTS, QUESTION
from ragas_ops.judge.local.evidence import (
    needed_sentences,
    part_texts,
    stems,
    strip_prefix,
    worth_embedding,
)
from ragas_ops.judge.local.rules import LocalTools, Reply, field_strings, field_text, local_rule
from ragas_ops.metrics.context_relevance.metric import EXTRACT_PROMPT, INSUFFICIENT_INFORMATION
from ragas_ops.text import split_sentences


async def needed(judge: LocalTools, question: str, contexts: list[str]) -> tuple[list[str], int]:
    """The context sentences the question needs, and how many sentences the contexts hold."""
    sentences = [s for context in contexts for s in split_sentences(context)]
    query = strip_prefix(question)
    asked = stems(query)
    candidates = [s for s in sentences if worth_embedding(query, s, asked)]
    vectors = await judge.vectors([query, *part_texts(query), *candidates])
    return needed_sentences(question, contexts, vectors), len(sentences)


@local_rule(EXTRACT_PROMPT)
async def answer_extract(judge: LocalTools, data: Mapping[str, Any], n: int) -> Reply:
    found, _ = await needed(judge, field_text(data[QUESTION]), field_strings(data[CONTEXTS]))
    return Reply([{"sentences": found or [INSUFFICIENT_INFORMATION]}] * n)


async def measure(
    judge: LocalTools, question: str, answer: str, contexts: list[str]
) -> tuple[float, str]:
    """The metric's measure in one step, for the baselines (GPT Score, GPT Ranking)."""
    found, total = await needed(judge, question, contexts)
    return (len(found) / total if total else 0.0), (
        f"{len(found)} of {total} sentences needed (local judge: sentences that share the "
        "question's words or hold the kind of item a part of it asks for)."
    )
