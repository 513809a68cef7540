"""The multi-worker deployment run as one system (`ragas_ops.airflow.cluster`): PostgreSQL,
Redis, moto's S3 server, Airflow's scheduler, dag-processor, triggerer and api-server, two
Celery workers, and the test judge enforcing one account limit with a 1-second burst.

A nightly day of three chunks runs while a two-day backfill runs; one worker is killed with
SIGKILL in the middle of a nightly chunk, whose task is retried on the other worker; then the
same day is rerun on a worker whose local judge cache is empty. The figures are printed (run
with -s) for docs/deploy.md: no timed assertion here.
"""

from __future__ import annotations

import io
import json
import shutil
import signal
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ragas_ops.airflow import cluster
from ragas_ops.samples import sample_interactions

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(1200)]

DAG_ID = "ragas_ops_nightly"
NIGHTLY_DAY = "2026-11-20"
BACKFILL_DAYS = ("2026-11-17", "2026-11-18")
ROWS = {NIGHTLY_DAY: 60, BACKFILL_DAYS[0]: 80, BACKFILL_DAYS[1]: 80}
CHUNK_ROWS = 20
RPM, TPM = 1200, 1_000_000
JUDGE_ARGS = (
    *("--rpm", str(RPM), "--tpm", str(TPM), "--burst-seconds", "1", "--latency-ms", "300"),
)
OVERRIDES = {
    "RAGAS_OPS_PIPELINE_CHUNK_ROWS": str(CHUNK_ROWS),
    "RAGAS_OPS_JUDGE_RPM": str(RPM),
    "RAGAS_OPS_JUDGE_TPM": str(TPM),
    "RAGAS_OPS_PIPELINE_RETRY_DELAY_SECONDS": "1",
    # A killed worker's task is failed (then retried) once its heartbeat is this old.
    "AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT": "20",
    "AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT_DETECTION_INTERVAL": "5",
}


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    for program in ("initdb", "pg_ctl", "psql", "redis-server"):
        if shutil.which(program) is None:
            pytest.skip(f"{program} is not installed (apt-get install postgresql redis-server)")
    path = Path(cluster.DEFAULT_HOME.parent) / f"ragas-ops-cluster-test-{time.time_ns()}"
    try:
        cluster.up(path, judge_args=JUDGE_ARGS, overrides=OVERRIDES)
        yield path
    finally:
        cluster.down(path)
        assert not cluster.running(path)
        # the components' logs are kept with pytest's temporary files, for a failed run
        if (path / "logs").exists():
            shutil.copytree(
                path / "logs", tmp_path_factory.mktemp("cluster-logs"), dirs_exist_ok=True
            )
        shutil.rmtree(path, ignore_errors=True)


def s3_client(home: Path) -> Any:
    import boto3

    return boto3.client(
        "s3",
        endpoint_url=f"http://127.0.0.1:{cluster.load_state(home)['ports']['s3']}",
        aws_access_key_id="test",
        aws_secret_access_key="test",
        region_name="us-east-1",
    )


def write_day(home: Path, day: str, rows: int) -> None:
    buffer = io.BytesIO()
    pq.write_table(sample_interactions(rows, seed=hash(day) % 1000, day=day), buffer)
    key = f"raw/dt={day}/part-0.parquet"
    s3_client(home).put_object(Bucket=cluster.BUCKET, Key=key, Body=buffer.getvalue())


def scored(home: Path, day: str) -> pa.Table:
    client = s3_client(home)
    listed = client.list_objects_v2(Bucket=cluster.BUCKET, Prefix=f"warehouse/scored/dt={day}/")
    tables = []
    for item in listed.get("Contents", []):
        if item["Key"].endswith(".parquet"):
            body = client.get_object(Bucket=cluster.BUCKET, Key=item["Key"])["Body"].read()
            tables.append(pq.read_table(io.BytesIO(body)))
    return pa.concat_tables(tables).sort_by("id")


def judge(home: Path, path: str = "stats", method: str = "GET") -> dict[str, Any]:
    url = cluster.load_state(home)["judge_url"].removesuffix("/v1") + f"/{path}"
    request = urllib.request.Request(url, method=method)
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(request, timeout=10) as response:
        return dict(json.loads(response.read()))


def query(home: Path, sql: str) -> list[tuple[Any, ...]]:
    import psycopg2

    state = cluster.load_state(home)
    connection = psycopg2.connect(
        host="127.0.0.1",
        port=state["ports"]["postgres"],
        user="airflow",
        password=state["secrets"]["POSTGRES_PASSWORD"],
        dbname="airflow",
    )
    try:
        with connection.cursor() as cursor:
            cursor.execute(sql)
            return list(cursor.fetchall())
    finally:
        connection.close()


def run_states(home: Path) -> dict[str, tuple[str, Any, Any]]:
    """The scenario's runs (not the scheduled run for yesterday that unpausing starts)."""
    rows = query(
        home,
        "SELECT run_id, state, start_date, end_date FROM dag_run "
        "WHERE run_type IN ('manual', 'backfill')",
    )
    return {run_id: (state, start, end) for run_id, state, start, end in rows}


