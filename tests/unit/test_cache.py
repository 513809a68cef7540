"""The judge's response cache: content-addressed keys, first write wins, safe for concurrent use."""

from __future__ import annotations

import logging
import multiprocessing
import sqlite3
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ragas_ops.judge.cache.keys import cache_key
from ragas_ops.judge.cache.local import ResponseCache

BASE = {
    "kind": "chat",
    "prompt": "faithfulness.statements/v1",
    "params": {"model": "gpt-4o-mini", "temperature": 0.0, "max_tokens": 1024},
    "messages": [
        {"role": "system", "content": "Break the answer into statements."},
        {"role": "user", "content": 'Input: {"answer": "It opened in 2004."}'},
    ],
}


def test_cache_key_is_a_stable_sha256_hex_digest():
    key = cache_key(**BASE)
    assert len(key) == 64
    assert int(key, 16) >= 0
    assert cache_key(**BASE) == key


def test_cache_key_does_not_depend_on_the_order_of_the_parts_or_of_dict_keys():
    reordered = {
        "messages": BASE["messages"],
        "params": {"max_tokens": 1024, "temperature": 0.0, "model": "gpt-4o-mini"},
        "prompt": BASE["prompt"],
        "kind": "chat",
    }
    assert cache_key(**reordered) == cache_key(**BASE)


def _changed(path: tuple, value) -> dict:
    import copy

    parts = copy.deepcopy(BASE)
    node = parts
    for step in path[:-1]:
        node = node[step]
    node[path[-1]] = value
    return parts


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("params", "model"), "gpt-4o"),
        (("params", "temperature"), 0.7),
        (("params", "max_tokens"), 2048),
        (("params", "n"), 3),
        (("prompt",), "faithfulness.statements/v2"),
        (("kind",), "embedding"),
        (("messages", 0, "content"), "Break the answer into statements!"),
        (("messages", 1, "content"), 'Input: {"answer": "It opened in 2005."}'),
        (("messages", 1, "role"), "assistant"),
    ],
    ids=lambda part: "/".join(map(str, part)) if isinstance(part, tuple) else None,
)
def test_cache_key_changes_with_every_part_of_the_request(path, value):
    assert cache_key(**_changed(path, value)) != cache_key(**BASE)


def test_cache_key_of_an_extra_message_differs():
    parts = dict(BASE, messages=[*BASE["messages"], {"role": "user", "content": "again"}])
    assert cache_key(**parts) != cache_key(**BASE)


# -- ResponseCache --------------------------------------------------------------------------------


@pytest.fixture
def cache_file(tmp_path: Path) -> Path:
    return tmp_path / "nested" / "dir" / "judge.sqlite"


def test_put_then_get_round_trips_json_values(cache_file):
    cache = ResponseCache(cache_file)
    value = {"texts": ['{"statements": ["東京 is big."]}', "second"], "n": 2, "ok": True}
    cache.put("k", value)
    assert cache.get("k") == value
    assert cache.get("unknown") is None
    cache.close()


def test_the_first_answer_stored_for_a_key_wins(cache_file):
    cache = ResponseCache(cache_file)
    cache.put("k", {"texts": ["first"]})
    cache.put("k", {"texts": ["second"]})
    assert cache.get("k") == {"texts": ["first"]}
    cache.close()


def test_answers_persist_across_instances_on_the_same_file(cache_file):
    first = ResponseCache(cache_file)
    first.put("k", {"texts": ["kept"]})
    first.put_vectors({"v": np.array([0.5, -1.0, 2.0])})
    first.close()

    second = ResponseCache(cache_file)
    assert second.get("k") == {"texts": ["kept"]}
    np.testing.assert_array_equal(second.get_vectors(["v"])["v"], [0.5, -1.0, 2.0])
    second.close()


def test_an_in_memory_cache_is_private_to_its_instance():
    first, second = ResponseCache(None), ResponseCache(None)
    first.put("k", 1)
    assert first.get("k") == 1
    assert second.get("k") is None


def test_vectors_round_trip_as_float64_and_only_known_keys_come_back(cache_file):
    cache = ResponseCache(cache_file)
    vectors = {
        "a": np.array([0.1, 0.2, 0.3]),
        "b": np.array([1.5, -2.5], dtype=np.float32),
        "c": np.array([np.pi] * 1536),
    }
    cache.put_vectors(vectors)
    found = cache.get_vectors(["a", "b", "c", "missing"])
    assert set(found) == {"a", "b", "c"}
    for key, vector in vectors.items():
        assert found[key].dtype == np.float64
        np.testing.assert_array_equal(found[key], vector.astype(np.float64))
    cache.close()


