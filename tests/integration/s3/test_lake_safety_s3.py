"""The staging and leftover rules on S3 (a moto server over HTTP): a publish killed halfway
leaves nothing inside the partition, the day stays readable, and the next publish removes what
crashed runs left (issue 13 point 3)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import boto3
import pyarrow.dataset as pads
import pyarrow.parquet as pq
import pytest
from ragas_ops_testing.judge_server import JudgeServer

from ragas_ops.samples import sample_interactions
from ragas_ops.storage import locate
from tests.integration.dag.test_lake_safety_dag import KILLED_PUBLISH
from tests.support import TEST_KEY

DAY = "2026-11-14"
PROJECT = Path(__file__).resolve().parents[3]


@pytest.fixture
def s3_lake(
    start_s3: Callable[[], str],
    judge_server: JudgeServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> object:
    endpoint = start_s3()
    client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
    # Buckets of their own: moto keeps one state for every server of the process.
    for bucket in ("lake-safety-logs", "lake-safety-warehouse"):
        client.create_bucket(Bucket=bucket)
    for name, value in {
        "RAGAS_OPS_PIPELINE_RAW_URI": "s3://lake-safety-logs/raw",
        "RAGAS_OPS_PIPELINE_WAREHOUSE_URI": "s3://lake-safety-warehouse/ragas",
        "RAGAS_OPS_PIPELINE_CHUNK_ROWS": "2000",
        "RAGAS_OPS_BATCH_ROWS": "64",
        "RAGAS_OPS_JUDGE_BASE_URL": judge_server.base_url,
        "RAGAS_OPS_JUDGE_MODEL": "test-judge",
        "RAGAS_OPS_JUDGE_EMBEDDING_MODEL": "test-embedding",
        "RAGAS_OPS_JUDGE_CACHE_PATH": str(tmp_path / "judge.sqlite"),
        "RAGAS_OPS_JUDGE_RPM": "none",
        "RAGAS_OPS_JUDGE_TPM": "none",
        "OPENAI_API_KEY": TEST_KEY,
    }.items():
        monkeypatch.setenv(name, value)
    return client


def keys(client: object, prefix: str) -> list[str]:
    """The objects under `prefix` (not the folder markers)."""
    listing = client.list_objects_v2(  # type: ignore[attr-defined]
        Bucket="lake-safety-warehouse", Prefix=prefix
    )
    return sorted(
        item["Key"] for item in listing.get("Contents", []) if not item["Key"].endswith("/")
    )


def hive_rows() -> int:
    """The scored tables' rows as a pyarrow hive dataset reads them."""
    scored = locate("s3://lake-safety-warehouse/ragas/scored")
    dataset = pads.dataset(
        scored.path, filesystem=scored.filesystem, format="parquet", partitioning="hive"
    )
    return int(dataset.count_rows())


def publish(run_id: str) -> dict[str, object]:
    from ragas_ops.config import settings_from_environment
    from ragas_ops.contract.layout import Lake
    from ragas_ops.pipeline import plan
    from ragas_ops.pipeline.publish import publish_day
    from ragas_ops.pipeline.score import run_score_chunk

    settings = settings_from_environment()
    lake = Lake(settings.pipeline)
    day_plan = plan.plan_day(lake, DAY, settings)
    for chunk in day_plan.chunks:
        run_score_chunk(lake, DAY, run_id, chunk=chunk, settings=settings)
    return publish_day(
        lake,
        DAY,
        run_id,
        planned_rows=day_plan.rows,
        chunk_count=len(day_plan.chunks),
        settings=settings,
    )


def test_a_publish_killed_on_s3_leaves_the_partition_clean_and_the_next_removes_leftovers(
    s3_lake: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = s3_lake
    raw = locate(f"s3://lake-safety-logs/raw/dt={DAY}")
    pq.write_table(
        sample_interactions(30, seed=1, day=DAY), f"{raw.path}/a.parquet", filesystem=raw.filesystem
    )
    publish("first")
    pq.write_table(
        sample_interactions(200, seed=2, day=DAY),
        f"{raw.path}/b.parquet",
        filesystem=raw.filesystem,
    )

    process = subprocess.Popen(
        [sys.executable, "-c", KILLED_PUBLISH, DAY],
        stdout=subprocess.PIPE,
        env=os.environ.copy(),
        cwd=PROJECT,
    )
    assert process.stdout is not None
    assert process.stdout.readline().strip() == b"publishing"
    process.kill()
    process.wait(timeout=30)

    partition = f"ragas/scored/dt={DAY}/"
    assert keys(client, partition) == [f"{partition}scored.parquet"]
    assert hive_rows() == 30, "the previous table, whole"
    assert keys(client, f"ragas/_staging/dt={DAY}/run=killed-run/"), "the killed run's staging"
    client.put_object(  # type: ignore[attr-defined]
        Bucket="lake-safety-warehouse", Key=f"{partition}scored.parquet.0123abcd.tmp", Body=b"half"
    )
    monkeypatch.setenv("RAGAS_OPS_PIPELINE_STALE_STAGING_HOURS", "0")  # moto: no old mtimes

    published = publish("third")

    assert keys(client, partition) == [f"{partition}scored.parquet"]
    assert keys(client, f"ragas/_staging/dt={DAY}/run=killed-run/") == []
    assert any(
        str(path).endswith("scored.parquet.0123abcd.tmp") for path in published["removed_leftovers"]
    )  # type: ignore[attr-defined]
    assert hive_rows() == 230
