"""`ragas-ops init SAMPLE`: a config file for your logs, from a sample of them.

It reads one log file (JSON Lines, CSV or Parquet) as the pipeline reads it, guesses the
`[columns]` and the segments (`contract.guess`), shows the guess with an example value of each
column, and writes the file once you confirm (`--yes`: without asking, for scripts and tests).
`--column FIELD=COLUMN` and `--segments A,B` correct a guess. The file written is then read
back with the sample, as `score` would read it, so a file that does not fit is never left
behind as if it did.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ragas_ops.config import ConfigError, load_settings
from ragas_ops.contract.guess import Guess, check_guess, flattened, guess_columns
from ragas_ops.contract.inputs import check_columns
from ragas_ops.contract.layout import day_of_folder


def add_init_parser(commands: Any) -> None:
    """Add `init` to the main parser's subcommands."""
    init = commands.add_parser(
        "init",
        help="write a config file for your logs from a sample of them (columns guessed, shown, "
        "confirmed)",
    )
    init.add_argument(
        "sample", type=Path, metavar="SAMPLE", help="one log file (.jsonl, .csv, .parquet)"
    )
    init.add_argument(
        "--output", type=Path, default=Path("ragas-ops.toml"), help="the config file to write"
    )
    init.add_argument(
        "--column",
        action="append",
        default=[],
        metavar="FIELD=COLUMN",
        help="correct a guess, e.g. --column id=request.id (repeatable)",
    )
    init.add_argument("--segments", metavar="A,B", help="the segment columns instead of the guess")
    init.add_argument("--yes", action="store_true", help="write without asking")
    init.add_argument("--force", action="store_true", help="replace an existing --output")
    init.add_argument("-v", "--verbose", action="store_true")
    init.set_defaults(run=run_init)


def run_init(options: argparse.Namespace) -> int:
    """Guess, show, confirm, write, check."""
    if options.output.exists() and not options.force:
        raise ConfigError(f"{options.output} exists: --force replaces it, --output names another")
    guess = guess_columns(flattened(read_sample(options.sample)))
    for pair in options.column:
        name, separator, column = pair.partition("=")
        if not separator or name not in guess.columns:
            raise ConfigError(f"--column expects FIELD=COLUMN with FIELD in {list(guess.columns)}")
        guess.columns[name] = column
    if options.segments is not None:
        guess.segments = [name for name in options.segments.split(",") if name]
    show(guess)
    check_guess(guess)
    if not options.yes:
        if not sys.stdin.isatty():
            raise ConfigError("not a terminal: pass --yes to write the guess without asking")
        if input(f"write {options.output}? [y/N] ").strip().lower() not in ("y", "yes"):
            print("nothing written")
            return 1
    options.output.write_text(guess.toml(), encoding="utf-8")
    check_written(options.output, options.sample)
    config = options.output
    print(f"wrote {config}; next: ragas-ops estimate {options.sample} --config {config}")
    in_day_folder = day_of_folder(options.sample.parent.name) is not None
    folder = options.sample.parent.parent if in_day_folder else None
    if folder is not None:
        print(f"  or: ragas-ops airflow up --raw {folder} --config {options.output}")
    return 0


def read_sample(path: Path) -> Any:
    """The sample as pyarrow reads it (its nested fields not flattened yet)."""
    import pyarrow as pa
    import pyarrow.csv as pacsv
    import pyarrow.json as pajson
    import pyarrow.parquet as pq

    name = path.name.lower()
    if not path.is_file():
        raise ConfigError(f"{path}: no such file")
    try:
        if name.endswith((".jsonl", ".ndjson", ".jsonl.gz", ".ndjson.gz")):
            return pajson.read_json(path)
        if name.endswith((".csv", ".csv.gz")):
            return pacsv.read_csv(path)
        return pq.read_table(path)
    except (pa.ArrowInvalid, OSError) as error:
        raise ConfigError(f"{path}: not a readable log: {error}") from None


def show(guess: Guess) -> None:
    """The guess, a line a field, with an example value of each column."""
    print("guessed from the sample (correct one with --column FIELD=COLUMN):")
    for name, column in guess.columns.items():
        shown = column or "(none found)"
        example = f"  e.g. {guess.examples[name]}" if column and name in guess.examples else ""
        print(f"  {name:<10} <- {shown}{example}")
    if guess.context_text:
        print(f"  {'':<10}    the text of each context: its field {guess.context_text!r}")
    print(f"  segments   <- {', '.join(guess.segments) or '(none)'}")
    if not guess.columns["id"]:
        print("  no id column: each row gets a derived id (docs/tables.md, Row ids)")


def check_written(config: Path, sample: Path) -> None:
    """Read the sample with the written config, as `score` would: it must fit."""
    import pyarrow.fs as pafs

    from ragas_ops.contract.logs import is_text_log, read_text_log

    settings = load_settings(config)
    if is_text_log(str(sample)):
        table = read_text_log(pafs.LocalFileSystem(), str(sample.resolve()), settings.columns)
        check_columns(table.schema, settings.columns)
