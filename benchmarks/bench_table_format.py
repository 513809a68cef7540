"""Publish time of one scored day in both table formats: Parquet (one file, written beside and
moved into place, as the pipeline publishes) and Iceberg (one overwrite commit of the day's
partition in a SQLite catalog). Local folder; the first Iceberg publish also creates the table.

    python benchmarks/bench_table_format.py [--rows 20000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import pyarrow as pa

from ragas_ops.samples import sample_interactions
from ragas_ops.storage import ParquetOutput, locate
from ragas_ops.tables.iceberg import IcebergTables

METRICS = ("faithfulness", "answer_relevance", "context_relevance")


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


def publish_parquet(folder: Path, table: pa.Table, day: str) -> float:
    started = time.perf_counter()
    target = locate(str(folder / "scored" / f"dt={day}" / "scored.parquet"))
    output = ParquetOutput(target, table.schema)
    output.write(table)
    output.commit()
    return time.perf_counter() - started


def publish_iceberg(tables: IcebergTables, table: pa.Table, day: str, run: str) -> float:
    started = time.perf_counter()
    tables.publish_day("scored", day, table, run_id=run)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=3)
    options = parser.parse_args()
    table = scored_day(options.rows)
    print(f"one day of {options.rows:,} scored rows, {table.nbytes / 1e6:.1f} MB in memory")
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        parquet = [
            publish_parquet(root / "parquet", table, "2026-11-01") for _ in range(options.repeats)
        ]
        tables = IcebergTables(str(root / "iceberg"))
        first = publish_iceberg(tables, table, "2026-11-01", "first")
        again = [
            publish_iceberg(tables, table, "2026-11-01", f"rerun-{n}")
            for n in range(options.repeats)
        ]
    print(
        f"parquet publish (write + move):      median {statistics.median(parquet):.3f} s over {len(parquet)}"
    )
    print(f"iceberg first publish (creates table): {first:.3f} s")
    print(
        f"iceberg republish (overwrite commit):  median {statistics.median(again):.3f} s over {len(again)}"
    )


if __name__ == "__main__":
    main()
