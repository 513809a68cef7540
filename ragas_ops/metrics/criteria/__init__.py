"""The team's own criteria (`[criteria.<name>]`, read by `ragas_ops.criteria.spec`), scored as
metrics: one `Criterion` per criterion, registered when the settings that define it are used
(`register_criteria`), with its prompt (`metric`), the local judge's answer (`local`: it cannot
judge free text, and says so) and the test judge's (`double`: a lexical rule a test can
predict)."""

from ragas_ops.metrics.criteria.metric import (
    Criterion,
    UnsupportedCriterionError,
    criterion_prompt,
)
from ragas_ops.metrics.criteria.register import register_criteria

__all__ = [
    "Criterion",
    "UnsupportedCriterionError",
    "criterion_prompt",
    "register_criteria",
]
