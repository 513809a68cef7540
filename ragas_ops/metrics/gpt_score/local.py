"""The local judge's answers to GPT Score's prompts: each quality's own measure (its metric's
`local.measure`, given the whole row at once) on the 0-10 scale."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from ragas_ops.contract.inputs import ANSWER, CONTEXTS, QUESTION
from ragas_ops.judge.local.rules import (
    LocalRule,
    LocalTools,
    Reply,
    field_strings,
    field_text,
    local_rule,
)
from ragas_ops.metrics.answer_relevance import local as answer_relevance
from ragas_ops.metrics.context_relevance import local as context_relevance
from ragas_ops.metrics.faithfulness import local as faithfulness
from ragas_ops.metrics.gpt_score.metric import SCORE_PROMPTS

LocalMeasure = Callable[[LocalTools, str, str, list[str]], Awaitable[tuple[float, str]]]
"""(tools, question, answer, contexts) -> a quality in [0, 1] and the sentence explaining it."""

MEASURES: dict[str, LocalMeasure] = {
    "faithfulness": faithfulness.measure,
    "answer_relevance": answer_relevance.measure,
    "context_relevance": context_relevance.measure,
}
"""The baselines' qualities, measured as their metrics' local rules measure them."""


def _score(dimension: str) -> LocalRule:
    async def answer(judge: LocalTools, data: Mapping[str, Any], n: int) -> Reply:
        value, explanation = await MEASURES[dimension](
            judge,
            field_text(data.get(QUESTION)),
            field_text(data.get(ANSWER)),
            field_strings(data.get(CONTEXTS)),
        )
        return Reply([{"explanation": explanation, "score": round(max(0.0, value) * 10)}] * n)

    return answer


for _dimension, _prompt in SCORE_PROMPTS.items():
    local_rule(_prompt)(_score(_dimension))
