"""The nightly DAG, run for real by Airflow (`dag.test()`), on a local lake and on S3 over HTTP.

Airflow reads its configuration when first imported, so this module points it at a throwaway
home (SQLite metadata) and at the project's `dags/` before importing it.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

PROJECT = Path(__file__).resolve().parents[3]
AIRFLOW_HOME = Path(tempfile.mkdtemp(prefix="ragas-ops-airflow-"))
os.environ.update(
    {
        "AIRFLOW_HOME": str(AIRFLOW_HOME),
        "AIRFLOW__CORE__DAGS_FOLDER": str(PROJECT / "dags"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__UNIT_TEST_MODE": "True",
    }
)

from ragas_ops_testing.judge_server import JudgeServer  # noqa: E402

from ragas_ops.samples import sample_interactions  # noqa: E402
from tests.support import TEST_KEY  # noqa: E402

DAY = "2026-11-28"
DAG_ID = "ragas_ops_nightly"


@functools.cache
def migrate_airflow_database() -> None:
    """`airflow db migrate` on this process's AIRFLOW_HOME, once: the five DAG modules that
    share the home (each worker of pytest-xdist has its own) need the schema, not a fresh one
    each (about 10 s a migration)."""
    subprocess.run(
        [sys.executable, "-m", "airflow", "db", "migrate"],
        check=True,
        capture_output=True,
        env=os.environ.copy(),
        timeout=300,
    )


@pytest.fixture(scope="module", autouse=True)
def airflow_database() -> None:
    migrate_airflow_database()


@pytest.fixture
def lake(tmp_path: Path, judge_server: JudgeServer, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Pipeline settings for a local lake under tmp_path, scored by the test judge server."""
    root = tmp_path / "lake"
    (root / "raw").mkdir(parents=True)  # the log lake exists; its days may not
    for name, value in {
        "RAGAS_OPS_PIPELINE_RAW_URI": str(root / "raw"),
        "RAGAS_OPS_PIPELINE_WAREHOUSE_URI": str(root / "warehouse"),
        "RAGAS_OPS_PIPELINE_CHUNK_ROWS": "20",
        "RAGAS_OPS_PIPELINE_SEGMENTS": "app,model_version",
        "RAGAS_OPS_JUDGE_BASE_URL": judge_server.base_url,
        "RAGAS_OPS_JUDGE_MODEL": "test-judge",
        "RAGAS_OPS_JUDGE_EMBEDDING_MODEL": "test-embedding",
        "RAGAS_OPS_JUDGE_CACHE_PATH": str(tmp_path / "cache" / "judge.sqlite"),
        "RAGAS_OPS_JUDGE_RPM": "none",
        "RAGAS_OPS_JUDGE_TPM": "none",
        "OPENAI_API_KEY": TEST_KEY,
    }.items():
        monkeypatch.setenv(name, value)
    return root


@pytest.fixture
def plan_log() -> Iterator[list[logging.LogRecord]]:
    """The records of the plan task's logger. A handler on the logger itself: Airflow's
    task runner replaces the root logger's handlers (pytest's caplog among them)."""
    records: list[logging.LogRecord] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    handler = Collect(logging.INFO)
    logger = logging.getLogger("ragas_ops.pipeline.plan")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    yield records
    logger.removeHandler(handler)
    logger.setLevel(level)


def write_logs(root: Path, day: str, *tables: pa.Table) -> None:
    folder = root / "raw" / f"dt={day}"
    folder.mkdir(parents=True, exist_ok=True)
    for index, table in enumerate(tables):
        pq.write_table(table, folder / f"part-{index}.parquet", row_group_size=16)


def run_dag(day: str | None = DAY, **conf: Any) -> Any:
    """Parse the DAG folder as Airflow does and run the DAG once for `day`."""
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(str(PROJECT / "dags"))
    assert not bag.import_errors
    run_conf = {"day": day, **conf} if day is not None else conf
    return bag.dags[DAG_ID].test(run_conf=run_conf)


def state(run: Any) -> str:
    return str(getattr(run.state, "value", run.state))


def warehouse(root: Path, *parts: str) -> Path:
    return root.joinpath("warehouse", *parts)


def manifest_of(root: Path, day: str) -> dict[str, Any]:
    (path,) = warehouse(root, "runs", f"dt={day}").glob("*.json")
    loaded: dict[str, Any] = json.loads(path.read_text())
    return loaded


