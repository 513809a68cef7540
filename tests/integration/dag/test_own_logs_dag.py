"""A user's own JSON Lines log, where it is, scored by the nightly DAG (`dag.test()`) with the
settings `ragas-ops airflow up --raw --segments --config` gives Airflow; and a segment the log
does not have refused at the plan, naming the setting, before any request."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from ragas_ops_testing.judge_server import JudgeServer
from ragas_ops_testing.local_airflow.standalone import OwnLogs, Standalone, pipeline_environment

from ragas_ops.config import ConfigError, settings_from_environment
from ragas_ops.contract.layout import Lake
from ragas_ops.contract.status import Status
from ragas_ops.labels.store import queue_rows
from ragas_ops.pipeline.plan import ShrinkRefused, plan_day
from ragas_ops.samples import sample_interactions
from ragas_ops.tables.format import day_tables
from tests.integration.dag import test_pipeline_dag as dag_tests
from tests.integration.dag.test_pipeline_dag import DAY, manifest_of, run_dag, state
from tests.pipeline_steps import run_day
from tests.support import USERS_LOG_SEGMENTS, users_log_config, write_users_jsonl_log

airflow_database = dag_tests.airflow_database
lake = dag_tests.lake


def up_with_own_logs(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    segments: tuple[str, ...],
    *,
    nested_keys: bool = False,
) -> Path:
    """The user's 30-row log in a folder of their own, and the pipeline's settings as
    `airflow up --raw <folder> --segments ... --config <file>` sets them; returns the
    warehouse. `nested_keys`: the log's id and time are nested fields, which the config maps."""
    raw = tmp_path / "my-logs"
    write_users_jsonl_log(
        raw / f"dt={DAY}" / "app.jsonl", rows=30, day=DAY, nested_keys=nested_keys
    )
    standalone = Standalone(tmp_path / "airflow-home", 8080, 8081)
    config = users_log_config(tmp_path / "my.toml", nested_keys=nested_keys)
    own = OwnLogs(raw=str(raw), segments=segments, config=config)
    for name, value in pipeline_environment(standalone, own).items():
        monkeypatch.setenv(name, value)
    return standalone.lake / "warehouse"


