"""The tiers of the judge cache, on a local folder as the shared store (the S3 case, the judge
and the pipeline are in tests/integration/judge/test_shared_cache.py)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from ragas_ops.config import ConfigError, Settings, apply_mapping
from ragas_ops.judge.cache import open_cache
from ragas_ops.judge.cache.local import ResponseCache
from ragas_ops.judge.cache.spec import CacheSpec
from ragas_ops.judge.cache.tiered import TieredCache
from ragas_ops.storage import locate

KEY = "ab" + "0" * 62
FAILURE = {"texts": ["not json"], "outcome": "output_invalid", "reason": "did not parse"}
ANSWER = {"texts": ['{"statements": ["a"]}']}


def host(tmp_path: Path, name: str, shared: Path | None = None, **options: float) -> TieredCache:
    """A host's cache: its own local file, and the shared folder."""
    root = locate(str(shared or tmp_path / "shared"))
    local = ResponseCache(tmp_path / name / "judge.sqlite")
    threads = int(options.pop("threads", 4))
    return TieredCache(local, root, threads=threads, retry_seconds=options.get("retry", 60.0))


def test_an_answer_found_in_the_shared_tier_is_copied_into_the_local_one(tmp_path: Path) -> None:
    a, b = host(tmp_path, "a"), host(tmp_path, "b")
    a.put(KEY, ANSWER)
    assert (tmp_path / "shared" / "responses" / "ab" / f"{KEY}.json").is_file()
    assert b.local.get(KEY) is None
    assert b.get(KEY) == ANSWER
    assert b.local.get(KEY) == ANSWER
    assert b.stats["hit"] == 1
    b.get(KEY)
    assert b.stats["hit"] == 1, "the second lookup is local"


def test_a_local_failure_gives_way_to_an_answer_in_the_shared_tier(tmp_path: Path) -> None:
    a, b = host(tmp_path, "a"), host(tmp_path, "b")
    a.put(KEY, FAILURE)
    b.put(KEY, FAILURE)
    assert b.get(KEY) == FAILURE
    a.put(KEY, ANSWER)  # host a asked again (--retry-failed) and got an answer
    assert b.get(KEY) == ANSWER
    assert b.local.get(KEY) == ANSWER, "the answer replaced the local failure"


def test_a_shared_failure_fills_a_local_miss_but_never_hides_an_answer(tmp_path: Path) -> None:
    a, b, c = host(tmp_path, "a"), host(tmp_path, "b"), host(tmp_path, "c")
    a.put(KEY, FAILURE)
    assert b.get(KEY) == FAILURE
    b.put(KEY, ANSWER)
    a.put(KEY, {**FAILURE, "reason": "a later failure"})  # a host without the answer yet
    assert c.get(KEY) == ANSWER


def test_an_answer_is_written_once_the_first_one_stays(tmp_path: Path) -> None:
    a, b = host(tmp_path, "a"), host(tmp_path, "b")
    a.put(KEY, ANSWER)
    b.put(KEY, {"texts": ["another answer"]})
    assert host(tmp_path, "c").get(KEY) == ANSWER
    assert b.stats["already_stored"] == 1


def test_an_unreadable_object_is_a_miss_and_the_next_answer_replaces_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    damaged = tmp_path / "shared" / "responses" / "ab" / f"{KEY}.json"
    damaged.parent.mkdir(parents=True)
    damaged.write_bytes(b'{"texts": ["cut sh')
    cache = host(tmp_path, "a")
    with caplog.at_level(logging.WARNING):
        assert cache.get(KEY) is None
    assert "unreadable" in caplog.text
    cache.put(KEY, ANSWER)
    assert host(tmp_path, "b").get(KEY) == ANSWER


def test_vectors_are_fetched_together_and_copied_into_the_local_tier(tmp_path: Path) -> None:
    a, b = host(tmp_path, "a"), host(tmp_path, "b", threads=8)
    vectors = {f"{i:064x}": np.arange(i, i + 5, dtype=np.float64) for i in range(40)}
    asyncio.run(a.aput_vectors(vectors))
    found = asyncio.run(b.aget_vectors([*vectors, "f" * 64]))
    assert set(found) == set(vectors)
    for key, vector in vectors.items():
        np.testing.assert_array_equal(found[key], vector)
    assert b.stats["hit"] == 40
    assert set(b.local.get_vectors(vectors)) == set(vectors)


def test_a_store_that_fails_is_warned_of_once_counted_and_tried_again_later(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where the store's folder should be")
    cache = host(tmp_path, "a", shared=blocker / "cache", retry=0.3)
    events: Counter[str] = Counter()
    cache.count_in(events)
    with caplog.at_level(logging.WARNING):
        for index in range(5):
            cache.put(f"{index:064x}", ANSWER)  # the writes fail: the local tier keeps them
    assert all(cache.get(f"{index:064x}") == ANSWER for index in range(5))
    warnings = [r for r in caplog.records if "cannot be used" in r.getMessage()]
    assert len(warnings) == 1
    assert events["shared_cache_error"] >= 1
    assert events["shared_cache_skipped"] >= 1, "while down, the store is left alone"

    blocker.unlink()  # the store is back
    time.sleep(0.35)
    cache.put("f" * 64, ANSWER)
    assert (blocker / "cache" / "responses" / "ff" / f"{'f' * 64}.json").is_file()
    assert events["shared_cache_written"] == 1


def test_without_a_shared_location_the_cache_is_the_local_file_alone(tmp_path: Path) -> None:
    cache = open_cache(CacheSpec(path=str(tmp_path / "c.sqlite")))
    assert isinstance(cache, ResponseCache)
    shared = open_cache(CacheSpec(path=str(tmp_path / "c.sqlite"), shared=str(tmp_path / "s")))
    assert isinstance(shared, TieredCache)
    shared.close()


@pytest.mark.parametrize(
    ("uri", "problem"),
    [
        ("s3://AKIAEXAMPLE:s3cr3tValue@bucket/cache", "holds credentials"),
        ("https://bucket.example.com/cache", "use s3://"),
        ("s3:///cache", "needs a bucket"),
    ],
)
def test_a_shared_location_that_cannot_work_is_refused(uri: str, problem: str) -> None:
    with pytest.raises(ConfigError, match=problem) as refused:
        apply_mapping(Settings(), {"judge": {"shared_cache": uri}}, source="test")
    assert "s3cr3tValue" not in str(refused.value)
