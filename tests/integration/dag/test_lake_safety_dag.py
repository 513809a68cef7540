"""The lake never loses a day (issue 13), over the real DAG (`dag.test()`): which files survive
does not depend on their names, a missing raw partition or root never empties a published day,
readers never meet a staging file, a fatal judge error is not retried, and each run's
aggregate and report read the table that run published."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.dataset as pads
import pyarrow.parquet as pq
import pytest
from ragas_ops_testing.judge_server import JudgeServer

from ragas_ops.samples import sample_interactions
from tests.integration.dag import test_pipeline_dag as dag_tests
from tests.integration.dag.test_pipeline_dag import DAY, run_dag, state, warehouse
from tests.support import TEST_KEY

airflow_database = dag_tests.airflow_database
lake = dag_tests.lake


def raw_day(root: Path, day: str = DAY) -> Path:
    folder = root / "raw" / f"dt={day}"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def scored_ids(root: Path, day: str = DAY) -> list[Any]:
    return (
        pq.read_table(warehouse(root, "scored", f"dt={day}", "scored.parquet"))
        .column("id")
        .to_pylist()
    )


def manifests(root: Path, day: str = DAY) -> list[dict[str, Any]]:
    import json

    folder = warehouse(root, "runs", f"dt={day}")
    return [json.loads(path.read_text()) for path in sorted(folder.glob("*.json"))]


def task_instances(run: Any, task_id: str) -> list[Any]:
    return [ti for ti in run.get_task_instances() if ti.task_id == task_id]


# -- 1. file order never changes which rows survive ---------------------------------------------


@pytest.mark.parametrize("bad_name", ["a-int-answer.parquet", "z-int-answer.parquet"])
def test_a_file_with_an_int_answer_is_rejected_alone_whatever_its_name(
    lake: Path, monkeypatch: pytest.MonkeyPatch, bad_name: str
) -> None:
    monkeypatch.setenv("RAGAS_OPS_PIPELINE_ON_BAD_INPUT", "warn")
    folder = raw_day(lake)
    good = [sample_interactions(20, seed=seed, day=DAY) for seed in (1, 2)]
    pq.write_table(good[0], folder / "m-part-0.parquet")
    pq.write_table(good[1], folder / "m-part-1.parquet")
    bad = sample_interactions(5, seed=3, day=DAY)
    bad = bad.set_column(bad.schema.get_field_index("answer"), "answer", pa.array(range(5)))
    pq.write_table(bad, folder / bad_name)

    run = run_dag()

    assert state(run) == "success"
    assert scored_ids(lake) == good[0].column("id").to_pylist() + good[1].column("id").to_pylist()
    scored = pq.read_table(warehouse(lake, "scored", f"dt={DAY}", "scored.parquet"))
    assert scored.schema.field("answer").type == pa.string()
    assert scored.column("faithfulness_status").to_pylist().count("ok") >= 30, "really scored"
    (manifest,) = manifests(lake)
    (rejected,) = manifest["plan"]["rejected_files"]
    assert Path(rejected["path"]).name == bad_name
    assert "answer (column 'answer') is int64, the contract needs string" in rejected["reason"]


def test_a_corrupt_page_rejects_its_file_by_name_and_bad_utf8_only_its_row(
    lake: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.integration.e2e.test_score_e2e import corrupt_a_page

    monkeypatch.setenv("RAGAS_OPS_PIPELINE_ON_BAD_INPUT", "warn")
    folder = raw_day(lake)
    good = sample_interactions(20, seed=10, day=DAY)
    pq.write_table(good, folder / "part-0.parquet")
    pq.write_table(sample_interactions(20, seed=11, day=DAY), folder / "part-1.parquet")
    corrupt_a_page(folder / "part-1.parquet", "answer")
    answers = [text.encode() for text in good.column("answer").to_pylist()][:5]
    answers[1] = b"broken \xff text"
    raw = pa.array(answers, pa.binary())
    broken = good.slice(0, 5).set_column(
        good.schema.get_field_index("answer"),
        "answer",
        pa.Array.from_buffers(pa.string(), len(raw), raw.buffers()),
    )
    broken = broken.set_column(0, "id", pa.array([f"utf8-{i}" for i in range(5)]))
    pq.write_table(broken, folder / "part-2.parquet")

    assert state(run_dag()) == "success"

    scored = pq.read_table(warehouse(lake, "scored", f"dt={DAY}", "scored.parquet"))
    scored.validate(full=True)
    assert scored.column("id").to_pylist() == good.column("id").to_pylist() + [
        f"utf8-{i}" for i in range(5)
    ]
    row = scored.slice(21, 1).to_pylist()[0]
    assert row["faithfulness_status"] == "invalid_input"
    assert "answer is not valid UTF-8" in row["faithfulness_reason"]
    (manifest,) = manifests(lake)
    (rejected,) = manifest["plan"]["rejected_files"]
    assert Path(rejected["path"]).name == "part-1.parquet"
    assert "its data cannot be decoded" in rejected["reason"]


# -- 2. a missing raw partition or root never empties a published day ---------------------------


def test_a_missing_raw_partition_or_root_never_empties_a_published_day(
    lake: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ragas_ops.config import ConfigError, settings_from_environment
    from ragas_ops.contract.layout import Lake
    from ragas_ops.pipeline.plan import ShrinkRefused, plan_day

    table = sample_interactions(30, seed=4, day=DAY)
    pq.write_table(table, raw_day(lake) / "part-0.parquet")
    assert state(run_dag()) == "success"
    published = warehouse(lake, "scored", f"dt={DAY}", "scored.parquet")

    # A mistyped root: a configuration error, not a day without traffic.
    monkeypatch.setenv("RAGAS_OPS_PIPELINE_RAW_URI", str(lake / "raw-typo"))
    assert state(run_dag()) == "failed"
    assert scored_ids(lake) == table.column("id").to_pylist()
    with pytest.raises(ConfigError, match=r"raw root .*raw-typo does not exist"):
        plan_day(Lake(settings_from_environment().pipeline), DAY, settings_from_environment())

    # The day's partition gone from the right root: refused, naming both locations.
    monkeypatch.setenv("RAGAS_OPS_PIPELINE_RAW_URI", str(lake / "raw"))
    shutil.rmtree(raw_day(lake))
    assert state(run_dag()) == "failed"
    assert scored_ids(lake) == table.column("id").to_pylist(), "the published day is untouched"
    settings = settings_from_environment()
    with pytest.raises(ShrinkRefused) as refused:
        plan_day(Lake(settings.pipeline), DAY, settings)
    message = str(refused.value)
    assert f"{lake / 'raw'}/dt={DAY} does not exist" in message
    assert str(published) in message
    assert "30 scored rows" in message
    assert "allow_shrink" in message

    # Far fewer rows than published: refused too; the operator's allow_shrink publishes.
    pq.write_table(table.slice(0, 5), raw_day(lake) / "part-0.parquet")
    assert state(run_dag()) == "failed"
    assert len(scored_ids(lake)) == 30
    assert state(run_dag(allow_shrink=True)) == "success"
    assert scored_ids(lake) == table.column("id").to_pylist()[:5]


# -- 3. readers never meet a staging file, even after a killed publish ---------------------------

KILLED_PUBLISH = """
import sys, time
from ragas_ops.config import settings_from_environment
from ragas_ops.contract.layout import Lake
from ragas_ops.pipeline import plan
from ragas_ops.pipeline.publish import publish_day
from ragas_ops.pipeline.score import run_score_chunk
from ragas_ops.storage import ParquetOutput

