"""The test judge's answers to GPT Ranking's prompts: each candidate measured as GPT Score's
test-double answer measures its quality; the higher one is better (a tie goes to the first)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ragas_ops.contract.inputs import CONTEXTS, QUESTION
from ragas_ops.metrics.gpt_ranking.metric import RANKING_PROMPTS
from ragas_ops.metrics.gpt_score.double import MEASURES
from ragas_ops.metrics.lexical import Measure, field_strings, field_text
from ragas_ops.metrics.registry import DoubleAnswer, double_answer


def _candidate_measure(
    dimension: str, question: str, candidate: Any, contexts: list[str]
) -> Measure:
    """Context-relevance candidates are sets of contexts; the others are answers."""
    if dimension == "context_relevance":
        return MEASURES[dimension](question, "", field_strings(candidate))
    return MEASURES[dimension](question, field_text(candidate), contexts)


def _rank(dimension: str) -> DoubleAnswer:
    def answer(data: Mapping[str, Any], sample: int) -> dict[str, Any]:
        question, contexts = field_text(data[QUESTION]), field_strings(data.get(CONTEXTS))
        first, second = (
            _candidate_measure(dimension, question, data[f"candidate_{number}"], contexts)
            for number in (1, 2)
        )
        better = 1 if first.ratio >= second.ratio else 2  # a tie goes to the first
        return {
            "explanation": f"Candidate 1: {first.explanation} Candidate 2: "
            f"{second.explanation} Candidate {better} is better.",
            "better": better,
        }

    return answer


for _dimension, _prompt in RANKING_PROMPTS.items():
    double_answer(_prompt)(_rank(_dimension))
