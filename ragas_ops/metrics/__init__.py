"""The metrics: the paper's three, and its two baselines. One module per metric."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from ragas_ops.config import DEFAULT_METRICS, QuestionStrategy
from ragas_ops.metrics.answer_relevance import (
    QUESTION_SAMPLE_PROMPT,
    QUESTIONS_PROMPT,
    AnswerRelevance,
)
from ragas_ops.metrics.base import Metric, MetricResult
from ragas_ops.metrics.context_relevance import EXTRACT_PROMPT, ContextRelevance
from ragas_ops.metrics.faithfulness import STATEMENTS_PROMPT, VERDICTS_PROMPT, Faithfulness
from ragas_ops.metrics.gpt_ranking import RANKING_PROMPTS
from ragas_ops.metrics.gpt_score import SCORE_PROMPTS, GptScore
from ragas_ops.prompts import Prompt

ALL_PROMPTS: tuple[Prompt[Any], ...] = (
    STATEMENTS_PROMPT,
    VERDICTS_PROMPT,
    QUESTIONS_PROMPT,
    QUESTION_SAMPLE_PROMPT,
    EXTRACT_PROMPT,
    *SCORE_PROMPTS.values(),
    *RANKING_PROMPTS.values(),
)


def build_metrics(
    names: Sequence[str], questions: int = 3, question_strategy: QuestionStrategy = "list"
) -> list[Metric]:
    """The metrics named, configured; an unknown name is an error that lists the known ones."""
    factories: dict[str, Callable[[], Metric]] = {
        "faithfulness": Faithfulness,
        "answer_relevance": partial(AnswerRelevance, questions, question_strategy),
        "context_relevance": ContextRelevance,
        **{f"gpt_score_{dimension}": partial(GptScore, dimension) for dimension in SCORE_PROMPTS},
    }
    unknown = [name for name in names if name not in factories]
    if unknown:
        raise ValueError(f"unknown metric(s) {unknown}; known: {sorted(factories)}")
    if len(set(names)) != len(names):
        raise ValueError(f"a metric is named twice in {list(names)}")
    return [factories[name]() for name in names]


__all__ = ["ALL_PROMPTS", "DEFAULT_METRICS", "Metric", "MetricResult", "build_metrics"]