def test_the_dag_folder_imports_cleanly_without_heavy_imports() -> None:
    """Parsing the DAG folder (what Airflow does every few seconds) imports no heavy library:
    those are imported inside the tasks. Its speed is measured in benchmarks/bench_pipeline.py."""
    heavy = ("numpy", "pyarrow", "pandas", "openai", "torch", "pydantic", "pyiceberg")
    probe = (
        "import sys, json;"
        "from airflow.dag_processing.dagbag import DagBag;"
        f"before = set(sys.modules); bag = DagBag({str(PROJECT / 'dags')!r});"
        "loaded = sorted({name.split('.')[0] for name in set(sys.modules) - before});"
        "print(json.dumps({'errors': bag.import_errors, 'dags': sorted(bag.dags),"
        " 'loaded': loaded}))"
    )
    finished = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        env=os.environ.copy(),
        timeout=120,
        check=True,
    )
    result = json.loads(finished.stdout.strip().splitlines()[-1])
    assert result["errors"] == {}
    assert result["dags"] == ["ragas_ops_maintenance", DAG_ID]
    assert not set(result["loaded"]) & set(heavy), result["loaded"]


def test_the_manifest_names_the_model_that_ran_not_an_unused_setting() -> None:
    from ragas_ops.config import Settings
    from ragas_ops.pipeline.manifest import manifest_base

    settings = Settings()
    assert (
        manifest_base("2026-01-01", "r", settings)["judge_model"] == settings.judge.endpoint.model
    )
    settings.judge.kind = "local"
    manifest = manifest_base("2026-01-01", "r", settings)
    assert manifest["judge_kind"] == "local"
    local_judge = "local:all-MiniLM-L6-v2-onnx-fused-int8"
    assert manifest["judge_model"] == manifest["embedding_model"] == local_judge


def test_a_day_is_scored_published_aggregated_and_reported(
    lake: Path, judge_server: JudgeServer
) -> None:
    first, second = (
        sample_interactions(45, seed=1, day=DAY),
        sample_interactions(30, seed=2, day=DAY),
    )
    write_logs(lake, DAY, first, second)

    run = run_dag()

    assert state(run) == "success"
    scored = pq.read_table(warehouse(lake, "scored", f"dt={DAY}", "scored.parquet"))
    expected_ids = first.column("id").to_pylist() + second.column("id").to_pylist()
    assert scored.column("id").to_pylist() == expected_ids, "every row once, in input order"
    assert set(scored.column("faithfulness_status").to_pylist()) <= {
        "ok",
        "not_applicable",
        "invalid_input",
    }
    manifest = manifest_of(lake, DAY)
    assert manifest["plan"]["rows"] == 75
    assert manifest["plan"]["chunks"] == 4
    assert manifest["scoring"]["rows_out"] == 75
    assert manifest["published"]["rows"] == 75
    assert manifest["regression"]["verdict"] == "not_checked", "a first day has no baseline"
    daily = pq.read_table(warehouse(lake, "daily_metrics", f"dt={DAY}", "daily_metrics.parquet"))
    overall = [row for row in daily.to_pylist() if row["segment_column"] == "all"]
    assert {row["metric"] for row in overall} == {
        "faithfulness",
        "answer_relevance",
        "context_relevance",
    }
    assert all(row["rows"] == 75 for row in overall)
    assert {row["segment_column"] for row in daily.to_pylist()} == {"all", "app", "model_version"}
    html = warehouse(lake, "reports", f"dt={DAY}", "report.html").read_text()
    assert DAY in html
    assert "<svg" in html
    assert warehouse(lake, "reports", f"dt={DAY}", "report.md").exists()
    assert not list(warehouse(lake, "_staging").rglob("*.parquet")), "staging is cleaned up"
    assert not list(warehouse(lake, "_staging").glob("dt=*")), "no empty day folder left"

    # Rerunning the day republishes the same rows and pays nothing.
    before = judge_server.stats()["requests"]
    assert state(run_dag()) == "success"
    again = pq.read_table(warehouse(lake, "scored", f"dt={DAY}", "scored.parquet"))
    assert again.column("id").to_pylist() == expected_ids
    assert (
        again.column("faithfulness_score").to_pylist()
        == scored.column("faithfulness_score").to_pylist()
    )
    assert judge_server.stats()["requests"] == before
    manifests = sorted(warehouse(lake, "runs", f"dt={DAY}").glob("*.json"))
    assert len(manifests) == 2
    rerun = max((json.loads(path.read_text()) for path in manifests), key=lambda m: m["created_at"])
    hits = sum(again.column("judge_cache_hits").to_pylist())
    assert hits > 0
    assert rerun["scoring"]["usage"]["cache_hits"] == hits, "the manifest counts them as rows do"


