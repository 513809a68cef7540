"""The judge's key in no log of a DAG run at Airflow's DEBUG level, whether it comes from the
environment or from an Airflow connection: the nightly DAG run by `airflow dags test` (a process
of its own, configured by Airflow as a worker is), against a gateway that reflects the key in
every reply's headers and body and in its error messages (the test judge's `echo_key`). Nothing
of the key is in the run's output, in its task log files, nor anywhere in the Airflow database."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from ragas_ops_testing.judge_server import JudgeServer

from ragas_ops.samples import sample_interactions
from tests.integration.dag import test_pipeline_dag as dag_tests
from tests.integration.dag.test_pipeline_dag import AIRFLOW_HOME, DAG_ID, DAY, write_logs
from tests.integration.e2e.test_key_in_no_log import key_pieces

airflow_database = dag_tests.airflow_database
lake = dag_tests.lake

CONNECTION_KEY = "sk-" + "debug-connection-9876543210zyxwv"
ENVIRONMENT_KEY = "sk-" + "debug-environment-1357924680qpon"


def database_text(path: Path) -> str:
    """Every text and blob value of every table of the SQLite database, one per line."""
    values: list[str] = []
    with sqlite3.connect(path) as database:
        tables = [
            row[0] for row in database.execute("SELECT name FROM sqlite_master WHERE type='table'")
        ]
        for table in tables:
            for row in database.execute(f'SELECT * FROM "{table}"'):
                for value in row:
                    if isinstance(value, bytes):
                        values.append(value.decode("utf-8", "replace"))
                    elif isinstance(value, str):
                        values.append(value)
    return "\n".join(values)


def log_files_text(home: Path) -> str:
    return "\n".join(
        path.read_text(errors="replace") for path in (home / "logs").rglob("*") if path.is_file()
    )


@pytest.mark.parametrize("source", ["environment", "connection"])
def test_a_dag_run_at_debug_shows_the_key_in_no_log_file_or_database(
    source: str,
    lake: Path,
    start_judge_server: Callable[..., JudgeServer],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    key = CONNECTION_KEY if source == "connection" else ENVIRONMENT_KEY
    server = start_judge_server(api_key=key, echo_key=True, rate_429=0.15, seed=5)
    monkeypatch.setenv("RAGAS_OPS_JUDGE_BASE_URL", server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", key)
    if source == "connection":
        monkeypatch.delenv("OPENAI_API_KEY")
        monkeypatch.delenv("RAGAS_OPS_JUDGE_BASE_URL")
        connection = {"conn_type": "openai", "host": server.base_url, "password": key}
        monkeypatch.setenv("AIRFLOW_CONN_RAGAS_OPS_JUDGE", json.dumps(connection))
    write_logs(lake, DAY, sample_interactions(12, seed=31, day=DAY))
    environ = {
        **os.environ,
        "AIRFLOW__LOGGING__LOGGING_LEVEL": "DEBUG",
        "AIRFLOW__CORE__UNIT_TEST_MODE": "False",
    }

    done = subprocess.run(
        [sys.executable, "-m", "airflow", "dags", "test", DAG_ID, "-c", json.dumps({"day": DAY})],
        env=environ,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )

    output = done.stdout + "\n" + done.stderr
    assert done.returncode == 0, output[-3000:]
    assert server.stats()["auth_failures"] == 0
    assert server.stats()["answered_by_endpoint"]["chat"] > 0
    # DEBUG reached the HTTP stack: the gateway's echo was logged, masked
    assert "x-echo-key" in output
    assert "[redacted]" in output
    logged = {
        "the run's output": output,
        "the log files": log_files_text(AIRFLOW_HOME),
        "the Airflow database": database_text(AIRFLOW_HOME / "airflow.db"),
    }
    for where, text in logged.items():
        for piece in key_pieces(key):
            found = [
                line
                for line in text.splitlines()
                if piece in line and not airflow_in_process_echo(line)
            ]
            assert not found, f"{piece} in {where}: {found[:3]}"
    # Airflow's own connection lookup hands the password to its masker; under `airflow dags
    # test` its in-process supervisor logs that message whole at DEBUG (a real worker's
    # supervisor omits it): one line per lookup of the connection (the run's and the model
    # lookup's), Airflow's, and only for the key of a connection
    echoed = [line for line in output.splitlines() if key in line]
    assert all(airflow_in_process_echo(line) for line in echoed), echoed
    assert bool(echoed) == (source == "connection"), echoed


def airflow_in_process_echo(line: str) -> bool:
    """Airflow 3.3's `InProcessSupervisorComms.send` logging a `MaskSecret` at DEBUG."""
    return "Sending request" in line and "msg=MaskSecret(value=" in line
