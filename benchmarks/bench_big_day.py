"""A big day through the pipeline's table stages: plan, publish, aggregate and report, each
in a fresh process of its own, at several day sizes, in both table formats.

The day is synthetic but shaped like a real one. A base of sample interactions is scored once
for real (the test judge in a process of its own, no latency, no limits), so every row has the
judge's statements, verdicts, explanations and reasons; the day is that base replicated with
new ids, written as the raw logs (files of at most 100,000 rows) and as the chunk files the
scoring tasks would leave (one per planned chunk). No judge is asked during the stages.

Prints, per format and day size, each stage's wall time and peak resident memory (VmHWM: the
high-water mark of the stage's own process; ru_maxrss survives exec and would report the
parent's), and the resident memory of the process before the stage (imports), for
docs/benchmarks.md.

    python benchmarks/bench_big_day.py [--rows 10000 100000 1000000] [--formats parquet iceberg]
                                       [--base 400] [--stages plan publish aggregate report]
                                       [--work DIR [--keep]]

`--keep` (with `--work`) leaves each day's lake in DIR and, when DIR already holds one,
measures only the stages asked for on it (aggregate and report read what publish wrote:
a second look at them without writing the day again).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

PROJECT = Path(__file__).resolve().parents[1]
DAY = "2026-11-28"
RUN_ID = f"scheduled__{DAY}T00:00:00+00:00"
RAW_FILE_ROWS = 100_000
WRITE_ROWS = 20_000
"""Rows the parent writes at a time: it never holds the day either."""
STAGES = ("plan", "publish", "aggregate", "report")
SEGMENTS = ("app", "model_version")
BENCH_KEY = "sk-" + "bench-not-a-real-key"  # never send a real key to the test double


def settings_for(root: Path, table_format: str, base_url: str = "http://127.0.0.1:9/v1") -> Any:
    from ragas_ops.config import Settings

    settings = Settings()
    settings.pipeline.raw_uri = str(root / "raw")
    settings.pipeline.warehouse_uri = str(root / "warehouse")
    settings.pipeline.segments = SEGMENTS
    settings.warehouse.table_format = table_format  # type: ignore[assignment]
    settings.judge.endpoint.base_url = base_url
    settings.judge.endpoint.model = "test-judge"
    settings.judge.endpoint.embedding_model = "test-embedding"
    settings.judge.cache.path = str(root / "cache" / "judge.sqlite")
    settings.judge.limits.rpm = None
    settings.judge.limits.tpm = None
    return settings


# -- the base: sample interactions scored for real -----------------------------------------------


def score_base(work: Path, rows: int) -> tuple[Path, Path]:
    """`rows` sample interactions scored by the test judge; (raw file, scored file)."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from ragas_ops_testing.judge_process import test_judge_process

    from ragas_ops.contract.layout import Lake
    from ragas_ops.pipeline.plan import plan_day
    from ragas_ops.pipeline.score import score_chunk
    from ragas_ops.samples import sample_interactions

    raw_file, scored_file = work / "base-raw.parquet", work / "base-scored.parquet"
    if raw_file.exists() and scored_file.exists():
        return raw_file, scored_file
    root = work / "base"
    with test_judge_process() as base_url:
        settings = settings_for(root, "parquet", base_url)
        lake = Lake(settings.pipeline)
        table = sample_interactions(rows, seed=11, day=DAY, unfaithful_share=0.2)
        (root / "raw" / f"dt={DAY}").mkdir(parents=True)
        pq.write_table(table, root / "raw" / f"dt={DAY}" / "part-0.parquet")
        plan = plan_day(lake, DAY, settings)
        for chunk in plan.chunks:
            asyncio.run(score_chunk(lake, DAY, RUN_ID, chunk=chunk, settings=settings))
        files = [lake.chunk_file(DAY, RUN_ID, chunk.index).path for chunk in plan.chunks]
        scored = pa.concat_tables([pq.read_table(path) for path in files])
    pq.write_table(table, raw_file)
    pq.write_table(scored, scored_file)
    return raw_file, scored_file


