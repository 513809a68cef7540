"""The test judge's answers to answer relevance's prompts: questions from templates over the
answer's sentences (a different set for each sample), noncommittal for a refusal."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ragas_ops.contract.inputs import ANSWER
from ragas_ops.metrics.answer_relevance.metric import QUESTION_SAMPLE_PROMPT, QUESTIONS_PROMPT
from ragas_ops.metrics.lexical import (
    Measure,
    field_text,
    generated_questions,
    is_noncommittal,
    stems,
)
from ragas_ops.metrics.registry import double_answer

MAX_QUESTIONS = 100
"""The most questions the double writes for one request (a bad request above)."""


@double_answer(QUESTIONS_PROMPT)
def generate_questions(data: Mapping[str, Any], sample: int) -> dict[str, Any]:
    answer = field_text(data[ANSWER])
    count = int(data["number_of_questions"])
    if not 0 <= count <= MAX_QUESTIONS:
        raise ValueError(f"number_of_questions must be in [0, {MAX_QUESTIONS}]")
    return {
        "questions": generated_questions(answer, count, start=sample),
        "noncommittal": is_noncommittal(answer),
    }


@double_answer(QUESTION_SAMPLE_PROMPT)
def sample_question(data: Mapping[str, Any], sample: int) -> dict[str, Any]:
    answer = field_text(data[ANSWER])
    return {
        "question": generated_questions(answer, 1, start=sample)[0],
        "noncommittal": is_noncommittal(answer),
    }


def measure(question: str, answer: str, contexts: list[str]) -> Measure:
    """The quality in one step, for the baselines (GPT Score, GPT Ranking): the share of the
    question's content words the answer uses (0 for a noncommittal answer)."""
    if is_noncommittal(answer):
        return Measure(0.0, "The answer is noncommittal.")
    asked = stems(question)
    covered = asked & stems(answer)
    ratio = len(covered) / len(asked) if asked else 0.0
    return Measure(
        ratio, f"The answer uses {len(covered)} of the {len(asked)} content words of the question."
    )
