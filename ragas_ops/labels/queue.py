"""The labelling queue: which of a scored day's rows people are asked to label.

A sample that must not bias the corrected mean: chosen by a hash of the row id (salted, so it
is independent of `pipeline.sample_fraction`'s hash too), never by score or status, the same
rows on every rerun and every machine. Rows no one could label (no usable id, or every metric
`invalid_input` or `not_sampled`) are not candidates. With `pipeline.segments`, the day is cut
into strata (one per combination of segment values) and `labels.per_day` is shared among them:
one each first (so a small segment is labelled too, while there are enough labels for every
stratum), the rest in proportion to their rows. The corrected mean weighs each label by its
stratum's rows over its labels, so the pooled estimate stays unbiased.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ragas_ops.contract.status import Status
from ragas_ops.sampling import ROW_ID_COLUMN, row_id_text

if TYPE_CHECKING:
    import pyarrow as pa

SALT = "ragas-ops/labels/"
ALL = "all"
"""The stratum of a day without segments."""
NULL_SEGMENT = "(null)"
UNLABELLABLE = (Status.INVALID_INPUT.value, Status.NOT_SAMPLED.value)


def queue_schema() -> pa.Schema:
    import pyarrow as pa

    return pa.schema(
        [
            ("row_id", pa.string()),
            ("position", pa.int64()),
            ("stratum", pa.string()),
            ("stratum_rows", pa.int64()),
            ("stratum_labels", pa.int64()),
        ]
    )


def label_hash(row_id: str) -> int:
    digest = hashlib.sha256((SALT + row_id).encode()).digest()
    return int.from_bytes(digest[:8], "big")


def stratum_of(row: dict[str, Any], segments: Sequence[str]) -> str:
    """`app=search|tenant=acme`: the segment values of a row, `all` without segments."""
    if not segments:
        return ALL
    return "|".join(
        f"{column}={NULL_SEGMENT if row.get(column) is None else row[column]}"
        for column in segments
    )


def allocate(sizes: dict[str, int], per_day: int) -> dict[str, int]:
    """Labels per stratum: one each first (largest strata first when there are fewer labels
    than strata), then the rest by Sainte-Laguë's rule (each next label to the stratum with the
    most rows per label-and-a-half), never more than a stratum's rows."""
    given = dict.fromkeys(sizes, 0)
    by_size = sorted(sizes, key=lambda name: (-sizes[name], name))
    budget = min(per_day, sum(sizes.values()))
    for name in by_size[:budget]:
        given[name] = 1
    for _ in range(budget - sum(given.values())):
        open_strata = [name for name in by_size if given[name] < sizes[name]]
        name = max(open_strata, key=lambda n: sizes[n] / (given[n] + 0.5))
        given[name] += 1
    return given


def candidates(
    scored: pa.Table, metrics: Sequence[str], segments: Sequence[str]
) -> list[dict[str, Any]]:
    """The rows that can be labelled: a usable id (its first row when repeated) and a metric
    that was asked of the judge."""
    wanted = [ROW_ID_COLUMN, *segments, *(f"{metric}_status" for metric in metrics)]
    present = [column for column in wanted if column in scored.column_names]
    if ROW_ID_COLUMN not in present:
        return []
    seen: set[str] = set()
    found = []
    for row in scored.select(present).to_pylist():
        row_id = row_id_text(row[ROW_ID_COLUMN])
        if row_id is None or row_id in seen:
            continue
        statuses = [row.get(f"{metric}_status") for metric in metrics]
        if all(status in UNLABELLABLE for status in statuses):
            continue
        seen.add(row_id)
        found.append({"row_id": row_id, "stratum": stratum_of(row, segments)})
    return found


def label_queue(
    scored: pa.Table, metrics: Sequence[str], segments: Sequence[str], per_day: int
) -> pa.Table:
    """The day's queue: `per_day` rows (fewer on a smaller day), in the order the labelling
    page shows them (by the hash: no stratum comes first)."""
    import pyarrow as pa

    rows = candidates(scored, metrics, segments)
    sizes = Counter(row["stratum"] for row in rows)
    given = allocate(dict(sizes), per_day)
    chosen: list[dict[str, Any]] = []
    taken: Counter[str] = Counter()
    for row in sorted(rows, key=lambda row: (label_hash(row["row_id"]), row["row_id"])):
        if taken[row["stratum"]] < given[row["stratum"]]:
            taken[row["stratum"]] += 1
            chosen.append(row)
    records = [
        {
            "row_id": row["row_id"],
            "position": position,
            "stratum": row["stratum"],
            "stratum_rows": sizes[row["stratum"]],
            "stratum_labels": given[row["stratum"]],
        }
        for position, row in enumerate(chosen)
    ]
    return pa.Table.from_pylist(records, schema=queue_schema())
