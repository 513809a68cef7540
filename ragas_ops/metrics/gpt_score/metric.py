"""GPT Score, the paper's first baseline: the judge is given a quality's definition and asks
for a score from 0 to 10. Reported here as score / 10, so that it reads like the other metrics.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import field_validator

from ragas_ops.contract.inputs import ANSWER, CONTEXTS, QUESTION, Interaction
from ragas_ops.contract.status import Status
from ragas_ops.judge.base import Judge, Usage
from ragas_ops.metrics.base import ExpectedCall, Metric, MetricResult, explanation_stand_in
from ragas_ops.metrics.registry import MetricFactory, register_metric, register_prompts
from ragas_ops.prompts import OutputModel, Prompt

# The definitions of the three qualities, as the paper gives them to its baselines.
DEFINITIONS = {
    "faithfulness": (
        "Faithfulness measures the information consistency of the answer against the given "
        "contexts. Any claim made in the answer that cannot be deduced from the contexts "
        "should be penalised."
    ),
    "answer_relevance": (
        "Answer relevance measures the degree to which an answer directly addresses and is "
        "appropriate for the given question. It penalises incomplete answers and answers that "
        "contain redundant information."
    ),
    "context_relevance": (
        "Context relevance measures the degree to which the retrieved contexts contain only "
        "the information needed to answer the question. Information the question does not "
        "need should be penalised."
    ),
}
# The fields each quality is judged on.
FIELDS = {
    "faithfulness": (QUESTION, CONTEXTS, ANSWER),
    "answer_relevance": (QUESTION, ANSWER),
    "context_relevance": (QUESTION, CONTEXTS),
}
_SUBJECT = {
    "faithfulness": "the answer",
    "answer_relevance": "the answer",
    "context_relevance": "the contexts",
}


BRIEF_REPLY_TOKENS = 256
"""A brief explanation and a number, with room to spare: the reply does not grow with the input."""


def brief_reply_budget(data: Mapping[str, Any]) -> int:
    """`max_tokens` of a baseline's reply (GPT Score's and GPT Ranking's)."""
    return BRIEF_REPLY_TOKENS


class Rating(OutputModel):
    explanation: str
    score: int
    """0 to 10; checked here rather than in the schema, as strict mode refuses bounds on some
    models."""

    @field_validator("score")
    @classmethod
    def _on_the_scale(cls, score: int) -> int:
        if not 0 <= score <= 10:
            raise ValueError("the score must be a whole number from 0 to 10")
        return score


def _score_prompt(dimension: str) -> Prompt[Rating]:
    return Prompt(
        name=f"gpt_score.{dimension}",
        version=2,
        instructions=(
            f"{DEFINITIONS[dimension]}\n\nGiven the input, assign {_SUBJECT[dimension]} a score "
            f"for {dimension.replace('_', ' ')} from 0 (worst) to 10 (best). Explain briefly "
            "first, then give the score as a whole number."
        ),
        output_model=Rating,
        output_budget=brief_reply_budget,
    )


SCORE_PROMPTS = {dimension: _score_prompt(dimension) for dimension in DEFINITIONS}


class GptScore(Metric):
    """The GPT Score baseline for one of the three qualities."""

    version = 1

    def __init__(self, dimension: str) -> None:
        if dimension not in DEFINITIONS:
            raise ValueError(f"unknown quality {dimension!r}; one of {sorted(DEFINITIONS)}")
        self.dimension = dimension
        self.prompt = SCORE_PROMPTS[dimension]

    @property
    def name(self) -> str:  # type: ignore[override]
        return f"gpt_score_{self.dimension}"

    @property
    def requires(self) -> tuple[str, ...]:  # type: ignore[override]
        return FIELDS[self.dimension]

    @property
    def prompts(self) -> tuple[Prompt[Any], ...]:  # type: ignore[override]
        return (self.prompt,)

    def expected_calls(self, row: Interaction) -> list[ExpectedCall]:
        data = {name: getattr(row, name) for name in self.requires}
        return [
            ExpectedCall(self.prompt, data, Rating(explanation=explanation_stand_in(), score=10))
        ]

    async def score(self, row: Interaction, judge: Judge, usage: Usage) -> MetricResult:
        data = {name: getattr(row, name) for name in self.requires}
        reply = await judge.complete(self.prompt, data)
        usage.add(reply.usage)
        rating = reply.output
        return MetricResult(
            Status.OK,
            rating.score / 10,
            evidence={"score_0_10": rating.score, "explanation": rating.explanation},
        )


def _factory(dimension: str) -> MetricFactory:
    return lambda _options: GptScore(dimension)


for _dimension in SCORE_PROMPTS:
    register_metric(f"gpt_score_{_dimension}", GptScore, _factory(_dimension))
register_prompts(*SCORE_PROMPTS.values())