def replicated(base: Any, start: int, rows: int) -> Any:
    """Rows [start, start + rows) of the day: the base repeated, each row a new id."""
    import pyarrow as pa

    positions = pa.array([position % base.num_rows for position in range(start, start + rows)])
    table = base.take(positions)
    ids = pa.array([f"{DAY}-{position:07d}" for position in range(start, start + rows)])
    return table.set_column(table.schema.get_field_index("id"), "id", ids)


def pieces(total: int, size: int) -> Iterator[tuple[int, int]]:
    for start in range(0, total, size):
        yield start, min(size, total - start)


def write_raw_day(root: Path, raw_file: Path, rows: int) -> None:
    import pyarrow.parquet as pq

    base = pq.read_table(raw_file)
    folder = root / "raw" / f"dt={DAY}"
    folder.mkdir(parents=True)
    for number, (start, count) in enumerate(pieces(rows, RAW_FILE_ROWS)):
        with pq.ParquetWriter(folder / f"part-{number:03d}.parquet", base.schema) as writer:
            for offset, part in pieces(count, WRITE_ROWS):
                writer.write_table(replicated(base, start + offset, part))


def write_chunk_files(root: Path, table_format: str, scored_file: Path, plan: Any) -> None:
    """The chunk files the scoring tasks would leave for the plan's chunks (rows in order)."""
    import pyarrow.parquet as pq

    from ragas_ops.contract.layout import Lake

    lake = Lake(settings_for(root, table_format).pipeline)
    base = pq.read_table(scored_file)
    start = 0
    for index, rows in enumerate(plan["chunk_rows"]):
        target = lake.chunk_file(DAY, RUN_ID, index)
        Path(target.path).parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(replicated(base, start, rows), target.path, compression="zstd")
        start += rows


# -- the stages, each in a child process -------------------------------------------------------


def run_stage(stage: str, root: Path, table_format: str, state: dict[str, Any]) -> dict[str, Any]:
    from ragas_ops.contract.layout import Lake

    settings = settings_for(root, table_format)
    lake = Lake(settings.pipeline)
    if stage == "plan":
        from ragas_ops.pipeline.plan import plan_day

        plan = plan_day(lake, DAY, settings)
        return {
            "summary": plan.summary(),
            "chunk_rows": [chunk.rows for chunk in plan.chunks],
        }
    if stage == "publish":
        from ragas_ops.pipeline.manifest import run_manifest, write_manifest
        from ragas_ops.pipeline.publish import publish_day

        summary = state["plan"]["summary"]
        published = publish_day(
            lake,
            DAY,
            RUN_ID,
            planned_rows=summary["rows"],
            chunk_count=summary["chunks"],
            settings=settings,
        )
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
        # what the DAG's publish task hands on
        return {"day": DAY, "publish_id": published["publish_id"], "rows": published["rows"]}
    if stage == "aggregate":
        from ragas_ops.pipeline.aggregate import aggregate_day

        aggregate_day(lake, DAY, settings, published=state["publish"], run_id=RUN_ID)
        return {}
    from ragas_ops.pipeline.report import report_day

    return report_day(lake, DAY, RUN_ID, settings, published=state["publish"])


def child_main(stage: str, root: Path, table_format: str, state_file: Path) -> None:
    import pyarrow  # noqa: F401 (every stage's import, outside its figures)

    import ragas_ops.pipeline.aggregate
    import ragas_ops.pipeline.publish
    import ragas_ops.pipeline.report  # noqa: F401

    state = json.loads(state_file.read_text()) if state_file.exists() else {}
    imported = rss_mb()
    started = time.perf_counter()
    result = run_stage(stage, root, table_format, state)
    seconds = time.perf_counter() - started
    print(
        json.dumps(
            {"result": result, "seconds": seconds, "peak_mb": peak_mb(), "imports_mb": imported}
        )
    )


