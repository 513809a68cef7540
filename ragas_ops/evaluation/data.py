"""Reading benchmark files: JSON lines or Parquet, with their original columns."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq


def read_records(path: Path) -> list[dict[str, Any]]:
    """Rows of a `.parquet` file or of a JSON-lines file, keys stripped of stray whitespace
    (the BEGIN files keep the TSV's carriage return in their last column name)."""
    if not path.exists():
        raise ValueError(f"{path}: no such file")
    if path.suffix == ".parquet":
        rows = pq.read_table(path).to_pylist()
    else:
        rows = []
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as error:
                raise ValueError(f"{path}:{number}: not JSON: {error}") from None
    return [
        {
            str(key).strip(): value.strip() if isinstance(value, str) else value
            for key, value in row.items()
        }
        for row in rows
    ]


def require_columns(path: Path, rows: list[dict[str, Any]], columns: tuple[str, ...]) -> None:
    for number, row in enumerate(rows, start=1):
        missing = [column for column in columns if column not in row]
        if missing:
            raise ValueError(f"{path}: row {number} lacks column(s) {missing}")
