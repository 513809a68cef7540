"""What a judge asks of its cache, whichever tiers are behind it."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

Vector = npt.NDArray[np.float64]


def is_stored_failure(value: Any) -> bool:
    """Whether a cached value is a reply that arrived but could not be used (it has an
    `outcome`): it gives way to any newer reply, in every tier."""
    return isinstance(value, dict) and value.get("outcome") is not None


class JudgeCache(Protocol):
    """Responses and embedding vectors by content-addressed key (see `keys.cache_key`).

    The `a`-methods are for a judge's coroutines: a tier that waits on the network does so in
    a thread, so that other requests go on meanwhile."""

    def count_in(self, events: Counter[str]) -> None:
        """Count what the cache does (shared-tier hits, errors...) in a judge's `events`."""

    def get(self, key: str) -> Any | None: ...

    def put(self, key: str, value: Any) -> None: ...

    def get_vectors(self, keys: Iterable[str]) -> dict[str, Vector]: ...

    def put_vectors(self, vectors: dict[str, Vector]) -> None: ...

    async def aget(self, key: str) -> Any | None: ...

    async def aput(self, key: str, value: Any) -> None: ...

    async def aget_vectors(self, keys: Iterable[str]) -> dict[str, Vector]: ...

    async def aput_vectors(self, vectors: dict[str, Vector]) -> None: ...

    def close(self) -> None: ...