def wait_until(what: str, done: Any, timeout: float = 600) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = done()
        if found:
            return found
        time.sleep(1)
    raise AssertionError(f"{what}: not after {timeout:.0f} s")


def finished(home: Path, run_ids: list[str]) -> bool:
    states = run_states(home)
    return all(states.get(run, ("",))[0] in ("success", "failed") for run in run_ids)


def test_a_nightly_day_survives_a_killed_worker_beside_a_backfill_and_reruns_for_free(
    home: Path,
) -> None:
    started = time.monotonic()
    environment = cluster.environment_of(home)
    for day, rows in ROWS.items():
        write_day(home, day, rows)
    cluster.airflow(["dags", "unpause", DAG_ID], environment)
    cluster.airflow(
        [
            *("backfill", "create", "--dag-id", DAG_ID),
            *("--from-date", BACKFILL_DAYS[0], "--to-date", BACKFILL_DAYS[1]),
        ],
        environment,
    )
    conf = json.dumps({"day": NIGHTLY_DAY})
    cluster.airflow(["dags", "trigger", DAG_ID, "-r", "nightly", "-c", conf], environment)

    # Kill the worker running a nightly chunk once that chunk has been asking the judge.
    def running_chunk() -> tuple[str, int] | None:
        rows = query(
            home,
            "SELECT hostname, map_index FROM task_instance WHERE run_id = 'nightly' "
            "AND task_id = 'score_chunk' AND state = 'running' "
            "AND start_date < now() - interval '3 seconds'",
        )
        return (rows[0][0], rows[0][1]) if rows else None

    victim, map_index = wait_until("a nightly chunk running", running_chunk, 300)
    requests_before_kill = judge(home)["requests"]
    cluster.kill(home, victim, signal.SIGKILL)
    survivor = next(worker for worker in cluster.WORKERS if worker != victim)

    all_runs = wait_until("the three runs", lambda: len(run_states(home)) >= 3 and run_states(home))
    wait_until("the runs to end", lambda: finished(home, list(all_runs)), 900)
    busy_seconds = time.monotonic() - started
    states = run_states(home)
    stats = judge(home)

    assert {state for state, _, _ in states.values()} == {"success"}, states
    retried = query(
        home,
        "SELECT hostname, try_number FROM task_instance WHERE run_id = 'nightly' "
        f"AND task_id = 'score_chunk' AND map_index = {map_index}",
    )
    assert retried == [(survivor, 2)]
    nightly_end = states["nightly"][2]
    backfill_ends = [end for run, (_, _, end) in states.items() if run != "nightly"]
    rows_out = {day: scored(home, day).num_rows for day in ROWS}
    assert rows_out == ROWS

    attempts = stats["requests_by_endpoint"]["chat"] + stats["requests_by_endpoint"]["embeddings"]
    rate_limited = stats["rate_limited"]
    rows = sum(ROWS.values())
    tokens = stats["limiter_tokens"]
    answered = attempts - rate_limited
    bound_rows_per_minute = min(RPM / (answered / rows), TPM / (tokens / rows))
    span = stats["last_request_at"] - stats["first_request_at"]
    share_of_bound = rows / (span / 60) / bound_rows_per_minute
    print(
        f"\nscenario: {rows} rows in, {sum(rows_out.values())} out; "
        f"{attempts} attempts, {rate_limited} answered 429 ({rate_limited / attempts:.1%}); "
        f"{requests_before_kill} requests before the kill of {victim} (chunk {map_index}); "
        f"busy {span:.0f} s: {share_of_bound:.2f} of the bound "
        f"({bound_rows_per_minute:.0f} rows/min); nightly ended {nightly_end}, "
        f"backfill ended {max(backfill_ends)}; wall {busy_seconds:.0f} s"
    )
    assert rate_limited <= 0.02 * attempts
    assert nightly_end <= max(backfill_ends)

    # The same day again, on the killed worker come back with an empty local cache, alone.
    before = scored(home, NIGHTLY_DAY)
    # Gone as the first one went (Celery's warm shutdown on SIGTERM can outlast a minute).
    cluster.kill(home, survivor, signal.SIGKILL)
    wait_until(f"{survivor} to stop", lambda: survivor not in cluster.running(home), 60)
    cluster.start_worker(home, victim, environment, cache="-empty")
    judge(home, "stats/reset", "POST")
    cluster.airflow(["dags", "trigger", DAG_ID, "-r", "rerun", "-c", conf], environment)
    wait_until("the rerun", lambda: finished(home, ["rerun"]), 600)

    assert run_states(home)["rerun"][0] == "success"
    assert judge(home)["requests"] == 0
    after = scored(home, NIGHTLY_DAY)
    metrics = ("faithfulness", "answer_relevance", "context_relevance")
    score_columns = ["id", *(name for name in before.column_names if name.startswith(metrics))]
    assert after.select(score_columns).equals(before.select(score_columns))
    total = time.monotonic() - started
    print(f"rerun on {victim} (empty local cache): 0 judge requests; total {total:.0f} s")