settings = settings_from_environment()
lake = Lake(settings.pipeline)
day_plan = plan.plan_day(lake, sys.argv[1], settings)
for chunk in day_plan.chunks:
    run_score_chunk(lake, sys.argv[1], "killed-run", chunk=chunk, settings=settings)
write = ParquetOutput.write

def write_then_hang(self, table):
    write(self, table)
    if self.location.name == "scored.parquet":
        print("publishing", flush=True)
        time.sleep(600)  # killed here, halfway through writing the day's table

ParquetOutput.write = write_then_hang
publish_day(
    lake, sys.argv[1], "killed-run", planned_rows=day_plan.rows,
    chunk_count=len(day_plan.chunks), settings=settings,
)
"""


def read_day_like_analysts(root: Path, day: str = DAY) -> tuple[int, int]:
    """Rows of the day as DuckDB's glob and pyarrow's hive dataset read them."""
    import duckdb

    folder = warehouse(root, "scored")
    glob = f"{folder}/dt={day}/*"
    duck = duckdb.sql(f"select count(*) from read_parquet('{glob}')").fetchone()
    dataset = pads.dataset(str(folder), format="parquet", partitioning="hive")
    return int(duck[0]) if duck else -1, dataset.count_rows()


def test_a_publish_killed_halfway_leaves_the_day_readable_and_the_next_cleans_up(
    lake: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAGAS_OPS_PIPELINE_CHUNK_ROWS", "2000")
    monkeypatch.setenv("RAGAS_OPS_BATCH_ROWS", "64")
    first = sample_interactions(40, seed=5, day=DAY)
    pq.write_table(first, raw_day(lake) / "part-0.parquet")
    assert state(run_dag()) == "success"
    pq.write_table(sample_interactions(200, seed=6, day=DAY), raw_day(lake) / "part-1.parquet")

    process = subprocess.Popen(
        [sys.executable, "-c", KILLED_PUBLISH, DAY],
        stdout=subprocess.PIPE,
        env=os.environ.copy(),
        cwd=dag_tests.PROJECT,
    )
    assert process.stdout is not None
    assert process.stdout.readline().strip() == b"publishing"
    process.kill()  # SIGKILL: no cleanup of any kind runs
    process.wait(timeout=30)

    partition = warehouse(lake, "scored", f"dt={DAY}")
    assert sorted(path.name for path in partition.iterdir()) == ["scored.parquet"]
    assert read_day_like_analysts(lake) == (40, 40), "the previous table, whole"
    killed_staging = warehouse(lake, "_staging", f"dt={DAY}", "run=killed-run")
    assert any(killed_staging.iterdir()), "the killed run left its staging behind"
    # What the earlier version's crashes left inside the partition, for the next publish.
    (partition / "scored.parquet.0123abcd.tmp").write_bytes(b"half a file")
    old = time.time() - 3 * 24 * 3600
    for path in killed_staging.rglob("*"):
        os.utime(path, (old, old))

    assert state(run_dag()) == "success"

    assert sorted(path.name for path in partition.iterdir()) == ["scored.parquet"]
    assert read_day_like_analysts(lake) == (240, 240)
    assert not killed_staging.exists()
    assert not list(warehouse(lake, "_staging").rglob("*.*")), "every run's staging is gone"
    removed = manifests(lake)[-1]["published"]["removed_leftovers"]
    assert any(path.endswith("scored.parquet.0123abcd.tmp") for path in removed)
    assert any(path.endswith("run=killed-run") for path in removed)


# -- 5. a fatal judge error ends the task without Airflow's retries ------------------------------


def test_a_fatal_judge_error_fails_the_task_at_once_without_retries(
    lake: Path,
    monkeypatch: pytest.MonkeyPatch,
    start_judge_server: Callable[..., JudgeServer],
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    server = start_judge_server(api_key="sk-" + "the-other-key-0123456789")
    monkeypatch.setenv("RAGAS_OPS_JUDGE_BASE_URL", server.base_url)
    monkeypatch.setenv("RAGAS_OPS_PIPELINE_TASK_RETRIES", "2")
    monkeypatch.setenv("RAGAS_OPS_PIPELINE_RETRY_DELAY_SECONDS", "0.1")
    pq.write_table(sample_interactions(20, seed=7, day=DAY), raw_day(lake) / "part-0.parquet")

    run = run_dag()

    assert state(run) == "failed"
    (scoring,) = task_instances(run, "score_chunk")
    assert str(getattr(scoring.state, "value", scoring.state)) == "failed"
    assert scoring.try_number == 1, "a 401 is not retried"
    assert server.stats()["requests"] > 0
    captured = capsys.readouterr()
    logs = captured.out + captured.err + caplog.text
    assert "AirflowFailException: the judge cannot be used, stopping" in logs
    assert "refused the credentials (HTTP 401)" in logs
    assert TEST_KEY not in logs
    assert not warehouse(lake, "scored", f"dt={DAY}").exists()


# -- 4. each run's aggregate and report read the table that run published ------------------------


def publish_run(run_id: str, metrics: str, cache: Path, barrier: Any = None) -> tuple[Any, ...]:
    """Plan, score and publish a run of the day through the functions the DAG's tasks call."""
    from ragas_ops.config import settings_from_environment
    from ragas_ops.contract.layout import Lake
    from ragas_ops.pipeline import plan
    from ragas_ops.pipeline.manifest import manifest_base, run_totals, write_manifest
    from ragas_ops.pipeline.publish import publish_day
    from ragas_ops.pipeline.score import run_score_chunk

    settings = settings_from_environment()
    settings.metrics.names = tuple(metrics.split(","))
    settings.judge.cache.path = str(cache)
    where = Lake(settings.pipeline)
    if barrier is not None:
        barrier.wait()
    day_plan = plan.plan_day(where, DAY, settings)
    results = [
        run_score_chunk(where, DAY, run_id, chunk=chunk, settings=settings)
        for chunk in day_plan.chunks
    ]
    published = publish_day(
        where,
        DAY,
        run_id,
        planned_rows=day_plan.rows,
        chunk_count=len(day_plan.chunks),
        settings=settings,
    )
    manifest = {
        **manifest_base(DAY, run_id, settings),
        "plan": day_plan.summary(),
        "scoring": run_totals(results),
        "published": published,
    }
    write_manifest(where, DAY, run_id, manifest)
    return where, settings, published


