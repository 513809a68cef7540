"""The shared judge cache (issue 18) over real HTTP: `ragas-ops score` against the project's
test judge server, the shared tier on a local S3 (moto) server. A second "host" is a fresh
local cache directory with the same shared cache."""

from __future__ import annotations

import json
import logging
import multiprocessing
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest
from ragas_ops_testing.judge_server import JudgeServer

from ragas_ops.cli.main import EXIT_OK, main
from ragas_ops.judge.cache import open_cache
from ragas_ops.judge.cache.local import ResponseCache
from ragas_ops.judge.cache.spec import CacheSpec
from ragas_ops.samples import sample_interactions
from tests.support import TEST_KEY

BUCKET = "judge-cache"
METRICS = ("faithfulness", "answer_relevance", "context_relevance")


@pytest.fixture
def s3(start_s3: Callable[[], str], monkeypatch: pytest.MonkeyPatch) -> Any:
    """A boto3 client of a moto server over HTTP, with the cache's bucket emptied (moto keeps
    its buckets in the process, from one server to the next)."""
    import boto3

    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # moto's line per request
    endpoint = start_s3()
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
    client.create_bucket(Bucket=BUCKET)
    for name in object_keys(client, ""):
        client.delete_object(Bucket=BUCKET, Key=name)
    return client


SHARED = f"s3://{BUCKET}/prod"


def object_keys(client: Any, prefix: str) -> list[str]:
    pages = client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix)
    return [item["Key"] for page in pages for item in page.get("Contents", [])]


def score(
    server: JudgeServer, tmp_path: Path, host: str, target: str, *extra: str
) -> pq.ParquetFile:
    """`ragas-ops score` of tmp_path/logs.parquet as `host` (its own local cache file)."""
    out = tmp_path / f"{target}.parquet"
    args = [
        "score",
        str(tmp_path / "logs.parquet"),
        str(out),
        "--base-url",
        server.base_url,
        "--model",
        "test-judge",
        "--embedding-model",
        "test-embedding",
        "--cache",
        str(tmp_path / host / "judge.sqlite"),
        "--rpm",
        "none",
        "--tpm",
        "none",
        "--no-progress",
        *extra,
    ]
    assert main(args) == EXIT_OK
    return pq.ParquetFile(out)


def statuses(table: Any, metric: str) -> list[str]:
    return list(table.column(f"{metric}_status").to_pylist())


def test_a_second_host_reruns_the_day_from_the_shared_cache_with_no_judge_request(
    judge_server: JudgeServer, tmp_path: Path, s3: Any
) -> None:
    pq.write_table(sample_interactions(30, seed=3), tmp_path / "logs.parquet")
    first = score(judge_server, tmp_path, "host-a", "a", "--shared-cache", SHARED).read()
    paid = judge_server.stats()["requests"]
    assert paid > 0
    responses = object_keys(s3, "prod/responses/")
    vectors = object_keys(s3, "prod/embeddings/")
    assert responses
    assert vectors

    second = score(judge_server, tmp_path, "host-b", "b", "--shared-cache", SHARED).read()
    assert judge_server.stats()["requests"] == paid, "the second host must not call the judge"
    assert sum(second.column("judge_requests").to_pylist()) == 0
    assert sum(second.column("judge_cache_hits").to_pylist()) > 0
    for metric in METRICS:
        assert second.column(f"{metric}_score").equals(first.column(f"{metric}_score"))
        assert statuses(second, metric) == statuses(first, metric)

    # What host b found in the shared tier is now in its own file: its next rerun is local.
    local_b = ResponseCache(tmp_path / "host-b" / "judge.sqlite")
    for name in responses:
        assert local_b.get(Path(name).stem) is not None
    assert len(local_b.get_vectors(Path(name).stem for name in vectors)) == len(vectors)


