"""The local judge's answers to answer relevance's prompts: questions generated from the
answer's own sentences (`generator.generated_questions`), and, for the baselines that show the
question, the paper's measure times the share of the question's parts the answer supplies."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import numpy as np

from ragas_ops.contract.inputs import ANSWER
from ragas_ops.judge.local.evidence import (
    answer_sentences,
    is_noncommittal,
    parts_answered,
    strip_prefix,
)
from ragas_ops.judge.local.generator import generated_questions
from ragas_ops.judge.local.questions import QUESTION_FORM_WEIGHT, question_similarity
from ragas_ops.judge.local.rules import LocalTools, Reply, field_text, local_rule
from ragas_ops.metrics.answer_relevance.metric import QUESTION_SAMPLE_PROMPT, QUESTIONS_PROMPT


@local_rule(QUESTIONS_PROMPT)
async def answer_questions(judge: LocalTools, data: Mapping[str, Any], n: int) -> Reply:
    answer = field_text(data[ANSWER])
    count = int(data["number_of_questions"])
    reply = {
        "questions": generated_questions(answer, count),
        "noncommittal": is_noncommittal(answer),
    }
    return Reply([reply] * n)


@local_rule(QUESTION_SAMPLE_PROMPT)
async def answer_question(judge: LocalTools, data: Mapping[str, Any], n: int) -> Reply:
    answer = field_text(data[ANSWER])
    noncommittal = is_noncommittal(answer)
    return Reply(
        [
            {"question": question, "noncommittal": noncommittal}
            for question in generated_questions(answer, n)
        ]
    )


async def measure(
    judge: LocalTools,
    question: str,
    answer: str,
    contexts: list[str],
    *,
    count: int = 3,
    form_weight: float = QUESTION_FORM_WEIGHT,
) -> tuple[float, str]:
    """Answer relevance when the question is known (GPT Score, GPT Ranking): the paper's measure
    (the mean cosine of the questions the answer answers with the question) times the share of
    the question's parts the answer supplies and its focus (`PartsAnswered`); the metric's own
    prompt shows the judge the answer only."""
    if is_noncommittal(answer):
        return 0.0, "The answer is noncommittal: it answers no part of the question."
    questions = generated_questions(answer, count)
    query = strip_prefix(question)
    sentences = answer_sentences(strip_prefix(answer))
    sentence_vectors, question_vectors = await asyncio.gather(
        judge.vectors(sentences), judge.question_vectors([query, *questions])
    )
    vectors = {**sentence_vectors, **question_vectors}
    similarities = [
        question_similarity(query, q, float(vectors[query] @ vectors[q]), form_weight)
        for q in questions
    ]
    cosine = float(np.mean(similarities))
    found = parts_answered(query, answer, vectors)
    score = max(0.0, cosine) * found.coverage * found.focus
    return score, f"Questions the answer answers are {cosine:.2f} similar to it; {found.explain()}"