def status_mb(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024  # kB
    raise RuntimeError(f"no {field} in /proc/self/status (Linux only)")


def rss_mb() -> float:
    return status_mb("VmRSS")


def peak_mb() -> float:
    return status_mb("VmHWM")


def child(stage: str, root: Path, table_format: str, state: dict[str, Any]) -> dict[str, Any]:
    state_file = root / "state.json"
    state_file.write_text(json.dumps(state))
    command = [sys.executable, __file__, "--child", stage, str(root), table_format]
    environment = {**os.environ, "OPENAI_API_KEY": BENCH_KEY}
    finished = subprocess.run(
        command, capture_output=True, text=True, check=False, cwd=PROJECT, env=environment
    )
    if finished.returncode != 0:
        raise RuntimeError(f"{stage} failed:\n{finished.stderr[-3000:]}")
    figures: dict[str, Any] = json.loads(finished.stdout.strip().splitlines()[-1])
    return figures


def measure_day(
    work: Path,
    table_format: str,
    rows: int,
    files: tuple[Path, Path],
    stages: list[str],
    *,
    keep: bool = False,
) -> list[dict[str, Any]]:
    root = work / f"{table_format}-{rows}"
    kept = root / "stages.json"
    state: dict[str, Any] = {}
    if keep and kept.exists():
        state = json.loads(kept.read_text())
        return [measured_stage(stage, root, table_format, rows, state) for stage in stages]
    raw_file, scored_file = files
    write_raw_day(root, raw_file, rows)
    figures = []
    last = max(STAGES.index(stage) for stage in stages)
    for stage in STAGES[: last + 1]:  # each stage needs those before it, none those after
        measured = child(stage, root, table_format, state)
        state[stage] = measured.pop("result")
        if stage == "plan":
            write_chunk_files(root, table_format, scored_file, state["plan"])
        if stage in stages:
            figures.append({"format": table_format, "rows": rows, "stage": stage, **measured})
            print(
                f"{table_format:8} {rows:>9,} rows  {stage:9}  {measured['seconds']:7.1f} s  "
                f"peak {measured['peak_mb']:7,.0f} MiB  (imports {measured['imports_mb']:,.0f} MiB)",
                flush=True,
            )
    kept.write_text(json.dumps(state))
    return figures


def measured_stage(
    stage: str, root: Path, table_format: str, rows: int, state: dict[str, Any]
) -> dict[str, Any]:
    """A stage run again on a kept lake (its result not handed on)."""
    measured = child(stage, root, table_format, state)
    measured.pop("result")
    print(
        f"{table_format:8} {rows:>9,} rows  {stage:9}  {measured['seconds']:7.1f} s  "
        f"peak {measured['peak_mb']:7,.0f} MiB  (imports {measured['imports_mb']:,.0f} MiB)",
        flush=True,
    )
    return {"format": table_format, "rows": rows, "stage": stage, **measured}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--formats", nargs="+", default=["parquet", "iceberg"])
    parser.add_argument("--stages", nargs="+", default=list(STAGES), choices=STAGES)
    parser.add_argument("--base", type=int, default=400, help="distinct rows scored for real")
    parser.add_argument("--work", type=Path, help="keep the base and the lakes here")
    parser.add_argument(
        "--keep", action="store_true", help="with --work: keep the lakes, and reuse a kept one"
    )
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.keep and arguments.work is None:
        parser.error("--keep needs --work")
    if arguments.child:
        stage, root, table_format = arguments.child
        child_main(stage, Path(root), table_format, Path(root) / "state.json")
        return
    os.environ.setdefault("OPENAI_API_KEY", BENCH_KEY)
    with tempfile.TemporaryDirectory(prefix="bench-big-day-") as scratch:
        work = arguments.work or Path(scratch)
        work.mkdir(parents=True, exist_ok=True)
        started = time.perf_counter()
        files = score_base(work, arguments.base)
        print(f"base: {arguments.base} rows scored in {time.perf_counter() - started:.1f} s")
        figures = []
        for table_format in arguments.formats:
            for rows in arguments.rows:
                figures += measure_day(
                    work, table_format, rows, files, arguments.stages, keep=arguments.keep
                )
                if not arguments.keep:
                    shutil.rmtree(work / f"{table_format}-{rows}")
        print(json.dumps(figures))


if __name__ == "__main__":
    main()
