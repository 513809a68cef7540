"""`pip install ragas-ops` (no extras) installs no test judge and no local-Airflow launcher:
the wheel `pip install .` builds from this checkout holds the library alone, and the test
kit's own distribution (testkit/, ragas-ops-testing) holds the test judge and the launcher.
Built offline, from what the venv has installed."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parents[3]
# What a checkout may hold that is no source: venvs, caches, build output, local lakes.
NOT_SOURCE = shutil.ignore_patterns(
    ".git", ".venv*", "__pycache__", "*.egg-info", "build", "dist", ".*_cache", "demo", ".airflow"
)

LAUNCHER = ("standalone", "supervisor", "sqlite", "demo", "cluster")
"""The local-Airflow launcher's modules (in ragas_ops/airflow/ before they moved to the kit)."""

pytestmark = pytest.mark.slow


def built_wheel(source: Path, work: Path) -> zipfile.ZipFile:
    """The wheel pip builds from `source`, offline; built from a copy, since setuptools writes
    build/ and *.egg-info beside the sources it builds."""
    copy = work / "source"
    shutil.copytree(source, copy, ignore=NOT_SOURCE)
    wheels = work / "wheels"
    command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation"]
    command += ["--no-index", "--quiet", "--wheel-dir", str(wheels), str(copy)]
    subprocess.run(command, check=True, timeout=600, capture_output=True)
    (wheel,) = wheels.glob("*.whl")
    return zipfile.ZipFile(wheel)


def requirements(wheel: zipfile.ZipFile) -> list[str]:
    (metadata,) = [name for name in wheel.namelist() if name.endswith(".dist-info/METADATA")]
    lines = wheel.read(metadata).decode().splitlines()
    return [line.removeprefix("Requires-Dist: ") for line in lines if line.startswith("Requires")]


def test_the_library_wheel_holds_no_test_judge(tmp_path: Path) -> None:
    wheel = built_wheel(PROJECT, tmp_path)
    names = wheel.namelist()
    assert "ragas_ops/cli/main.py" in names
    assert "ragas_ops/testkit.py" in names  # what says where the test kit is
    kit = [name for name in names if name.startswith(("ragas_ops_testing/", "ragas_ops/testing/"))]
    assert kit == []
    assert [name for name in names if "judge_server" in name or "batch_api" in name] == []
    assert [req for req in requirements(wheel) if "testing" in req] == []
    # `ragas-ops airflow up`, `ragas-ops demo` and `make cluster` are the kit's
    assert "ragas_ops/airflow/operators.py" in names
    assert [name for name in names if "local_airflow" in name] == []
    assert {f"ragas_ops/airflow/{module}.py" for module in LAUNCHER}.isdisjoint(names)


def test_the_test_kit_is_a_distribution_of_its_own(tmp_path: Path) -> None:
    wheel = built_wheel(PROJECT / "testkit", tmp_path)
    names = wheel.namelist()
    assert Path(wheel.filename or "").name.startswith("ragas_ops_testing-")
    assert "ragas_ops_testing/judge_server/server.py" in names
    assert "ragas_ops_testing/batch_api.py" in names
    for module in LAUNCHER:
        assert f"ragas_ops_testing/local_airflow/{module}.py" in names
    assert [name for name in names if name.startswith("ragas_ops/")] == []
    assert "ragas-ops==0.1.0" in requirements(wheel)
