"""GPT Ranking, the paper's second baseline: the judge is given a quality's definition and two
candidates (two answers, or two sets of contexts) and says which is better.

It compares candidates rather than scoring a row, so it is a function for benchmarks, not a
column of the nightly tables. Asking in both orders exposes the judge's position bias.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from ragas_ops.contract.inputs import CONTEXTS, QUESTION
from ragas_ops.judge.base import Judge, Usage
from ragas_ops.metrics.gpt_score.metric import DEFINITIONS, brief_reply_budget
from ragas_ops.metrics.registry import register_prompts
from ragas_ops.prompts import OutputModel, Prompt


class Preference(OutputModel):
    explanation: str
    better: Literal[1, 2]


def _ranking_prompt(dimension: str) -> Prompt[Preference]:
    subject = "contexts" if dimension == "context_relevance" else "answers"
    return Prompt(
        name=f"gpt_ranking.{dimension}",
        version=2,
        instructions=(
            f"{DEFINITIONS[dimension]}\n\nThe input holds two candidate {subject}, "
            f"`candidate_1` and `candidate_2`. Decide which of them is better for "
            f"{dimension.replace('_', ' ')}. Explain briefly first, then give the number of "
            "the better candidate, 1 or 2."
        ),
        output_model=Preference,
        output_budget=brief_reply_budget,
    )


RANKING_PROMPTS = {dimension: _ranking_prompt(dimension) for dimension in DEFINITIONS}


@dataclass
class Ranking:
    """Which candidate the judge preferred: 1 or 2, in the order they were given."""

    better: Literal[1, 2]
    explanation: str
    usage: Usage


async def rank_pair(
    judge: Judge,
    dimension: str,
    *,
    question: str,
    first: str | Sequence[str],
    second: str | Sequence[str],
    contexts: Sequence[str] = (),
) -> Ranking:
    """Ask which of two candidates is better for `dimension`.

    For context relevance the candidates are lists of contexts; for the other qualities they
    are answers, and faithfulness also needs the `contexts` they should be grounded in.
    """
    data: dict[str, object] = {QUESTION: question, "candidate_1": first, "candidate_2": second}
    if dimension == "faithfulness":
        data[CONTEXTS] = list(contexts)
    reply = await judge.complete(RANKING_PROMPTS[dimension], data)
    return Ranking(reply.output.better, reply.output.explanation, reply.usage)


register_prompts(*RANKING_PROMPTS.values())
