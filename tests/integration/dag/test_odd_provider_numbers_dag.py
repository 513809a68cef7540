"""Advisory inputs never stop a run (issue 49, finding 2), through the nightly DAG
(`dag.test()`) against a gateway double over HTTP: `inf`, `NaN`, `1e308`, `1e999` and
`-1e20` in every `x-ratelimit-*` header and in `/v1/models`' `shutdown_date` (an
OverflowError after 4 requests, or before the first row, before); and headers that state a
limit far below the configured one, said once in the log, the manifest and the report."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from ragas_ops_testing.judge_server import JudgeServer

from ragas_ops.samples import sample_interactions
from tests.integration.dag import test_pipeline_dag as dag_tests
from tests.integration.dag.test_pipeline_dag import (
    DAY,
    manifest_of,
    run_dag,
    state,
    warehouse,
    write_logs,
)

airflow_database = dag_tests.airflow_database
lake = dag_tests.lake

ODD_HEADERS = {
    "x-ratelimit-limit-requests": "1e999",
    "x-ratelimit-limit-tokens": "-1e20",
    "x-ratelimit-remaining-requests": "inf",
    "x-ratelimit-remaining-tokens": "NaN",
    "x-ratelimit-reset-requests": "1e308",
    "x-ratelimit-reset-tokens": "-inf",
}


@pytest.fixture
def gateway(
    lake: Path, start_judge_server: Callable[..., JudgeServer], monkeypatch: pytest.MonkeyPatch
) -> Callable[..., JudgeServer]:
    """A gateway double with the given settings, the lake's judge, paced by configured rates
    (so that the headers are read to pace)."""

    def start(**config: object) -> JudgeServer:
        server = start_judge_server(**config)
        monkeypatch.setenv("RAGAS_OPS_JUDGE_BASE_URL", server.base_url)
        monkeypatch.setenv("RAGAS_OPS_JUDGE_RPM", "1000000")
        monkeypatch.setenv("RAGAS_OPS_JUDGE_TPM", "1000000000")
        return server

    return start


@contextmanager
def said_by(name: str) -> Iterator[list[str]]:
    """The messages of logger `name` at WARNING and above (a handler on the logger itself:
    Airflow's task runner replaces the root logger's handlers, pytest's caplog among them)."""
    said: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            said.append(record.getMessage())

    handler, logger = Collect(logging.WARNING), logging.getLogger(name)
    logger.addHandler(handler)
    try:
        yield said
    finally:
        logger.removeHandler(handler)


def scored_ok(root: Path) -> int:
    scored = pq.read_table(warehouse(root, "scored", f"dt={DAY}", "scored.parquet"))
    return scored.column("faithfulness_status").to_pylist().count("ok")


@pytest.mark.parametrize("shutdown_date", ["1e308", "-1e20", "NaN", "1e999"])
def test_odd_numbers_in_headers_and_shutdown_date_never_stop_the_night(
    lake: Path,
    gateway: Callable[..., JudgeServer],
    shutdown_date: str,
) -> None:
    server = gateway(
        header_overrides=ODD_HEADERS,
        shutdown_dates={"test-judge": shutdown_date, "test-embedding": shutdown_date},
    )
    write_logs(lake, DAY, sample_interactions(20, seed=81, day=DAY))

    with said_by("ragas_ops.judge.openai.lifecycle") as said:
        run = run_dag()

    assert state(run) == "success"
    assert scored_ok(lake) >= 15, "really scored"
    assert server.stats()["requests"] > 4
    assert manifest_of(lake, DAY)["plan"]["model_warnings"] == []
    assert any(
        f"{server.base_url}/models/test-judge: field shutdown_date holds" in line
        and "ignored, no shutdown warning" in line
        for line in said
    ), said


def test_a_limit_stated_far_below_the_configured_one_is_said_once(
    lake: Path, gateway: Callable[..., JudgeServer]
) -> None:
    gateway(header_overrides={"x-ratelimit-limit-requests": "300000"})
    write_logs(lake, DAY, sample_interactions(20, seed=82, day=DAY))

    with said_by("ragas_ops.judge.engine.admission") as said:
        run = run_dag()

    assert state(run) == "success"
    note = (
        "the provider's headers state x-ratelimit-limit-requests 300,000 (configured "
        "1,000,000): far below judge.rpm/tpm"
    )
    warned = [line for line in said if note in line]
    assert len(warned) == 1, "once a chunk's judge (one chunk)"
    notes = manifest_of(lake, DAY)["scoring"]["provider_notes"]
    assert len(notes) == 1
    assert notes[0].startswith(note)
    report = warehouse(lake, "reports", f"dt={DAY}", "report.md").read_text()
    assert note in report.replace("\\", "")