def test_the_first_vector_stored_for_a_key_wins(cache_file):
    cache = ResponseCache(cache_file)
    cache.put_vectors({"a": np.array([1.0, 0.0])})
    cache.put_vectors({"a": np.array([0.0, 1.0]), "b": np.array([2.0])})
    found = cache.get_vectors(["a", "b"])
    np.testing.assert_array_equal(found["a"], [1.0, 0.0])
    np.testing.assert_array_equal(found["b"], [2.0])
    cache.close()


def test_get_vectors_handles_more_keys_than_sqlite_allows_in_one_query(cache_file):
    cache = ResponseCache(cache_file)
    cache.put_vectors({f"k{i}": np.array([float(i)]) for i in range(1_234)})
    found = cache.get_vectors([f"k{i}" for i in range(1_300)])
    assert len(found) == 1_234
    assert all(found[f"k{i}"][0] == i for i in range(1_234))
    assert cache.get_vectors([]) == {}
    cache.close()


def test_a_cache_file_is_in_wal_mode_so_readers_never_block_the_writer(cache_file):
    ResponseCache(cache_file).close()
    db = sqlite3.connect(cache_file)
    try:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        db.close()


def test_a_failed_vector_write_leaves_the_cache_usable(cache_file):
    cache = ResponseCache(cache_file)
    with pytest.raises(sqlite3.Error):
        cache.put_vectors({"ok": np.array([1.0]), ("not", "text"): np.array([2.0])})  # type: ignore[dict-item]
    cache.put_vectors({"later": np.array([3.0])})
    cache.put("k", {"texts": ["kept"]})
    other = ResponseCache(cache_file)
    assert other.get("k") == {"texts": ["kept"]}
    assert set(other.get_vectors(["later"])) == {"later"}
    cache.close()
    other.close()


# -- concurrent use -------------------------------------------------------------------------------

PROCESSES = 4
KEYS_PER_PROCESS = 200


def _write_keys(path: str, worker: int, start: Any) -> None:
    """Run in a child process: write this worker's keys one by one, plus a shared one."""
    cache = ResponseCache(Path(path))
    start.wait()
    for i in range(KEYS_PER_PROCESS):
        cache.put(f"w{worker}-k{i}", {"worker": worker, "i": i})
        cache.put("shared", {"worker": worker})
        if i % 50 == 0:
            cache.put_vectors({f"w{worker}-v{i}": np.array([worker, i], dtype=np.float64)})
    cache.close()


def test_several_processes_write_the_same_file_and_every_write_is_readable(tmp_path):
    path = tmp_path / "shared.sqlite"
    context = multiprocessing.get_context("spawn")
    start = context.Event()
    workers = [
        context.Process(target=_write_keys, args=(str(path), worker, start))
        for worker in range(PROCESSES)
    ]
    for process in workers:
        process.start()
    start.set()  # all at once, to make them contend for the file
    for process in workers:
        process.join(timeout=60)
    assert [process.exitcode for process in workers] == [0] * PROCESSES

    cache = ResponseCache(path)
    for worker in range(PROCESSES):
        for i in range(KEYS_PER_PROCESS):
            assert cache.get(f"w{worker}-k{i}") == {"worker": worker, "i": i}
    assert cache.get("shared")["worker"] in range(PROCESSES)
    vector_keys = [f"w{w}-v{i}" for w in range(PROCESSES) for i in range(0, KEYS_PER_PROCESS, 50)]
    assert set(cache.get_vectors(vector_keys)) == set(vector_keys)
    cache.close()


def test_threads_share_one_instance_and_others_on_the_same_file(cache_file):
    shared = ResponseCache(cache_file)
    errors: list[BaseException] = []

    def work(thread: int) -> None:
        try:
            own = ResponseCache(cache_file)
            for i in range(100):
                target = shared if i % 2 else own
                target.put(f"t{thread}-{i}", [thread, i])
                assert shared.get(f"t{thread}-{i}") == [thread, i]
                target.put_vectors({f"t{thread}-v{i}": np.array([float(i)])})
            own.close()
        except BaseException as error:  # surfaced in the main thread below
            errors.append(error)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert errors == []
    assert all(shared.get(f"t{t}-{i}") == [t, i] for t in range(8) for i in range(100))
    assert len(shared.get_vectors([f"t{t}-v{i}" for t in range(8) for i in range(100)])) == 800
    shared.close()


