"""The shared judge cache in the pipeline (issue 18): the nightly DAG run for real
(`dag.test()`) on two "hosts", two fresh local cache directories sharing one cache on a local
S3 (moto) server over HTTP. The second host's `score_chunk` tasks pay nothing."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from ragas_ops_testing.judge_server import JudgeServer

from ragas_ops.judge.cache.local import ResponseCache
from ragas_ops.samples import sample_interactions
from tests.integration.dag import test_pipeline_dag as dag_tests
from tests.integration.dag.test_pipeline_dag import DAY, run_dag, state, warehouse, write_logs

airflow_database = dag_tests.airflow_database
lake = dag_tests.lake

BUCKET = "judge-cache-dag"


def test_a_rerun_of_the_day_on_another_host_makes_no_judge_request(
    lake: Path,
    judge_server: JudgeServer,
    start_s3: Callable[[], str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import boto3

    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    endpoint = start_s3()
    client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
    client.create_bucket(Bucket=BUCKET)
    prefix = f"cache-{tmp_path.name}"  # moto keeps buckets from one server to the next
    monkeypatch.setenv("RAGAS_OPS_JUDGE_SHARED_CACHE", f"s3://{BUCKET}/{prefix}")
    write_logs(lake, DAY, sample_interactions(45, seed=11))

    monkeypatch.setenv("RAGAS_OPS_JUDGE_CACHE_PATH", str(tmp_path / "host-a" / "judge.sqlite"))
    assert state(run_dag()) == "success"
    paid = judge_server.stats()["requests"]
    assert paid > 0
    first = pq.read_table(warehouse(lake, "scored", f"dt={DAY}", "scored.parquet"))
    listed = client.list_objects_v2(Bucket=BUCKET, Prefix=f"{prefix}/responses/")
    assert listed["KeyCount"] > 0

    host_b = tmp_path / "host-b" / "judge.sqlite"
    monkeypatch.setenv("RAGAS_OPS_JUDGE_CACHE_PATH", str(host_b))
    assert state(run_dag()) == "success"
    assert judge_server.stats()["requests"] == paid, "the second host must not call the judge"
    second = pq.read_table(warehouse(lake, "scored", f"dt={DAY}", "scored.parquet"))
    assert second.column("id").to_pylist() == first.column("id").to_pylist()
    for metric in ("faithfulness", "answer_relevance", "context_relevance"):
        assert second.column(f"{metric}_score").equals(first.column(f"{metric}_score"))
    assert sum(second.column("judge_requests").to_pylist()) == 0
    assert sum(second.column("judge_cache_hits").to_pylist()) > 0
    # Host b's own file now holds what it read: the shared answers were copied in.
    some_key = listed["Contents"][0]["Key"].rsplit("/", 1)[1].removesuffix(".json")
    assert ResponseCache(host_b).get(some_key) is not None
