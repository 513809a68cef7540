"""The shared judge cache (docs/shared-cache.md): a warm rerun on a second "host".

Against the project's test judge server and a moto S3 server, each in its own process, over
HTTP on 127.0.0.1:
1. host a scores ROWS rows (three metrics) with a local cache and the shared one, cold: it pays,
   and writes every answer and vector to the shared tier;
2. host b (a fresh local cache directory) reruns them with only the shared tier warm, at each
   `--threads` count (`judge.shared_cache_threads`): rows/s, requests to the judge (0), objects
   read from the shared tier (each is a HEAD and a GET with pyarrow), wall time;
3. for scale: host a's rerun from its own warm local file, and the store's own ceiling: the
   same objects read straight through pyarrow by 16 threads (objects/s), which bounds (2).

Usage: python benchmarks/bench_shared_cache.py [--rows 1000] [--threads 16,4]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pyarrow.fs as pafs
import pyarrow.parquet as pq
from ragas_ops_testing.judge_process import free_port, test_judge_process

from ragas_ops.config import Settings
from ragas_ops.samples import sample_interactions
from ragas_ops.scoring.jobs import ScoreOutcome, score_file

BUCKET = "bench-judge-cache"


def start_moto() -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    command = [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    endpoint = f"http://127.0.0.1:{port}"
    for _ in range(100):
        try:
            with urllib.request.urlopen(f"{endpoint}/moto-api/", timeout=1):
                break
        except OSError:
            time.sleep(0.1)
    return process, endpoint


def settings_for(url: str, cache: Path, shared: str | None, threads: int = 16) -> Settings:
    settings = Settings()
    settings.judge.endpoint.base_url = url
    settings.judge.endpoint.model = "gpt-4o-mini"
    settings.judge.endpoint.embedding_model = "text-embedding-3-small"
    settings.judge.cache.path = str(cache)
    settings.judge.limits.rpm = None
    settings.judge.limits.tpm = None
    settings.judge.limits.max_concurrency = 64
    settings.judge.cache.shared = shared
    settings.judge.cache.shared_threads = threads
    return settings


def run(source: Path, target: Path, settings: Settings) -> tuple[ScoreOutcome, float]:
    started = time.perf_counter()
    outcome = asyncio.run(score_file(str(source), str(target), settings, progress=False))
    return outcome, time.perf_counter() - started


def report(label: str, rows: int, outcome: ScoreOutcome, seconds: float) -> None:
    events, usage = outcome.events, outcome.total
    print(
        f"{label:<34}{rows / seconds:>9.1f} rows/s{seconds:>8.1f} s   judge requests "
        f"{usage.requests + usage.embedding_requests:>5,}   shared reads "
        f"{events['shared_cache_read']:>6,} (hits {events['shared_cache_hit']:,}) writes "
        f"{events['shared_cache_written']:,} errors {events['shared_cache_error']:,}"
    )


def ceiling(endpoint: str, threads: int = 16) -> None:
    """Objects/s the store serves to pyarrow reads in `threads` threads, without ragas-ops."""
    from concurrent.futures import ThreadPoolExecutor

    from ragas_ops.storage import S3Options

    filesystem = S3Options(endpoint_url=endpoint).filesystem()
    selector = pafs.FileSelector(f"{BUCKET}/judge-cache", recursive=True)
    paths = [info.path for info in filesystem.get_file_info(selector) if info.size is not None]
    paths = paths[:2000]

    def read(path: str) -> int:
        with filesystem.open_input_stream(path) as stream:
            return len(stream.read())

    started = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(read, paths))
    seconds = time.perf_counter() - started
    print(
        f"   the store's ceiling: {len(paths) / seconds:,.0f} objects/s "
        f"({len(paths):,} objects, {threads} threads, pyarrow alone)"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--threads", default="16,4")
    options = parser.parse_args()
    rows = options.rows
    moto, endpoint = start_moto()
    os.environ.update(
        {
            "AWS_ENDPOINT_URL": endpoint,
            "AWS_ACCESS_KEY_ID": "bench",
            "AWS_SECRET_ACCESS_KEY": "bench",
            "AWS_REGION": "us-east-1",
            "OPENAI_API_KEY": "benchmark",  # the test server takes any key
        }
    )
    try:
        import boto3

        boto3.client("s3", endpoint_url=endpoint).create_bucket(Bucket=BUCKET)
        with tempfile.TemporaryDirectory() as folder, test_judge_process() as url:
            work = Path(folder)
            source = work / "logs.parquet"
            pq.write_table(sample_interactions(rows, seed=7), source)
            shared = f"s3://{BUCKET}/judge-cache"
            print(f"{rows} rows, three metrics, moto S3 at {endpoint}, judge at {url}")
            cold, seconds = run(
                source, work / "a.parquet", settings_for(url, work / "a.db", shared)
            )
            report("1. host a, cold (pays)", rows, cold, seconds)
            for threads in (int(t) for t in options.threads.split(",")):
                settings = settings_for(url, work / f"b{threads}.db", shared, threads)
                warm, seconds = run(source, work / f"b{threads}.parquet", settings)
                report(f"2. host b, shared warm, {threads} threads", rows, warm, seconds)
            local, seconds = run(source, work / "c.parquet", settings_for(url, work / "a.db", None))
            report("3. host a, own local file warm", rows, local, seconds)
            ceiling(endpoint)
    finally:
        moto.terminate()
        moto.wait(timeout=10)


if __name__ == "__main__":
    main()
