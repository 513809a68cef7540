"""What the pipeline's publish writes in the run's manifest, and what the plan hands on:
built in `pipeline.manifest` and `pipeline.plan`, so that the DAG file only wires tasks."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa
import pytest

from ragas_ops.config import Settings
from ragas_ops.pipeline.input_health import input_alarm
from ragas_ops.pipeline.manifest import day_spend, manifest_base, run_manifest, run_totals
from ragas_ops.pipeline.plan import (
    Chunk,
    DayPlan,
    InputFile,
    RejectedFile,
    Slice,
    chunk_from_dict,
    plan_result,
    quiet_days,
)
from ragas_ops.pipeline.report import dated_elsewhere, repeated_ids

DAY = "2026-03-04"


def chunk_result(index: int, rows: int, cost: float | None, **extra: Any) -> dict[str, Any]:
    usage = {
        "requests": rows,
        "prompt_tokens": 10 * rows,
        "cached_prompt_tokens": 0,
        "completion_tokens": rows,
        "embedding_requests": 0,
        "embedding_tokens": 0,
        "cache_hits": 0,
        "cost_usd": cost,
    }
    return {
        "index": index,
        "rows": rows,
        "statuses": {"faithfulness": {"ok": rows - 1, "judge_error": 1}},
        "usage": usage,
        "events": {},
        "judge": "openai:test-judge",
        "seconds": 1.5,
        "attempt": f"attempt-{index}",
        **extra,
    }


def plan(rows: int, rejected: bool = False) -> dict[str, Any]:
    day_plan = DayPlan(DAY, files=[InputFile("raw/a.parquet", 100, rows)] if rows else [])
    if rejected:
        day_plan.rejected.append(RejectedFile("raw/b.parquet", "not Parquet"))
    return day_plan.summary()


def manifest(summary: dict[str, Any], results: list[dict[str, Any]]) -> dict[str, Any]:
    return run_manifest(
        DAY,
        "manual__1",
        Settings(),
        try_number=2,
        plan_summary=summary,
        chunk_results=results,
        published={"publish_id": "p1", "table": "lake/scored.parquet"},
    )


def test_the_manifest_sums_the_chunks_in_index_order_whatever_order_they_came_in() -> None:
    results = [chunk_result(1, 3, 0.5, mode="batch", batches=["b2"]), chunk_result(0, 4, 0.25)]
    made = manifest(plan(7), results)
    scoring = made["scoring"]
    assert scoring["rows_out"] == 7
    assert scoring["statuses"] == {"faithfulness": {"ok": 5, "judge_error": 2}}
    assert scoring["usage"]["cost_usd"] == 0.75
    assert scoring["usage"]["prompt_tokens"] == 70
    assert scoring["modes"] == ["batch", "sync"]
    assert scoring["batches"] == ["b2"]
    assert list(scoring["spend_by_attempt"]) == ["attempt-0", "attempt-1"]
    assert scoring["scoring_seconds"] == 3.0
    assert scoring == run_totals(sorted(results, key=lambda result: result["index"]))


def test_the_manifest_records_the_run_the_plan_and_the_publish() -> None:
    settings = Settings()
    made = manifest(plan(4), [chunk_result(0, 4, 0.1)])
    base = manifest_base(DAY, "manual__1", settings)
    assert {key: made[key] for key in base if key != "created_at"} == {
        key: value for key, value in base.items() if key != "created_at"
    }
    assert made["run_id"] == "manual__1"
    assert made["try_number"] == 2
    assert made["plan"] == plan(4)
    assert made["published"] == {"publish_id": "p1", "table": "lake/scored.parquet"}
    assert made["no_traffic"] is False


def test_an_unknown_price_is_an_unknown_cost_never_a_partial_sum() -> None:
    made = manifest(plan(7), [chunk_result(0, 4, 0.25), chunk_result(1, 3, None)])
    assert made["scoring"]["usage"]["cost_usd"] is None


def test_no_traffic_is_a_day_without_rows_and_without_rejected_or_ignored_files() -> None:
    assert manifest(plan(0), [])["no_traffic"] is True
    assert manifest(plan(0, rejected=True), [])["no_traffic"] is False
    ignored = DayPlan(DAY, ignored=["raw/dt=D/part-0.json"]).summary()
    assert ignored["ignored_files"] == ["raw/dt=D/part-0.json"]
    assert manifest(ignored, [])["no_traffic"] is False


def test_the_plan_hands_on_its_chunks_with_the_day_and_its_rows() -> None:
    schema = pa.schema([("question", pa.string())])
    chunks = [
        Chunk(0, [Slice("raw/a.parquet", 0, 60)], schema),
        Chunk(1, [Slice("raw/a.parquet", 60, 40)], schema),
    ]
    day_plan = DayPlan(DAY, files=[InputFile("raw/a.parquet", 100, 100)], chunks=chunks)
    result = plan_result(day_plan, backfill=True)
    assert result["day"] == DAY
    assert result["backfill"] is True
    assert result["summary"] == {**day_plan.summary(), "model_warnings": []}
    assert [(chunk["day"], chunk["day_rows"]) for chunk in result["chunks"]] == [(DAY, 100)] * 2
    assert [chunk_from_dict(chunk) for chunk in result["chunks"]] == chunks


def test_repeated_ids_are_counted_copies_and_conflicts_apart_and_null_ids_never() -> None:
    table = pa.table(
        {
            "id": ["a", "a", "b", "b", "c", None, None],
            "question": ["q1", "q1", "q2", "q2", "q3", "q4", "q5"],
            "contexts": [["x"], ["x"], ["y"], ["y"], ["z"], ["w"], ["v"]],
            "answer": ["a1", "a1", "a2", "other", "a3", "a4", "a5"],
        }
    )
    assert repeated_ids(table, Settings()) == {
        "rows": 4,
        "ids": 2,
        "ids_with_different_content": 1,
    }
    assert repeated_ids(table.drop_columns(["id"]), Settings())["rows"] == 0
    assert repeated_ids(table.slice(4), Settings())["rows"] == 0


def test_rows_timestamped_on_another_day_are_counted_in_utc() -> None:
    from datetime import datetime

    stamps = [
        datetime(2026, 11, 1, 23, 30),
        datetime(2026, 10, 1, 8, 0),
        datetime(2026, 10, 3, 8, 0),
        None,
        datetime(2026, 11, 2, 0, 0),
    ]
    naive = pa.table({"timestamp": pa.array(stamps, pa.timestamp("us"))})
    assert dated_elsewhere(naive, "2026-11-01") == {
        "rows": 3,
        "first": "2026-10-01",
        "last": "2026-11-02",
    }
    paris = pa.array(
        [datetime(2026, 11, 1, 22, 30, tzinfo=UTC)], pa.timestamp("us", tz="Europe/Paris")
    )  # 23:30 in Paris, still 1 November in UTC
    assert dated_elsewhere(pa.table({"timestamp": paris}), "2026-11-01")["rows"] == 0
    assert dated_elsewhere(pa.table({"other": [1]}), "2026-11-01")["rows"] == 0


def test_the_other_runs_spend_is_known_when_theirs_is_whatever_this_runs_is(tmp_path) -> None:
    """A priced run, then an unpriced one (a model without a price) that publishes: what the
    first paid is known, and was shown as unknown (the cost review)."""
    import json

    from ragas_ops.contract.layout import Lake

    settings = Settings()
    settings.pipeline.warehouse_uri = str(tmp_path / "warehouse")
    lake = Lake(settings.pipeline)
    for run, cost in (("priced", 0.0195), ("unpriced", None)):
        target = lake.manifest(DAY, run, f"p-{run}")
        manifest = {
            "run_id": run,
            "published": {"publish_id": f"p-{run}"},
            "scoring": {"usage": {"cost_usd": cost}, "spend_by_attempt": {f"a-{run}": cost}},
        }
        target.write_text(json.dumps(manifest))

    spend = day_spend(lake, DAY, "p-unpriced")

    assert spend["run_spend_usd"] is None
    assert spend["other_runs_spend_usd"] == 0.0195
    assert spend["day_spend_usd"] is None, "never a partial sum"
    assert spend["day_runs"] == 2
    assert day_spend(lake, DAY, "p-priced")["other_runs_spend_usd"] is None


def test_quiet_days_count_back_to_the_raw_roots_last_earlier_day() -> None:

    assert quiet_days("2026-11-28", ["2026-11-25", "2026-11-30"]) == 3
    assert quiet_days("2026-11-28", ["2026-11-27", "2026-11-28"]) == 1
    assert quiet_days("2026-11-28", ["2026-11-29"]) == 0, "before the lake's first day: none"


@pytest.mark.parametrize(
    ("quiet", "limit", "alarmed"), [(2, 3, False), (3, 3, True), (30, 0, False)]
)
def test_max_quiet_days_nights_in_a_row_without_traffic_fail_the_run(
    quiet: int, limit: int, alarmed: bool
) -> None:

    settings = Settings()
    settings.pipeline.max_quiet_days = limit
    summary = {**plan(0), "day": "2026-11-28", "folder": "/lake/raw/dt=2026-11-28"}
    summary["quiet_days"] = quiet

    alarm = input_alarm(summary, settings)

    assert (alarm is not None) == alarmed
    if alarm is not None:
        assert alarm["severity"] == "failure"
        assert "no traffic for 3 days in a row up to 2026-11-28" in alarm["message"]
        assert "pipeline.max_quiet_days" in alarm["message"]


def test_every_file_rejected_is_a_warning_under_on_bad_input_warn() -> None:

    settings = Settings()
    settings.pipeline.on_bad_input = "warn"

    alarm = input_alarm({**plan(0, rejected=True), "day": "2026-11-28"}, settings)

    assert alarm is not None
    assert (alarm["kind"], alarm["severity"]) == ("all_files_rejected", "warning")


def legacy_warehouse(tmp_path: Any) -> Any:
    """A Parquet warehouse written before the `runs` table had Parquet rows: one manifest of
    run `old` under its un-prefixed name, and one of run `new` written since."""
    import json

    from ragas_ops.contract.layout import Lake
    from ragas_ops.pipeline.manifest import write_manifest

    settings = Settings()
    settings.pipeline.warehouse_uri = str(tmp_path / "warehouse")
    lake = Lake(settings.pipeline)
    old = {
        "run_id": "old",
        "day": DAY,
        "created_at": "2026-03-04T01:00:00+00:00",
        "published": {"publish_id": "p-old", "published_at": "2026-03-04T01:00:00+00:00"},
        "plan": {**plan(3), "rows": 3},
        "scoring": {"usage": {"cost_usd": 0.5}, "spend_by_attempt": {"a-old": 0.5}},
    }
    legacy = lake.legacy_manifest(DAY, "old", "p-old")
    legacy.write_text(json.dumps({**old, "report": {"html": "reports/old.html"}}))
    os.utime(legacy.path, (1_772_600_000, 1_772_600_000))  # its report's rewrite, 2026-03-04
    new = {
        **old,
        "run_id": "new",
        "created_at": "2026-03-04T02:00:00+00:00",
        "published": {"publish_id": "p-new", "published_at": "2026-03-04T02:00:00+00:00"},
        "scoring": {"usage": {"cost_usd": 0.25}, "spend_by_attempt": {"a-new": 0.25}},
    }
    write_manifest(lake, DAY, "new", new)
    return lake


def test_a_legacy_manifest_is_read_beside_the_new_ones(tmp_path: Any) -> None:
    from ragas_ops.pipeline.manifest import read_manifest, replaced_publish
    from ragas_ops.quality.view import day_runs

    lake = legacy_warehouse(tmp_path)
    new = read_manifest(lake, DAY, "new", "p-new")

    assert read_manifest(lake, DAY, "old", "p-old")["run_id"] == "old"
    assert read_manifest(lake, DAY, "old")["run_id"] == "old"
    assert day_spend(lake, DAY, "p-new")["day_spend_usd"] == 0.75
    assert day_spend(lake, DAY, "p-new")["day_runs"] == 2
    assert (replaced_publish(lake, DAY, new) or {})["run_id"] == "old"
    assert [run.run_id for run in day_runs(lake, DAY)] == ["new", "old"]


def test_migrate_manifests_gives_every_legacy_manifest_its_row_once(tmp_path: Any) -> None:
    import pyarrow.dataset as ds

    from ragas_ops.pipeline.manifest import migrate_manifests

    lake = legacy_warehouse(tmp_path)
    folder = tmp_path / "warehouse" / "runs" / f"dt={DAY}"
    with pytest.raises(pa.ArrowInvalid, match=r"old\.p-old\.json"):
        ds.dataset(str(tmp_path / "warehouse" / "runs"), partitioning="hive").to_table()

    moved = migrate_manifests(lake)

    assert [uri.rsplit("/", 1)[-1] for uri in moved] == ["_old.p-old.json"]
    assert sorted(path.name for path in folder.iterdir()) == [
        "_new.p-new.json",
        "_old.p-old.json",
        "new.p-new.parquet",
        "old.p-old.parquet",
    ]
    rows = ds.dataset(str(tmp_path / "warehouse" / "runs"), partitioning="hive").to_table()
    assert sorted(rows.column("run_id").to_pylist()) == ["new", "old"]
    finished = {row["run_id"]: row["finished_at"] for row in rows.to_pylist()}
    old_finished = datetime(2026, 3, 4, 4, 53, 20, tzinfo=UTC)
    assert finished == {"new": None, "old": old_finished}, "not the migration's"
    assert rows.schema.field("finished_at").type == pa.timestamp("us", tz="UTC")
    assert day_spend(lake, DAY, "p-new")["day_spend_usd"] == 0.75, "each manifest read once"
    assert migrate_manifests(lake) == []


def test_a_manifest_rewritten_by_the_report_replaces_its_row(tmp_path: Any) -> None:
    import pyarrow.dataset as ds

    from ragas_ops.contract.layout import Lake
    from ragas_ops.pipeline.manifest import write_manifest

    settings = Settings()
    settings.pipeline.warehouse_uri = str(tmp_path / "warehouse")
    lake = Lake(settings.pipeline)
    manifest = {"run_id": "r", "published": {"publish_id": "p"}, "plan": plan(2)}
    write_manifest(lake, DAY, "r", manifest)
    write_manifest(lake, DAY, "r", {**manifest, "report": {"html": "reports/x.html"}})

    rows = ds.dataset(str(tmp_path / "warehouse" / "runs"), partitioning="hive").to_table()
    assert rows.num_rows == 1
    assert rows.column("report").to_pylist() == ["reports/x.html"]
    assert sorted(path.name for path in (tmp_path / "warehouse" / "runs").rglob("*")) == [
        "_r.p.json",
        f"dt={DAY}",
        "r.p.parquet",
    ]


def test_warehouse_upgrade_migrates_an_older_warehouse_and_then_finds_nothing(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import pandas as pd

    from ragas_ops.cli.main import main

    legacy_warehouse(tmp_path)
    monkeypatch.setenv("RAGAS_OPS_PIPELINE_WAREHOUSE_URI", str(tmp_path / "warehouse"))
    monkeypatch.delenv("RAGAS_OPS_CONFIG", raising=False)

    assert main(["warehouse", "upgrade"]) == 0
    first = capsys.readouterr().out
    assert main(["warehouse", "upgrade"]) == 0
    second = capsys.readouterr().out

    assert "_old.p-old.json" in first
    assert "1 run manifest(s) given their row" in first
    assert "0 run manifest(s)" in second
    runs = pd.read_parquet(tmp_path / "warehouse" / "runs")
    assert sorted(runs["run_id"]) == ["new", "old"]


def test_warehouse_upgrade_types_the_times_of_runs_rows_written_as_text(tmp_path: Any) -> None:
    import pyarrow.dataset as ds
    import pyarrow.parquet as pq

    from ragas_ops.pipeline.manifest import migrate_manifests, retype_run_rows
    from ragas_ops.tables.format import RUNS_SCHEMA_COLUMNS

    lake = legacy_warehouse(tmp_path)
    migrate_manifests(lake)
    folder = tmp_path / "warehouse" / "runs" / f"dt={DAY}"
    text = {
        name: ("2026-03-04T02:00:00+00:00" if kind == "timestamp" else None)
        for name, kind in RUNS_SCHEMA_COLUMNS
    }
    old = pa.table(
        {
            name: pa.array(
                [value], pa.string() if kind in ("string", "timestamp") else getattr(pa, kind)()
            )
            for (name, kind), value in zip(RUNS_SCHEMA_COLUMNS, text.values(), strict=True)
        }
    )
    old = old.set_column(0, "run_id", pa.array(["text"])).set_column(
        1, "publish_id", pa.array(["p-text"])
    )
    pq.write_table(old, folder / "text.p-text.parquet")

    rewritten = retype_run_rows(lake)

    assert [uri.rsplit("/", 1)[-1] for uri in rewritten] == ["text.p-text.parquet"]
    rows = ds.dataset(str(folder), format="parquet").to_table()
    assert rows.schema.field("published_at").type == pa.timestamp("us", tz="UTC")
    (row,) = [row for row in rows.to_pylist() if row["run_id"] == "text"]
    assert row["finished_at"] == datetime(2026, 3, 4, 2, 0, tzinfo=UTC)
    assert retype_run_rows(lake) == []