def finish_run(run_id: str, where: Any, settings: Any, published: Any) -> str:
    """Aggregate and report, as the DAG does: "reported", or "superseded" (a skipped step)."""
    from ragas_ops.pipeline.aggregate import aggregate_day
    from ragas_ops.pipeline.lake_safety import Superseded
    from ragas_ops.pipeline.report import report_day

    try:
        aggregate_day(where, DAY, settings, published, run_id)
        report_day(where, DAY, run_id, settings, published)
    except Superseded:
        return "superseded"
    return "reported"


def run_steps(run_id: str, metrics: str, cache: Path, barrier: Any = None) -> str:
    return finish_run(run_id, *publish_run(run_id, metrics, cache, barrier))


def day_is_consistent(root: Path) -> str:
    """The published table, its daily metrics and its report describe one run; returns it."""
    table = pq.read_table(warehouse(root, "scored", f"dt={DAY}", "scored.parquet"))
    run = table.schema.metadata[b"ragas_ops.run_id"].decode()
    table_metrics = {
        name[: -len("_score")] for name in table.column_names if name.endswith("_score")
    }
    daily = pq.read_table(warehouse(root, "daily_metrics", f"dt={DAY}", "daily_metrics.parquet"))
    assert set(daily.column("metric").to_pylist()) == table_metrics
    assert daily.schema.metadata == {
        b"ragas_ops.publish_id": table.schema.metadata[b"ragas_ops.publish_id"]
    }
    report = warehouse(root, "reports", f"dt={DAY}", "report.md").read_text()
    assert run in report
    assert len(table.column("id").to_pylist()) == len(set(table.column("id").to_pylist()))
    return run


