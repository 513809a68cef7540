"""A real Airflow on one machine, with this project's DAG: `ragas-ops airflow up` / `down`.

`up` starts Airflow's api-servers, scheduler (LocalExecutor), dag-processor and triggerer on
SQLite, as `airflow standalone` would, in the background (`supervisor` says
why not `airflow standalone` itself), with what a first hour needs already done: the project's
`dags/` and `plugins/` folders, the two pools of the DAG's scoring tasks, a demo lake of sample
logs as the pipeline's lake, a judge that works without set-up, and the DAG unpaused (so the
scheduler at once scores yesterday). It returns when Airflow is healthy and the DAG is loaded,
printing the URL and the login. `down` stops every process it started.

With `--raw` (and `--segments`, or a config file, `--config`) it runs on the user's own logs
instead of the demo lake: they are read where they are, never copied; the tables are written
under the home's `lake/warehouse` unless the config file names a warehouse.

Everything lives in one folder, `.airflow/` by default: AIRFLOW_HOME (airflow.cfg, airflow.db,
task logs), the lake, the judge cache, the components' log, `env.sh` (the settings, to `source`
before typing `airflow ...` commands) and the state file `down` reads.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shlex
import subprocess
import sys
import time
import tomllib
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ragas_ops.config import settings_from_environment
from ragas_ops.contract.layout import day_of_folder
from ragas_ops.judge.factory import local_judge_installed
from ragas_ops_testing.local_airflow.checkout import DAG_ID, PROJECT
from ragas_ops_testing.local_airflow.demo import demo_days, write_sample_lake
from ragas_ops_testing.local_airflow.processes import (
    LauncherError,
    free_port,
    get_json,
    group_alive,
    reap,
    request,
    stop_group,
)
from ragas_ops_testing.local_airflow.sqlite import LOCAL_SETTINGS

DEFAULT_HOME = Path(".airflow")
DEFAULT_PORT = 8080
ADMIN = "admin"
PASSWORDS_FILE = "simple_auth_manager_passwords.json.generated"
STATE_FILE = "airflow-up.json"
LOG_FILE = "airflow-up.log"
ENV_FILE = "env.sh"
SIGNING_KEY_FILE = "jwt-signing-key"
JudgeChoice = Literal["auto", "openai", "local", "test"]
JUDGE_CHOICES: tuple[JudgeChoice, ...] = ("auto", "openai", "local", "test")
# The test double answers as fast as it is asked: the OpenAI defaults (500 rpm shared by six
# scoring tasks, about one request a second each) would make it look broken.
TEST_JUDGE_BUDGET = {"RAGAS_OPS_JUDGE_RPM": "60000", "RAGAS_OPS_JUDGE_TPM": "none"}
# Named to Airflow by import path (its settings take the connect arguments so): the module
# every Airflow process imports at start-up.
SQLITE_MODULE = "ragas_ops_testing.local_airflow.sqlite"
HEALTHY_COMPONENTS = ("metadatabase", "scheduler", "triggerer", "dag_processor")


class StandaloneError(LauncherError):
    """Airflow could not be started, or did not become ready in time."""


@dataclass(frozen=True)
class Standalone:
    """Where a standalone Airflow lives and how it is reached."""

    home: Path
    port: int
    execution_port: int

    @property
    def url(self) -> str:
        """The api-server of the UI and the REST API."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def execution_url(self) -> str:
        """The api-server of the execution API, which the tasks call (see the supervisor)."""
        return f"http://127.0.0.1:{self.execution_port}/execution/"

    @property
    def lake(self) -> Path:
        return self.home / "lake"

    def path(self, name: str) -> Path:
        return self.home / name


def choose_judge(requested: JudgeChoice, environ: Mapping[str, str]) -> JudgeChoice:
    """The judge of `auto`: OpenAI when OPENAI_API_KEY is set, else the local judge when its
    extra (`[local]`) is installed, else the project's OpenAI-compatible test double."""
    if requested != "auto":
        return requested
    if environ.get("OPENAI_API_KEY"):
        return "openai"
    if local_judge_installed():
        return "local"
    return "test"


