"""The test judge's answer to a criterion's prompt: a lexical rule a test can predict.

The judged text is the `answer` when the criterion reads it, else the last field it reads; the
reference is every other field it reads (else the criterion's own text). The coverage is the
share of the reference's content words (stemmed) found in the judged text. Pass/fail: pass
when the coverage is at least one half. A scale of k levels: the level at place
floor(coverage * (k - 1) + 0.5), worst first. A test double: it knows nothing of what the
criterion means, only that the same row always gets the same level.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ragas_ops.criteria.spec import CriterionSpec
from ragas_ops.metrics.lexical import field_strings, stems
from ragas_ops.metrics.registry import double_answer
from ragas_ops.prompts import Prompt

PASS_COVERAGE = 0.5
QUOTED_WORDS = 6
"""The words found that the reason quotes, as a judge quotes the words that decide."""


def coverage(spec: CriterionSpec, data: Mapping[str, Any]) -> tuple[float, str, str, list[str]]:
    """(coverage, the judged field, the reference's fields, the words found) for one row."""
    judged = "answer" if "answer" in spec.reads else spec.reads[-1]
    others = [name for name in spec.reads if name != judged]
    reference_text = (
        " ".join(text for name in others for text in field_strings(data.get(name)))
        if others
        else spec.criterion
    )
    reference = stems(reference_text)
    found = stems(" ".join(field_strings(data.get(judged)))) & reference
    share = len(found) / len(reference) if reference else 0.0
    return share, judged, ", ".join(others) or "the criterion", sorted(found)


def level_for(spec: CriterionSpec, share: float) -> str:
    """The level the test judge gives a row of this coverage."""
    if spec.is_pass_fail:
        return "pass" if share >= PASS_COVERAGE else "fail"
    place = math.floor(share * (len(spec.levels) - 1) + 0.5)
    return spec.level_names[place]


def answer_criterion(prompt: Prompt[Any], spec: CriterionSpec) -> None:
    """Register the test judge's answer to a criterion's prompt."""

    def answer(data: Mapping[str, Any], sample: int) -> dict[str, Any]:
        share, judged, reference, found = coverage(spec, data)
        quoted = ", ".join(f'"{word}"' for word in found[:QUOTED_WORDS]) or "none of them"
        return {
            "reason": (
                f"The {judged} holds {share:.0%} of the content words of {reference}: "
                f"{quoted}. A lexical test double, not a judgement."
            ),
            "verdict": level_for(spec, share),
        }

    double_answer(prompt)(answer)
