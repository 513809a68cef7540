"""The judge cache of a deployment: this host's SQLite file in front of the shared object store.

A lookup asks the local tier first and the shared one only for what the local one lacks (or
holds only as a stored failure); what the shared tier had is copied into the local one, so the
next lookup of the host stays local. A store goes to both. Lookups and stores from a judge's
coroutines run in a thread pool of `threads`, so that a chunk's keys are fetched in parallel;
a batch of embedding keys is fetched at once (`aget_vectors`).
"""

from __future__ import annotations

import asyncio
import threading
from collections import Counter
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from ragas_ops.judge.cache.base import Vector, is_stored_failure
from ragas_ops.judge.cache.local import ResponseCache
from ragas_ops.judge.cache.shared import SharedCache
from ragas_ops.secrets import Secret
from ragas_ops.storage import Location

T = TypeVar("T")


class TieredCache:
    """A `JudgeCache` of two tiers: `local` (near, per host) and a shared one at `shared_root`."""

    def __init__(
        self,
        local: ResponseCache,
        shared_root: Location,
        *,
        threads: int,
        retry_seconds: float,
        secrets: tuple[Secret | None, ...] = (),
    ) -> None:
        self.local = local
        self.stats: Counter[str] = Counter()
        """What the shared tier did: `read` (objects asked for), `hit`, `written`, `error`..."""
        self._events: Counter[str] | None = None
        self._lock = threading.Lock()
        self.shared = SharedCache(
            shared_root, retry_seconds=retry_seconds, count=self._count, secrets=secrets
        )
        self._pool = ThreadPoolExecutor(threads, thread_name_prefix="ragas-ops-shared-cache")

    def count_in(self, events: Counter[str]) -> None:
        self._events = events

    def _count(self, name: str, amount: int = 1) -> None:
        with self._lock:
            self.stats[name] += amount
            if self._events is not None:
                self._events[f"shared_cache_{name}"] += amount

    # -- responses ----------------------------------------------------------------------------

    def get(self, key: str) -> Any | None:
        local = self.local.get(key)
        return local if _is_answer(local) else self._from_shared(key, local)

    async def aget(self, key: str) -> Any | None:
        local = self.local.get(key)
        if _is_answer(local):
            return local
        return await self._in_pool(self._from_shared, key, local)

    def _from_shared(self, key: str, local: Any | None) -> Any | None:
        """The shared tier's answer (it beats a local failure), else the local value, else
        the shared tier's failure; what is found is copied into the local tier."""
        answer = self.shared.read_answer(key)
        if answer is not None:
            self._count("hit")
            self.local.put(key, answer)
            return answer
        if local is not None:
            return local
        failure = self.shared.read_failure(key)
        if failure is not None:
            self._count("hit")
            self.local.put(key, failure)
        return failure

    def put(self, key: str, value: Any) -> None:
        self.local.put(key, value)
        self._to_shared(key, value)

    async def aput(self, key: str, value: Any) -> None:
        self.local.put(key, value)
        await self._in_pool(self._to_shared, key, value)

    def _to_shared(self, key: str, value: Any) -> None:
        if is_stored_failure(value):
            self.shared.write_failure(key, value)
        else:
            self.shared.write_answer(key, value)

    # -- embeddings ---------------------------------------------------------------------------

    def get_vectors(self, keys: Iterable[str]) -> dict[str, Vector]:
        wanted = list(keys)
        found = self.local.get_vectors(wanted)
        missing = [key for key in wanted if key not in found]
        fetched = list(self._pool.map(self.shared.read_vector, missing))
        return found | self._keep(missing, fetched)

    async def aget_vectors(self, keys: Iterable[str]) -> dict[str, Vector]:
        wanted = list(keys)
        found = self.local.get_vectors(wanted)
        missing = [key for key in wanted if key not in found]
        fetched = await asyncio.gather(
            *(self._in_pool(self.shared.read_vector, key) for key in missing)
        )
        return found | self._keep(missing, fetched)

    def _keep(self, keys: list[str], fetched: list[Vector | None]) -> dict[str, Vector]:
        """The vectors the shared tier had, copied into the local tier."""
        pairs = zip(keys, fetched, strict=True)
        hits = {key: vector for key, vector in pairs if vector is not None}
        if hits:
            self._count("hit", len(hits))
            self.local.put_vectors(hits)
        return hits

    def put_vectors(self, vectors: dict[str, Vector]) -> None:
        self.local.put_vectors(vectors)
        list(self._pool.map(self.shared.write_vector, vectors, vectors.values()))

    async def aput_vectors(self, vectors: dict[str, Vector]) -> None:
        self.local.put_vectors(vectors)
        await asyncio.gather(
            *(self._in_pool(self.shared.write_vector, key, value) for key, value in vectors.items())
        )

    # -- lifetime -----------------------------------------------------------------------------

    async def _in_pool(self, function: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._pool, function, *args)

    def close(self) -> None:
        self._pool.shutdown(wait=True)
        self.local.close()


def _is_answer(value: Any | None) -> bool:
    return value is not None and not is_stored_failure(value)
