"""The local judge's rule for answer focus, from the local judge's toolkit: a sentence that
shares no content word (stemmed) with the question is off it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ragas_ops.contract.inputs import ANSWER, QUESTION
from ragas_ops.judge.local.evidence import stems
from ragas_ops.judge.local.rules import LocalTools, Reply, field_text
from ragas_ops.text import split_sentences


async def off_topic(judge: LocalTools, data: Mapping[str, Any], n: int) -> Reply:
    asked = stems(field_text(data[QUESTION]))
    sentences = split_sentences(field_text(data[ANSWER]))
    return Reply([{"sentences": [s for s in sentences if not stems(s) & asked]}] * n)
