"""What each label level of a metric means, in one line each: what the labelling page shows
beside the three choices (none, some, all = 0, 0.5, 1). A criterion of the config file has its
own levels instead (pass/fail, or its scale: `label_levels`), registered with it."""

from __future__ import annotations

from collections.abc import Sequence

LEVEL_NAMES = ("none", "some", "all")

DEFINITIONS: dict[str, tuple[str, tuple[str, str, str]]] = {
    "faithfulness": (
        "Is every claim of the answer supported by the contexts?",
        ("no claim is supported", "some claims are", "every claim is"),
    ),
    "answer_relevance": (
        "Does the answer address the question, completely and without padding?",
        ("it does not address it", "partly, or with padding", "fully and to the point"),
    ),
    "context_relevance": (
        "Are the contexts focused on what the question needs?",
        ("nothing in them is needed", "some of them is needed", "all of them is needed"),
    ),
}
GENERIC = (
    "How much of what this metric measures holds for the row?",
    ("none of it", "some of it", "all of it"),
)


def definition(metric: str) -> tuple[str, tuple[str, str, str]]:
    """The metric's question and its three levels' meanings."""
    return DEFINITIONS.get(metric, GENERIC)


LabelLevel = tuple[str, str, str]
"""A choice of the labelling page: (the value stored, as text; its name; what it means)."""

_OWN_LEVELS: dict[str, tuple[str, tuple[LabelLevel, ...]]] = {}


def register_label_levels(metric: str, question: str, levels: Sequence[LabelLevel]) -> None:
    """Give `metric` its own levels (a criterion's pass/fail or scale, worst first), replacing
    the three of `definition`: what the page offers and what a CSV label may say."""
    _OWN_LEVELS[metric] = (question, tuple(levels))


def label_levels(metric: str) -> tuple[str, tuple[LabelLevel, ...]]:
    """The metric's question and its levels, worst first."""
    own = _OWN_LEVELS.get(metric)
    if own is not None:
        return own
    question, meanings = definition(metric)
    values = ("0", "0.5", "1")
    return question, tuple(zip(values, LEVEL_NAMES, meanings, strict=True))


def label_value(metric: str, text: str) -> float | None:
    """The value a label of `metric` stands for, from its value (`0.5`, `.5`, `1.0`) or, for a
    metric with levels of its own, its level's name (`pass`, `4`); None when it is none of the
    metric's levels."""
    _, levels = label_levels(metric)
    cleaned = text.strip()
    for value, name, _meaning in levels if metric in _OWN_LEVELS else ():
        if cleaned.casefold() == name.casefold():
            return float(value)
    try:
        number = float(cleaned)
    except ValueError:
        return None
    return number if any(number == float(value) for value, _, _ in levels) else None
