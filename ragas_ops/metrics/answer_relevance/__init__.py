"""Answer relevance, one package: the formula, prompts and options (`metric`), the local
judge's rules (`local`) and the test judge's answers (`double`)."""

from ragas_ops.metrics.answer_relevance import double, local
from ragas_ops.metrics.answer_relevance.metric import (
    GENERATED_QUESTION_TOKENS,
    QUESTION_SAMPLE_PROMPT,
    QUESTIONS_PROMPT,
    AnswerRelevance,
    GeneratedQuestion,
    GeneratedQuestions,
    cosine,
)

__all__ = [
    "GENERATED_QUESTION_TOKENS",
    "QUESTIONS_PROMPT",
    "QUESTION_SAMPLE_PROMPT",
    "AnswerRelevance",
    "GeneratedQuestion",
    "GeneratedQuestions",
    "cosine",
    "double",
    "local",
]
