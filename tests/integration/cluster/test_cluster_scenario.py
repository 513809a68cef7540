"""The multi-worker deployment run as one system (`ragas_ops_testing.local_airflow.cluster`):
PostgreSQL, Redis, moto's S3 server, Airflow's scheduler, dag-processor, triggerer and
api-server, two Celery workers, and the test judge enforcing one account limit with a 1-second
burst.

A nightly day of three chunks runs while a two-day backfill runs, the warehouse in Iceberg
format on the PostgreSQL catalog; one worker is killed with SIGKILL in the middle of a nightly
chunk, whose task (and any other the worker ran) is retried on the other worker; then the same
day is rerun on a worker whose local judge cache is empty. The test judge's request log says
what each row paid (its requests name the row's document). The figures are printed (run with
-s) for docs/deploy.md: no timed assertion here.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import shutil
import signal
import time
import urllib.request
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from ragas_ops_testing.local_airflow import cluster

from ragas_ops.samples import sample_interactions
from ragas_ops.secrets import Secret
from ragas_ops.storage import S3Options
from ragas_ops.tables.iceberg import IcebergTables

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(1200)]

DAG_ID = "ragas_ops_nightly"
NIGHTLY_DAY = "2026-11-20"
BACKFILL_DAYS = ("2026-11-17", "2026-11-18")
ROWS = {NIGHTLY_DAY: 120, BACKFILL_DAYS[0]: 160, BACKFILL_DAYS[1]: 160}
CHUNK_ROWS = 40
RPM, TPM = 1200, 1_000_000
JUDGE_ARGS = (
    *("--rpm", str(RPM), "--tpm", str(TPM), "--burst-seconds", "1", "--latency-ms", "300"),
    "--request-log",
)
OVERRIDES = {
    # The compose file's Iceberg option: the catalog is a database of its PostgreSQL server.
    "RAGAS_OPS_WAREHOUSE_TABLE_FORMAT": "iceberg",
    "RAGAS_OPS_PIPELINE_CHUNK_ROWS": str(CHUNK_ROWS),
    "RAGAS_OPS_JUDGE_RPM": str(RPM),
    "RAGAS_OPS_JUDGE_TPM": str(TPM),
    "RAGAS_OPS_PIPELINE_RETRY_DELAY_SECONDS": "1",
    # A killed worker's task is failed (then retried) once its heartbeat is this old (300 s by
    # default): its pool slot idles until then. Every task heartbeats each 2 s (5 s by
    # default), so a live task misses five in a row before it is taken for dead.
    "AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT": "10",
    "AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT_DETECTION_INTERVAL": "2",
    "AIRFLOW__WORKERS__MIN_HEARTBEAT_INTERVAL": "2",
    # A task the killed worker had received but not started stays queued (in Redis, unacked)
    # until this timeout (600 s by default): then it is queued again, for the other worker.
    "AIRFLOW__SCHEDULER__TASK_QUEUED_TIMEOUT": "40",
    "AIRFLOW__SCHEDULER__TASK_QUEUED_TIMEOUT_CHECK_INTERVAL": "5",
}


ROW_LABEL = re.compile(r"KB-(\d+)-(\d{5})")
KILL_AFTER = 20  # answered requests of a nightly chunk's rows before its worker is killed


def seed_of(day: str) -> int:
    """The sample seed of the day's rows: it names their documents (`KB-<seed>-<row>`)."""
    return sorted(ROWS).index(day)


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
    pq.write_table(sample_interactions(rows, seed=seed_of(day), day=day), buffer)
    key = f"raw/dt={day}/part-0.parquet"
    s3_client(home).put_object(Bucket=cluster.BUCKET, Key=key, Body=buffer.getvalue())


def s3_endpoint(home: Path) -> str:
    return f"http://127.0.0.1:{cluster.load_state(home)['ports']['s3']}"


def iceberg_tables(home: Path) -> IcebergTables:
    """The warehouse's tables, through the catalog the workers commit to (PostgreSQL)."""
    environment = cluster.environment_of(home)
    s3 = S3Options(
        endpoint_url=s3_endpoint(home), access_key=Secret("test"), secret_key=Secret("test")
    )
    return IcebergTables(
        environment["RAGAS_OPS_PIPELINE_WAREHOUSE_URI"],
        environment["RAGAS_OPS_WAREHOUSE_CATALOG_URI"],
        s3,
    )


