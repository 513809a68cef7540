"""The order in which rows reach the judge, so that the rows begun first are finished first.

Metrics ask the judge about one row at a time but many rows at once, every metric on its own
(each row of each metric in a task of its own); no row id travels with a request. So a task
is ranked when it first asks, by the row's texts that its data carries: the question or the
answer (faithfulness sends both, answer relevance the answer, context relevance the question).
A text seen before gives the rank of the row that showed it first; otherwise the row is new and
gets the next rank. A task's later requests (verdicts after statements, repairs) keep its
rank. Requests waiting for a slot go lowest rank first, so when a budget runs out the rows
left over are the last rows, whole, rather than a metric here and there.
"""

from __future__ import annotations

import asyncio
import itertools
import weakref
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from typing import Any

MAX_REMEMBERED_TEXTS = 100_000
"""Texts kept to recognise rows by (the oldest are forgotten first): a few batches' worth."""


class RowOrder:
    """Ranks for requests: by task, and for a new task by the texts its data carries."""

    def __init__(self, remembered: int = MAX_REMEMBERED_TEXTS) -> None:
        self._ranks: OrderedDict[str, int] = OrderedDict()
        self._tasks: weakref.WeakKeyDictionary[asyncio.Task[Any], int] = weakref.WeakKeyDictionary()
        self._next = itertools.count()
        self._remembered = remembered

    def rank(self, data: Mapping[str, Any] | Iterable[Any]) -> int:
        """The rank of the current task, given on its first request from `data` (a prompt's
        data, or texts to embed)."""
        task = asyncio.current_task()
        if task is not None and task in self._tasks:
            return self._tasks[task]
        values = data.values() if isinstance(data, Mapping) else data
        rank = self._rank_of_texts([v for v in values if isinstance(v, str) and v.strip()])
        if task is not None:
            self._tasks[task] = rank
        return rank

    def _rank_of_texts(self, texts: list[str]) -> int:
        known = [self._ranks[text] for text in texts if text in self._ranks]
        rank = min(known) if known else next(self._next)
        for text in texts:
            self._ranks.setdefault(text, rank)  # a text keeps the row that showed it first
            self._ranks.move_to_end(text)
        while len(self._ranks) > self._remembered:
            self._ranks.popitem(last=False)
        return rank
