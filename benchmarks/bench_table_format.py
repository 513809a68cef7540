"""The pipeline's table steps in both table formats, through `tables.format.DayTables` as the
pipeline calls them: publishing a day from its chunk files (Parquet: merged into one file and
moved into place; Iceberg: one overwrite commit of the day in a SQLite catalog; the first also
creates the table), the aggregate's read, and (Iceberg) what a rerun changed. Local folder.

    python benchmarks/bench_table_format.py [--rows 20000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from ragas_ops.config import Settings
from ragas_ops.contract.layout import Lake
from ragas_ops.samples import sample_interactions
from ragas_ops.tables.format import DayTables, day_tables

METRICS = ("faithfulness", "answer_relevance", "context_relevance")
DAY = "2026-11-01"
CHUNKS = 10


def scored_day(rows: int) -> pa.Table:
    """`rows` sample interactions with the columns a scored table has."""
    base = sample_interactions(rows, seed=7)
    table = pa.table({name: base[name] for name in base.column_names})
    for metric in METRICS:
        table = table.append_column(f"{metric}_score", pa.array([0.5] * rows, pa.float64()))
        table = table.append_column(f"{metric}_status", pa.array(["ok"] * rows))
        table = table.append_column(f"{metric}_reason", pa.array([""] * rows))
        evidence = json.dumps({"statements": [{"statement": "x" * 80, "verdict": "yes"}] * 3})
        table = table.append_column(f"{metric}_evidence", pa.array([evidence] * rows))
        table = table.append_column(f"{metric}_version", pa.array([f"{metric}/v1"] * rows))
    return table


def chunk_files(folder: Path, table: pa.Table, chunks: int) -> list[pq.ParquetFile]:
    """The day as the scoring tasks leave it: `chunks` Parquet files."""
    folder.mkdir(parents=True, exist_ok=True)
    size = -(-table.num_rows // chunks)
    files = []
    for index in range(chunks):
        path = folder / f"chunk-{index:05d}.parquet"
        pq.write_table(table.slice(index * size, size), path)
        files.append(pq.ParquetFile(path))
    return files


def tables_for(root: Path, table_format: str) -> DayTables:
    settings = Settings()
    settings.pipeline.raw_uri = str(root / "raw")
    settings.pipeline.warehouse_uri = str(root / "warehouse")
    settings.warehouse.table_format = table_format  # type: ignore[assignment]
    return day_tables(Lake(settings.pipeline), settings)


def timed(action: Callable[[], object]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def measure(root: Path, table_format: str, table: pa.Table, repeats: int) -> dict[str, float]:
    """The pipeline's table steps through `DayTables`: publish (merge the chunk files and
    publish the day), the aggregate's read (scores and statuses), and for Iceberg what a
    rerun changed (the previous snapshot against the new one)."""
    tables = tables_for(root / table_format, table_format)
    files = chunk_files(root / table_format / "chunks", table, CHUNKS)
    columns = [f"{m}_{part}" for m in METRICS for part in ("score", "status")]

    def publish(run: str) -> None:
        tables.publish_scored(DAY, run, files, table.schema, f"publish-{run}")

    first = timed(lambda: publish("first"))
    again = [timed(lambda n=n: publish(f"rerun-{n}")) for n in range(repeats)]
    read = [timed(lambda: tables.read_scored(DAY, columns=columns)) for _ in range(repeats)]
    figures = {
        "first publish": first,
        "republish (median)": statistics.median(again),
        "aggregate's read (median)": statistics.median(read),
    }
    if table_format == "iceberg":
        rerun = [timed(lambda: tables.rerun(DAY, columns)) for _ in range(repeats)]
        figures["what a rerun changed (median)"] = statistics.median(rerun)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=3)
    options = parser.parse_args()
    table = scored_day(options.rows)
    print(
        f"one day of {options.rows:,} scored rows in {CHUNKS} chunk files, "
        f"{table.nbytes / 1e6:.1f} MB in memory; medians over {options.repeats}"
    )
    with tempfile.TemporaryDirectory() as folder:
        for table_format in ("parquet", "iceberg"):
            for name, seconds in measure(
                Path(folder), table_format, table, options.repeats
            ).items():
                print(f"{table_format:8} {name:32} {seconds:.3f} s")


if __name__ == "__main__":
    main()
