"""`make cluster`'s settings (`ragas_ops_testing.local_airflow.cluster`) come from
docker/docker-compose.yaml: the `x-airflow-common` environment, expanded as compose expands
it, with the service names swapped for this machine's ports; and its kill takes a component's
every process. The cluster itself runs in tests/integration/cluster."""

from __future__ import annotations

import os
import re
import signal
import sys
import time
from pathlib import Path

import pytest
import yaml  # type: ignore[import-untyped]
from ragas_ops_testing.local_airflow import cluster
from ragas_ops_testing.local_airflow.cluster import (
    COMPOSE_FILE,
    ClusterError,
    Ports,
    cluster_environment,
    compose_environment,
    expand,
    localised,
    save_state,
)

from ragas_ops.config import settings_from_environment

SECRETS = {
    "POSTGRES_PASSWORD": "pg-secret",
    "AIRFLOW_FERNET_KEY": "fernet-secret",
    "AIRFLOW_JWT_SECRET": "jwt-secret",
    "OPENAI_API_KEY": "sk-test-secret",
}
PORTS = Ports(postgres=15432, redis=16379, s3=15000, api=18080, judge=18787)


@pytest.mark.parametrize(
    ("value", "variables", "expanded"),
    [
        ("${NAME}", {"NAME": "set"}, "set"),
        ("${NAME}", {}, ""),
        ("${NAME:-fallback}", {}, "fallback"),
        ("${NAME:-fallback}", {"NAME": ""}, "fallback"),  # compose: empty counts as unset
        ("${NAME:-fallback}", {"NAME": "set"}, "set"),
        ("${NAME:?say so}", {"NAME": "set"}, "set"),
        ("db+${A}://${B:-host}/x", {"A": "pg"}, "db+pg://host/x"),
        ("no variable: $NAME {NAME}", {"NAME": "set"}, "no variable: $NAME {NAME}"),
    ],
)
def test_variables_expand_as_compose_expands_them(
    value: str, variables: dict[str, str], expanded: str
) -> None:
    assert expand(value, variables) == expanded


@pytest.mark.parametrize("variables", [{}, {"NAME": ""}])
def test_a_required_variable_unset_or_empty_stops_with_its_message(
    variables: dict[str, str],
) -> None:
    with pytest.raises(ClusterError, match=r"NAME: set NAME in docker/\.env"):
        expand("${NAME:?set NAME in docker/.env}", variables)


def test_the_environment_is_the_compose_files_x_airflow_common_block_expanded() -> None:
    common = yaml.safe_load(COMPOSE_FILE.read_text())["x-airflow-common"]["environment"]

    environment = compose_environment(SECRETS)

    assert set(environment) == set(common)
    assert environment["AIRFLOW__CORE__EXECUTOR"] == "CeleryExecutor"
    assert environment["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"] == (
        "postgresql+psycopg2://airflow:pg-secret@postgres/airflow"
    )
    assert environment["AIRFLOW__CELERY__WORKER_CONCURRENCY"] == "8"  # the compose default
    assert environment["RAGAS_OPS_PIPELINE_POOL_SLOTS"] == "4"
    assert environment["RAGAS_OPS_WAREHOUSE_TABLE_FORMAT"] == "parquet"
    assert "${" not in "".join(environment.values())


def test_a_missing_secret_of_the_compose_file_stops_the_cluster_naming_it() -> None:
    without = {name: value for name, value in SECRETS.items() if name != "AIRFLOW_FERNET_KEY"}

    with pytest.raises(ClusterError, match="AIRFLOW_FERNET_KEY"):
        compose_environment(without)