def test_the_shared_objects_are_named_by_the_local_cache_keys(
    judge_server: JudgeServer, tmp_path: Path, s3: Any
) -> None:
    """Tiering leaves the key alone: each object is `<kind>/<key[:2]>/<key>`, with the value
    the local file holds under that same key."""
    pq.write_table(sample_interactions(10, seed=4), tmp_path / "logs.parquet")
    score(judge_server, tmp_path, "host-a", "a", "--shared-cache", SHARED)
    local = ResponseCache(tmp_path / "host-a" / "judge.sqlite")
    names = object_keys(s3, "prod/responses/")
    assert names
    for name in names:
        kind, shard, file = name.split("/")[1:]
        key = file.removesuffix(".json")
        assert (kind, shard, len(key)) == ("responses", key[:2], 64)
        body = s3.get_object(Bucket=BUCKET, Key=name)["Body"].read()
        assert json.loads(body)["value"] == local.get(key)  # beside its digest
    for name in object_keys(s3, "prod/embeddings/"):
        key = Path(name).stem
        body = s3.get_object(Bucket=BUCKET, Key=name)["Body"].read()
        values = body[4 + 32 :]  # after "RGV1" and the digest
        np.testing.assert_array_equal(np.frombuffer(values, "<f8"), local.get_vectors([key])[key])


def test_an_existing_local_cache_still_hits_when_the_shared_tier_is_added(
    judge_server: JudgeServer, tmp_path: Path, s3: Any
) -> None:
    pq.write_table(sample_interactions(20, seed=5), tmp_path / "logs.parquet")
    before = score(judge_server, tmp_path, "host-a", "before").read()
    paid = judge_server.stats()["requests"]
    assert paid > 0
    after = score(judge_server, tmp_path, "host-a", "after", "--shared-cache", SHARED).read()
    assert judge_server.stats()["requests"] == paid
    assert after.column("faithfulness_score").equals(before.column("faithfulness_score"))
    assert object_keys(s3, "prod/") == [], "local hits cost no request to the shared store"