def test_an_empty_day_publishes_an_empty_partition(lake: Path) -> None:
    (lake / "raw" / "dt=2026-11-19").mkdir()  # a lake of days (one with none is broken input)
    run = run_dag("2026-11-20")

    assert state(run) == "success"
    scored = pq.read_table(warehouse(lake, "scored", "dt=2026-11-20", "scored.parquet"))
    assert scored.num_rows == 0
    assert "faithfulness_score" in scored.column_names
    manifest = manifest_of(lake, "2026-11-20")
    assert manifest["no_traffic"] is True
    assert manifest["plan"]["rows"] == 0


def test_a_day_without_a_folder_is_told_apart_from_an_empty_folder(
    lake: Path, plan_log: list[logging.LogRecord]
) -> None:
    """A backfill that began before the lake's first day published empty days as "no
    traffic", with no word that their folders did not exist (the first-hour review): both
    stay a normal outcome, but the plan's log, the manifest and the report say which."""
    write_logs(lake, "2026-11-25", sample_interactions(5, seed=25, day="2026-11-25"))
    write_logs(lake, "2026-11-26", sample_interactions(5, seed=26, day="2026-11-26"))
    (lake / "raw" / "dt=2026-11-24").mkdir()  # the exporter ran and wrote nothing

    assert state(run_dag("2026-11-23")) == "success"
    assert state(run_dag("2026-11-24")) == "success"

    missing, empty = manifest_of(lake, "2026-11-23"), manifest_of(lake, "2026-11-24")
    assert (missing["no_traffic"], empty["no_traffic"]) == (True, True)
    assert missing["no_traffic_reason"] == "no_day_folder"
    assert empty["no_traffic_reason"] == "empty_day_folder"
    assert missing["plan"]["folder_exists"] is False
    assert missing["plan"]["lake_days"] == {"count": 3, "first": "2026-11-24", "last": "2026-11-26"}
    folder = lake / "raw" / "dt=2026-11-23"
    said = (
        f"its folder {folder} does not exist (the raw root holds 3 day(s), "
        "2026-11-24 to 2026-11-26)"
    )
    lines = [f"{record.levelname} {record.getMessage()}" for record in plan_log]
    (missing_line,) = [line for line in lines if "plan 2026-11-23:" in line]
    assert missing_line == f"WARNING plan 2026-11-23: no traffic: {said}"
    (empty_line,) = [line for line in lines if "plan 2026-11-24:" in line]
    empty_folder = lake / "raw" / "dt=2026-11-24"
    assert empty_line.startswith(
        f"INFO plan 2026-11-24: no traffic: the folder {empty_folder} holds no row"
    )
    missing_report = warehouse(lake, "reports", "dt=2026-11-23", "report.html").read_text()
    assert f"none: {said}" in missing_report
    markdown = warehouse(lake, "reports", "dt=2026-11-23", "report.md").read_text()
    assert "does not exist (the raw root holds 3 day(s), 2026-11-24 to 2026-11-26)" in markdown
    empty_report = warehouse(lake, "reports", "dt=2026-11-24", "report.html").read_text()
    assert "holds no row" in empty_report
    assert "does not exist" not in empty_report


def test_parquet_names_in_any_case_are_read_and_other_files_are_named_not_lost(
    lake: Path,
) -> None:
    """`part-1.PARQUET` was skipped without a word, and a day of such files published as
    "no traffic" (the messy-lake review)."""
    folder = lake / "raw" / "dt=2026-11-21"
    folder.mkdir(parents=True)
    table = sample_interactions(12, seed=21, day="2026-11-21")
    pq.write_table(table.slice(0, 7), folder / "part-0.parquet")
    pq.write_table(table.slice(7), folder / "part-1.PARQUET")
    pq.write_table(table.slice(0, 3), folder / "part-0 (copy).parquet")  # logged twice
    (folder / "notes.txt").write_text("who,what\n")
    (folder / "_SUCCESS").write_text("")
    empty_day = lake / "raw" / "dt=2026-11-22"
    empty_day.mkdir(parents=True)
    (empty_day / "export.json").write_text("{}")

    assert state(run_dag("2026-11-21")) == "success"
    assert state(run_dag("2026-11-22")) == "success"

    scored = pq.read_table(warehouse(lake, "scored", "dt=2026-11-21", "scored.parquet"))
    logged = table.column("id").to_pylist() + table.column("id").to_pylist()[:3]
    assert sorted(scored.column("id").to_pylist()) == sorted(logged), "scored as logged"
    manifest = manifest_of(lake, "2026-11-21")
    assert manifest["plan"]["ignored_files"] == [str(folder / "notes.txt")]
    assert manifest["repeated_ids"] == {"rows": 6, "ids": 3, "ids_with_different_content": 0}
    assert manifest["dated_elsewhere"] == {"rows": 0, "first": None, "last": None}
    report = warehouse(lake, "reports", "dt=2026-11-21", "report.md").read_text()
    assert "ignored file" in report
    assert "notes.txt" in report
    assert "6 rows share 3 id(s), 0 of them with different content" in report
    other = manifest_of(lake, "2026-11-22")
    assert other["no_traffic"] is False, "a folder of files is not a day without traffic"
    assert other["plan"]["ignored_files"] == [str(empty_day / "export.json")]


