"""`ragas-ops labels export|import`: the labelling queue as a spreadsheet, and its labels back.

`export` writes the queued rows of one or more scored days that still lack a label (CSV or
JSON lines: day, row id, question, contexts, answer, and one empty column per metric; never the
judge's score). A person fills the metric columns with 0, 0.5 or 1 (none / some / all; a blank
cell is no label) and `import` checks the whole file (`labels.store.check_candidates`): a
refused label is listed with its record and reason, and then nothing is written unless
`--skip-refused` says to write the others. A file that is not one of records (a line that is
not a JSON object, a line longer than `MAX_LINE_CHARS`, a labeller that is JSON, a number or
not text) is refused whole before anything is checked, each such line named on a line of its
own; a long line is never read whole.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ragas_ops.config import ConfigError, Settings, load_settings
from ragas_ops.contract.layout import Lake, parse_day
from ragas_ops.labels.store import Candidate, Checked, add_labels, queue_rows
from ragas_ops.metrics.criteria import register_criteria
from ragas_ops.pipeline.aggregate import days_before
from ragas_ops.tables.format import DayTables, day_tables

IMPORT_VERSION = "import/1"
"""`page_version` of the labels `ragas-ops labels import` writes."""
FIXED_COLUMNS = ("dt", "row_id", "question", "contexts", "answer", "labeller")
EXIT_REFUSED = 1
MAX_LINE_CHARS = 4 << 20
"""Longest line of an imported file (4 Mi characters): an exported row's contexts are at
most the size budget's 120,000 characters, a few times over once quoted as JSON."""


def add_labels_parser(commands: Any) -> None:
    """Add `labels` and its `export` and `import` to the main parser's subcommands."""
    labels = commands.add_parser(
        "labels", help="the blind human labels: export the labelling queue, import its labels"
    )
    actions = labels.add_subparsers(dest="action", required=True, metavar="ACTION")
    export = actions.add_parser(
        "export",
        help="write the queued rows still to label as CSV or JSON lines (no judge scores)",
    )
    export.add_argument("output", type=Path, metavar="FILE", help="the file to write")
    export.add_argument("--day", required=True, help="the (last) scored day, YYYY-MM-DD")
    export.add_argument(
        "--days", type=int, default=1, help="this many days up to --day (default 1)"
    )
    export.add_argument("--format", choices=["csv", "jsonl"], help="default: FILE's suffix")
    export.add_argument(
        "--labeller", help="leave out what this person labelled already (default: anyone)"
    )
    export.set_defaults(run=_run_export)
    imported = actions.add_parser(
        "import", help="add the labels of an exported file, every one checked first"
    )
    imported.add_argument("input", type=Path, metavar="FILE", help="an exported file, filled")
    imported.add_argument("--format", choices=["csv", "jsonl"], help="default: FILE's suffix")
    imported.add_argument(
        "--labeller", help="who labelled the rows whose labeller column is empty or missing"
    )
    imported.add_argument(
        "--skip-refused",
        action="store_true",
        help="write the labels that pass even when others are refused",
    )
    imported.set_defaults(run=_run_import)
    for parser in (export, imported):
        parser.add_argument("--config", type=Path, help="TOML config file")
        parser.add_argument("-v", "--verbose", action="store_true")


def _tables(settings: Settings) -> DayTables:
    return day_tables(Lake(settings.pipeline), settings)


def _format(path: Path, given: str | None) -> str:
    if given is not None:
        return given
    suffix = path.suffix.lower().lstrip(".")
    if suffix in ("csv", "jsonl"):
        return suffix
    raise ConfigError(f"{path}: say --format csv or jsonl (the name ends in neither)")


def _run_export(options: argparse.Namespace) -> int:
    settings = load_settings(options.config)
    register_criteria(settings.criteria)  # their levels: what a label may say
    if options.days < 1:
        raise ConfigError("--days must be at least 1")
    last = parse_day(options.day)
    days = [*days_before(last, options.days - 1), last]
    tables = _tables(settings)
    rows = [
        row for day in days for row in queue_rows(tables, day, settings, labeller=options.labeller)
    ]
    metrics = settings.metrics.names
    shown = _shown_columns(settings)
    kind = _format(options.output, options.format)
    with options.output.open("w", encoding="utf-8", newline="") as handle:
        if kind == "csv":
            fields = [*FIXED_COLUMNS[:5], *shown, *metrics, "labeller"]
            writer = csv.DictWriter(handle, fieldnames=fields)
            writer.writeheader()
            for row in rows:
                writer.writerow(_flat(row, metrics, options.labeller, json.dumps, shown))
        else:
            for row in rows:
                record = _flat(row, metrics, options.labeller, list, shown)
                handle.write(json.dumps(record) + "\n")
    print(f"{len(rows)} row(s) to label from {len(days)} day(s) -> {options.output}")
    return 0


def _shown_columns(settings: Any) -> list[str]:
    """The pass-through columns the criteria read: shown to the labeller, never labels."""
    criteria = settings.criteria.values()
    return list(dict.fromkeys(name for spec in criteria for name in spec.pass_through))


