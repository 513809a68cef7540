"""One label per person, row and metric, kept where labels are written (issue 49, finding 5):
simultaneous saves store one label, names are normalised once, and a labeller is plain text."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from ragas_ops.config import Settings
from ragas_ops.contract.layout import Lake
from ragas_ops.labels.calibration import labelled_pairs
from ragas_ops.labels.store import (
    Candidate,
    Checked,
    add_labels,
    labeller_name,
    labeller_problem,
    queue_rows,
    unique_labels,
    write_labels,
    write_queue,
)
from ragas_ops.tables.format import DayTables, day_tables
from tests.fixtures.scored_tables import METRICS, fake_scored_day

DAY = "2026-11-20"


@pytest.fixture
def labelled_day(tmp_path: Path) -> tuple[Settings, DayTables, str]:
    """A warehouse with the day's queue; the first queued row's id."""
    settings = Settings()
    settings.pipeline.warehouse_uri = str(tmp_path / "warehouse")
    settings.metrics.names = METRICS
    tables = day_tables(Lake(settings.pipeline), settings)
    scored = fake_scored_day(DAY, 40, seed=5)
    published = Path(tables.lake.scored(DAY).path)
    published.parent.mkdir(parents=True)
    pq.write_table(scored, published)
    write_queue(tables, DAY, scored, settings)
    queue = tables.read_label_queue(DAY)
    assert queue is not None
    return settings, tables, str(queue.column("row_id")[0])


def save(tables: DayTables, row_id: str, who: str, label: str = "1") -> int:
    candidate = Candidate(1, DAY, row_id, "faithfulness", label, who)
    checked, _ = add_labels(tables, [candidate], METRICS, "page/1")
    return checked.accepted_count


def stored(tables: DayTables) -> list[dict[str, object]]:
    return [row for table in tables.read_labels([DAY]) for row in table.to_pylist()]


def test_eight_simultaneous_saves_of_one_label_store_one(
    labelled_day: tuple[Settings, DayTables, str],
) -> None:
    """Five rounds (five rows) of eight saves at once: all eight were stored, 5 of 5 rounds."""
    _, tables, _ = labelled_day
    queue = tables.read_label_queue(DAY)
    assert queue is not None
    rows = [str(value) for value in queue.column("row_id").to_pylist()[:5]]
    start = threading.Barrier(8)

    def double_click(row_id: str) -> int:
        start.wait()
        return save(tables, row_id, "ana")

    for row_id in rows:
        with ThreadPoolExecutor(8) as pool:
            saved = list(pool.map(double_click, [row_id] * 8))
        assert sum(saved) == 1, row_id
    assert sorted(str(row["row_id"]) for row in stored(tables)) == sorted(rows)


def test_names_are_normalised_once_so_ana_with_spaces_is_one_labeller(
    labelled_day: tuple[Settings, DayTables, str],
) -> None:
    settings, tables, row_id = labelled_day
    assert labeller_name(" Ana \t") == labeller_name("ana") == "ana"
    assert labeller_name("Ana\u0301") == labeller_name("An\u00e1")  # NFC: one letter

    assert save(tables, row_id, "ana") == 1
    assert save(tables, row_id, "ana ") == 0
    assert save(tables, row_id, " Ana") == 0
    assert [row["labeller"] for row in stored(tables)] == ["ana"]
    left = queue_rows(tables, DAY, settings, labeller=" ANA ")
    (mine,) = [row for row in left if row["row_id"] == row_id]
    assert "faithfulness" not in mine["metrics"], "labelled by this person, whatever the spelling"


def test_labels_stored_twice_before_the_lock_count_once(
    labelled_day: tuple[Settings, DayTables, str],
) -> None:
    """Labels written by a version without the lock, or by writers on two machines of an
    s3:// warehouse: the readers keep one per person, row and metric."""
    settings, tables, row_id = labelled_day
    twice = Checked(
        {DAY: [{"row_id": row_id, "metric": "faithfulness", "label": 1.0, "labeller": "ana"}]}
    )
    write_labels(tables, twice, "page/1")
    again = Checked(
        {DAY: [{"row_id": row_id, "metric": "faithfulness", "label": 0.0, "labeller": "ana "}]}
    )
    write_labels(tables, again, "page/1")

    assert len(stored(tables)) == 2
    (kept,) = unique_labels(tables, [DAY])
    assert kept["label"] == 1.0, "the earliest"
    pairs = labelled_pairs(tables, DAY, fake_scored_day(DAY, 40, seed=5), settings)
    (pair,) = [pair for pair in pairs if pair["row_id"] == row_id]
    assert pair["label"] == 1.0, "one person's label, not the mean of two"


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ('=HYPERLINK("http://x","ana")', "a spreadsheet formula's sign"),
        ("+cmd", "a spreadsheet formula's sign"),
        ("-1+2", "a spreadsheet formula's sign"),
        ("@SUM(A1)", "a spreadsheet formula's sign"),
        ("\t=1+1", "a spreadsheet formula's sign"),
        ('{"name": "ana"}', "JSON or a number"),
        ("[1]", "JSON or a number"),
        ("42", "JSON or a number"),
        ("4.2e1", "JSON or a number"),
        ("ana\u200b", "control or invisible characters"),
        ("a" * 101, "longer than 100 characters"),
        ("   ", "no labeller"),
        (42, "the labeller is int"),
        ({"name": "ana"}, "the labeller is dict"),
    ],
)
def test_a_labeller_is_plain_text(name: object, reason: str) -> None:
    problem = labeller_problem(name)
    assert problem is not None
    assert reason in problem


@pytest.mark.parametrize("name", ["ana", "Ana María", "李娜", "o'brien", "ana-2"])
def test_plain_names_pass(name: str) -> None:
    assert labeller_problem(name) is None
