"""The local judge and criteria: its rules measure the paper's qualities (grounding, relevance,
focus) with a sentence model; a criterion in free text is none of them. It answers every
criterion prompt with `unsupported_criterion`, never a score: a rule made up for text it cannot
read would be a number that means nothing."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ragas_ops.judge.local.rules import LocalTools, Reply, local_rule
from ragas_ops.metrics.criteria.metric import UnsupportedCriterionError
from ragas_ops.prompts import Prompt


async def _cannot_judge(judge: LocalTools, data: Mapping[str, Any], n: int) -> Reply:
    raise UnsupportedCriterionError(
        "the local judge cannot apply a free-text criterion (its rules measure the paper's "
        "qualities only): score criteria with an LLM judge (--judge openai)"
    )


def cannot_judge_criterion(prompt: Prompt[Any]) -> None:
    """Register the local judge's answer to a criterion's prompt: unsupported_criterion."""
    local_rule(prompt)(_cannot_judge)
