"""The labels in the warehouse: the day's queue written each night, labels checked and added
(append-only, by the page and by `ragas-ops labels import` alike), and the queue read back for
people to label (the page, `ragas-ops labels export`).

A label is refused, with its reason, when its row is not in its day's queue (a label of a row
chosen by hand would bias the corrected mean), its value is not one of the three levels, its
metric is not scored, its labeller is missing or not a plain name, or the same person
labelled the same row and metric already (in the warehouse, or earlier in the same batch). A
batch is checked whole before anything is written, and each day's share of it is one file (or
one Iceberg commit).

One label per person, row and metric is kept where labels are written: `add_labels` checks
and writes under one lock (a process's threads, and the processes of one machine through a
lock file beside a local warehouse's labels), so two saves of the same label at once (a
double click, a browser's retry) store it once. An s3:// warehouse's writers on several
machines share no lock: readers (`existing_keys`, `queue_rows`, the calibration's
`unique_labels`) keep one label per key whatever is stored, the earliest.

A labeller's name is normalised once, here (`labeller_name`): Unicode NFC, white space
stripped and runs of it made one space, then casefolded, so `ana`, `ana `, ` Ana` are one
person. A name is plain text: one beginning with a spreadsheet formula's sign (`=`, `+`,
`-`, `@`), holding control characters, looking like JSON (an object, a list) or a number, or
longer than `MAX_LABELLER_CHARS` is refused.
"""

from __future__ import annotations

import re
import threading
import unicodedata
import uuid
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ragas_ops.contract.layout import parse_day
from ragas_ops.labels.agreement import LEVELS
from ragas_ops.labels.definitions import label_levels, label_value
from ragas_ops.labels.queue import label_queue
from ragas_ops.sampling import ROW_ID_COLUMN

if TYPE_CHECKING:
    import pyarrow as pa

    from ragas_ops.config import Settings
    from ragas_ops.tables.format import DayTables

LABEL_KEY = ("dt", "row_id", "metric", "labeller")
"""What makes a label a duplicate of another: one person, one row, one metric."""
MAX_LABELLER_CHARS = 100
FORMULA_SIGNS = ("=", "+", "-", "@")
"""What a spreadsheet reads a cell beginning with as a formula (OWASP's CSV injection list,
with tab and carriage return, which are control characters here)."""
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
_WRITE_LOCKS: dict[str, threading.Lock] = {}
_WRITE_LOCKS_GUARD = threading.Lock()


def labeller_name(name: str) -> str:
    """A labeller's name as labels are keyed and stored: NFC, stripped, inner white space one
    space, casefolded (`ana`, `ana `, ` Ana` are one person)."""
    return " ".join(unicodedata.normalize("NFC", name).split()).casefold()


def labeller_problem(name: object) -> str | None:
    """Why `name` cannot name a labeller (None: it can): it must be plain text."""
    if not isinstance(name, str):
        return f"the labeller is {type(name).__name__}, not a name"
    text = labeller_name(name)
    checks = (
        (not text, "no labeller: who labelled it?"),
        (
            len(text) > MAX_LABELLER_CHARS,
            f"the labeller's name is longer than {MAX_LABELLER_CHARS} characters",
        ),
        (
            text.startswith(FORMULA_SIGNS),
            f"the labeller's name begins with {text[:1]!r}, a spreadsheet formula's sign",
        ),
        (
            any(unicodedata.category(char).startswith("C") for char in text),
            "the labeller's name holds control or invisible characters",
        ),
        (
            text.startswith(("{", "[")) or _NUMBER.fullmatch(text) is not None,
            "the labeller's name is JSON or a number, not a name",
        ),
    )
    return next((reason for failed, reason in checks if failed), None)


def labels_schema() -> pa.Schema:
    import pyarrow as pa

    return pa.schema(
        [
            ("row_id", pa.string()),
            ("metric", pa.string()),
            ("label", pa.float64()),
            ("labeller", pa.string()),
            ("labelled_at", pa.timestamp("us", tz="UTC")),
            ("page_version", pa.string()),
            ("batch_id", pa.string()),
        ]
    )


@dataclass(frozen=True)
class Candidate:
    """A label as someone gave it, before it is checked. `line` says where it came from (the
    line of an imported file, or the page's form)."""

    line: int
    day: str
    row_id: str
    metric: str
    label: str
    labeller: str


@dataclass(frozen=True)
class Refused:
    line: int
    day: str
    row_id: str
    metric: str
    reason: str


