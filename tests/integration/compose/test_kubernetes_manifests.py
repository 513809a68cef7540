"""The KubernetesExecutor path (docs/deploy.md): the pod template, the settings ConfigMap and
the init Job validated against the Kubernetes API's schemas (`kubernetes-validate`, its
bundled OpenAPI schemas, strict: an unknown field fails), and the Helm chart's values kept
in step with the compose deployment. Nothing is applied to a cluster and the chart is not
rendered: no API server, no Helm and no copy of the chart are installable here."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml  # type: ignore[import-untyped]

from ragas_ops.config import settings_from_environment

PROJECT = Path(__file__).resolve().parents[3]
KUBERNETES = PROJECT / "docker" / "kubernetes"
MANIFESTS = ("pod-template.yaml", "settings.yaml", "init-job.yaml")
# The oldest Kubernetes minor still supported upstream when this was written, and the newest
# the validator knows.
VERSIONS = ("1.33.0", "1.37.0")


def load(name: str) -> Any:
    return yaml.safe_load((KUBERNETES / name).read_text())


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("name", MANIFESTS)
def test_the_manifests_are_valid_kubernetes_objects(name: str, version: str) -> None:
    kubernetes_validate = pytest.importorskip("kubernetes_validate")

    kubernetes_validate.validate(load(name), version, strict=True)


def test_the_validator_refuses_what_the_api_server_would() -> None:
    kubernetes_validate = pytest.importorskip("kubernetes_validate")
    pod = load("pod-template.yaml")
    pod["spec"]["containers"][0]["envFrom"][0]["configMapRef"]["nmae"] = "typo"

    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(pod, VERSIONS[-1], strict=True)


def test_the_task_pods_run_the_base_container_as_the_image_user_with_a_local_cache() -> None:
    pod = load("pod-template.yaml")
    (container,) = pod["spec"]["containers"]

    assert container["name"] == "base", "the KubernetesExecutor runs the task in `base`"
    assert pod["spec"]["securityContext"]["runAsUser"] == 50000
    env = {item["name"]: item for item in container["env"]}
    cache = env["RAGAS_OPS_JUDGE_CACHE_PATH"]["value"]
    mounts = {mount["name"]: mount["mountPath"] for mount in container["volumeMounts"]}
    volumes = {volume["name"]: volume for volume in pod["spec"]["volumes"]}
    assert cache.startswith(mounts["judge-cache"] + "/")
    assert "emptyDir" in volumes["judge-cache"], "SQLite on the pod's own disk"


def test_the_settings_are_the_compose_deployments_and_accepted_by_ragas_ops() -> None:
    settings = load("settings.yaml")["data"]
    compose = yaml.safe_load((PROJECT / "docker" / "docker-compose.yaml").read_text())
    compose_names = {
        name for name in compose["x-airflow-common"]["environment"] if name.startswith("RAGAS_OPS_")
    }
    # Pod-specific or compose-only: the cache path (the pod template's), the Redis budget and
    # the catalog URL (services of the compose deployment), the segments (the data's own).
    assert set(settings) <= compose_names
    assert compose_names - set(settings) == {
        "RAGAS_OPS_JUDGE_CACHE_PATH",
        "RAGAS_OPS_JUDGE_BASE_URL",
        "RAGAS_OPS_JUDGE_SHARED_BUDGET",
        "RAGAS_OPS_JUDGE_SHARED_BUDGET_URL",
        "RAGAS_OPS_WAREHOUSE_CATALOG_URI",
        "RAGAS_OPS_PIPELINE_SEGMENTS",
    }
    parsed = settings_from_environment(settings)
    assert parsed.pipeline.chunk_rows == 4000


def test_the_chart_values_name_the_executor_the_image_and_secrets_only_by_reference() -> None:
    values = load("values.yaml")
    text = (KUBERNETES / "values.yaml").read_text()

    assert values["executor"] == "KubernetesExecutor"
    assert values["images"]["airflow"]["repository"].endswith("/ragas-ops-airflow")
    assert values["triggerer"]["enabled"] is True, "batch mode waits in the triggerer"
    sources = yaml.safe_load(values["extraEnvFrom"])
    assert {"configMapRef": {"name": "ragas-ops-settings"}} in sources
    assert {"secretRef": {"name": "ragas-ops-judge"}} in sources
    for name in ("OPENAI_API_KEY:", "fernetKey:", "password", "sk-"):
        assert name not in text