def test_a_run_superseded_by_a_later_publish_does_not_overwrite_its_aggregates(
    lake: Path, tmp_path: Path
) -> None:
    from ragas_ops.pipeline.aggregate import aggregate_day
    from ragas_ops.pipeline.lake_safety import Superseded
    from ragas_ops.pipeline.report import report_day

    pq.write_table(sample_interactions(20, seed=8, day=DAY), raw_day(lake) / "part-0.parquet")
    early = publish_run("early", "faithfulness", tmp_path / "early.sqlite")
    late = publish_run("late", "context_relevance", tmp_path / "late.sqlite")
    where, settings, published = early
    with pytest.raises(Superseded, match="a later run of 2026-11-28 published it"):
        aggregate_day(where, DAY, settings, published, "early")
    assert not warehouse(lake, "_staging", f"dt={DAY}", "run=early").exists(), "nothing to read"
    assert finish_run("late", *late) == "reported"
    assert day_is_consistent(lake) == "late"

    # The other race: early's aggregate wrote after late's; late's report writes its own again.
    early = publish_run("early", "faithfulness", tmp_path / "early.sqlite")
    late = publish_run("late", "context_relevance", tmp_path / "late.sqlite")
    where, settings, published = late
    aggregate_day(where, DAY, settings, published, "late")
    daily = warehouse(lake, "daily_metrics", f"dt={DAY}", "daily_metrics.parquet")
    early_metrics = pq.read_table(daily).replace_schema_metadata(
        {"ragas_ops.publish_id": early[2]["publish_id"]}
    )
    pq.write_table(early_metrics.filter(pa.compute.equal(early_metrics["metric"], "x")), daily)
    report_day(where, DAY, "late", settings, published)
    assert day_is_consistent(lake) == "late"