@dataclass
class Checked:
    """A batch of candidates checked: what may be written, by day, and what was refused."""

    accepted: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    refused: list[Refused] = field(default_factory=list)

    @property
    def accepted_count(self) -> int:
        return sum(len(rows) for rows in self.accepted.values())


def parse_level(text: str, metric: str | None = None) -> float | None:
    """The label level a cell means (`0`, `0.5`, `.5`, `1`, `1.0`...), None if none; for a
    `metric` with levels of its own (a criterion's), one of those, by value or by name."""
    if metric is not None:
        return label_value(metric, text)
    try:
        value = float(text.strip())
    except ValueError:
        return None
    return value if value in LEVELS else None


def allowed(metric: str) -> str:
    """The labels a metric takes, for a refusal: `0, 0.5, 1`, or `0 (fail), 1 (pass)`."""
    _, levels = label_levels(metric)
    if all(name in ("none", "some", "all") for _, name, _ in levels):
        return ", ".join(value for value, _, _ in levels)
    return ", ".join(f"{value} ({name})" for value, name, _ in levels)


def write_queue(tables: DayTables, day: str, scored: pa.Table, settings: Settings) -> int:
    """Write the day's labelling queue from its scored rows; the rows queued (0: none, and
    nothing written, when `labels.per_day` is 0)."""
    if settings.labels.per_day == 0:
        return 0
    queue = label_queue(
        scored, settings.metrics.names, settings.pipeline.segments, settings.labels.per_day
    )
    tables.write_label_queue(day, queue)
    return int(queue.num_rows)


def existing_keys(tables: DayTables, days: Iterable[str]) -> set[tuple[str, str, str, str]]:
    """The keys of the labels stored for `days`, the labeller's name normalised (labels
    written before names were are keyed as they would be now)."""
    return {
        (str(row["dt"]), row["row_id"], row["metric"], labeller_name(str(row["labeller"])))
        for table in tables.read_labels(sorted(set(days)))
        for row in table.select(list(LABEL_KEY)).to_pylist()
    }


def unique_labels(tables: DayTables, days: Sequence[str]) -> list[dict[str, Any]]:
    """The labels stored for `days`, one per person, row and metric (the earliest; names
    normalised): what every count and mean reads, whatever writers raced to store."""
    found: dict[tuple[str, str, str, str], dict[str, Any]] = {}
    rows = [row for table in tables.read_labels(days) for row in table.to_pylist()]
    rows.sort(key=lambda row: (row.get("labelled_at") is None, row.get("labelled_at")))
    for row in rows:
        name = labeller_name(str(row["labeller"]))
        found.setdefault((str(row["dt"]), row["row_id"], row["metric"], name), row)
    return list(found.values())


