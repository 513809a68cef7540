"""Per-row benchmark results as JSON lines, written as rows finish, so a run can resume.

Each line holds one row's key (a digest of the row's content), what scored it (the judge with
its rule, metric and prompt versions: `cli.benchmark.scoring_identity`) and its results. A
rerun with the same judge and versions reuses the rows already in the file and scores only the
rest; another
judge, a new version or changed row content is scored again. The judges' caches make even
those rescored rows free when nothing changed.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ragas_ops.judge.cache.keys import cache_key


def row_key(benchmark: str, row: Any) -> str:
    return cache_key(benchmark=benchmark, row=row)[:24]


class RowResults:
    """The results file of one benchmark run."""

    def __init__(self, path: Path | None, judge: str) -> None:
        self.path = path
        self.judge = judge

    def done(self) -> dict[str, dict[str, Any]]:
        """Records already written for this judge, by row key (a torn last line is ignored)."""
        if self.path is None or not self.path.exists():
            return {}
        found: dict[str, dict[str, Any]] = {}
        for line in self.path.read_text(encoding="utf-8").splitlines():
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(record, dict) and record.get("judge") == self.judge:
                found[str(record.get("key"))] = record
        return found

    def append(self, records: Iterable[dict[str, Any]]) -> None:
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        torn = self.path.exists() and not self.path.read_bytes().endswith(b"\n")
        with self.path.open("a", encoding="utf-8") as handle:
            if torn and self.path.stat().st_size:
                handle.write("\n")  # a crash mid-line must not swallow the next record
            for record in records:
                handle.write(json.dumps({**record, "judge": self.judge}, ensure_ascii=False))
                handle.write("\n")
            handle.flush()