def test_a_stored_failure_gives_way_to_a_newer_reply_but_an_answer_stays(tmp_path):
    from ragas_ops.judge.cache.local import ResponseCache

    cache = ResponseCache(tmp_path / "c.sqlite")
    failure = {"texts": ["nope"], "outcome": "output_invalid", "reason": "bad"}
    cache.put("k", failure)
    cache.put("k", {"texts": ["first answer"]})
    cache.put("k", {"texts": ["second answer"]})
    cache.put("k", failure)
    assert cache.get("k") == {"texts": ["first answer"]}


# -- integrity (issue 41) -------------------------------------------------------------------------


def test_an_entry_edited_in_the_file_is_a_miss_and_is_replaced_by_the_next_answer(cache_file):
    cache = ResponseCache(cache_file)
    cache.put("k", {"texts": ['{"verdict":"yes"}']})
    cache.put_vectors({"v": np.array([1.0, 2.0])})
    with sqlite3.connect(cache_file) as database:
        database.execute("UPDATE responses SET value = replace(value, 'yes', 'no ')")
        database.execute("UPDATE embeddings SET vector = ?", (np.array([1.0, 3.0]).tobytes(),))
    assert cache.get("k") is None
    assert cache.get_vectors(["v"]) == {}
    assert cache.mismatches.count == 2
    cache.put("k", {"texts": ['{"verdict":"yes"}']})
    assert cache.get("k") == {"texts": ['{"verdict":"yes"}']}
    cache.close()


def test_an_entry_copied_under_another_key_fails_its_check(cache_file):
    cache = ResponseCache(cache_file)
    cache.put("a", {"texts": ["answer of a"]})
    cache.put("b", {"texts": ["answer of b"]})
    with sqlite3.connect(cache_file) as database:
        value, digest = database.execute(
            "SELECT value, digest FROM responses WHERE key = 'a'"
        ).fetchone()
        database.execute(
            "UPDATE responses SET value = ?, digest = ? WHERE key = 'b'", (value, digest)
        )
    assert cache.get("b") is None
    assert cache.get("a") == {"texts": ["answer of a"]}
    cache.close()


def test_a_file_of_before_digests_is_given_them_once_and_checked_after(cache_file):
    cache_file.parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(cache_file) as database:  # the schema of before issue 41
        database.execute("CREATE TABLE responses (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        database.execute("CREATE TABLE embeddings (key TEXT PRIMARY KEY, vector BLOB NOT NULL)")
        database.execute("INSERT INTO responses VALUES ('k', '{\"texts\": [\"old\"]}')")
        database.execute("INSERT INTO embeddings VALUES ('v', ?)", (np.array([1.0]).tobytes(),))
    cache = ResponseCache(cache_file)
    assert cache.get("k") == {"texts": ["old"]}  # migrated, not paid again
    assert set(cache.get_vectors(["v"])) == {"v"}
    with sqlite3.connect(cache_file) as database:  # a digest removed after: no longer trusted
        database.execute("UPDATE responses SET digest = NULL")
    assert ResponseCache(cache_file).get("k") is None
    cache.close()


@pytest.mark.parametrize("damage", ["truncated", "overwritten"])
def test_an_unreadable_file_is_set_aside_and_a_fresh_one_started(cache_file, damage, caplog):
    cache = ResponseCache(cache_file)
    for index in range(300):
        cache.put(f"k{index}", {"texts": ["x" * 200]})
    cache.close()
    if damage == "truncated":
        with cache_file.open("r+b") as handle:
            handle.truncate(cache_file.stat().st_size // 2)
    else:
        cache_file.write_bytes(b"not a database at all" * 100)
    with caplog.at_level(logging.WARNING):
        fresh = ResponseCache(cache_file)
    assert fresh.get("k1") is None
    fresh.put("k1", {"texts": ["again"]})
    assert fresh.get("k1") == {"texts": ["again"]}
    (aside,) = cache_file.parent.glob("judge.sqlite.unreadable-*")
    (line,) = [record.getMessage() for record in caplog.records]
    assert f"set aside as {aside}" in line
    fresh.close()
