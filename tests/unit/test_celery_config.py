"""The Celery workers' configuration (`ragas_ops.airflow.celery_config`): Airflow's default
plus the modules the DAG's tasks import, imported once per worker before it forks."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest
import yaml  # type: ignore[import-untyped]

pytest.importorskip("airflow.providers.celery")

from ragas_ops.airflow.celery_config import CELERY_CONFIG, PRELOADED_MODULES

PROJECT = Path(__file__).resolve().parents[2]
TASK_CODE = (PROJECT / "dags" / "ragas_ops_nightly.py", PROJECT / "ragas_ops/airflow/operators.py")


def submodule(package: str, name: str) -> str | None:
    try:
        importlib.import_module(f"{package}.{name}")
    except ModuleNotFoundError:
        return None  # a name defined in the module, not a module
    return f"{package}.{name}"


def imports_inside_functions(path: Path) -> set[str]:
    """The ragas_ops modules a file imports inside its functions (the lazy, run-time ones)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.FunctionDef):
            for inner in ast.walk(node):
                if isinstance(inner, ast.ImportFrom) and (inner.module or "").startswith(
                    "ragas_ops"
                ):
                    module = inner.module or ""
                    for alias in inner.names:  # `from ragas_ops.airflow import hooks`: hooks
                        found.add(submodule(module, alias.name) or module)
    return found


def test_every_module_the_tasks_import_when_they_run_is_preloaded() -> None:
    lazy = set().union(*(imports_inside_functions(path) for path in TASK_CODE))
    light = {"ragas_ops.config"}  # imported by the DAG file when it is parsed anyway

    assert lazy - light <= set(PRELOADED_MODULES), sorted(lazy - light - set(PRELOADED_MODULES))


@pytest.mark.parametrize("module", PRELOADED_MODULES)
def test_each_preloaded_module_imports(module: str) -> None:
    importlib.import_module(module)


def test_it_is_airflows_default_with_the_preloaded_modules_imported_by_the_worker() -> None:
    from airflow.providers.celery.executors.default_celery import DEFAULT_CELERY_CONFIG

    assert {k: v for k, v in CELERY_CONFIG.items() if k != "imports"} == {
        k: v for k, v in DEFAULT_CELERY_CONFIG.items() if k != "imports"
    }
    assert set(PRELOADED_MODULES) <= set(CELERY_CONFIG["imports"])


def test_the_compose_deployment_uses_it() -> None:
    compose = yaml.safe_load((PROJECT / "docker" / "docker-compose.yaml").read_text())
    name = compose["x-airflow-common"]["environment"]["AIRFLOW__CELERY__CELERY_CONFIG_OPTIONS"]
    module, _, attribute = name.rpartition(".")

    assert getattr(importlib.import_module(module), attribute) is CELERY_CONFIG
