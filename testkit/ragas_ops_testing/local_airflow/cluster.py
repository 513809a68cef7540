"""The compose deployment's topology as plain processes on one machine: `make cluster` / `down`.

Process for process what docker/docker-compose.yaml runs: PostgreSQL as Airflow's metadata
database and the Iceberg catalog, Redis as the Celery broker and the shared judge budget, an
S3 server (moto's server mode) for the lake, the warehouse and the shared judge cache, and
Airflow's scheduler, dag-processor, triggerer, api-server and two Celery workers, each worker
with a judge cache folder of its own, as two hosts would have. No container engine is needed.

The settings are the compose file's: the environment of its `x-airflow-common` block, read
from the file and expanded as compose expands it, with only the service names swapped for
this machine's ports (`@postgres/` -> `@127.0.0.1:PORT/`, `redis://redis:6379` ->
`redis://127.0.0.1:PORT`, ...). So the two cannot drift apart: a setting added to the compose
file is a setting of this run. The judge's endpoint and key come from the `ragas_ops_judge`
Airflow connection (the test judge here, unless `--judge-url` names another).

Every process runs in a session of its own (so one worker can be killed with its children, as
a host dies), its group id in `cluster.json`; `down` stops them all, PostgreSQL last.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import pwd
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml  # type: ignore[import-untyped]

from ragas_ops_testing.local_airflow.checkout import DAG_ID, PROJECT
from ragas_ops_testing.local_airflow.processes import (
    LauncherError,
    free_port,
    get_json,
    group_alive,
    reap,
)
from ragas_ops_testing.local_airflow.standalone import pools

COMPOSE_FILE = PROJECT / "docker" / "docker-compose.yaml"
# In the temporary folder: the `postgres` user (when this runs as root) must reach its data.
DEFAULT_HOME = Path(tempfile.gettempdir()) / "ragas-ops-cluster"
STATE_FILE = "cluster.json"
BUCKET = "ragas-lake"
WORKERS = ("worker-1", "worker-2")
# The compose file's own secrets: generated for this run, never written to a file.
GENERATED_SECRETS = ("POSTGRES_PASSWORD", "AIRFLOW_FERNET_KEY", "AIRFLOW_JWT_SECRET")
S3_KEYS = {"S3_ACCESS_KEY": "ragas-ops", "S3_SECRET_KEY": "ragas-ops-secret"}  # moto accepts any
VARIABLE = re.compile(r"\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<op>:-|:\?)(?P<arg>[^}]*))?\}")


class ClusterError(LauncherError):
    """The cluster could not be started, or did not become ready in time."""


def expand(value: str, variables: Mapping[str, str]) -> str:
    """`value` with `${NAME}`, `${NAME:-default}` and `${NAME:?message}` expanded as
    compose expands them."""

    def replace(match: re.Match[str]) -> str:
        name, op, arg = match.group("name", "op", "arg")
        found = variables.get(name, "")
        if found:
            return found
        if op == ":?":
            raise ClusterError(f"{name}: {arg}")
        return arg if op == ":-" else ""

    return VARIABLE.sub(replace, value)


def compose_environment(variables: Mapping[str, str], path: Path = COMPOSE_FILE) -> dict[str, str]:
    """The environment every Airflow service of the compose file gets, expanded."""
    compose = yaml.safe_load(path.read_text())
    environment = compose["x-airflow-common"]["environment"]
    return {name: expand(str(value), variables) for name, value in environment.items()}


@dataclass(frozen=True)
class Ports:
    postgres: int
    redis: int
    s3: int
    api: int
    judge: int

    @classmethod
    def choose(cls) -> Ports:
        taken: list[int] = []
        for _ in range(5):
            taken.append(free_port(taken=taken))
        return cls(*taken)


def localised(environment: Mapping[str, str], ports: Ports) -> dict[str, str]:
    """The compose environment with each service's name replaced by its port on 127.0.0.1."""
    swaps = {
        "@postgres/": f"@127.0.0.1:{ports.postgres}/",
        "redis://redis:6379": f"redis://127.0.0.1:{ports.redis}",
        "http://airflow-apiserver:8080": f"http://127.0.0.1:{ports.api}",
        "http://object-store:8333": f"http://127.0.0.1:{ports.s3}",
    }
    local = {}
    for name, value in environment.items():
        swapped = value
        for service, address in swaps.items():
            swapped = swapped.replace(service, address)
        local[name] = swapped
    return local


def host_name() -> str:
    """The host a component says it runs on (`hostname_callable`): a worker's name, as two
    machines would give two names (both workers share this machine's own)."""
    return os.environ.get("CLUSTER_HOST_NAME") or socket.getfqdn()