def one_run(
    run_id: str,
    metrics: str,
    tmp_path: Path,
    barrier: threading.Barrier,
    outcomes: dict[str, str],
    errors: list[BaseException],
) -> None:
    try:
        outcomes[run_id] = run_steps(run_id, metrics, tmp_path / f"{run_id}.sqlite", barrier)
    except BaseException as error:  # reported by the test, in its own thread
        errors.append(error)


def test_two_runs_of_a_day_started_together_leave_one_consistent_day(
    lake: Path, tmp_path: Path
) -> None:
    pq.write_table(sample_interactions(30, seed=9, day=DAY), raw_day(lake) / "part-0.parquet")
    for round_number in range(3):
        barrier = threading.Barrier(2)
        outcomes: dict[str, str] = {}
        errors: list[BaseException] = []
        runs = [
            threading.Thread(
                target=one_run,
                args=(f"{name}{round_number}", metrics, tmp_path, barrier, outcomes, errors),
            )
            for name, metrics in (("a", "faithfulness"), ("b", "context_relevance"))
        ]
        for thread in runs:
            thread.start()
        for thread in runs:
            thread.join(timeout=300)
        assert not errors, errors
        winner = day_is_consistent(lake)
        assert outcomes[winner] == "reported"
        assert len(manifests(lake)) == 2 * (round_number + 1), "one manifest per run, none lost"


# -- 6. spend is kept per run: a cached rerun never erases what the day cost ---------------------


def test_a_cached_rerun_keeps_what_the_first_run_paid(
    lake: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "ragas-ops.toml"
    config.write_text(
        '[prices."test-judge"]\ninput_per_million = 0.15\noutput_per_million = 0.6\n'
        '[prices."test-embedding"]\ninput_per_million = 0.02\n'
    )
    monkeypatch.setenv("RAGAS_OPS_CONFIG", str(config))
    pq.write_table(sample_interactions(20, seed=12, day=DAY), raw_day(lake) / "part-0.parquet")

    assert state(run_dag()) == "success"
    assert state(run_dag()) == "success"  # the rerun: every call a cache hit

    first, rerun = sorted(manifests(lake), key=lambda manifest: manifest["created_at"])
    assert first["run_id"] != rerun["run_id"], "two manifests: none overwritten"
    paid_first = first["scoring"]["usage"]["cost_usd"]
    paid_rerun = rerun["scoring"]["usage"]["cost_usd"]
    assert paid_first > 0
    assert paid_rerun < paid_first / 10
    daily = pq.read_table(warehouse(lake, "daily_metrics", f"dt={DAY}", "daily_metrics.parquet"))
    (overall, *_) = [row for row in daily.to_pylist() if row["segment_column"] == "all"]
    assert overall["run_spend_usd"] == pytest.approx(paid_rerun)
    assert overall["other_runs_spend_usd"] == pytest.approx(paid_first)
    assert overall["day_spend_usd"] == pytest.approx(paid_first + paid_rerun)
    assert overall["day_runs"] == 2
    report = warehouse(lake, "reports", f"dt={DAY}", "report.md").read_text()
    total = f"${paid_first + paid_rerun:,.4f}"
    assert f"| Paid for the day in all | {total} |" in report
    assert f"Cost over the last 30 days | {total} |" in report
