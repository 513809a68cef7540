"""`grounded_numbers`: the share of the numbers in an answer that its contexts contain.

The judge lists the numbers of the answer that the contexts do not state (an invented figure
is the costliest hallucination of a support bot); the score is 1 - listed / numbers in the
answer, and an answer without a number is not_applicable. Importing this module registers the
metric, its prompt, the local judge's rule and the test judge's answer: ragas-ops imports it
through the entry point in pyproject.toml.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ragas_ops.contract.inputs import ANSWER, CONTEXTS, Interaction
from ragas_ops.contract.status import Status
from ragas_ops.judge.base import Judge, Usage
from ragas_ops.judge.local.rules import LocalTools, Reply, local_rule
from ragas_ops.metrics.base import ExpectedCall, Metric, MetricResult
from ragas_ops.metrics.registry import double_answer, register_metric, register_prompts
from ragas_ops.prompts import Demonstration, OutputModel, Prompt

NAME = "grounded_numbers"
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


class UngroundedNumbers(OutputModel):
    numbers: list[str]


PROMPT = Prompt(
    name=f"{NAME}.ungrounded",
    version=1,
    instructions=(
        "List every number written in the answer that the contexts do not state, copied as "
        "the answer writes it. Return an empty list if the contexts state every one."
    ),
    output_model=UngroundedNumbers,
    demonstrations=(
        Demonstration(
            {ANSWER: "It opened in 2004 and is 410 m tall.", CONTEXTS: ["Opened in 2004."]},
            UngroundedNumbers(numbers=["410"]),
        ),
    ),
)


def numbers_in(text: str) -> list[str]:
    return list(dict.fromkeys(_NUMBER.findall(text)))


def ungrounded(data: Mapping[str, Any]) -> list[str]:
    """The lexical rule both doubles use: the answer's numbers no context contains."""
    contexts = " ".join(str(context) for context in data[CONTEXTS] or [])
    return [number for number in numbers_in(str(data[ANSWER])) if number not in contexts]


class GroundedNumbers(Metric):
    name = NAME
    version = 1
    requires = (ANSWER, CONTEXTS)
    prompts = (PROMPT,)
    title = "Grounded numbers"
    estimate_assumption = "grounded numbers: one request a row, the judge lists no number"

    def expected_calls(self, row: Interaction) -> list[ExpectedCall]:
        if not numbers_in(row.answer or ""):
            return []
        data = {ANSWER: row.answer, CONTEXTS: row.contexts}
        return [ExpectedCall(PROMPT, data, UngroundedNumbers(numbers=[]))]

    async def score(self, row: Interaction, judge: Judge, usage: Usage) -> MetricResult:
        numbers = numbers_in(row.answer or "")
        if not numbers:
            return MetricResult(Status.NOT_APPLICABLE, reason="the answer states no number")
        reply = await judge.complete(PROMPT, {ANSWER: row.answer, CONTEXTS: row.contexts})
        usage.add(reply.usage)
        listed = [number for number in reply.output.numbers if number in numbers]
        return MetricResult(
            Status.OK,
            1 - len(listed) / len(numbers),
            evidence={"numbers": numbers, "ungrounded": listed},
        )


@double_answer(PROMPT)
def _test_judge(data: Mapping[str, Any], sample: int) -> dict[str, Any]:
    return {"numbers": ungrounded(data)}


@local_rule(PROMPT)
async def _local_judge(judge: LocalTools, data: Mapping[str, Any], n: int) -> Reply:
    return Reply([{"numbers": ungrounded(data)}] * n)


register_metric(NAME, GroundedNumbers)
register_prompts(PROMPT)
