"""What each label level of a metric means, in one line each: what the labelling page shows
beside the three choices (none, some, all = 0, 0.5, 1)."""

from __future__ import annotations

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
