"""The shadow judge's tables in both warehouse formats: the chunks' candidate files published
whole beside the day (never into it), the day's comparison written by the aggregate step from
the version the run published, and shown by its report."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ragas_ops.config import Settings
from ragas_ops.contract.layout import Lake
from ragas_ops.pipeline.aggregate import aggregate_day
from ragas_ops.pipeline.manifest import run_manifest, write_manifest
from ragas_ops.pipeline.plan import DayPlan, InputFile
from ragas_ops.pipeline.publish import publish_day
from ragas_ops.pipeline.report import report_day
from ragas_ops.pipeline.shadow import publish_candidate
from ragas_ops.quality.judge_comparison import comparison_cells
from ragas_ops.scoring.shadow import candidate_mask
from ragas_ops.tables.format import day_tables
from tests.fixtures.scored_tables import METRICS, fake_scored_day
from tests.support import TEST_KEY

DAY = "2026-11-20"
RUN_ID = f"scheduled__{DAY}T00:00:00+00:00"
ROWS, CHUNKS, SHARE = 120, 2, 0.3


@pytest.mark.parametrize("table_format", ["parquet", "iceberg"])
def test_the_candidate_rows_are_published_apart_and_compared_in_both_formats(
    tmp_path: Path, table_format: str
) -> None:
    if table_format == "iceberg":
        pytest.importorskip("pyiceberg")
    os.environ.setdefault("OPENAI_API_KEY", TEST_KEY)
    settings = Settings()
    settings.pipeline.raw_uri = str(tmp_path / "raw")
    settings.pipeline.warehouse_uri = str(tmp_path / "warehouse")
    settings.warehouse.table_format = table_format  # type: ignore[assignment]
    settings.metrics.names = METRICS
    lake = Lake(settings.pipeline)
    record = fake_scored_day(DAY, ROWS, seed=3, judge="openai:gpt-4o-mini")
    shadow = fake_scored_day(DAY, ROWS, seed=4, judge="openai:gpt-5-mini")
    shadow = shadow.set_column(0, "id", record["id"])  # the same rows, scored otherwise
    size = ROWS // CHUNKS
    results = []
    for index in range(CHUNKS):
        chunk = lake.chunk_file(DAY, RUN_ID, index)
        Path(chunk.path).parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(record.slice(index * size, size), chunk.path)
        part = shadow.slice(index * size, size)
        chosen = part.filter(pa.array(candidate_mask(part["id"].to_pylist(), SHARE)))
        pq.write_table(chosen, lake.candidate_chunk_file(DAY, RUN_ID, index).path)
        usage = {"requests": 3, "cost_usd": 0.01}
        results.append(
            {
                "index": index,
                "candidate": {
                    "rows": chosen.num_rows,
                    "without_id": 0,
                    "judge": "openai:gpt-5-mini",
                    "usage": usage,
                },
            }
        )
    published = publish_day(
        lake, DAY, RUN_ID, planned_rows=ROWS, chunk_count=CHUNKS, settings=settings
    )
    candidate = publish_candidate(lake, DAY, RUN_ID, results)
    summary = DayPlan(DAY, files=[InputFile("raw/a.parquet", 1000, ROWS)]).summary()
    manifest = run_manifest(
        DAY,
        RUN_ID,
        settings,
        try_number=1,
        plan_summary=summary,
        chunk_results=[],
        published=published,
    )
    manifest["candidate"] = candidate
    write_manifest(lake, DAY, RUN_ID, manifest, settings)

    aggregated = aggregate_day(lake, DAY, settings, published, RUN_ID)
    report_day(lake, DAY, RUN_ID, settings, published=published)

    kept = pq.read_table(lake.day_file("candidate_scored", DAY).path)
    ids = record["id"].to_pylist()
    assert kept["id"].to_pylist() == [
        i for i, k in zip(ids, candidate_mask(ids, SHARE), strict=True) if k
    ]
    assert candidate is not None
    assert (candidate["rows"], candidate["requests"], candidate["cost_usd"]) == (
        kept.num_rows,
        6,
        pytest.approx(0.02),
    )
    published_rows = day_tables(lake, settings).read_scored(DAY)
    assert set(published_rows["judge"].to_pylist()) == {"openai:gpt-4o-mini"}, "never mixed in"
    assert published_rows.num_rows == ROWS
    comparison = pq.read_table(aggregated["judge_comparison"]).to_pylist()
    by_id = {row["id"]: row for row in published_rows.to_pylist()}
    html = lake.report(DAY, "html").read_text()
    for row in comparison:
        metric = row["metric"]
        pairs = [
            (by_id[other["id"]][f"{metric}_score"], other[f"{metric}_score"])
            for other in kept.to_pylist()
            if other[f"{metric}_status"] == "ok" and by_id[other["id"]][f"{metric}_status"] == "ok"
        ]
        assert row["pairs"] == len(pairs) > 0
        mean = sum(b - a for a, b in pairs) / len(pairs)
        assert row["difference"] == pytest.approx(mean)
        assert "".join(f"<td>{cell}</td>" for cell in comparison_cells(row)) in html.replace(
            "&#x27;", "'"
        )
    assert not list(Path(lake.staging_day(DAY).path).rglob("*.parquet"))


def test_a_chunk_whose_candidate_file_is_not_what_it_scored_is_left_out_not_the_day(
    tmp_path: Path,
) -> None:
    settings = Settings()
    settings.pipeline.warehouse_uri = str(tmp_path / "warehouse")
    lake = Lake(settings.pipeline)
    rows = fake_scored_day(DAY, 10, seed=6, judge="openai:gpt-5-mini")
    first = lake.candidate_chunk_file(DAY, RUN_ID, 0)
    Path(first.path).parent.mkdir(parents=True)
    pq.write_table(rows.slice(0, 4), first.path)
    pq.write_table(rows.slice(4, 3), lake.candidate_chunk_file(DAY, RUN_ID, 1).path)
    shadow = {"without_id": 0, "judge": "openai:gpt-5-mini"}
    usage = {"requests": 1, "cost_usd": 0.5}
    results = [
        {"index": 0, "candidate": {**shadow, "rows": 4, "usage": usage}},
        {"index": 1, "candidate": {**shadow, "rows": 5, "usage": usage}},  # 3 in its file
        {"index": 2, "candidate": {**shadow, "rows": 2, "usage": usage}},  # no file
    ]

    published = publish_candidate(lake, DAY, RUN_ID, results)

    assert published is not None
    assert published["rows"] == 4
    assert [entry["chunk"] for entry in published["failed_chunks"]] == [1, 2]
    assert "3 rows, the chunk scored 5" in published["failed_chunks"][0]["error"]
    assert "is missing" in published["failed_chunks"][1]["error"]
    kept = pq.read_table(lake.day_file("candidate_scored", DAY).path)
    assert kept["id"].to_pylist() == rows["id"].to_pylist()[:4]
    assert not list(Path(lake.staging_day(DAY).path).rglob("*.parquet"))
    assert published["status"] == "partial"


def test_a_chunk_reported_twice_is_merged_once(tmp_path: Path) -> None:
    """A cleared or rerun task's result beside the first one: 42 rows for 21 ids before."""
    settings = Settings()
    settings.pipeline.warehouse_uri = str(tmp_path / "warehouse")
    lake = Lake(settings.pipeline)
    rows = fake_scored_day(DAY, 21, seed=7, judge="openai:gpt-5-mini")
    file = lake.candidate_chunk_file(DAY, RUN_ID, 0)
    Path(file.path).parent.mkdir(parents=True)
    pq.write_table(rows, file.path)
    result = {
        "index": 0,
        "candidate": {
            "rows": 21,
            "without_id": 0,
            "judge": "openai:gpt-5-mini",
            "usage": {"requests": 3, "cost_usd": 0.01},
        },
    }

    published = publish_candidate(lake, DAY, RUN_ID, [result, dict(result)])

    assert published is not None
    assert (published["rows"], published["status"], published["chunks"]) == (21, "ok", 1)
    kept = pq.read_table(lake.day_file("candidate_scored", DAY).path)
    assert sorted(kept["id"].to_pylist()) == sorted(rows["id"].to_pylist())


def test_a_publish_whose_candidate_failed_removes_the_earlier_runs_rows(tmp_path: Path) -> None:
    settings = Settings()
    settings.pipeline.warehouse_uri = str(tmp_path / "warehouse")
    lake = Lake(settings.pipeline)
    for table in ("candidate_scored", "judge_comparison"):  # an earlier run's
        Path(lake.day_file(table, DAY).path).parent.mkdir(parents=True)
        pq.write_table(fake_scored_day(DAY, 3, seed=8), lake.day_file(table, DAY).path)
    failed = {"rows": 0, "chosen": 5, "without_id": 0, "error": "the shadow judge: down"}

    published = publish_candidate(lake, DAY, RUN_ID, [{"index": 0, "candidate": failed}])

    assert published is not None
    assert (published["status"], published["rows"], published["table"]) == ("failed", 0, None)
    assert not lake.day_file("candidate_scored", DAY).exists()
    assert not lake.day_file("judge_comparison", DAY).exists()