def test_a_rerun_says_what_its_publish_replaced_in_the_parquet_layout_too(lake: Path) -> None:
    """A rerun after a file was added (or rewritten) replaced the day silently: the manifest
    and the report now name the publish replaced, its rows and the files that changed."""
    day = "2026-11-23"
    folder = lake / "raw" / f"dt={day}"
    folder.mkdir(parents=True)
    pq.write_table(sample_interactions(6, seed=31, day=day), folder / "part-0.parquet")
    assert state(run_dag(day)) == "success"
    (first,) = warehouse(lake, "runs", f"dt={day}").glob("*.json")
    assert json.loads(first.read_text())["replaced"] is None, "the day's first publish"

    pq.write_table(sample_interactions(4, seed=32, day=day), folder / "part-1.parquet")
    pq.write_table(sample_interactions(7, seed=33, day=day), folder / "part-0.parquet")
    assert state(run_dag(day)) == "success"

    (second,) = set(warehouse(lake, "runs", f"dt={day}").glob("*.json")) - {first}
    replaced = json.loads(second.read_text())["replaced"]
    assert replaced["rows_before"] == 6
    assert replaced["rows_after"] == 11
    assert replaced["files_added"] == [str(folder / "part-1.parquet")]
    assert replaced["files_changed"] == [str(folder / "part-0.parquet")]
    assert replaced["files_removed"] == []
    assert replaced["publish_id"] == json.loads(first.read_text())["published"]["publish_id"]
    report = warehouse(lake, "reports", f"dt={day}", "report.md").read_text()
    assert "rows 6 -&gt; 11" in report or "rows 6 -> 11" in report


def test_a_corrupt_file_is_reported_and_fails_the_run_after_the_rest_is_published(
    lake: Path,
) -> None:
    good = sample_interactions(25, seed=3, day=DAY)
    write_logs(lake, DAY, good)
    (lake / "raw" / f"dt={DAY}" / "part-9.parquet").write_bytes(b"PAR1 this is not parquet")
    pq.write_table(
        pa.table({"query": ["q"], "answer": ["a"]}), lake / "raw" / f"dt={DAY}" / "part-8.parquet"
    )

    run = run_dag()

    assert state(run) == "failed", "on_bad_input=fail: someone has to look"
    scored = pq.read_table(warehouse(lake, "scored", f"dt={DAY}", "scored.parquet"))
    assert scored.column("id").to_pylist() == good.column("id").to_pylist()
    rejected = {
        Path(item["path"]).name: item["reason"]
        for item in manifest_of(lake, DAY)["plan"]["rejected_files"]
    }
    assert set(rejected) == {"part-8.parquet", "part-9.parquet"}
    assert "not a readable Parquet file" in rejected["part-9.parquet"]
    assert "question (column 'question')" in rejected["part-8.parquet"]
    report = warehouse(lake, "reports", f"dt={DAY}", "report.md").read_text()
    assert "rejected file" in report
    assert "part-9.parquet" in report


def test_a_day_that_is_not_a_date_is_refused_before_anything_is_read(lake: Path) -> None:
    from airflow.sdk.definitions.param import ParamValidationError  # type: ignore[attr-defined]

    with pytest.raises((ParamValidationError, ValueError)):
        run_dag("../../x")
    assert not (lake / "warehouse").exists()


def test_a_mistyped_conf_key_fails_the_run_instead_of_scoring_another_day(lake: Path) -> None:
    """`{"date": D}` was ignored and the run scored the day before the run instead."""
    run = run_dag(None, date=DAY)
    assert state(run) == "failed"
    assert not (lake / "warehouse" / "scored").exists(), "nothing scored, nothing published"


