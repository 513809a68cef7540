"""Context relevance, one package: the formula and prompt (`metric`), the local judge's rule
(`local`) and the test judge's answer (`double`)."""

from ragas_ops.metrics.context_relevance import double, local
from ragas_ops.metrics.context_relevance.metric import (
    EXTRACT_PROMPT,
    INSUFFICIENT_INFORMATION,
    ContextRelevance,
    ExtractedSentences,
    match_extracted,
)

__all__ = [
    "EXTRACT_PROMPT",
    "INSUFFICIENT_INFORMATION",
    "ContextRelevance",
    "ExtractedSentences",
    "double",
    "local",
    "match_extracted",
]
