"""The word-overlap baseline: the floor any judge must clear.

- faithfulness: the share of the answer's content words found in the contexts;
- answer relevance: the share of the question's content words found in the answer;
- context relevance: the share of context sentences sharing at least two content words with the
  question (one when the question has at most three).

Content words are `ragas_ops.text.content_words` (no stop words), compared after light
stemming, as the local judge does.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ragas_ops.contract.inputs import Interaction
from ragas_ops.judge.local.evidence import stems, strip_prefix
from ragas_ops.text import split_sentences


def faithfulness_overlap(answer: str, contexts: Sequence[str]) -> float:
    claimed = stems(strip_prefix(answer))
    return len(claimed & stems("\n".join(contexts))) / len(claimed) if claimed else 0.0


def answer_relevance_overlap(question: str, answer: str) -> float:
    asked = stems(strip_prefix(question))
    return len(asked & stems(strip_prefix(answer))) / len(asked) if asked else 0.0


def context_relevance_overlap(question: str, contexts: Sequence[str]) -> float:
    asked = stems(strip_prefix(question))
    needed = min(2, max(1, math.ceil(len(asked) / 3)))
    sentences = [s for context in contexts for s in split_sentences(context)]
    if not sentences:
        return 0.0
    return sum(len(stems(s) & asked) >= needed for s in sentences) / len(sentences)


def overlap_score(dimension: str, row: Interaction) -> float:
    """The word-overlap baseline of `dimension` (faithfulness, answer_relevance or
    context_relevance) on one row."""
    question, answer, contexts = row.question or "", row.answer or "", row.contexts or []
    if dimension == "faithfulness":
        return faithfulness_overlap(answer, contexts)
    if dimension == "answer_relevance":
        return answer_relevance_overlap(question, answer)
    return context_relevance_overlap(question, contexts)