def _flat(
    row: dict[str, Any],
    metrics: tuple[str, ...],
    labeller: str | None,
    contexts: Any,
    shown: Sequence[str] = (),
) -> dict[str, Any]:
    """A queued row as a record of the file: a metric already labelled is left out (`-`)."""
    record = {name: row[name] for name in FIXED_COLUMNS[:5] if name != "contexts"}
    record["contexts"] = contexts(row["contexts"])
    for name in shown:
        value = (row.get("passed") or {}).get(name)
        record[name] = contexts(value) if isinstance(value, list) else value
    for metric in metrics:
        record[metric] = "" if metric in row["metrics"] else "-"
    record["labeller"] = labeller or ""
    return record


class _LineTooLongError(ValueError):
    """A line of the file is longer than MAX_LINE_CHARS."""


def _bounded_lines(handle: Any) -> Iterator[str]:
    """The file's lines, each read at most MAX_LINE_CHARS at a time: a longer one stops the
    reading (a 200 MB cell is never held whole)."""
    number = 0
    while line := handle.readline(MAX_LINE_CHARS + 1):
        number += 1
        if len(line) > MAX_LINE_CHARS:
            raise _LineTooLongError(f"line {number:,} is longer than {MAX_LINE_CHARS:,} characters")
        yield line


def _records(path: Path, kind: str) -> Iterator[tuple[int, dict[str, Any] | str]]:
    """(number, record) of each record of the file, or (number, why it is not one)."""
    with path.open(encoding="utf-8-sig", newline="") as handle:  # spreadsheets add a BOM
        try:
            if kind == "csv":
                csv.field_size_limit(MAX_LINE_CHARS)
                yield from enumerate(csv.DictReader(_bounded_lines(handle)), 1)
                return
            for number, line in enumerate(_bounded_lines(handle), 1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except json.JSONDecodeError as error:
                    yield number, f"line {number} is not JSON: {error.msg}"
                    continue
                except RecursionError:
                    yield number, f"line {number} is JSON nested too deep to read"
                    continue
                if isinstance(record, dict):
                    yield number, record
                else:
                    yield number, f"line {number} is a JSON {type(record).__name__}, not an object"
        except (_LineTooLongError, csv.Error) as error:
            raise ConfigError(f"{path}: {error}: refused, nothing was read further") from None
        except UnicodeDecodeError:
            raise ConfigError(f"{path}: not UTF-8 text: refused") from None


def _candidates(
    options: argparse.Namespace, metrics: tuple[str, ...], shown: Sequence[str] = ()
) -> list[Candidate]:
    """Every label the file gives; a ConfigError naming each record that is not one. `shown`:
    the pass-through columns an export adds beside the labels (read as shown, never a label)."""
    found, problems = [], []
    for number, record in _records(options.input, _format(options.input, options.format)):
        if isinstance(record, str):
            problems.append(record)
            continue
        missing = [name for name in ("dt", "row_id") if not record.get(name)]
        if missing:
            problems.append(f"record {number} has no {' or '.join(missing)}")
            continue
        labeller = record.get("labeller") or options.labeller or ""
        if not isinstance(labeller, str):
            problems.append(
                f"record {number}: the labeller is JSON ({type(labeller).__name__}), not a name"
            )
            continue
        extra = [
            name
            for name in record
            if name not in FIXED_COLUMNS and name not in metrics and name not in shown
        ]
        for metric in [*metrics, *extra]:
            cell = record.get(metric)
            text = "" if cell is None else str(cell).strip()
            if text in ("", "-"):  # no label given, or the export's "labelled already"
                continue
            found.append(
                Candidate(number, str(record["dt"]), str(record["row_id"]), metric, text, labeller)
            )
    if problems:
        raise ConfigError(
            "\n".join(f"{options.input}: {problem}" for problem in problems)
            + f"\n{len(problems)} malformed record(s): nothing was checked or written"
        )
    return found


def _run_import(options: argparse.Namespace) -> int:
    settings = load_settings(options.config)
    register_criteria(settings.criteria)  # their levels: what a label may say
    metrics = settings.metrics.names
    candidates = _candidates(options, metrics, _shown_columns(settings))
    tables = _tables(settings)
    checked, written = add_labels(
        tables, candidates, metrics, IMPORT_VERSION, write_with_refused=options.skip_refused
    )
    _print_refused(checked)
    if checked.refused and not options.skip_refused:
        print(
            f"ragas-ops: {len(checked.refused)} of {len(candidates)} label(s) refused; nothing "
            "was written (fix them, or --skip-refused to write the others)",
            file=sys.stderr,
        )
        return EXIT_REFUSED
    print(
        f"{checked.accepted_count} label(s) added, {len(checked.refused)} refused, "
        f"in {len(written)} day(s)"
    )
    return 0


def _print_refused(checked: Checked) -> None:
    for refused in checked.refused:
        print(
            f"refused: record {refused.line} ({refused.day}, {refused.row_id}, "
            f"{refused.metric}): {refused.reason}",
            file=sys.stderr,
        )