def cluster_environment(home: Path, ports: Ports, judge_url: str) -> dict[str, str]:
    """Every Airflow process's settings: the compose file's, on this machine's ports, then
    the overrides given to `up` (kept in the state file)."""
    state = load_state(home)
    # The compose default of 8 task slots per worker: either worker alone holds both pools'
    # slots (4 + 2) and the other tasks, so a dead worker's share of the work finds a slot.
    variables = {**os.environ, **state["secrets"]}
    compose = localised(compose_environment(variables), ports)
    airflow_home = home / "airflow"
    connections = {
        "AIRFLOW_CONN_RAGAS_OPS_S3": json.dumps(
            {
                "conn_type": "aws",
                "login": S3_KEYS["S3_ACCESS_KEY"],
                "password": S3_KEYS["S3_SECRET_KEY"],
                "extra": {
                    "endpoint_url": f"http://127.0.0.1:{ports.s3}",
                    "region_name": "us-east-1",
                },
            }
        ),
        "AIRFLOW_CONN_RAGAS_OPS_JUDGE": json.dumps(
            {
                "conn_type": "openai",
                "host": judge_url,
                "password": state["secrets"]["OPENAI_API_KEY"],
            }
        ),
    }
    python_path = [str(PROJECT), *filter(None, os.environ.get("PYTHONPATH", "").split(":"))]
    return {
        **os.environ,
        **compose,
        **connections,
        "PYTHONPATH": ":".join(dict.fromkeys(python_path)),
        "AIRFLOW_HOME": str(airflow_home),
        "AIRFLOW__CORE__DAGS_FOLDER": str(PROJECT / "dags"),
        "AIRFLOW__CORE__PLUGINS_FOLDER": str(PROJECT / "plugins"),
        # The FAB auth manager of the image is not a dependency of the package: the simple one.
        "AIRFLOW__CORE__AUTH_MANAGER": (
            "airflow.api_fastapi.auth.managers.simple.simple_auth_manager.SimpleAuthManager"
        ),
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "True",
        "AIRFLOW__API__HOST": "127.0.0.1",
        "AIRFLOW__API__PORT": str(ports.api),
        "AIRFLOW__API__BASE_URL": f"http://127.0.0.1:{ports.api}",
        "AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT": "0",
        "RAGAS_OPS_JUDGE_CACHE_PATH": str(home / "judge-cache" / "judge.sqlite"),
        # The test judge has its own model names.
        "RAGAS_OPS_JUDGE_MODEL": os.environ.get("RAGAS_OPS_JUDGE_MODEL", "test-judge"),
        "RAGAS_OPS_JUDGE_EMBEDDING_MODEL": os.environ.get(
            "RAGAS_OPS_JUDGE_EMBEDDING_MODEL", "test-embedding"
        ),
        "AIRFLOW__CORE__HOSTNAME_CALLABLE": "ragas_ops_testing.local_airflow.cluster.host_name",
        **state.get("overrides", {}),
    }


def load_state(home: Path) -> dict[str, Any]:
    path = home / STATE_FILE
    return json.loads(path.read_text()) if path.exists() else {"groups": {}, "secrets": {}}


def save_state(home: Path, state: Mapping[str, Any]) -> None:
    path = home / STATE_FILE
    path.touch(mode=0o600, exist_ok=True)
    path.write_text(json.dumps(state, indent=2) + "\n")