def scored(home: Path, day: str) -> pa.Table:
    table = iceberg_tables(home).read_day("scored", day)
    assert table is not None, f"no scored rows for {day}"
    return table.sort_by("id")


def duckdb_day(home: Path, day: str) -> tuple[int, float]:
    """The day's rows and mean faithfulness, as DuckDB reads them from the object store."""
    import duckdb

    from ragas_ops.quality.bi import connect, duckdb_s3_setup_sql, load_extension_sql

    connection = connect(s3=True)
    for extension in ("avro", "iceberg"):
        connection.execute(load_extension_sql(extension, duckdb.__version__))
    connection.execute(duckdb_s3_setup_sql(s3_endpoint(home), chain="env"))
    location = iceberg_tables(home).metadata_location("scored")
    found = connection.execute(
        "SELECT count(*), avg(faithfulness_score) FROM iceberg_scan(?) WHERE dt = ?",
        [location, day],
    ).fetchone()
    assert found is not None
    return int(found[0]), float(found[1])


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


def answers_by_request(log: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """The answered (paid) requests of the test judge's log, by request body: the same body
    asked twice is the same answer paid twice."""
    answers: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for entry in log:
        if entry["status"] == 200:
            answers[hashlib.sha256(entry["body"].encode()).hexdigest()].append(entry)
    return answers


def rows_of(entry: dict[str, Any]) -> set[tuple[int, int]]:
    """The rows a request is about, (day's seed, row), by the documents its text names."""
    return {(int(seed), int(row)) for seed, row in ROW_LABEL.findall(entry["body"])}


def timeline(log: list[dict[str, Any]], start: float) -> str:
    """Answered requests per second from `start`, e.g. `0:14 1:19 2:20 ...`."""
    seconds = Counter(int(e["started_at"] - start) for e in log if e["status"] == 200)
    return " ".join(f"{second}:{seconds.get(second, 0)}" for second in range(max(seconds) + 1))


def test_a_nightly_day_survives_a_killed_worker_beside_a_backfill_and_reruns_for_free(
    home: Path, monkeypatch: pytest.MonkeyPatch
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

    # Kill the worker running a nightly chunk once the judge has answered some of its rows.
    def running_chunk() -> tuple[str, int] | None:
        running = query(
            home,
            "SELECT hostname, map_index FROM task_instance WHERE run_id = 'nightly' "
            "AND task_id = 'score_chunk' AND state = 'running'",
        )
        answered = Counter(
            row // CHUNK_ROWS
            for entry in judge(home, "requests")["requests"]
            if entry["status"] == 200
            for seed, row in rows_of(entry)
            if seed == seed_of(NIGHTLY_DAY)
        )
        asking = [(host, index) for host, index in running if answered[index] >= KILL_AFTER]
        return asking[0] if asking else None

    victim, map_index = wait_until("a nightly chunk asking the judge", running_chunk, 300)
    requests_before_kill = judge(home)["requests"]
    cluster.kill(home, victim, signal.SIGKILL)
    killed_at = time.time()  # once every process of the worker is signalled: dead after it
    survivor = next(worker for worker in cluster.WORKERS if worker != victim)

    all_runs = wait_until("the three runs", lambda: len(run_states(home)) >= 3 and run_states(home))
    wait_until("the runs to end", lambda: finished(home, list(all_runs)), 900)
    busy_seconds = time.monotonic() - started
    states = run_states(home)
    stats = judge(home)
    log = judge(home, "requests")["requests"]

    assert {state for state, _, _ in states.values()} == {"success"}, states
    retried = query(
        home,
        "SELECT hostname, try_number FROM task_instance WHERE run_id = 'nightly' "
        f"AND task_id = 'score_chunk' AND map_index = {map_index}",
    )
    assert retried == [(survivor, 2)]
    killed = killed_chunks(home, victim)
    assert ("nightly", map_index) in killed
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
    window = (stats["first_request_at"], stats["last_request_at"])
    alive = live_seconds(home, killed, killed_at, window)
    print(
        f"\nscenario: {rows} rows in, {sum(rows_out.values())} out; "
        f"{attempts} attempts, {rate_limited} answered 429 ({rate_limited / attempts:.1%}); "
        f"{requests_before_kill} requests before the kill of {victim} (chunk {map_index}); "
        f"busy {span:.0f} s: {share_of_bound:.2f} of the bound "
        f"({bound_rows_per_minute:.0f} rows/min); {alive:.0f} s of it with a live scoring "
        f"task: {rows / (alive / 60) / bound_rows_per_minute:.2f} of the bound over those; "
        f"nightly ended {nightly_end}, "
        f"backfill ended {max(backfill_ends)}; wall {busy_seconds:.0f} s"
    )
    assert rate_limited <= 0.02 * attempts
    assert nightly_end <= max(backfill_ends)
    assert_only_the_killed_chunks_repaid(
        log, killed_rows(home, killed), killed_at, retried_from(home)
    )
    first_request = min(entry["started_at"] for entry in log)
    print(f"answered per second from the first request: {timeline(log, first_request)}")
    print(f"chunks (seconds from the first request): {chunk_spans(log, first_request)}")
    print(f"killed at {killed_at - first_request:.0f} s: {sorted(killed)}")
    print(f"scoring tries (seconds from the first request): {tries(home, first_request)}")
    runs = ", ".join(
        f"{run.removeprefix('backfill__').split('T')[0]} "
        f"{begun.timestamp() - first_request:.0f}-{ended.timestamp() - first_request:.0f}"
        for run, (_, begun, ended) in sorted(states.items(), key=lambda item: item[1][1])
    )
    print(f"runs (seconds from the first request): {runs}")

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

    # One snapshot per publish in the PostgreSQL catalog, and DuckDB reads the day from S3.
    tables = iceberg_tables(home)
    versions = {day: [v.run_id for v in tables.day_versions("scored", day)] for day in ROWS}
    assert versions[NIGHTLY_DAY] == ["nightly", "rerun"]
    assert all(len(versions[day]) == 1 for day in BACKFILL_DAYS), versions
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "test")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "test")
    mean = pc.mean(after["faithfulness_score"]).as_py()
    assert duckdb_day(home, NIGHTLY_DAY) == (ROWS[NIGHTLY_DAY], pytest.approx(mean))
    total = time.monotonic() - started
    print(
        f"rerun on {victim} (empty local cache): 0 judge requests; publishes per day in the "
        f"catalog: {versions}; DuckDB read the day's {ROWS[NIGHTLY_DAY]} rows; total {total:.0f} s"
    )


