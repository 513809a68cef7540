"""The report stage reads the day's rows in the few columns it ranks and counts by, and the
rows it shows by position; what it writes is what the whole table gave before, in both table
formats."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ragas_ops.config import Settings
from ragas_ops.contract.layout import Lake
from ragas_ops.pipeline import report as report_stage
from ragas_ops.pipeline.aggregate import aggregate_day, day_regression, metrics_history
from ragas_ops.pipeline.manifest import read_manifest, run_manifest, write_manifest
from ragas_ops.pipeline.plan import DayPlan, InputFile
from ragas_ops.pipeline.publish import publish_day
from ragas_ops.pipeline.report import REPORT_DAYS, repeated_ids, report_day
from ragas_ops.quality.report import build_report, ranked_columns
from ragas_ops.tables.format import DayTables, day_tables
from tests.fixtures.scored_tables import METRICS, fake_scored_day
from tests.support import TEST_KEY

DAY = "2026-11-20"
RUN_ID = f"scheduled__{DAY}T00:00:00+00:00"
SEGMENTS = ("app", "model_version")
ROWS, CHUNKS = 240, 3


def settings_at(root: Path, table_format: str) -> Settings:
    settings = Settings()
    settings.pipeline.raw_uri = str(root / "raw")
    settings.pipeline.warehouse_uri = str(root / "warehouse")
    settings.pipeline.segments = SEGMENTS
    settings.warehouse.table_format = table_format  # type: ignore[assignment]
    settings.metrics.names = METRICS
    return settings


def day_with_copies() -> pa.Table:
    """A scored day whose rows 10-14 repeat the ids of rows 0-4 (a copied export), rows
    12-14 with other content."""
    table = fake_scored_day(DAY, ROWS, seed=5)
    for name in ("id", "question", "contexts", "answer"):
        values = table[name].to_pylist()
        values[10 : 15 if name == "id" else 12] = values[0 : 5 if name == "id" else 2]
        column = pa.array(values, table.schema.field(name).type)
        table = table.set_column(table.schema.get_field_index(name), name, column)
    return table


def published_day(root: Path, table_format: str) -> tuple[Lake, Settings, dict[str, Any]]:
    """The day as the pipeline's publish and aggregate leave it (chunk files of the run)."""
    if table_format == "iceberg":
        pytest.importorskip("pyiceberg")
    os.environ.setdefault("OPENAI_API_KEY", TEST_KEY)
    settings = settings_at(root, table_format)
    lake = Lake(settings.pipeline)
    table = day_with_copies()
    size = ROWS // CHUNKS
    for index in range(CHUNKS):
        target = lake.chunk_file(DAY, RUN_ID, index)
        Path(target.path).parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(table.slice(index * size, size), target.path, row_group_size=32)
    published = publish_day(
        lake, DAY, RUN_ID, planned_rows=ROWS, chunk_count=CHUNKS, settings=settings
    )
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
    write_manifest(lake, DAY, RUN_ID, manifest, settings)
    aggregate_day(lake, DAY, settings, published, RUN_ID)
    return lake, settings, published


@pytest.mark.parametrize("table_format", ["parquet", "iceberg"])
def test_the_report_is_what_the_whole_table_gave(tmp_path: Path, table_format: str) -> None:
    """The report written from the ranked columns and the shown rows read by position is,
    byte for byte, the report built from the whole day in memory (the report stage before
    it read by columns), with the same repeated ids counted."""
    lake, settings, published = published_day(tmp_path, table_format)
    shown = read_manifest(lake, DAY, RUN_ID, published["publish_id"])

    written = report_day(lake, DAY, RUN_ID, settings, published=published)

    whole = day_tables(lake, settings).read_scored(DAY)
    manifest = read_manifest(lake, DAY, RUN_ID, published["publish_id"])
    assert manifest["repeated_ids"] == repeated_ids(whole, settings)
    assert manifest["repeated_ids"] == {"rows": 10, "ids": 5, "ids_with_different_content": 3}
    # as the report stage adds them (an input alarm only when there is one)
    for key in ("repeated_ids", "dated_elsewhere", "replaced", "input_alarm"):
        if key in manifest:
            shown[key] = manifest[key]
    expected = build_report(
        DAY,
        metrics_history(lake, DAY, REPORT_DAYS, settings=settings),
        whole,
        day_regression(lake, DAY, settings, None),
        metrics=METRICS,
        manifest=shown,
        columns=settings.columns,
    )
    assert Path(written["html"]).read_text() == expected.html
    assert Path(written["markdown"]).read_text() == expected.markdown
    assert expected.html.count('class="example"') == 5 * len(METRICS)


class RecordingTables:
    """The day's tables, counting what the report reads of them."""

    def __init__(self, tables: DayTables) -> None:
        self.tables = tables
        self.whole_columns: list[str] = []
        self.whole_bytes = 0
        self.rows_read = 0
        self.row_columns: set[str] = set()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.tables, name)

    def read_scored(self, *arguments: Any, **options: Any) -> pa.Table:
        table = self.tables.read_scored(*arguments, **options)
        self.whole_columns += table.column_names
        self.whole_bytes += table.nbytes
        return table

    def read_scored_rows(
        self, day: str, positions: Sequence[int], columns: Sequence[str], *more: Any
    ) -> dict[int, dict[str, Any]]:
        self.rows_read += len(positions)
        self.row_columns.update(columns)
        return self.tables.read_scored_rows(day, positions, columns, *more)


@pytest.mark.parametrize("table_format", ["parquet", "iceberg"])
def test_the_report_reads_every_row_only_in_the_columns_it_ranks_by(
    tmp_path: Path, table_format: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    lake, settings, published = published_day(tmp_path, table_format)
    recording = RecordingTables(day_tables(lake, settings))
    monkeypatch.setattr(report_stage, "day_tables", lambda *_: recording)

    report_day(lake, DAY, RUN_ID, settings, published=published)

    allowed = {*ranked_columns(METRICS, settings.columns), "timestamp"}
    assert recording.whole_columns
    assert set(recording.whole_columns) <= allowed
    for text in ("answer", "contexts", *(f"{metric}_evidence" for metric in METRICS)):
        assert text not in recording.whole_columns
    whole = day_tables(lake, settings).read_scored(DAY)
    assert recording.whole_bytes < whole.nbytes / 4
    # the shown rows (at most 5 a metric) and the 10 rows of repeated ids, read by position
    assert 0 < recording.rows_read <= 5 * len(METRICS) + 10
    assert {"answer", "contexts", "faithfulness_evidence"} <= recording.row_columns