def check_judge(judge: JudgeChoice, environ: Mapping[str, str]) -> None:
    """Refuse a judge asked for that could not score, before anything starts."""
    settings = settings_from_environment(environ).judge.endpoint
    if judge == "openai" and not environ.get(settings.api_key_env) and not settings.base_url:
        raise StandaloneError(
            f"--judge openai needs ${settings.api_key_env} (or RAGAS_OPS_JUDGE_BASE_URL for "
            "another OpenAI-compatible endpoint); without one, --judge auto picks a judge "
            "that needs no key"
        )
    if judge == "local" and not local_judge_installed():
        raise StandaloneError(
            "--judge local needs the [local] extra: pip install 'ragas-ops[local]'"
        )


def judge_environment(judge: JudgeChoice, test_judge_url: str | None) -> dict[str, str]:
    """The RAGAS_OPS_JUDGE_* settings of the chosen judge (the API key is never among them:
    the tasks read OPENAI_API_KEY from the environment they inherit)."""
    if judge == "local":
        return {"RAGAS_OPS_JUDGE_KIND": "local"}
    if judge == "test":
        if test_judge_url is None:
            raise ValueError("the test judge needs its URL")
        return {
            "RAGAS_OPS_JUDGE_KIND": "openai",
            "RAGAS_OPS_JUDGE_BASE_URL": test_judge_url,
            "RAGAS_OPS_JUDGE_MODEL": "test-judge",
            "RAGAS_OPS_JUDGE_EMBEDDING_MODEL": "test-embedding",
            **TEST_JUDGE_BUDGET,
        }
    return {"RAGAS_OPS_JUDGE_KIND": "openai"}


@dataclass(frozen=True)
class OwnLogs:
    """`airflow up --raw/--segments/--config`: the user's logs instead of the demo lake."""

    raw: str | None = None
    """Where the logs are (`<raw>/dt=YYYY-MM-DD/*.parquet|jsonl|csv`): a folder or s3://."""
    segments: tuple[str, ...] | None = None
    """The segment columns; none: the config file's (else no breakdown)."""
    config: Path | None = None
    """A ragas-ops config file (`[columns]`, `[pipeline]`...), as RAGAS_OPS_CONFIG."""

    @property
    def given(self) -> bool:
        return self.raw is not None or self.segments is not None or self.config is not None

    def raw_uri(self) -> str | None:
        """`raw` as every Airflow process must read it: a local folder made absolute."""
        if self.raw is None or ("://" in self.raw and not self.raw.startswith("file://")):
            return self.raw
        return str(Path(self.raw.removeprefix("file://")).expanduser().resolve())


DEMO_PIPELINE = {
    "RAGAS_OPS_PIPELINE_SEGMENTS": "app,model_version",
    # a demo day is a few dozen rows: chunks of 100 map it to a few tasks, as a big day maps
    "RAGAS_OPS_PIPELINE_CHUNK_ROWS": "100",
}
"""The demo lake's segment columns and chunks (your own logs keep your config's or the
defaults)."""


def pipeline_environment(standalone: Standalone, own: OwnLogs) -> dict[str, str]:
    """Where the pipeline reads and writes: the demo lake, or the user's logs (`own`). A
    variable overrides the config file, so only what a flag gives (or the file leaves out)
    is set."""
    warehouse = {"RAGAS_OPS_PIPELINE_WAREHOUSE_URI": str(standalone.lake / "warehouse")}
    if not own.given:
        return {
            "RAGAS_OPS_PIPELINE_RAW_URI": str(standalone.lake / "raw"),
            **warehouse,
            **DEMO_PIPELINE,
        }
    environment = {}
    in_file: Mapping[str, Any] = {}
    if own.config is not None:
        config = own.config.expanduser().resolve()
        if not config.is_file():
            raise StandaloneError(f"--config {own.config}: no such file")
        environment["RAGAS_OPS_CONFIG"] = str(config)
        settings_from_environment({"RAGAS_OPS_CONFIG": str(config)})  # a bad file fails here
        in_file = tomllib.loads(config.read_text()).get("pipeline", {})
    raw = own.raw_uri()
    if raw is None and "raw_uri" not in in_file:
        raise StandaloneError(
            "bring your own logs: --raw names their folder (or raw_uri in --config's [pipeline])"
        )
    if raw is not None:
        if "://" not in raw and not Path(raw).is_dir():
            raise StandaloneError(f"--raw {own.raw}: no such folder ({raw})")
        environment["RAGAS_OPS_PIPELINE_RAW_URI"] = raw
    if "warehouse_uri" not in in_file:
        environment.update(warehouse)
    if own.segments is not None:
        environment["RAGAS_OPS_PIPELINE_SEGMENTS"] = ",".join(own.segments)
    return environment