def killed_chunks(home: Path, victim: str) -> set[tuple[str, int]]:
    """The scoring tasks (run, map index) whose first try died with the victim's host."""
    rows = query(
        home,
        "SELECT run_id, map_index FROM task_instance_history "
        f"WHERE hostname = '{victim}' AND try_number = 1 AND state <> 'success' "
        "AND task_id IN ('score_chunk', 'score_backfill_chunk')",
    )
    return {(run_id, map_index) for run_id, map_index in rows}


def killed_rows(home: Path, chunks: set[tuple[str, int]]) -> set[tuple[int, int]]:
    """The rows of those chunks, (day's seed, row): a chunk is CHUNK_ROWS rows of the day's
    one file, in order."""
    days = {
        run_id: NIGHTLY_DAY if run_id == "nightly" else start.date().isoformat()
        for run_id, start in query(home, "SELECT run_id, data_interval_start FROM dag_run")
    }
    return {
        (seed_of(days[run_id]), row)
        for run_id, index in chunks
        for row in range(index * CHUNK_ROWS, (index + 1) * CHUNK_ROWS)
    }


def tries(home: Path, start: float) -> str:
    """Each scoring try's host and time span, in seconds from `start`."""
    rows = query(
        home,
        "SELECT run_id, map_index, try_number, hostname, start_date, end_date FROM ("
        "SELECT run_id, task_id, map_index, try_number, hostname, start_date, end_date "
        "FROM task_instance UNION SELECT run_id, task_id, map_index, try_number, hostname, "
        "start_date, end_date FROM task_instance_history) AS t "
        "WHERE task_id IN ('score_chunk', 'score_backfill_chunk') AND start_date IS NOT NULL "
        "ORDER BY start_date",
    )

    def at(moment: Any) -> str:
        return "?" if moment is None else f"{moment.timestamp() - start:.0f}"

    return ", ".join(
        f"{run.split('T')[0].removeprefix('backfill__')}/{index} try {number} {host} "
        f"{at(begun)}-{at(ended)}"
        for run, index, number, host, begun, ended in rows
    )