@contextmanager
def labels_write_lock(tables: DayTables) -> Iterator[None]:
    """Hold the lock labels are checked and written under: the process's, and a lock file's
    beside a local warehouse's labels (an s3:// warehouse: the process's only)."""
    warehouse = tables.lake.warehouse
    with _WRITE_LOCKS_GUARD:
        lock = _WRITE_LOCKS.setdefault(warehouse.uri, threading.Lock())
    with lock:
        import pyarrow.fs as pafs

        if not isinstance(warehouse.filesystem, pafs.LocalFileSystem):
            yield
            return
        import fcntl
        from pathlib import Path

        folder = Path(warehouse.child("labels").path)
        folder.mkdir(parents=True, exist_ok=True)
        with (folder / ".write.lock").open("a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)


def add_labels(
    tables: DayTables,
    candidates: Sequence[Candidate],
    metrics: Sequence[str],
    page_version: str,
    *,
    write_with_refused: bool = False,
) -> tuple[Checked, list[str]]:
    """Check `candidates` and write the accepted ones under `labels_write_lock`, so that no
    other write comes between the check and the write; nothing is written when some are
    refused unless `write_with_refused`. The check and where the labels went."""
    with labels_write_lock(tables):
        checked = check_candidates(tables, candidates, metrics)
        if checked.refused and not write_with_refused:
            return checked, []
        return checked, write_labels(tables, checked, page_version)


def check_candidates(
    tables: DayTables, candidates: Sequence[Candidate], metrics: Sequence[str]
) -> Checked:
    """Check a batch whole (see the module's docstring): nothing is written here."""
    days = {candidate.day for candidate in candidates}
    queues: dict[str, set[str]] = {}
    for day in days:
        try:
            queue = tables.read_label_queue(parse_day(day))
        except ValueError:
            queue = None
        queues[day] = set() if queue is None else set(queue.column("row_id").to_pylist())
    known = existing_keys(tables, [day for day in days if queues[day]])
    checked, seen = Checked(), set()
    for candidate in candidates:
        name = labeller_name(candidate.labeller) if isinstance(candidate.labeller, str) else ""
        key = (candidate.day, candidate.row_id, candidate.metric, name)
        value = parse_level(candidate.label, candidate.metric)
        reason = None
        if not queues[candidate.day]:
            reason = f"no labelling queue for the day {candidate.day!r}"
        elif candidate.row_id not in queues[candidate.day]:
            reason = "the row is not in the day's labelling queue (unknown row)"
        elif candidate.metric not in metrics:
            reason = f"unknown metric {candidate.metric!r} (scored: {', '.join(metrics)})"
        elif value is None:
            reason = f"label {candidate.label!r} is not one of {allowed(candidate.metric)}"
        elif (problem := labeller_problem(candidate.labeller)) is not None:
            reason = problem
        elif key in known:
            reason = "a duplicate: this person labelled this row and metric already"
        elif key in seen:
            reason = "a duplicate: the same row and metric earlier in this batch"
        if reason is not None:
            checked.refused.append(
                Refused(candidate.line, candidate.day, candidate.row_id, candidate.metric, reason)
            )
            continue
        seen.add(key)
        checked.accepted.setdefault(candidate.day, []).append(
            {
                "row_id": candidate.row_id,
                "metric": candidate.metric,
                "label": value,
                "labeller": name,
            }
        )
    return checked


def write_labels(
    tables: DayTables, checked: Checked, page_version: str, now: datetime | None = None
) -> list[str]:
    """Add the accepted labels, one batch per day (one file, or one Iceberg commit, each);
    where they went."""
    import pyarrow as pa

    labelled_at = now or datetime.now(UTC)
    written = []
    for day, rows in sorted(checked.accepted.items()):
        batch_id = uuid.uuid4().hex
        records = [
            {**row, "labelled_at": labelled_at, "page_version": page_version, "batch_id": batch_id}
            for row in rows
        ]
        table = pa.Table.from_pylist(records, schema=labels_schema())
        written.append(tables.append_labels(day, table, batch_id))
    return written


def queue_rows(
    tables: DayTables,
    day: str,
    settings: Settings,
    *,
    labeller: str | None = None,
) -> list[dict[str, Any]]:
    """The day's queued rows in queue order, as people see them (id, question, contexts,
    answer: never the judge's score or evidence), with the metrics each still lacks a label
    of (by `labeller`, or by anyone). Rows with nothing left to label are left out."""
    queue = tables.read_label_queue(day)
    if queue is None:
        return []
    metrics = settings.metrics.names
    who = None if labeller is None else labeller_name(labeller)
    done: dict[str, set[str]] = {}
    for table in tables.read_labels([day]):
        for row in table.select(["row_id", "metric", "labeller"]).to_pylist():
            if who is None or labeller_name(str(row["labeller"])) == who:
                done.setdefault(row["row_id"], set()).add(row["metric"])
    columns = settings.columns
    texts = (columns.question, columns.contexts, columns.answer)
    # the pass-through columns a criterion reads: a person judges what the judge was shown
    passed = list(dict.fromkeys(n for c in settings.criteria.values() for n in c.pass_through))
    scored = tables.read_scored(day, columns=[ROW_ID_COLUMN, *texts, *passed])
    if ROW_ID_COLUMN not in scored.column_names:  # a day scored before ids were derived
        return []
    by_id: dict[str, dict[str, Any]] = {}
    for row in scored.to_pylist():
        by_id.setdefault(str(row[ROW_ID_COLUMN]), row)
    found = []
    for entry in queue.sort_by("position").to_pylist():
        left = [metric for metric in metrics if metric not in done.get(entry["row_id"], set())]
        row = by_id.get(entry["row_id"])
        if not left or row is None:
            continue
        found.append(
            {
                "dt": day,
                "row_id": entry["row_id"],
                "question": row[columns.question],
                "contexts": list(row[columns.contexts] or []),
                "answer": row[columns.answer],
                "metrics": left,
                "passed": {name: row[name] for name in passed if row.get(name) is not None},
            }
        )
    return found