def test_a_retried_chunk_leaves_no_duplicate(lake: Path, tmp_path: Path) -> None:
    """A chunk scored twice (a retry after a crash) overwrites its staging file."""
    from ragas_ops.config import settings_from_environment
    from ragas_ops.contract.layout import Lake
    from ragas_ops.pipeline.plan import plan_day
    from ragas_ops.pipeline.publish import publish_day
    from ragas_ops.pipeline.score import run_score_chunk

    write_logs(lake, DAY, sample_interactions(50, seed=4, day=DAY))
    settings = settings_from_environment()
    where = Lake(settings.pipeline)
    day_plan = plan_day(where, DAY, settings)
    for chunk in day_plan.chunks:
        run_score_chunk(where, DAY, "run-1", chunk=chunk, settings=settings)
    run_score_chunk(where, DAY, "run-1", chunk=day_plan.chunks[1], settings=settings)  # the retry

    published = publish_day(
        where,
        DAY,
        "run-1",
        planned_rows=day_plan.rows,
        chunk_count=len(day_plan.chunks),
        settings=settings,
    )

    ids = (
        pq.read_table(warehouse(lake, "scored", f"dt={DAY}", "scored.parquet"))
        .column("id")
        .to_pylist()
    )
    assert published["rows"] == 50
    assert len(ids) == len(set(ids)) == 50


def test_each_chunk_reads_only_its_slice(lake: Path) -> None:
    from ragas_ops.config import settings_from_environment
    from ragas_ops.contract.layout import Lake
    from ragas_ops.pipeline.chunks import read_slices
    from ragas_ops.pipeline.plan import plan_day

    table = sample_interactions(100, seed=5, day=DAY)
    write_logs(lake, DAY, table)
    settings = settings_from_environment()
    where = Lake(settings.pipeline)
    day_plan = plan_day(where, DAY, settings)

    assert [chunk.rows for chunk in day_plan.chunks] == [20] * 5
    third = pa.concat_tables(list(read_slices(where, day_plan.chunks[2], settings.columns)))
    assert third.column("id").to_pylist() == table.column("id").to_pylist()[40:60]


def test_a_million_row_day_plans_within_the_mapping_limit(
    lake: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ragas_ops.config import settings_from_environment
    from ragas_ops.contract.layout import Lake
    from ragas_ops.pipeline.plan import InputFile, cut_chunks, plan_day

    monkeypatch.setenv("RAGAS_OPS_PIPELINE_CHUNK_ROWS", "500")
    settings = settings_from_environment()
    files = [InputFile(f"part-{i}.parquet", 0, 10_000) for i in range(100)]
    chunk_rows = max(settings.pipeline.chunk_rows, -(-1_000_000 // settings.pipeline.max_chunks))
    chunks = cut_chunks(files, chunk_rows)
    assert len(chunks) <= settings.pipeline.max_chunks
    assert sum(chunk.rows for chunk in chunks) == 1_000_000
    assert plan_day(Lake(settings.pipeline), "2026-01-01", settings).chunks == []


@pytest.fixture
def s3_lake(
    lake: Path, monkeypatch: pytest.MonkeyPatch, start_s3: Callable[[], str]
) -> Iterator[str]:
    endpoint = start_s3()
    monkeypatch.setenv("RAGAS_OPS_PIPELINE_RAW_URI", "s3://rag-logs/raw")
    monkeypatch.setenv("RAGAS_OPS_PIPELINE_WAREHOUSE_URI", "s3://rag-warehouse/ragas")
    return endpoint


def test_the_dag_runs_on_s3_over_http(s3_lake: str, judge_server: JudgeServer) -> None:
    import boto3

    from ragas_ops.storage import locate

    client = boto3.client("s3", endpoint_url=s3_lake, region_name="us-east-1")
    for bucket in ("rag-logs", "rag-warehouse"):
        client.create_bucket(Bucket=bucket)
    raw = locate(f"s3://rag-logs/raw/dt={DAY}")
    table = sample_interactions(30, seed=6, day=DAY)
    pq.write_table(table, f"{raw.path}/part-0.parquet", filesystem=raw.filesystem)

    run = run_dag()

    assert state(run) == "success"
    target = locate(f"s3://rag-warehouse/ragas/scored/dt={DAY}/scored.parquet")
    scored = pq.read_table(target.path, filesystem=target.filesystem)
    assert scored.column("id").to_pylist() == table.column("id").to_pylist()
    keys = [item["Key"] for item in client.list_objects_v2(Bucket="rag-warehouse")["Contents"]]
    assert f"ragas/reports/dt={DAY}/report.html" in keys
    assert f"ragas/daily_metrics/dt={DAY}/daily_metrics.parquet" in keys
    assert not [key for key in keys if "_staging" in key and not key.endswith("/")]
    assert judge_server.stats()["requests"] > 0