def airflow_environment(
    standalone: Standalone, judge: Mapping[str, str], own: OwnLogs | None = None
) -> dict[str, str]:
    """Airflow's and the pipeline's settings for `standalone`, as environment variables (also
    written to env.sh, so contains nothing secret)."""
    home = standalone.home
    return {
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__DAGS_FOLDER": str(PROJECT / "dags"),
        "AIRFLOW__CORE__PLUGINS_FOLDER": str(PROJECT / "plugins"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
        # One LocalExecutor worker process per slot: the pools' slots and two for the rest.
        "AIRFLOW__CORE__PARALLELISM": str(parallelism(judge)),
        "AIRFLOW__API__HOST": "127.0.0.1",
        "AIRFLOW__API__PORT": str(standalone.port),
        "AIRFLOW__API__BASE_URL": standalone.url,
        # The tasks' api-server, not the UI's (the supervisor says why); without it they report
        # to localhost:8080.
        "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": standalone.execution_url,
        # On SQLite the api-server's writes queue behind the scheduler's; with the default 5 s
        # a task's first call times out on a busy machine, its retry is refused (the first one
        # went through) and the task fails.
        "AIRFLOW__WORKERS__EXECUTION_API_TIMEOUT": "60",
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONNECT_ARGS": f"{SQLITE_MODULE}.CONNECT_ARGS",
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONNECT_ARGS_ASYNC": f"{SQLITE_MODULE}.CONNECT_ARGS_ASYNC",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": f"{ADMIN}:admin",
        # The key of the tokens the components and the REST API sign: 64 bytes of a file
        # readable by this user only, read through a command, so env.sh names no secret.
        # Airflow's own default is 24 bytes, and PyJWT warned of it ten times a start.
        "AIRFLOW__API_AUTH__JWT_SECRET_CMD": f"cat {shlex.quote(str(home / SIGNING_KEY_FILE))}",
        **pipeline_environment(standalone, own or OwnLogs()),
        "RAGAS_OPS_PIPELINE_IS_PAUSED_UPON_CREATION": "False",
        "RAGAS_OPS_JUDGE_CACHE_PATH": str(home / "cache" / "judge.sqlite"),
        **judge,
    }


def parallelism(judge: Mapping[str, str]) -> int:
    pipeline = settings_from_environment({**os.environ, **judge}).pipeline
    return pipeline.pool_slots + pipeline.backfill_pool_slots + 2


def process_environment(settings: Mapping[str, str]) -> dict[str, str]:
    """This process's environment with `settings` and the project importable (the DAG file
    imports `ragas_ops`, which need not be installed)."""
    environment = {**os.environ, **settings}
    python_path = [str(PROJECT), *filter(None, environment.get("PYTHONPATH", "").split(":"))]
    environment["PYTHONPATH"] = ":".join(dict.fromkeys(python_path))
    return environment


def pools(environment: Mapping[str, str]) -> dict[str, dict[str, Any]]:
    """The DAG's two pools, named and sized by the pipeline settings (as docker/init.sh does),
    in the format of `airflow pools import`."""
    pipeline = settings_from_environment(environment).pipeline
    return {
        pipeline.pool: {
            "slots": pipeline.pool_slots,
            "description": "ragas-ops nightly judge calls",
            "include_deferred": False,
        },
        pipeline.backfill_pool: {
            "slots": pipeline.backfill_pool_slots,
            "description": "ragas-ops backfills",
            "include_deferred": False,
        },
    }


def make_signing_key(home: Path) -> None:
    """The JWT signing key of `home` (64 bytes, readable by this user only), made once: the
    components and every `airflow` command must share it, across restarts too."""
    path = home / SIGNING_KEY_FILE
    if path.exists() and len(path.read_text().strip()) >= 64:
        return
    path.touch(mode=0o600)
    path.chmod(0o600)
    path.write_text(secrets.token_hex(32) + "\n")  # 64 characters


def admin_password(home: Path) -> str:
    """The admin's password, created (random, readable by this user only) on first use, so
    that Airflow finds it and never prints it to its log."""
    path = home / PASSWORDS_FILE
    if path.exists():
        password = json.loads(path.read_text() or "{}").get(ADMIN)
        if password:
            return str(password)
    password = secrets.token_urlsafe(12)
    path.touch(mode=0o600, exist_ok=True)
    path.write_text(json.dumps({ADMIN: password}) + "\n")
    return password


def prepare(
    standalone: Standalone,
    environment: Mapping[str, str],
    days: int,
    rows: int,
    own: OwnLogs | None = None,
) -> tuple[str, list[str], bool]:
    """The metadata database, the pools, the admin's password, the JWT key and the demo lake
    (written only when there is none yet, and not for the user's own logs); returns what was
    done with the lake, the days it holds, and whether it is new."""
    standalone.home.mkdir(parents=True, exist_ok=True)
    admin_password(standalone.home)
    make_signing_key(standalone.home)
    write_local_settings(standalone.home)
    pools_path = standalone.path("pools.json")
    pools_path.write_text(json.dumps(pools(environment), indent=2) + "\n")
    for command in (["db", "migrate"], ["pools", "import", str(pools_path)]):
        airflow_cli(command, environment, timeout=180)
    if own is not None and own.given:
        where = settings_from_environment(environment).pipeline.raw_uri
        held = lake_days(Path(where)) if "://" not in where else []
        return f"your logs: {where} ({len(held)} day folder(s)), read where they are", held, False
    raw = standalone.lake / "raw"
    if raw.exists():
        return f"the lake already exists, kept as it is: {raw}", lake_days(raw), False
    scored_days = demo_days(days)
    write_sample_lake(raw, scored_days, rows)
    return f"sample logs: {len(scored_days)} days x {rows} rows in {raw}", scored_days, True


def lake_days(raw: Path) -> list[str]:
    """The days of a local raw lake's `dt=YYYY-MM-DD` folders, oldest first."""
    return sorted(
        day for path in raw.iterdir() if path.is_dir() and (day := day_of_folder(path.name))
    )


def backfill_command(days: list[str]) -> str:
    """The backfill that scores every day of the lake in order, oldest first, yesterday last
    again (after the scheduler's run of it), so that its regression check has the baseline of
    the days before it."""
    return (
        f"airflow backfill create --dag-id {DAG_ID} --from-date {days[0]} --to-date {days[-1]} "
        "--reprocess-behavior completed --max-active-runs 1"
    )


def write_local_settings(home: Path) -> None:
    """`config/airflow_local_settings.py` of AIRFLOW_HOME, which every Airflow process imports:
    ours (see `sqlite`), unless one of the user's own is there."""
    path = home / "config" / "airflow_local_settings.py"
    if path.exists() and path.read_text() != LOCAL_SETTINGS:
        say(f"kept your {path}: `airflow` commands may fail with 'database is locked' under load")
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(LOCAL_SETTINGS)


def airflow_cli(
    command: list[str], environment: Mapping[str, str], timeout: float
) -> subprocess.CompletedProcess[str]:
    """Run `airflow COMMAND`; its output is shown only when it fails."""
    done = subprocess.run(  # noqa: S603 (Airflow's own CLI, fixed arguments)
        [sys.executable, "-m", "airflow", *command],
        env=dict(environment),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if done.returncode != 0:
        raise StandaloneError(
            f"`airflow {' '.join(command)}` failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}"
        )
    return done


def start(standalone: Standalone, environment: dict[str, str], test_judge_port: int) -> int:
    """Start the supervisor of Airflow's components (and of the test judge, when it has a
    port) as the leader of a new session, so that it outlives `up`; output to the log file.
    Returns its process group, also written to the state file that `down` reads."""
    command = [sys.executable, "-m", "ragas_ops_testing.local_airflow.supervisor"]
    if test_judge_port:
        command += ["--test-judge-port", str(test_judge_port)]
    with standalone.path(LOG_FILE).open("ab") as log:
        supervisor = subprocess.Popen(  # noqa: S603 (our own module, fixed arguments)
            command,
            env=environment,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    state = {
        "groups": [supervisor.pid],
        "url": standalone.url,
        "test_judge_url": environment.get("RAGAS_OPS_JUDGE_BASE_URL") if test_judge_port else None,
    }
    standalone.path(STATE_FILE).write_text(json.dumps(state) + "\n")
    return supervisor.pid


def wait_until_ready(standalone: Standalone, group: int, timeout: float) -> None:
    """Wait until every component reports healthy and the DAG is loaded and unpaused."""
    deadline = time.monotonic() + timeout
    health: dict[str, Any] = {}
    while time.monotonic() < deadline:
        reap()
        if not group_alive(group):
            raise StandaloneError(f"Airflow stopped; see {standalone.path(LOG_FILE)}")
        health = get_json(f"{standalone.url}/api/v2/monitor/health") or {}
        if all(health.get(name, {}).get("status") == "healthy" for name in HEALTHY_COMPONENTS):
            break
        time.sleep(1)
    else:
        unhealthy = [n for n in HEALTHY_COMPONENTS if health.get(n, {}).get("status") != "healthy"]
        raise StandaloneError(
            f"not healthy after {timeout:.0f} s: {unhealthy or 'api-server'}; "
            f"see {standalone.path(LOG_FILE)}"
        )
    try:
        api = AirflowApi(standalone.url, admin_password(standalone.home))
        api.wait_for_dag(DAG_ID, deadline)
        api.unpause(DAG_ID)
    except OSError as error:  # urllib's errors: refused, timed out, an HTTP error status
        log = standalone.path(LOG_FILE)
        raise StandaloneError(f"Airflow's REST API: {error}; see {log}") from error


class AirflowApi:
    """The few calls of Airflow's REST API that `up` and its test need, as the admin."""

    def __init__(self, url: str, password: str) -> None:
        self.url = url
        response = request(
            f"{url}/auth/token", method="POST", body={"username": ADMIN, "password": password}
        )
        self._token = str(response["access_token"])

    def call(self, path: str, method: str = "GET", body: Any = None) -> Any:
        return request(f"{self.url}/api/v2/{path}", method, body, token=self._token)

    def wait_for_dag(self, dag_id: str, deadline: float) -> None:
        """Wait until the dag-processor has loaded the DAG; its import error, if any, is raised."""
        while time.monotonic() < deadline:
            errors = self.call("importErrors")["import_errors"]
            if errors:
                trace = errors[0]["stack_trace"]
                raise StandaloneError(f"the DAG folder has import errors: {trace}")
            with contextlib.suppress(urllib.error.HTTPError):
                self.call(f"dags/{dag_id}")
                return
            time.sleep(1)
        raise StandaloneError(f"the DAG {dag_id} was not loaded in time")

    def unpause(self, dag_id: str) -> None:
        """Unpaused on creation by the setting; this also unpauses a home made paused before.
        Only then does it write: a write through the REST API is also an audit-log row, one
        more writer on SQLite while the first run's tasks write theirs."""
        if self.call(f"dags/{dag_id}").get("is_paused", True):
            self.call(f"dags/{dag_id}", method="PATCH", body={"is_paused": False})


def running_groups(home: Path) -> list[int]:
    """The process groups `up` started from `home` that still run."""
    state = home / STATE_FILE
    if not state.exists():
        return []
    return [int(group) for group in json.loads(state.read_text())["groups"] if group_alive(group)]


def write_env_file(standalone: Standalone, settings: Mapping[str, str]) -> Path:
    """env.sh: `source` it to talk to this Airflow with `airflow ...` commands."""
    path = standalone.path(ENV_FILE)
    lines = [f"export {name}={shlex.quote(value)}" for name, value in sorted(settings.items())]
    # `airflow` itself: the venv that runs `up` (whose bin/ need not be on PATH: make airflow)
    lines.append(f'export PATH={shlex.quote(str(Path(sys.executable).parent))}:"$PATH"')
    lines.append(f'export PYTHONPATH={shlex.quote(str(PROJECT))}:"${{PYTHONPATH:-}}"')
    path.write_text("# ragas-ops airflow up: source this file to use `airflow` here\n")
    with path.open("a") as handle:
        handle.write("\n".join(lines) + "\n")
    return path


def up(
    home: Path = DEFAULT_HOME,
    *,
    port: int = DEFAULT_PORT,
    judge: JudgeChoice = "auto",
    days: int = 7,
    rows: int = 200,
    timeout: float = 240,
    own: OwnLogs | None = None,
) -> int:
    """Start Airflow standalone for this project and wait until it is ready (see the module)."""
    home = home.resolve()
    if not (PROJECT / "dags" / f"{DAG_ID}.py").exists():
        raise StandaloneError(f"no DAG file under {PROJECT / 'dags'}: run this from a checkout")
    if running_groups(home):
        say(f"Airflow already runs from {home}; `ragas-ops airflow down` stops it")
        return 1
    api_port = free_port(port)
    standalone = Standalone(home, api_port, free_port(taken={api_port}))
    if port and standalone.port != port:
        say(f"port {port} is taken: using {standalone.port}")
    chosen = choose_judge(judge, os.environ)
    check_judge(chosen, os.environ)
    taken = {standalone.port, standalone.execution_port}
    test_judge_port = free_port(taken=taken) if chosen == "test" else 0
    test_judge_url = f"http://127.0.0.1:{test_judge_port}/v1" if chosen == "test" else None
    settings = airflow_environment(standalone, judge_environment(chosen, test_judge_url), own)
    environment = process_environment(settings)
    say(f"judge: {JUDGE_DESCRIPTIONS[chosen]}")
    said, held, new_lake = prepare(standalone, environment, days, rows, own)
    say(said)
    write_env_file(standalone, settings)
    group = start(standalone, environment, test_judge_port)
    say(f"starting Airflow (log: {standalone.path(LOG_FILE)}) ...")
    try:
        wait_until_ready(standalone, group, timeout)
        if test_judge_url and get_json(test_judge_url.removesuffix("/v1") + "/stats") is None:
            raise StandaloneError(f"the test judge does not answer at {test_judge_url}")
    except BaseException:
        stop(home)
        raise
    print_ready(standalone, held, new_lake=new_lake, environment=environment)
    return 0


JUDGE_DESCRIPTIONS: dict[JudgeChoice, str] = {
    "auto": "",
    "openai": "OpenAI, with the key in OPENAI_API_KEY; the default rpm and tpm budgets apply",
    "local": "the LOCAL judge: sentence embeddings and lexical evidence on this machine, no LLM, "
    "no network",
    "test": "the TEST DOUBLE `ragas-ops test-judge` on 127.0.0.1: lexical heuristics, not an "
    "LLM; rpm 60000, no tpm limit",
}


def print_ready(
    standalone: Standalone,
    days: list[str],
    *,
    new_lake: bool,
    environment: Mapping[str, str] | None = None,
) -> None:
    """The URL and the login, and the backfill that scores the lake's other days. The
    password goes to a terminal only; elsewhere (a CI log, a file) only where to read it."""
    pipeline = settings_from_environment(environment or {}).pipeline if environment else None
    where = standalone.path(PASSWORDS_FILE)
    password = admin_password(standalone.home) if sys.stdout.isatty() else None
    say("")
    # Only a new lake gets yesterday scored now; on a kept one the scheduler goes on as it was.
    started = ": it scores yesterday" if new_lake else ""
    say(f"Airflow is ready: {standalone.url}  (DAG {DAG_ID} unpaused{started})")
    say(f"login: {ADMIN} / {password}" if password else f"login: {ADMIN}, password in {where}")
    if pipeline is not None and pipeline.raw_uri != str(standalone.lake / "raw"):
        say(f"logs: {pipeline.raw_uri}; tables and reports under {pipeline.warehouse_uri}")
        say(f"segments: {', '.join(pipeline.segments) or 'none'}")
    else:
        say(f"lake: {standalone.lake}; reports under {standalone.lake / 'warehouse' / 'reports'}")
    say(f"airflow commands: source {standalone.path(ENV_FILE)}")
    if len(days) == 1:
        conf = json.dumps({"day": days[0]})
        say(f"to score {days[0]}:")
        say(f"  source {standalone.path(ENV_FILE)} && airflow dags trigger {DAG_ID} -c '{conf}'")
    if len(days) > 1:
        say(f"lake days: {days[0]} to {days[-1]}; to score them all (the quality page then shows")
        say("  the last day's regression against the days before it):")
        say(f"  source {standalone.path(ENV_FILE)} && {backfill_command(days)}")
    say("stop it: make airflow-down  (or ragas-ops airflow down)")


def down(home: Path = DEFAULT_HOME) -> int:
    """Stop the standalone Airflow of `home` and its test judge: their whole process groups."""
    home = home.resolve()
    stopped = stop(home)
    say(
        f"stopped Airflow (process groups {stopped})"
        if stopped
        else f"no Airflow of `ragas-ops airflow up` runs from {home}"
    )
    return 0


def stop(home: Path) -> list[int]:
    """Stop every process group `up` started from `home`; returns those that ran."""
    groups = running_groups(home)
    for group in groups:
        stop_group(group)
    (home / STATE_FILE).unlink(missing_ok=True)
    return groups


def say(line: str) -> None:
    print(line, flush=True)
