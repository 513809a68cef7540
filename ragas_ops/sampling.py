"""Deterministic sampling: which rows a run scores when `pipeline.sample_fraction` is below 1.

A row is chosen by a hash of its id, never by chance or by position, so the same rows are
chosen on every rerun, on every machine, in every chunking of a day, and a row chosen at 10%
is also chosen at 20% (raising the fraction only adds rows, and the judge cache keeps the
ones scored before free). A row without a usable id cannot be chosen that way: it is scored,
as it would be without sampling, rather than left out silently.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

ROW_ID_COLUMN = "id"
"""The column whose value identifies a row (the capture writer's `id`)."""


def is_sampled(row_id: str, fraction: float) -> bool:
    """Whether the row with this id is in a sample of `fraction` of the rows.

    The first 8 bytes of SHA-256(id), read as a number in [0, 1), must be below `fraction`.
    """
    check_fraction(fraction)
    if fraction >= 1.0:
        return True
    digest = hashlib.sha256(row_id.encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < fraction


def check_fraction(fraction: float) -> None:
    if not 0.0 < fraction <= 1.0:
        raise ValueError(f"a sample fraction must be in (0, 1], got {fraction!r}")


def row_id_text(value: Any) -> str | None:
    """The row id as the text that is hashed: a non-blank string as it is, an integer in
    decimal; None for anything else (null, blank, a float, a bool), which no sample can use."""
    if isinstance(value, str):
        return value if value.strip() else None
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None


def sample_mask(ids: Sequence[Any], fraction: float) -> list[bool]:
    """For each row id, whether the row is scored: it is sampled, or it has no usable id."""
    check_fraction(fraction)
    if fraction >= 1.0:
        return [True] * len(ids)
    texts = (row_id_text(value) for value in ids)
    return [text is None or is_sampled(text, fraction) for text in texts]


def not_sampled_reason(fraction: float) -> str:
    """The reason written beside every metric of a row left out of the sample."""
    return (
        f"not in the sample: pipeline.sample_fraction = {fraction:g} scores about "
        f"{fraction:.1%} of rows, chosen by a hash of the row id"
    )
