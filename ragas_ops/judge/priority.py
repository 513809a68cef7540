"""The order in which rows reach the judge, so that the rows begun first are finished first.

Metrics ask the judge about one row at a time but many rows at once, every metric on its own;
no row id travels with a request. A row is recognised by its texts instead: the question,
answer and contexts that its requests carry (faithfulness, answer relevance and context
relevance each send some of them). The first request that shows a text gives the row its
rank; later requests that show any of its texts get the same rank. Requests waiting for a slot
go lowest rank first, so when a budget runs out, the rows left over are the last rows, whole,
instead of a metric here and there.
"""

from __future__ import annotations

import itertools
from collections import OrderedDict
from collections.abc import Hashable, Iterable, Mapping
from typing import Any

MAX_REMEMBERED_TEXTS = 200_000
"""Texts kept to recognise rows by (the oldest are forgotten first): a few batches' worth."""


class RowOrder:
    """Ranks for requests, by the texts they carry."""

    def __init__(self, remembered: int = MAX_REMEMBERED_TEXTS) -> None:
        self._ranks: OrderedDict[Hashable, int] = OrderedDict()
        self._next = itertools.count()
        self._remembered = remembered

    def rank_of_data(self, data: Mapping[str, Any]) -> int:
        """The rank of the row whose data this is (a new rank for a row not seen yet)."""
        return self.rank_of(data.values())

    def rank_of(self, values: Iterable[Any]) -> int:
        """The lowest rank any of `values` has, given to all of them; or a new one."""
        keys = [key for key in map(_text_key, values) if key is not None]
        known = [self._ranks[key] for key in keys if key in self._ranks]
        rank = min(known) if known else next(self._next)
        for key in keys:
            self._ranks[key] = min(rank, self._ranks.get(key, rank))
            self._ranks.move_to_end(key)
        while len(self._ranks) > self._remembered:
            self._ranks.popitem(last=False)
        return rank


def _text_key(value: Any) -> Hashable | None:
    """A text, or a list of texts (contexts), as a key; None for anything else."""
    if isinstance(value, str):
        return value if value.strip() else None
    if isinstance(value, list | tuple) and value and all(isinstance(v, str) for v in value):
        return tuple(value)
    return None
