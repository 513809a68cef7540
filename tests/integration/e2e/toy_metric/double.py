"""The test judge's answer for answer focus, from the test judge's toolkit: a sentence that
shares no content word (stemmed) with the question is off it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ragas_ops.contract.inputs import ANSWER, QUESTION
from ragas_ops.metrics.lexical import field_text, stems
from ragas_ops.text import split_sentences


def off_topic(data: Mapping[str, Any], sample: int) -> dict[str, Any]:
    asked = stems(field_text(data[QUESTION]))
    sentences = split_sentences(field_text(data[ANSWER]))
    return {"sentences": [s for s in sentences if not stems(s) & asked]}
