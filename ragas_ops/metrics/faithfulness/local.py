"""The local judge's answers to faithfulness' prompts: statements are the answer's clauses
(`evidence.statements`), each verdict comes from the contexts' words, names, numbers and
negations, and, where the words leave it open, the embedding model (`evidence.support`), with
the degree of belief that the metric averages."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ragas_ops.contract.inputs import ANSWER, CONTEXTS
from ragas_ops.judge.local.evidence import statements
from ragas_ops.judge.local.rules import LocalTools, Reply, field_strings, field_text, local_rule
from ragas_ops.metrics.faithfulness.metric import STATEMENTS_PROMPT, VERDICTS_PROMPT


@local_rule(STATEMENTS_PROMPT)
async def answer_statements(judge: LocalTools, data: Mapping[str, Any], n: int) -> Reply:
    return Reply([{"statements": statements(field_text(data[ANSWER]))}] * n)


@local_rule(VERDICTS_PROMPT)
async def answer_verdicts(judge: LocalTools, data: Mapping[str, Any], n: int) -> Reply:
    claims, contexts = field_strings(data["statements"]), field_strings(data[CONTEXTS])
    supports = await judge.supports(claims, contexts)
    verdicts = [
        {"explanation": item.explanation, "verdict": "yes" if item.verdict else "no"}
        for item in supports
    ]
    return Reply([{"verdicts": verdicts}] * n, [[item.degree for item in supports]] * n)


async def measure(
    judge: LocalTools, question: str, answer: str, contexts: list[str]
) -> tuple[float, str]:
    """The metric's measure in one step, for the baselines that name the quality (GPT Score,
    GPT Ranking): the expected share of supported statements, 0 for an answer with none."""
    claims = statements(answer)
    if not claims:
        return 0.0, "The answer makes no factual statement."
    supports = await judge.supports(claims, contexts)
    supported = sum(item.verdict for item in supports)
    expected = sum(item.degree for item in supports) / len(claims)
    return expected, f"{supported} of {len(claims)} statements are supported ({expected:.2f})."
