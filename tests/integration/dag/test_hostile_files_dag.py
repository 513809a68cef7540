"""Files built to break a reader, beside good files in one day, through the nightly DAG
(`dag.test()`, issue 49 finding 3): a CSV whose contexts cell is a 10,000-deep JSON array
(RecursionError escaped the plan, 0 rows scored), the same depth in a JSON line (pyarrow's
reader crashes the process on it), a CSV of 100,000 columns (passed the plan, then wedged its
scoring task in a quadratic `conform`) and a JSON line of 1 GiB (read whole, 2.2 GB RSS,
before it was refused). Each is rejected by name with its reason; every good row is scored;
the night completes (`on_bad_input = warn`)."""

from __future__ import annotations

import csv
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from ragas_ops.samples import sample_interactions
from tests.integration.dag import test_pipeline_dag as dag_tests
from tests.integration.dag.test_lake_safety_dag import manifests, raw_day, scored_ids
from tests.integration.dag.test_pipeline_dag import DAY, run_dag, state, warehouse

airflow_database = dag_tests.airflow_database
lake = dag_tests.lake

DEPTH = 10_000
GIB = 1 << 30


def write_deep_csv(path: Path) -> None:
    """Two rows; the second's contexts cell a JSON array 10,000 deep (20 KB)."""
    deep = "[" * DEPTH + "]" * DEPTH
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["id", "question", "contexts", "answer"])
        writer.writerow(["deep-0", "q?", '["a context"]', "an answer"])
        writer.writerow(["deep-1", "q?", deep, "an answer"])


def write_wide_csv(path: Path, columns: int = 100_000) -> None:
    """The contract's columns and 100,000 others (about 1.3 MB with ten rows)."""
    names = ["id", "question", "contexts", "answer", *(f"c{n}" for n in range(columns - 4))]
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(names)
        for row in range(10):
            writer.writerow(
                [f"wide-{row}", "q?", '["a context"]', "an answer", *"1" * (columns - 4)]
            )


def write_long_line_jsonl(path: Path) -> None:
    """A JSON line of 1 GiB: a question cell opened and then a sparse GiB of bytes (nothing
    is written to disk but the first bytes)."""
    with path.open("wb") as handle:
        handle.write(b'{"id": "long-0", "question": "')
        handle.truncate(GIB)


def test_deep_wide_and_long_files_are_each_rejected_and_the_good_rows_scored(
    lake: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAGAS_OPS_PIPELINE_ON_BAD_INPUT", "warn")
    folder = raw_day(lake)
    good = [sample_interactions(20, seed=seed, day=DAY) for seed in (61, 62)]
    for index, table in enumerate(good):
        pq.write_table(table, folder / f"part-{index}.parquet")
    write_deep_csv(folder / "deep.csv")
    (folder / "deep.jsonl").write_text(
        '{"id": "deep-j", "question": "q?", "contexts": ' + "[" * DEPTH + "]" * DEPTH + "}\n"
    )
    write_wide_csv(folder / "wide.csv")
    write_long_line_jsonl(folder / "long-line.jsonl")
    expected = {
        "deep.csv": "nested 10,000 deep, more than 64",
        "deep.jsonl": "line 1 nests JSON 10,001 deep, more than 64",
        "wide.csv": "the CSV header has 100,000 columns, more than 1,000",
        "long-line.jsonl": "line 1 is longer than 16,777,216 bytes",
    }

    run = run_dag()

    assert state(run) == "success"
    assert sorted(scored_ids(lake)) == sorted(
        good[0].column("id").to_pylist() + good[1].column("id").to_pylist()
    )
    scored = pq.read_table(warehouse(lake, "scored", f"dt={DAY}", "scored.parquet"))
    assert scored.column("faithfulness_status").to_pylist().count("ok") >= 30, "really scored"
    (manifest,) = manifests(lake)
    reasons = {
        Path(item["path"]).name: item["reason"] for item in manifest["plan"]["rejected_files"]
    }
    assert set(reasons) == set(expected)
    for name, reason in expected.items():
        assert reason in reasons[name], (name, reasons[name])
    report = warehouse(lake, "reports", f"dt={DAY}", "report.md").read_text()
    assert all(name in report for name in expected)
