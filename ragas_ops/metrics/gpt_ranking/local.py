"""The local judge's answers to GPT Ranking's prompts: each candidate measured as GPT Score's
local rule measures its quality; the higher one is better (a tie goes to the first)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ragas_ops.contract.inputs import CONTEXTS, QUESTION
from ragas_ops.judge.local.rules import (
    LocalRule,
    LocalTools,
    Reply,
    field_strings,
    field_text,
    local_rule,
)
from ragas_ops.metrics.gpt_ranking.metric import RANKING_PROMPTS
from ragas_ops.metrics.gpt_score.local import MEASURES


def _rank(dimension: str) -> LocalRule:
    async def answer(judge: LocalTools, data: Mapping[str, Any], n: int) -> Reply:
        question = field_text(data[QUESTION])
        measure = MEASURES[dimension]
        measured = []
        for number in (1, 2):
            candidate = data[f"candidate_{number}"]
            if dimension == "context_relevance":  # the candidates are sets of contexts
                measured.append(await measure(judge, question, "", field_strings(candidate)))
            else:
                contexts = field_strings(data.get(CONTEXTS))
                measured.append(await measure(judge, question, field_text(candidate), contexts))
        # An exact tie goes to the first candidate: the benchmark reports this position bias.
        better = 1 if measured[0][0] >= measured[1][0] else 2
        explanation = (
            f"Candidate 1: {measured[0][1]} Candidate 2: {measured[1][1]} "
            f"Candidate {better} is better."
        )
        return Reply([{"explanation": explanation, "better": better}] * n)

    return answer


for _dimension, _prompt in RANKING_PROMPTS.items():
    local_rule(_prompt)(_rank(_dimension))