def spawn(home: Path, name: str, command: list[str], environment: Mapping[str, str]) -> int:
    """Start `command` as the leader of a new session, output to logs/NAME.log; its group id
    is recorded in the state file."""
    (home / "logs").mkdir(parents=True, exist_ok=True)
    with (home / "logs" / f"{name}.log").open("ab") as log:
        process = subprocess.Popen(  # noqa: S603 (fixed commands of this module)
            command,
            env=dict(environment),
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    state = load_state(home)
    state["groups"][name] = process.pid
    save_state(home, state)
    return process.pid


def as_postgres_user() -> list[str]:
    """PostgreSQL refuses to run as root: then its commands run as the `postgres` user."""
    if os.geteuid() != 0:
        return []
    return ["runuser", "-u", "postgres", "--"]


def start_postgres(home: Path, port: int, password: str) -> None:
    data = home / "postgres"
    sockets = home / "postgres-sockets"
    sockets.mkdir(parents=True, exist_ok=True)
    if os.geteuid() == 0:
        owner = pwd.getpwnam("postgres")
        for path in (home, sockets):
            os.chown(path, owner.pw_uid, owner.pw_gid)
    run = as_postgres_user()
    if not data.exists():
        password_file = home / "postgres-password"
        password_file.write_text(password + "\n")
        if run:
            owner = pwd.getpwnam("postgres")
            os.chown(password_file, owner.pw_uid, owner.pw_gid)
        password_file.chmod(0o600)
        command = ["initdb", "-D", str(data), "-U", "airflow", "-A", "scram-sha-256"]
        checked([*run, *command, f"--pwfile={password_file}"])
        password_file.unlink()
    options = f"-p {port} -k {sockets} -c listen_addresses=127.0.0.1"
    log = home / "postgres.log"
    checked([*run, "pg_ctl", "-D", str(data), "-o", options, "-l", str(log), "-w", "start"])
    environment = {**os.environ, "PGPASSWORD": password}
    psql = ["psql", "-h", "127.0.0.1", "-p", str(port), "-U", "airflow", "-d", "postgres"]
    for database in ("airflow", "ragas_ops_catalog"):
        exists = checked(
            [
                *psql,
                "-tAc",
                f"SELECT 1 FROM pg_database WHERE datname = '{database}'",  # noqa: S608 (constants)
            ],
            environment,
        )
        if not exists.strip():
            checked([*psql, "-c", f"CREATE DATABASE {database}"], environment)


def checked(command: list[str], environment: Mapping[str, str] | None = None) -> str:
    done = subprocess.run(  # noqa: S603 (fixed commands of this module)
        command, env=dict(environment or os.environ), capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise ClusterError(
            f"`{' '.join(command)}` failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}"
        )
    return done.stdout


def wait_for(what: str, ready: Any, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ready():
            return
        time.sleep(0.5)
    raise ClusterError(f"{what} not ready after {timeout:.0f} s")


def make_bucket(port: int) -> None:
    import boto3

    client = boto3.client(
        "s3",
        endpoint_url=f"http://127.0.0.1:{port}",
        aws_access_key_id=S3_KEYS["S3_ACCESS_KEY"],
        aws_secret_access_key=S3_KEYS["S3_SECRET_KEY"],
        region_name="us-east-1",
    )
    with contextlib.suppress(client.exceptions.BucketAlreadyOwnedByYou):
        client.create_bucket(Bucket=BUCKET)


def airflow(command: list[str], environment: Mapping[str, str]) -> str:
    return checked([sys.executable, "-m", "airflow", *command], environment)


def up(
    home: Path = DEFAULT_HOME,
    judge_url: str | None = None,
    judge_args: tuple[str, ...] = (),
    overrides: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Start every service; returns the state (ports, URLs, process groups). `judge_args`
    are the test judge's options; `overrides` settings of every Airflow process beyond the
    compose file's (the scenario test's shorter timeouts)."""
    if running(home):
        raise ClusterError(f"a cluster already runs from {home}: `make cluster-down` first")
    home.mkdir(parents=True, exist_ok=True)
    ports = Ports.choose()
    state = load_state(home)
    state["groups"] = {}
    for name in (*GENERATED_SECRETS, "OPENAI_API_KEY"):
        state["secrets"].setdefault(name, secrets.token_urlsafe(16))
    state["ports"] = ports.__dict__
    state["overrides"] = dict(overrides or {})
    save_state(home, state)
    try:
        start_postgres(home, ports.postgres, state["secrets"]["POSTGRES_PASSWORD"])
        state = load_state(home)
        state["postgres"] = str(home / "postgres")
        save_state(home, state)
        redis = ["redis-server", "--port", str(ports.redis), "--bind", "127.0.0.1", "--save", ""]
        spawn(home, "redis", redis, os.environ)
        s3 = [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(ports.s3)]
        spawn(home, "s3", s3, os.environ)
        if judge_url is None:
            judge_url = f"http://127.0.0.1:{ports.judge}/v1"
            judge = [
                sys.executable,
                "-m",
                "ragas_ops_testing.judge_server",
                "--port",
                str(ports.judge),
                *judge_args,
            ]
            spawn(home, "judge", judge, os.environ)
            wait_for(
                "the test judge",
                lambda: get_json(f"http://127.0.0.1:{ports.judge}/stats") is not None,
            )
        wait_for(
            "S3", lambda: get_json(f"http://127.0.0.1:{ports.s3}/moto-api/data.json") is not None
        )
        make_bucket(ports.s3)
        environment = cluster_environment(home, ports, judge_url)
        airflow(["db", "migrate"], environment)
        for pool in pools(environment).items():
            name, spec = pool
            airflow(["pools", "set", name, str(spec["slots"]), spec["description"]], environment)
        python = [sys.executable, "-m", "airflow"]
        spawn(home, "api-server", [*python, "api-server"], environment)
        wait_for(
            "the api-server",
            lambda: get_json(f"http://127.0.0.1:{ports.api}/api/v2/monitor/health") is not None,
            300,
        )
        spawn(home, "scheduler", [*python, "scheduler", "--skip-serve-logs"], environment)
        spawn(home, "triggerer", [*python, "triggerer", "--skip-serve-logs"], environment)
        spawn(home, "dag-processor", [*python, "dag-processor"], environment)
        for worker in WORKERS:
            start_worker(home, worker, environment)
        # The DAG is paused at creation (as in the compose file) until it is parsed: only
        # then can it be unpaused.
        api = f"http://127.0.0.1:{ports.api}/api/v2/dags/{DAG_ID}"
        wait_for("the DAG to be parsed", lambda: get_json(api) is not None, 300)
    except BaseException:
        down(home)
        raise
    state = load_state(home)
    state["judge_url"] = judge_url
    state["api_url"] = f"http://127.0.0.1:{ports.api}"
    save_state(home, state)
    return state


def start_worker(home: Path, name: str, environment: Mapping[str, str], cache: str = "") -> None:
    """Start the Celery worker `name` with a judge cache folder of its own (`cache` names a
    fresh one: a host whose local cache is empty)."""
    path = home / name / f"judge-cache{cache}" / "judge.sqlite"
    path.parent.mkdir(parents=True, exist_ok=True)
    worker_environment = {
        **environment,
        "RAGAS_OPS_JUDGE_CACHE_PATH": str(path),
        "CLUSTER_HOST_NAME": name,
    }
    command = [sys.executable, "-m", "airflow", "celery", "worker", "--skip-serve-logs"]
    spawn(home, name, [*command, "-H", name], worker_environment)


def environment_of(home: Path) -> dict[str, str]:
    """The Airflow settings of the cluster running from `home` (for `airflow` commands)."""
    state = load_state(home)
    return cluster_environment(home, Ports(**state["ports"]), state["judge_url"])


def session_members(session: int) -> list[int]:
    """The live processes of the session `session` (Linux `/proc`): a component's processes,
    whatever process groups they made. Airflow's task supervisor puts each task in a group of
    its own, so signalling the worker's group alone leaves its tasks running, as no dead host
    would."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # gone meanwhile
            continue
        state, _, _, member_session = stat.rsplit(")", 1)[1].split()[:4]
        if int(member_session) == session and state != "Z":
            members.append(int(entry.name))
    return members


def alive(group: int) -> bool:
    """Whether any process of the session a component's leader began still runs."""
    return group_alive(group) or bool(session_members(group))


def running(home: Path) -> list[str]:
    """The components still running (a killed one's exited leader reaped first: as a zombie,
    it would still count as alive)."""
    reap()
    return [name for name, group in load_state(home)["groups"].items() if alive(group)]


def kill(home: Path, name: str, signal_number: int = signal.SIGKILL) -> None:
    """Signal every process of the component `name`, its tasks included (a worker killed as
    its host dies)."""
    session = load_state(home)["groups"][name]
    with contextlib.suppress(ProcessLookupError):
        os.killpg(session, signal_number)
    if signal_number == signal.SIGKILL:  # a SIGTERM lets the worker stop its own tasks
        for pid in session_members(session):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal_number)
    reap()


def down(home: Path = DEFAULT_HOME, grace_seconds: float = 20) -> list[str]:
    """Stop every component (SIGTERM, then SIGKILL after the grace period), PostgreSQL last;
    returns the names of those that were running."""
    state = load_state(home)
    running_now = [name for name, group in state["groups"].items() if alive(group)]
    for name in running_now:
        kill(home, name, signal.SIGTERM)
    deadline = time.monotonic() + grace_seconds
    while any(alive(state["groups"][name]) for name in running_now):
        if time.monotonic() > deadline:
            break
        reap()
        time.sleep(0.2)
    for name in running_now:
        kill(home, name, signal.SIGKILL)
    data = home / "postgres"
    if (data / "postmaster.pid").exists():
        subprocess.run(  # noqa: S603 (fixed command)
            [*as_postgres_user(), "pg_ctl", "-D", str(data), "-m", "fast", "-w", "stop"],
            capture_output=True,
            check=False,
        )
        running_now.append("postgres")
    state["groups"] = {}
    save_state(home, state)
    return running_now


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m ragas_ops_testing.local_airflow.cluster", description=__doc__
    )
    parser.add_argument("action", choices=("up", "down"))
    parser.add_argument("--home", type=Path, default=DEFAULT_HOME)
    parser.add_argument(
        "--judge-url", help="an OpenAI-compatible endpoint (default: the test judge)"
    )
    parser.add_argument("--fresh", action="store_true", help="up: remove HOME's data first")
    args = parser.parse_args(argv)
    if args.action == "down":
        stopped = down(args.home)
        print(f"stopped: {', '.join(stopped) or 'nothing was running'}")
        return 0
    if args.fresh and args.home.exists():
        down(args.home)
        shutil.rmtree(args.home)
    state = up(args.home, args.judge_url)
    print(f"cluster up: Airflow at {state['api_url']}, judge at {state['judge_url']}")
    print(f"logs in {args.home / 'logs'}; stop with `make cluster-down`")
    return 0


if __name__ == "__main__":
    sys.exit(main())
