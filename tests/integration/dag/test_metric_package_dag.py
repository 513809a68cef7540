"""A metric package outside ragas-ops (`examples/team_metrics`: `grounded_numbers`), built as
a wheel and pip-installed into a folder of its own, found through the `ragas_ops.metrics`
entry-point group: by `ragas-ops score` and `ragas-ops test-judge` (processes of their own,
the folder on their path) and by a nightly DAG run's tasks (the folder added to this process's
path after ragas_ops was imported: each task looks for packages again). No file of ragas_ops
names it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from ragas_ops_testing import judge_process

from ragas_ops.samples import sample_interactions
from tests.integration.dag import test_pipeline_dag as dag_tests
from tests.integration.dag.test_pipeline_dag import (
    PROJECT,
    run_dag,
    state,
    warehouse,
    write_logs,
)
from tests.support import TEST_KEY

airflow_database = dag_tests.airflow_database
lake = dag_tests.lake

EXAMPLE = PROJECT / "examples" / "team_metrics"
NAME = "grounded_numbers"
ROWS = {
    "id": ["grounded", "invented", "no number"],
    "question": ["When did the Millau Viaduct open and how tall is it?"] * 3,
    "contexts": [["The Millau Viaduct opened in 2004. Its mast is 343 metres tall."]] * 3,
    "answer": [
        "It opened in 2004 and is 343 metres tall.",
        "It opened in 2001 and is 343 metres tall.",
        "It opened some years ago.",
    ],
}


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example built as a wheel and pip-installed into a folder (not into the venv)."""
    root = tmp_path_factory.mktemp("team_metrics")
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input"]
    subprocess.run(
        [*pip, "wheel", "--no-build-isolation", "--no-deps", "-w", str(root), str(EXAMPLE)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (wheel,) = root.glob("ragas_ops_team_metrics-*.whl")
    site = root / "site"
    subprocess.run(
        [*pip, "install", "--no-deps", "--target", str(site), str(wheel)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    return site


def test_the_package_is_not_in_the_venv_nor_in_ragas_ops() -> None:
    probe = f"from ragas_ops.metrics import build_metrics; build_metrics([{NAME!r}])"
    fresh = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=False
    )
    assert fresh.returncode != 0
    assert "unknown metric" in fresh.stderr
    assert not list((PROJECT / "ragas_ops").rglob(f"*{NAME}*"))


def test_the_cli_and_the_test_judge_find_the_installed_package(
    installed: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(installed), str(PROJECT)]))
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    source, target = tmp_path / "logs.parquet", tmp_path / "scored.parquet"
    pq.write_table(pa.table(ROWS), source)
    with judge_process.test_judge_process() as base_url:
        finished = subprocess.run(
            [
                *(sys.executable, "-m", "ragas_ops.cli", "score", str(source), str(target)),
                *("--metrics", f"faithfulness,{NAME}", "--base-url", base_url),
                *("--model", "test-judge", "--embedding-model", "test-embedding"),
                *("--cache", str(tmp_path / "c.sqlite"), "--rpm", "none", "--tpm", "none"),
                "--no-progress",
            ],
            capture_output=True,
            text=True,
            env=os.environ.copy(),
            timeout=300,
            check=False,
        )
        stats = judge_process.server_stats(base_url)
    assert finished.returncode == 0, finished.stderr
    rows = {row["id"]: row for row in pq.read_table(target).to_pylist()}
    assert rows["grounded"][f"{NAME}_score"] == 1.0
    assert rows["invented"][f"{NAME}_score"] == 0.5  # 2001 is not in the contexts, 343 is
    assert rows["no number"][f"{NAME}_status"] == "not_applicable"
    assert stats["requests_by_prompt"][f"{NAME}.ungrounded"] == 2


def test_a_dag_runs_tasks_find_the_installed_package(
    installed: Path, lake: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(installed))  # installed after ragas_ops was imported
    monkeypatch.setenv("RAGAS_OPS_METRICS_NAMES", f"faithfulness,{NAME}")
    day = "2026-11-25"
    write_logs(lake, day, sample_interactions(20, seed=3, day=day))
    assert state(run_dag(day)) == "success"
    scored = pq.read_table(warehouse(lake, "scored", f"dt={day}", "scored.parquet")).to_pylist()
    assert {row[f"{NAME}_status"] for row in scored} <= {"ok", "not_applicable", "invalid_input"}
    assert sum(row[f"{NAME}_status"] == "ok" for row in scored) >= 10
    daily = pq.read_table(warehouse(lake, "daily_metrics", f"dt={day}", "daily_metrics.parquet"))
    assert NAME in set(daily["metric"].to_pylist())
    report = warehouse(lake, "reports", f"dt={day}", "report.html").read_text()
    assert "Grounded numbers" in report
