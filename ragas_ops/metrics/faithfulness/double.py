"""The test judge's answers to faithfulness' prompts: one statement per sentence of the answer,
and a statement is supported when most of its content words, and every number, are in the
contexts."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ragas_ops.contract.inputs import ANSWER, CONTEXTS
from ragas_ops.metrics.faithfulness.metric import STATEMENTS_PROMPT, VERDICTS_PROMPT
from ragas_ops.metrics.lexical import (
    ANSWER_PREFIX,
    Measure,
    field_strings,
    field_text,
    is_noncommittal,
    numbers,
    stem,
    stems,
)
from ragas_ops.metrics.registry import double_answer
from ragas_ops.text import content_words, split_sentences

SUPPORT_THRESHOLD = 0.7
"""The share of a statement's content words the contexts must contain."""


@double_answer(STATEMENTS_PROMPT)
def statements(data: Mapping[str, Any], sample: int) -> dict[str, Any]:
    """One statement per sentence of the answer; none for a noncommittal answer."""
    answer = ANSWER_PREFIX.sub("", field_text(data[ANSWER]))
    return {"statements": [] if is_noncommittal(answer) else split_sentences(answer)}


@double_answer(VERDICTS_PROMPT)
def verdicts(data: Mapping[str, Any], sample: int) -> dict[str, Any]:
    """Supported when most content words, and every number, of a statement are in the contexts."""
    contexts = "\n".join(field_strings(data[CONTEXTS]))
    context_stems, context_numbers = stems(contexts), numbers(contexts)
    verdicts = []
    for statement in field_strings(data["statements"]):
        found_stems = stems(statement)
        found = found_stems & context_stems
        unknown_numbers = sorted(numbers(statement) - context_numbers)
        supported = bool(found_stems) and len(found) >= SUPPORT_THRESHOLD * len(found_stems)
        explanation = f"{len(found)} of {len(found_stems)} content words found in the contexts"
        if unknown_numbers:
            explanation += f"; not in the contexts: {', '.join(unknown_numbers)}"
        else:
            missing = sorted(w for w in content_words(statement) if stem(w) not in context_stems)
            explanation += f" (missing: {', '.join(missing[:5])})" if missing else ""
        verdict = "yes" if supported and not unknown_numbers else "no"
        verdicts.append({"explanation": explanation + ".", "verdict": verdict})
    return {"verdicts": verdicts}


def measure(question: str, answer: str, contexts: list[str]) -> Measure:
    """The quality in one step, for the baselines (GPT Score, GPT Ranking): the share of the
    answer's content words the contexts contain."""
    answer_stems = stems(answer)
    found = answer_stems & stems("\n".join(contexts))
    ratio = len(found) / len(answer_stems) if answer_stems else 0.0
    return Measure(
        ratio,
        f"{len(found)} of {len(answer_stems)} content words of the answer occur in the contexts.",
    )