def test_a_users_jsonl_log_is_scored_by_the_nightly_dag_where_it_is(
    lake: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    warehouse = up_with_own_logs(tmp_path, monkeypatch, USERS_LOG_SEGMENTS)

    run = run_dag()

    assert state(run) == "success"
    assert not (lake / "raw" / f"dt={DAY}").exists(), "nothing copied into a lake"
    scored = pq.read_table(warehouse / "scored" / f"dt={DAY}" / "scored.parquet")
    assert scored.num_rows == 30
    assert sorted(scored.column("request_id").to_pylist()) == [f"req-{n:03d}" for n in range(30)]
    for metric in ("faithfulness", "answer_relevance", "context_relevance"):
        statuses = [Status(value) for value in scored.column(f"{metric}_status").to_pylist()]
        assert not [status for status in statuses if status.is_failure], metric
    daily = pq.read_table(warehouse / "daily_metrics" / f"dt={DAY}" / "daily_metrics.parquet")
    columns, values = daily["segment_column"].to_pylist(), daily["segment_value"].to_pylist()
    breakdown = set(zip(columns, values, strict=True))
    assert {("tenant", "acme"), ("tenant", "globex"), ("channel", "web")} <= breakdown
    assert (warehouse / "reports" / f"dt={DAY}" / "report.html").exists()
    assert manifest_of(warehouse.parent, DAY)["plan"]["rows"] == 30


def test_a_segment_the_logs_lack_is_refused_before_any_request_naming_the_setting(
    lake: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, judge_server: JudgeServer
) -> None:
    warehouse = up_with_own_logs(tmp_path, monkeypatch, ("tenant", "model_version"))
    settings = settings_from_environment()

    with pytest.raises(ConfigError, match=r"pipeline.segments names 'model_version', but"):
        plan_day(Lake(settings.pipeline), DAY, settings)
    run = run_dag()

    assert state(run) == "failed"
    assert judge_server.stats()["requests"] == 0
    assert not (warehouse / "scored").exists(), "nothing published"


def labelling_page_rows(warehouse: Path) -> list[dict[str, Any]]:
    """The rows the labelling page shows for DAY, read as the page reads them."""
    settings = settings_from_environment()
    return queue_rows(day_tables(Lake(settings.pipeline), settings), DAY, settings)


def test_a_nested_id_and_time_named_in_columns_key_labels_and_the_days_checks(
    lake: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    warehouse = up_with_own_logs(tmp_path, monkeypatch, USERS_LOG_SEGMENTS, nested_keys=True)

    run = run_dag()

    assert state(run) == "success"
    scored = pq.read_table(warehouse / "scored" / f"dt={DAY}" / "scored.parquet")
    assert sorted(scored.column("id").to_pylist()) == [f"req-{n:03d}" for n in range(30)]
    assert scored.schema.field("timestamp").type == pa.timestamp("us", tz="UTC")
    assert "meta.region" in scored.column_names, "the rest of the nested object carried through"
    manifest = manifest_of(warehouse.parent, DAY)
    assert manifest["plan"]["derived_ids"] == 0
    days = {stamp.date().isoformat() for stamp in scored.column("timestamp").to_pylist()}
    assert days == {DAY}, "every row's time read from meta.ts"
    page = labelling_page_rows(warehouse)
    assert page, "the labelling queue is filled"
    assert {row["row_id"] for row in page} <= {f"req-{n:03d}" for n in range(30)}


def test_a_log_without_ids_gets_derived_ids_the_same_on_a_rerun_and_the_report_says_so(
    lake: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    warehouse = up_with_own_logs(tmp_path, monkeypatch, USERS_LOG_SEGMENTS)
    scored_day = warehouse / "scored" / f"dt={DAY}" / "scored.parquet"

    assert state(run_dag()) == "success"
    first = pq.read_table(scored_day).column("id").to_pylist()
    assert state(run_dag(allow_shrink=False)) == "success"
    again = pq.read_table(scored_day).column("id").to_pylist()

    assert len(set(first)) == 30
    assert all(row_id.startswith("row-") for row_id in first)
    assert again == first, "a rerun derives the same ids"
    manifests = (warehouse / "runs" / f"dt={DAY}").glob("*.json")
    assert [json.loads(path.read_text())["plan"]["derived_ids"] for path in manifests] == [30, 30]
    report = (warehouse / "reports" / f"dt={DAY}" / "report.html").read_text(encoding="utf-8")
    assert "derived ids" in report
    assert "30 row(s) came from files without an id" in report
    page = labelling_page_rows(warehouse)
    assert page
    assert {row["row_id"] for row in page} <= set(first)


def test_a_mapped_id_the_logs_lack_is_refused_before_any_request_naming_the_setting(
    lake: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, judge_server: JudgeServer
) -> None:
    up_with_own_logs(tmp_path, monkeypatch, USERS_LOG_SEGMENTS)  # ids at request_id
    monkeypatch.setenv("RAGAS_OPS_COLUMNS_ID", "request.identifier")
    settings = settings_from_environment()

    with pytest.raises(ConfigError, match=r"columns.id = 'request.identifier', but no file"):
        plan_day(Lake(settings.pipeline), DAY, settings)
    assert judge_server.stats()["requests"] == 0


def test_own_logs_over_another_lakes_warehouse_are_refused_naming_a_warehouse_of_their_own(
    lake: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = settings_from_environment()  # the demo-like lake of the fixture
    run_day(Lake(settings.pipeline), DAY, settings, sample_interactions(40, seed=1, day=DAY))
    mine = tmp_path / "my-logs"
    write_users_jsonl_log(mine / f"dt={DAY}" / "app.jsonl", rows=10, day=DAY)
    config = users_log_config(tmp_path / "my.toml")
    monkeypatch.setenv("RAGAS_OPS_CONFIG", str(config))
    monkeypatch.setenv("RAGAS_OPS_PIPELINE_RAW_URI", str(mine))
    monkeypatch.setenv("RAGAS_OPS_PIPELINE_SEGMENTS", "tenant")
    own = settings_from_environment()

    with pytest.raises(ShrinkRefused) as refused:
        plan_day(Lake(own.pipeline), DAY, own)

    message = str(refused.value)
    assert f"scored from another lake, {lake / 'raw' / f'dt={DAY}'}" in message
    assert "give these logs a warehouse of their own (pipeline.warehouse_uri" in message
