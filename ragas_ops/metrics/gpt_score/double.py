"""The test judge's answers to GPT Score's prompts: each quality's lexical measure (its
metric's `double.measure`) on the 0-10 scale."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from ragas_ops.contract.inputs import ANSWER, CONTEXTS, QUESTION
from ragas_ops.metrics.answer_relevance import double as answer_relevance
from ragas_ops.metrics.context_relevance import double as context_relevance
from ragas_ops.metrics.faithfulness import double as faithfulness
from ragas_ops.metrics.gpt_score.metric import SCORE_PROMPTS
from ragas_ops.metrics.lexical import Measure, field_strings, field_text
from ragas_ops.metrics.registry import DoubleAnswer, double_answer

MEASURES: dict[str, Callable[[str, str, list[str]], Measure]] = {
    "faithfulness": faithfulness.measure,
    "answer_relevance": answer_relevance.measure,
    "context_relevance": context_relevance.measure,
}
"""The baselines' qualities, measured as their metrics' test-double answers measure them."""


def _score(dimension: str) -> DoubleAnswer:
    def answer(data: Mapping[str, Any], sample: int) -> dict[str, Any]:
        measure = MEASURES[dimension](
            field_text(data.get(QUESTION)),
            field_text(data.get(ANSWER)),
            field_strings(data.get(CONTEXTS)),
        )
        return {"explanation": measure.explanation, "score": math.floor(measure.ratio * 10 + 0.5)}

    return answer


for _dimension, _prompt in SCORE_PROMPTS.items():
    double_answer(_prompt)(_score(_dimension))
