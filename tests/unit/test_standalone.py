"""The small pieces of `ragas-ops airflow up`: its judge choice, environment, pools, files and
the order in which its supervisor starts processes. The whole recipe, with a real scheduler, is
tests/integration/dag/test_standalone_scheduler.py."""

from __future__ import annotations

import importlib.util
import json
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from ragas_ops_testing.local_airflow import standalone, supervisor
from ragas_ops_testing.local_airflow.processes import free_port
from ragas_ops_testing.local_airflow.sqlite import (
    LOCAL_SETTINGS,
    begins_immediately,
    create_metadata_engine,
)
from ragas_ops_testing.local_airflow.standalone import (
    DEFAULT_HOME,
    OWN_LOGS_HOME,
    PASSWORDS_FILE,
    OwnLogs,
    Standalone,
    StandaloneError,
    admin_password,
    airflow_environment,
    check_home_for_own_logs,
    check_judge,
    choose_judge,
    down,
    home_for,
    judge_environment,
    pipeline_environment,
    pools,
    write_env_file,
    write_local_settings,
)

from ragas_ops.config import settings_from_environment
from tests.support import TEST_KEY


def test_auto_is_openai_with_a_key_else_the_local_judge_if_installed_else_the_test_judge(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert choose_judge("auto", {"OPENAI_API_KEY": TEST_KEY}) == "openai"
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: object())
    assert choose_judge("auto", {}) == "local"
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    assert choose_judge("auto", {"OPENAI_API_KEY": ""}) == "test"
    assert choose_judge("local", {"OPENAI_API_KEY": TEST_KEY}) == "local", "asked for: kept"


def test_airflow_listens_on_loopback_and_tasks_report_to_their_own_api_server(
    tmp_path: Path,
) -> None:
    standalone = Standalone(tmp_path, 18123, 18129)
    environment = airflow_environment(standalone, judge_environment("local", None))

    assert environment["AIRFLOW__API__HOST"] == "127.0.0.1"
    assert environment["AIRFLOW__API__PORT"] == "18123"
    assert environment["AIRFLOW__CORE__EXECUTION_API_SERVER_URL"] == (
        "http://127.0.0.1:18129/execution/"
    )
    assert environment["AIRFLOW__CORE__LOAD_EXAMPLES"] == "False"
    settings = settings_from_environment(environment)
    assert settings.pipeline.is_paused_upon_creation is False
    assert settings.pipeline.raw_uri == str(tmp_path / "lake" / "raw")
    assert settings.judge.kind == "local"


def test_the_test_judge_gets_a_budget_that_does_not_look_broken(tmp_path: Path) -> None:
    judge = judge_environment("test", "http://127.0.0.1:18124/v1")
    settings = settings_from_environment(airflow_environment(Standalone(tmp_path, 1, 2), judge))
    tasks = settings.pipeline.pool_slots + settings.pipeline.backfill_pool_slots

    assert settings.judge.endpoint.base_url == "http://127.0.0.1:18124/v1"
    assert settings.judge.limits.rpm is not None
    assert settings.judge.limits.rpm / tasks / 60 > 100, "requests a second per scoring task"
    assert settings.judge.limits.tpm is None
    openai = settings_from_environment(judge_environment("openai", None)).judge.limits
    assert openai.rpm == 500, "OpenAI keeps the account's defaults"


def test_pools_are_named_and_sized_by_the_pipeline_settings() -> None:
    assert pools({}) == {
        "ragas_ops_judge": {
            "slots": 4,
            "description": "ragas-ops nightly judge calls",
            "include_deferred": False,
        },
        "ragas_ops_backfill": {
            "slots": 2,
            "description": "ragas-ops backfills",
            "include_deferred": False,
        },
    }
    custom = pools({"RAGAS_OPS_PIPELINE_POOL": "judge", "RAGAS_OPS_PIPELINE_POOL_SLOTS": "8"})
    assert custom["judge"]["slots"] == 8