def test_scoring_goes_on_when_the_shared_store_is_down(
    judge_server: JudgeServer,
    tmp_path: Path,
    start_s3: Callable[[], str],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A stopped S3 server: every row is scored as without a shared tier, one warning says
    so (without the credentials), and the local tier still saves the rerun."""
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    server.stop()  # nothing listens there any more
    secret = "moto-Secret-4f1b9c2d7e"
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://{host}:{port}")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIA-down-test")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", secret)
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    pq.write_table(sample_interactions(20, seed=6), tmp_path / "logs.parquet")

    with caplog.at_level(logging.INFO):
        down = score(judge_server, tmp_path, "host-a", "down", "--shared-cache", SHARED).read()
    plain = score(judge_server, tmp_path, "host-z", "plain").read()
    for metric in METRICS:
        assert statuses(down, metric) == statuses(plain, metric)
        assert down.column(f"{metric}_score").equals(plain.column(f"{metric}_score"))
    warnings = [r.getMessage() for r in caplog.records if "cannot be used" in r.getMessage()]
    assert len(warnings) == 1, warnings
    assert SHARED in warnings[0]
    assert f"{host}:{port}" in warnings[0]
    assert secret not in caplog.text
    assert TEST_KEY not in caplog.text
    assert "AKIA-down-test" not in caplog.text

    paid = judge_server.stats()["requests"]
    score(judge_server, tmp_path, "host-a", "again", "--shared-cache", SHARED)
    assert judge_server.stats()["requests"] == paid


def test_a_store_that_refuses_writes_is_counted_and_scoring_goes_on(
    judge_server: JudgeServer, tmp_path: Path, s3: Any
) -> None:
    """A bucket that is not there: reads miss, writes fail; the judge's events count it."""
    cache = open_cache(
        CacheSpec(path=str(tmp_path / "c.sqlite"), shared="s3://no-such-bucket/cache")
    )
    events: Counter[str] = Counter()
    cache.count_in(events)
    assert cache.get("k" * 64) is None
    cache.put("k" * 64, {"texts": ["an answer"]})
    assert cache.get("k" * 64) == {"texts": ["an answer"]}  # the local tier kept it
    assert events["shared_cache_error"] >= 1
    cache.close()


def test_stored_failures_hold_across_hosts_and_are_asked_again_under_retry_failed(
    start_judge_server: Callable[..., JudgeServer], tmp_path: Path, s3: Any
) -> None:
    server = start_judge_server(rate_malformed=1.0)  # every reply, and every repair, unusable
    pq.write_table(sample_interactions(12, seed=2), tmp_path / "logs.parquet")
    only = ("--metrics", "faithfulness", "--shared-cache", SHARED)
    first = score(server, tmp_path, "host-a", "a", *only).read()
    assert "judge_output_invalid" in statuses(first, "faithfulness")
    assert object_keys(s3, "prod/failures/")
    paid = server.stats()["requests"]

    # Another host reuses the stored outcomes: no request, the same statuses.
    reused = score(server, tmp_path, "host-b", "b", *only).read()
    assert server.stats()["requests"] == paid
    assert statuses(reused, "faithfulness") == statuses(first, "faithfulness")

    # --retry-failed on that host asks again, and its answers reach the shared tier.
    server.update(rate_malformed=0.0)
    retried = score(server, tmp_path, "host-b", "retried", *only, "--retry-failed").read()
    assert server.stats()["requests"] > paid
    assert "judge_output_invalid" not in statuses(retried, "faithfulness")
    settled = server.stats()["requests"]

    # A fresh host and the first one (whose file still holds the failures) take the answers.
    for host in ("host-c", "host-a"):
        again = score(server, tmp_path, host, f"again-{host}", *only).read()
        assert server.stats()["requests"] == settled, host
        assert statuses(again, "faithfulness") == statuses(retried, "faithfulness"), host


# -- two processes writing the same keys at once -------------------------------------------------

# Both processes write every key, in the same order, from one start signal: 60 keys are 60
# races per process, each a put to the shared tier.
KEYS = [f"{index:064x}" for index in range(60)]


def _write_all(shared: str, cache_path: str, worker: int, start: Any) -> None:
    """Run in a child process: store every key with this worker's answer and vector."""
    cache = open_cache(CacheSpec(path=cache_path, shared=shared))
    start.wait()
    for key in KEYS:
        cache.put(key, {"texts": [f"answer of worker {worker} " * 20]})
    cache.put_vectors({key: np.full(256, float(worker)) for key in KEYS})
    cache.close()


@pytest.mark.parametrize("where", ["s3", "folder"])
def test_two_processes_writing_the_same_keys_at_once_leave_one_whole_value_each(
    where: str, tmp_path: Path, s3: Any
) -> None:
    shared = SHARED if where == "s3" else str(tmp_path / "shared")
    context = multiprocessing.get_context("spawn")
    start = context.Event()
    workers = [
        context.Process(
            target=_write_all, args=(shared, str(tmp_path / f"w{n}" / "c.sqlite"), n, start)
        )
        for n in range(2)
    ]
    for process in workers:
        process.start()
    start.set()
    for process in workers:
        process.join(timeout=120)
    assert [process.exitcode for process in workers] == [0, 0]

    reader = open_cache(CacheSpec(path=None, shared=shared))
    answers = {json.dumps(reader.get(key)) for key in KEYS}
    whole = {json.dumps({"texts": [f"answer of worker {n} " * 20]}) for n in range(2)}
    assert answers <= whole
    vectors = reader.get_vectors(KEYS)
    assert set(vectors) == set(KEYS)
    assert all(len(set(v.tolist())) == 1 and v[0] in (0.0, 1.0) for v in vectors.values())
    assert all(len(v) == 256 for v in vectors.values())
    reader.close()


def test_the_shared_tier_reaches_s3_with_the_options_it_is_given(
    s3: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The pipeline hands the lake's S3 options (its aws connection) to the cache: those are
    used, not the AWS environment (pointed at nothing here)."""
    from ragas_ops.secrets import Secret
    from ragas_ops.storage import S3Options

    endpoint = s3.meta.endpoint_url
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")  # nothing listens there
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "from-the-environment")
    options = S3Options(endpoint_url=endpoint, access_key=Secret("conn"), secret_key=Secret("pw"))
    settings = CacheSpec(path=None, shared=SHARED)
    events: Counter[str] = Counter()
    writer = open_cache(settings, options)
    writer.count_in(events)
    writer.put("c" * 64, {"texts": ["an answer"]})
    assert events["shared_cache_written"] == 1
    assert events["shared_cache_error"] == 0
    assert object_keys(s3, "prod/responses/cc/") == [f"prod/responses/cc/{'c' * 64}.json"]
    writer.close()
