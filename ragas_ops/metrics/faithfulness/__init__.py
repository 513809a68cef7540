"""Faithfulness, one package: the formula and prompts (`metric`), the local judge's rules
(`local`) and the test judge's answers (`double`)."""

from ragas_ops.metrics.faithfulness import double, local
from ragas_ops.metrics.faithfulness.metric import (
    STATEMENTS_PROMPT,
    VERDICTS_PROMPT,
    Faithfulness,
    Statements,
    Verdict,
    Verdicts,
)

__all__ = [
    "STATEMENTS_PROMPT",
    "VERDICTS_PROMPT",
    "Faithfulness",
    "Statements",
    "Verdict",
    "Verdicts",
    "double",
    "local",
]
