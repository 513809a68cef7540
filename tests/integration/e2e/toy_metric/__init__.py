"""A toy metric with a prompt, as a plug-in would ship one: one package holds its formula,
prompt, options and explanation (`metric`), the local judge's rule (`local`) and the test
judge's answer (`double`). `register` makes it known to every part of the house, `forget`
takes it back (a test registers it for a while)."""

from __future__ import annotations

from ragas_ops.judge.local.rules import forget_local_rule, local_rule
from ragas_ops.metrics.registry import (
    double_answer,
    forget_prompts,
    register_metric,
    register_prompts,
    unregister_metric,
)
from tests.integration.e2e.toy_metric import double, local
from tests.integration.e2e.toy_metric.metric import (
    NAME,
    OFF_TOPIC_PROMPT,
    AnswerFocus,
    AnswerFocusOptions,
    build,
)

__all__ = ["NAME", "OFF_TOPIC_PROMPT", "AnswerFocus", "forget", "register"]


def register() -> None:
    register_metric(NAME, AnswerFocus, build, AnswerFocusOptions)
    register_prompts(OFF_TOPIC_PROMPT)
    local_rule(OFF_TOPIC_PROMPT)(local.off_topic)
    double_answer(OFF_TOPIC_PROMPT)(double.off_topic)


def forget() -> None:
    unregister_metric(NAME)
    forget_prompts(OFF_TOPIC_PROMPT)
    forget_local_rule(OFF_TOPIC_PROMPT)
