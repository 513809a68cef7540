"""Reading logs from and writing scores to S3, over HTTP against a local S3-compatible server."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import boto3
import pyarrow.parquet as pq
import pytest
from ragas_ops_testing.judge_server import JudgeServer

from ragas_ops.cli.main import EXIT_OK, main
from ragas_ops.contract.inputs import ColumnMapping
from ragas_ops.samples import sample_interactions
from ragas_ops.storage import StorageError, locate, parquet_files, read_files
from tests.support import TEST_KEY

BUCKET = "rag-logs"


@pytest.fixture
def s3_endpoint(start_s3: Callable[[], str]) -> str:
    endpoint = start_s3()
    boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1").create_bucket(Bucket=BUCKET)
    return endpoint


def test_reads_a_partition_folder_and_writes_scores_to_s3(
    s3_endpoint: str, judge_server: JudgeServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    day = locate(f"s3://{BUCKET}/raw/dt=2026-11-29")
    first, second = sample_interactions(15, seed=1), sample_interactions(10, seed=2)
    pq.write_table(first, f"{day.path}/part-0.parquet", filesystem=day.filesystem)
    pq.write_table(second, f"{day.path}/part-1.parquet", filesystem=day.filesystem)

    code = main(
        [
            "score",
            day.uri,
            f"s3://{BUCKET}/scored/dt=2026-11-29/scored.parquet",
            "--base-url",
            judge_server.base_url,
            "--model",
            "test-judge",
            "--cache",
            str(tmp_path / "cache.sqlite"),
            "--no-progress",
        ]
    )

    assert code == EXIT_OK
    target = locate(f"s3://{BUCKET}/scored/dt=2026-11-29/scored.parquet")
    scored = pq.read_table(target.path, filesystem=target.filesystem)
    assert sorted(scored.column("id").to_pylist()) == sorted(
        first.column("id").to_pylist() + second.column("id").to_pylist()
    )
    listing = boto3.client("s3", endpoint_url=s3_endpoint).list_objects_v2(
        Bucket=BUCKET, Prefix="scored/"
    )
    objects = [item["Key"] for item in listing["Contents"] if not item["Key"].endswith("/")]
    assert objects == ["scored/dt=2026-11-29/scored.parquet"], (
        "no staging object may be left behind"
    )


def test_missing_input_is_a_clear_error(s3_endpoint: str) -> None:
    with pytest.raises(StorageError, match="nothing at s3://rag-logs/raw/dt=1999-01-01"):
        parquet_files(locate(f"s3://{BUCKET}/raw/dt=1999-01-01"))


def test_local_folder_is_read_in_bounded_batches(tmp_path: Path) -> None:
    folder = tmp_path / "raw" / "dt=2026-11-29"
    folder.mkdir(parents=True)
    pq.write_table(sample_interactions(25, seed=1), folder / "a.parquet")
    pq.write_table(sample_interactions(25, seed=2), folder / "b.parquet")
    (folder / "_SUCCESS").write_text("")

    raw = locate(str(tmp_path / "raw"))
    paths = parquet_files(raw)
    schema = pq.read_schema(paths[0])
    batches = list(read_files(raw.filesystem, paths, schema, 10, ColumnMapping()))

    sizes = [table.num_rows for table in batches]
    assert [Path(path).name for path in paths] == ["a.parquet", "b.parquet"]
    assert sum(sizes) == 50
    assert max(sizes) <= 10
    assert all(table.schema == schema for table in batches)