def test_a_setting_added_to_the_compose_file_is_a_setting_of_the_cluster(tmp_path: Path) -> None:
    compose = yaml.safe_load(COMPOSE_FILE.read_text())
    compose["x-airflow-common"]["environment"]["RAGAS_OPS_JUDGE_MAX_CONCURRENCY"] = (
        "${JUDGE_CONCURRENCY:-12}"
    )
    path = tmp_path / "docker-compose.yaml"
    path.write_text(yaml.safe_dump(compose))

    assert compose_environment(SECRETS, path)["RAGAS_OPS_JUDGE_MAX_CONCURRENCY"] == "12"
    with_variable = {**SECRETS, "JUDGE_CONCURRENCY": "5"}
    assert compose_environment(with_variable, path)["RAGAS_OPS_JUDGE_MAX_CONCURRENCY"] == "5"


def test_no_setting_names_a_compose_service_once_localised() -> None:
    services = set(yaml.safe_load(COMPOSE_FILE.read_text())["services"])
    host = re.compile(r"(?:@|//)([A-Za-z0-9_.-]+)[:/]")

    environment = localised(compose_environment(SECRETS), PORTS)

    hosts = {name: set(host.findall(value)) for name, value in environment.items()}
    assert {name: found & services for name, found in hosts.items() if found & services} == {}
    assert environment["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"] == (
        "postgresql+psycopg2://airflow:pg-secret@127.0.0.1:15432/airflow"
    )
    assert environment["AIRFLOW__CELERY__BROKER_URL"] == "redis://127.0.0.1:16379/0"
    assert environment["RAGAS_OPS_JUDGE_SHARED_BUDGET_URL"] == "redis://127.0.0.1:16379/1"
    assert environment["AIRFLOW__CORE__EXECUTION_API_SERVER_URL"] == (
        "http://127.0.0.1:18080/execution/"
    )
    assert environment["RAGAS_OPS_WAREHOUSE_CATALOG_URI"] == (
        "postgresql+psycopg2://airflow:pg-secret@127.0.0.1:15432/ragas_ops_catalog"
    )


def test_the_cluster_runs_on_the_compose_settings_with_its_overrides_last(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in [*SECRETS, "RAGAS_OPS_PIPELINE_CHUNK_ROWS"]:
        monkeypatch.delenv(name, raising=False)
    save_state(
        tmp_path,
        {
            "groups": {},
            "secrets": SECRETS,
            "overrides": {"RAGAS_OPS_PIPELINE_CHUNK_ROWS": "20"},
        },
    )

    environment = cluster_environment(tmp_path, PORTS, "http://127.0.0.1:18787/v1")

    assert environment["AIRFLOW__CORE__EXECUTOR"] == "CeleryExecutor"
    assert environment["AIRFLOW__CELERY__WORKER_CONCURRENCY"] == "8"
    assert environment["RAGAS_OPS_PIPELINE_CHUNK_ROWS"] == "20"
    assert '"password": "sk-test-secret"' in environment["AIRFLOW_CONN_RAGAS_OPS_JUDGE"]
    assert environment["AIRFLOW__CORE__HOSTNAME_CALLABLE"] == (
        "ragas_ops_testing.local_airflow.cluster.host_name"
    )
    # every RAGAS_OPS_* name must be a setting: an unknown one stops every task at start
    settings = settings_from_environment(environment)
    assert settings.pipeline.chunk_rows == 20
    assert (tmp_path / cluster.STATE_FILE).stat().st_mode & 0o777 == 0o600


def test_a_killed_component_takes_the_processes_in_groups_of_their_own_with_it(
    tmp_path: Path,
) -> None:
    # As Airflow's task supervisor does: the task runs in a process group of its own.
    child = (
        "import subprocess, time; subprocess.Popen(['sleep', '60'], process_group=0); "
        "time.sleep(60)"
    )
    cluster.spawn(tmp_path, "worker", [sys.executable, "-c", child], os.environ)
    session = cluster.load_state(tmp_path)["groups"]["worker"]
    deadline = time.monotonic() + 30
    while len(cluster.session_members(session)) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert len(cluster.session_members(session)) == 2

    cluster.kill(tmp_path, "worker", signal.SIGKILL)

    deadline = time.monotonic() + 30
    while cluster.running(tmp_path) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert cluster.running(tmp_path) == []
    assert cluster.session_members(session) == []
