"""GPT Score, one package: the baseline and its prompts (`metric`), the local judge's rules
(`local`) and the test judge's answers (`double`)."""

from ragas_ops.metrics.gpt_score import double, local
from ragas_ops.metrics.gpt_score.metric import (
    DEFINITIONS,
    FIELDS,
    SCORE_PROMPTS,
    GptScore,
    Rating,
    brief_reply_budget,
)

__all__ = [
    "DEFINITIONS",
    "FIELDS",
    "SCORE_PROMPTS",
    "GptScore",
    "Rating",
    "brief_reply_budget",
    "double",
    "local",
]