def live_seconds(
    home: Path, killed: set[tuple[str, int]], killed_at: float, window: tuple[float, float]
) -> float:
    """Seconds of `window` (epoch) in which at least one scoring try was alive: from its start
    to its end, or to the kill for a try that died with its worker (its slot then idles until
    the heartbeat timeout fails it). The rest of the window no task could ask the judge."""
    rows = query(
        home,
        "SELECT run_id, map_index, try_number, start_date, end_date FROM ("
        "SELECT run_id, task_id, map_index, try_number, start_date, end_date FROM task_instance "
        "UNION SELECT run_id, task_id, map_index, try_number, start_date, end_date "
        "FROM task_instance_history) AS t "
        "WHERE task_id IN ('score_chunk', 'score_backfill_chunk') AND start_date IS NOT NULL",
    )
    spans = sorted(
        (
            max(window[0], begun.timestamp()),
            min(
                window[1],
                ended.timestamp() if ended is not None else window[1],
                killed_at if number == 1 and (run, index) in killed else window[1],
            ),
        )
        for run, index, number, begun, ended in rows
    )
    covered, reached = 0.0, window[0]
    for begin, end in spans:
        begin = max(begin, reached)
        if end > begin:
            covered += end - begin
            reached = end
    return covered


def retried_from(home: Path) -> float:
    """When the first retry of a scoring task started (epoch seconds)."""
    ((first,),) = query(
        home,
        "SELECT min(start_date) FROM task_instance WHERE try_number >= 2 "
        "AND task_id IN ('score_chunk', 'score_backfill_chunk')",
    )
    return float(first.timestamp())


def assert_only_the_killed_chunks_repaid(
    log: list[dict[str, Any]],
    killed: set[tuple[int, int]],
    killed_at: float,
    retried_at: float,
) -> None:
    """Every row's requests were paid once across the whole run (both workers, all tasks),
    but those of the chunks that died with their worker: what they had asked before it died
    (answers not yet stored) at most once more, by their retries."""
    asked_rows: set[tuple[int, int]] = set()
    repaid: list[list[dict[str, Any]]] = []
    shared: Counter[int] = Counter()  # requests naming no row (a question's embedding): times paid
    for answers in answers_by_request(log).values():
        rows = rows_of(answers[0])
        asked_rows |= rows
        if not rows:
            shared[len(answers)] += 1
        elif len(answers) > 1:
            assert rows <= killed, f"{sorted(rows)} paid {len(answers)} times"
            repaid.append(sorted(answers, key=lambda entry: entry["started_at"]))
    every_row = {(seed_of(day), row) for day, count in ROWS.items() for row in range(count)}
    assert asked_rows == every_row
    for answers in repaid:
        assert len(answers) == 2, f"{len(answers)} times"
        # asked by the killed try, then by the retry (the server's clock; 20 s apart at least)
        assert answers[0]["started_at"] < retried_at <= answers[1]["started_at"]
    before_kill = sum(
        1
        for entry in log
        if entry["status"] == 200 and rows_of(entry) & killed and entry["started_at"] < killed_at
    )
    print(
        f"killed chunks: {before_kill} requests answered before the kill, {len(repaid)} of "
        f"them paid again by the retries; every other row's requests paid once; requests "
        f"naming no row, by times paid: {dict(shared)}"
    )


def chunk_spans(log: list[dict[str, Any]], start: float) -> str:
    """When each chunk asked the judge, in seconds from `start`: `d<day>c<chunk> first-last`,
    by its first request (a request names the rows of one chunk)."""
    spans: dict[tuple[int, int], list[float]] = defaultdict(list)
    for entry in log:
        for seed, row in rows_of(entry):
            spans[(seed, row // CHUNK_ROWS)].append(entry["started_at"] - start)
    ordered = sorted(spans.items(), key=lambda item: min(item[1]))
    return ", ".join(f"d{d}c{c} {min(t):.0f}-{max(t):.0f}" for (d, c), t in ordered)