def test_env_sh_gives_a_shell_the_settings_and_holds_no_secret(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    home = tmp_path / "home with space"
    home.mkdir()
    standalone = Standalone(home, 18125, 18126)
    settings = airflow_environment(standalone, judge_environment("openai", None))

    path = write_env_file(standalone, settings)

    assert TEST_KEY not in path.read_text()
    shown = subprocess.run(
        ["bash", "-c", f'source "{path}" && echo "$AIRFLOW_HOME|$AIRFLOW__API__PORT"'],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    assert shown.stdout.strip() == f"{home}|18125"


def test_the_admin_password_is_random_private_and_kept(tmp_path: Path) -> None:
    first = admin_password(tmp_path)

    assert len(first) >= 16
    assert (tmp_path / PASSWORDS_FILE).stat().st_mode & 0o777 == 0o600
    assert admin_password(tmp_path) == first
    other = tmp_path / "other"
    other.mkdir()
    assert admin_password(other) != first


def test_a_taken_port_is_replaced_by_a_free_one() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        chosen = free_port(port)
    assert chosen != port
    assert free_port(0) > 0


def test_is_paused_upon_creation_defaults_to_airflows_own_setting() -> None:
    assert settings_from_environment({}).pipeline.is_paused_upon_creation is None
    environ = {"RAGAS_OPS_PIPELINE_IS_PAUSED_UPON_CREATION": "false"}
    assert settings_from_environment(environ).pipeline.is_paused_upon_creation is False
    environ = {"RAGAS_OPS_PIPELINE_IS_PAUSED_UPON_CREATION": "true"}
    assert settings_from_environment(environ).pipeline.is_paused_upon_creation is True


def test_down_without_a_running_airflow_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert down(tmp_path) == 0
    assert "no Airflow" in capsys.readouterr().out


def test_the_supervisor_starts_the_late_component_only_once_both_apis_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Stand-ins for the components: two web servers that start listening after a delay (the
    api-servers of the UI and of the tasks, the second one later), and a process that records
    when it started (the dag-processor)."""
    core_port = free_port()
    execution_port = free_port(taken={core_port})
    started = tmp_path / "late-started"

    def delayed_server(port: int, delay: float) -> list[str]:
        return [
            "-c",
            f"import time, http.server; time.sleep({delay}); "
            f"http.server.ThreadingHTTPServer(('127.0.0.1', {port}), "
            "http.server.SimpleHTTPRequestHandler).serve_forever()",
        ]

    early = {"core": delayed_server(core_port, 0.5), "execution": delayed_server(execution_port, 2)}
    late = f"import time, pathlib; pathlib.Path({str(started)!r}).write_text(str(time.time())); "
    late += "time.sleep(60)"
    monkeypatch.setattr(supervisor, "early_components", lambda url: early)
    monkeypatch.setattr(supervisor, "LATE_COMPONENTS", {"late": ["-c", late]})
    monkeypatch.setattr(supervisor, "STOP_GRACE_SECONDS", 5.0)
    monkeypatch.setenv("AIRFLOW__API__BASE_URL", f"http://127.0.0.1:{core_port}")
    execution_url = f"http://127.0.0.1:{execution_port}/execution/"
    monkeypatch.setenv("AIRFLOW__CORE__EXECUTION_API_SERVER_URL", execution_url)
    stopping = threading.Event()
    began = time.time()
    outcome: list[int] = []
    runner = threading.Thread(target=lambda: outcome.append(supervisor.supervise(None, stopping)))
    runner.start()
    deadline = time.monotonic() + 30
    while not started.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    stopping.set()
    runner.join(timeout=30)

    assert started.exists(), capsys.readouterr().out
    assert float(started.read_text()) - began >= 2, "not before the execution api answered"
    assert outcome == [0]
    assert "exited with code" not in capsys.readouterr().out


def test_the_api_servers_are_two_the_tasks_on_the_execution_url_port() -> None:
    components = supervisor.early_components("http://127.0.0.1:41234/execution/")
    assert components["api-server"][-2:] == ["--apps", "core"]
    assert components["execution-api"][-4:] == ["--apps", "execution", "--port", "41234"]
    assert {"scheduler", "triggerer"} <= components.keys()


def test_free_port_avoids_the_ports_already_chosen() -> None:
    first = free_port()
    assert free_port(first) == first  # nothing listens on it
    assert all(free_port(taken={first}) != first for _ in range(20))


def test_only_the_commands_that_make_runs_begin_their_transactions_immediately() -> None:
    assert begins_immediately(["airflow", "backfill", "create", "--dag-id", "d"])
    assert begins_immediately(["airflow", "dags", "trigger", "d"])
    for component in ("scheduler", "api-server", "dag-processor", "triggerer", "db"):
        assert not begins_immediately(["airflow", component])
    assert not begins_immediately(["airflow"])


@pytest.mark.parametrize("command", ["backfill", "scheduler"])
def test_begin_immediate_lets_a_read_then_write_savepoint_wait_for_another_writer(
    command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As `airflow backfill create` creates a run: a SAVEPOINT, a read, a write. When another
    connection writes in between, SQLite refuses the write at once ("database is locked",
    whatever the timeout), unless the transaction began with BEGIN IMMEDIATE (backfill); the
    scheduler keeps SQLite's default, which the control case shows."""
    from sqlalchemy import text
    from sqlalchemy.exc import OperationalError

    database = tmp_path / "airflow.db"
    monkeypatch.setattr(sys, "argv", ["airflow", command])
    engine = create_metadata_engine(
        f"sqlite:///{database}", engine_args={}, connect_args={"timeout": 5}
    )
    other = sqlite3.connect(database, timeout=5, check_same_thread=False)
    other.execute("PRAGMA journal_mode=WAL")
    other.execute("CREATE TABLE runs (day TEXT)")
    other.commit()

    def write_elsewhere() -> None:
        other.execute("INSERT INTO runs VALUES ('elsewhere')")
        other.commit()

    writer = threading.Thread(target=write_elsewhere)
    refusal = ""
    try:
        with engine.connect() as connection, connection.begin(), connection.begin_nested():
            assert connection.execute(text("SELECT count(*) FROM runs")).scalar() == 0
            writer.start()
            writer.join(timeout=1)  # with BEGIN IMMEDIATE it waits for our write lock
            connection.execute(text("INSERT INTO runs VALUES ('here')"))
    except OperationalError as error:
        refusal = str(error)
    writer.join(timeout=10)
    rows = other.execute("SELECT day FROM runs ORDER BY day").fetchall()
    other.close()
    engine.dispose()

    if command == "backfill":
        assert refusal == ""
        assert rows == [("elsewhere",), ("here",)]
    else:
        assert "database is locked" in refusal, "the control: a deferred read cannot upgrade"
        assert rows == [("elsewhere",)]


def test_airflow_local_settings_is_ours_unless_the_user_has_one(tmp_path: Path) -> None:
    write_local_settings(tmp_path)
    ours = tmp_path / "config" / "airflow_local_settings.py"
    assert ours.read_text() == LOCAL_SETTINGS
    ours.write_text("# mine\n")

    write_local_settings(tmp_path)

    assert ours.read_text() == "# mine\n"


def test_a_judge_that_could_not_score_is_refused_before_anything_starts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with pytest.raises(StandaloneError, match=r"needs \$OPENAI_API_KEY"):
        check_judge("openai", {})
    check_judge("openai", {"OPENAI_API_KEY": TEST_KEY})
    check_judge("openai", {"RAGAS_OPS_JUDGE_BASE_URL": "http://127.0.0.1:11434/v1"})
    check_judge("test", {})  # the test judge is in the kit, as this launcher is
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(StandaloneError, match=r"\[local\] extra"):
        check_judge("local", {})


def test_up_without_own_logs_runs_on_the_demo_lake(tmp_path: Path) -> None:
    where = Standalone(tmp_path, 8080, 8081)

    environment = pipeline_environment(where, OwnLogs())

    assert environment["RAGAS_OPS_PIPELINE_RAW_URI"] == str(tmp_path / "lake" / "raw")
    assert environment["RAGAS_OPS_PIPELINE_SEGMENTS"] == "app,model_version"


def test_up_with_own_logs_reads_them_where_they_are(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "my-logs").mkdir()
    config = tmp_path / "my.toml"
    config.write_text('[columns]\nquestion = "query"\n[pipeline]\nsegments = ["app"]\n')
    monkeypatch.chdir(tmp_path)
    where = Standalone(tmp_path / "home", 8080, 8081)

    flags = pipeline_environment(where, OwnLogs(raw="my-logs", segments=("tenant", "channel")))
    from_file = pipeline_environment(where, OwnLogs(raw="my-logs", config=config))

    assert flags == {
        "RAGAS_OPS_PIPELINE_RAW_URI": str(tmp_path / "my-logs"),
        "RAGAS_OPS_PIPELINE_WAREHOUSE_URI": str(tmp_path / "home" / "lake" / "warehouse"),
        "RAGAS_OPS_PIPELINE_SEGMENTS": "tenant,channel",
    }
    assert from_file["RAGAS_OPS_CONFIG"] == str(config)
    assert "RAGAS_OPS_PIPELINE_SEGMENTS" not in from_file, "the file's segments stand"


@pytest.mark.parametrize(
    ("own", "message"),
    [
        (OwnLogs(raw="no-such-folder"), "--raw no-such-folder: no such folder"),
        (OwnLogs(segments=("app",)), "--raw names their folder"),
        (OwnLogs(config=Path("missing.toml")), "--config missing.toml: no such file"),
    ],
)
def test_up_with_own_logs_refuses_what_it_cannot_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, own: OwnLogs, message: str
) -> None:
    monkeypatch.chdir(tmp_path)

    with pytest.raises(StandaloneError, match=message):
        pipeline_environment(Standalone(tmp_path, 8080, 8081), own)


# -- a first `up --raw` never meets the demo; `down` finds what `up` started -----------------


def test_own_logs_get_a_home_of_their_own_unless_one_is_given() -> None:
    assert home_for(None, OwnLogs()) == DEFAULT_HOME
    assert home_for(None, OwnLogs(raw="my-logs")) == OWN_LOGS_HOME
    assert home_for(Path("mine"), OwnLogs(raw="my-logs")) == Path("mine")


def test_own_logs_in_the_demos_home_are_refused_naming_the_fix(tmp_path: Path) -> None:
    home = tmp_path / ".airflow"
    for day in ("2026-11-20", "2026-11-21"):
        (home / "lake" / "raw" / f"dt={day}").mkdir(parents=True)
        (home / "lake" / "warehouse" / "scored" / f"dt={day}").mkdir(parents=True)
    own = OwnLogs(raw=str(tmp_path))
    in_home = {"RAGAS_OPS_PIPELINE_WAREHOUSE_URI": str(home / "lake" / "warehouse")}

    with pytest.raises(StandaloneError) as refused:
        check_home_for_own_logs(home, own, in_home)

    message = str(refused.value)
    assert "holds the demo lake's 2 scored day(s)" in message
    assert "leave out --home (your logs get .airflow-own/)" in message
    assert f"ragas-ops airflow down --home {home} && rm -rf {home}" in message
    check_home_for_own_logs(home, OwnLogs(), in_home)  # the demo itself
    check_home_for_own_logs(home, own, {"RAGAS_OPS_PIPELINE_WAREHOUSE_URI": "s3://my/ware"})
    check_home_for_own_logs(tmp_path / ".airflow-own", own, in_home)


def test_down_without_a_home_stops_every_home_up_started(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(standalone, "HOMES_FILE", tmp_path / "homes.json")
    monkeypatch.chdir(tmp_path)  # the default homes: none runs there
    home = tmp_path / "elsewhere"
    home.mkdir()
    sleeper = subprocess.Popen(["sleep", "60"], start_new_session=True)
    (home / standalone.STATE_FILE).write_text(json.dumps({"groups": [sleeper.pid]}))
    standalone.remember_home(home)

    assert down() == 0

    assert sleeper.wait(timeout=10) is not None, "the group up started is stopped"
    assert f"stopped Airflow of {home}" in capsys.readouterr().out
    assert standalone.remembered_homes() == []


def test_up_with_the_openai_judge_says_which_model_and_url_it_calls() -> None:
    said = standalone.judge_sentence("openai", {"RAGAS_OPS_JUDGE_MODEL": "gpt-5.4-nano"})
    assert (
        "model gpt-5.4-nano (embeddings text-embedding-3-small) at https://api.openai.com/v1"
        in said
    )

    proxy = {"RAGAS_OPS_JUDGE_BASE_URL": "http://127.0.0.1:9/v1"}
    assert standalone.judge_sentence("openai", proxy).endswith("at http://127.0.0.1:9/v1")
    assert "model" not in standalone.judge_sentence("local", {})
