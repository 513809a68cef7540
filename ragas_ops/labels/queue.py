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
import operator
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ragas_ops.contract.status import Status
from ragas_ops.sampling import ROW_ID_COLUMN

if TYPE_CHECKING:
    import numpy.typing as npt
    import pyarrow as pa

SALT = "ragas-ops/labels/"
ALL = "all"
"""The stratum of a day without segments."""
NULL_SEGMENT = "(null)"
UNLABELLABLE = (Status.INVALID_INPUT.value, Status.NOT_SAMPLED.value)
HASH_BATCH_ROWS = 65_536
"""Rows hashed at a time: their salted ids and digests are all that is held as Python bytes."""
_DIGEST = operator.methodcaller("digest")


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
    """The queue's order of a row: the first 8 bytes of SHA-256 over the salt and the id."""
    digest = hashlib.sha256((SALT + row_id).encode()).digest()
    return int.from_bytes(digest[:8], "big")


def label_hashes(row_ids: pa.ChunkedArray | pa.Array) -> npt.NDArray[np.uint64]:
    """`label_hash` of every id of a string column without nulls, as one array.

    SHA-256 stays (the queue of a day already labelled must come out the same when the day is
    aggregated again); the salt is joined by Arrow and the digests taken by hashlib through
    `map`, so no Python bytecode runs per row."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(row_ids, pa.ChunkedArray):
        row_ids = row_ids.combine_chunks()
    found = np.empty(len(row_ids), dtype=np.uint64)
    for start in range(0, len(row_ids), HASH_BATCH_ROWS):
        part = row_ids.slice(start, HASH_BATCH_ROWS)
        salted = pc.binary_join_element_wise(SALT, part, "").cast(pa.binary()).to_pylist()
        digests = b"".join(map(_DIGEST, map(hashlib.sha256, salted)))
        heads = np.frombuffer(digests, dtype=np.uint8).reshape(-1, 32)[:, :8]
        found[start : start + len(part)] = heads.copy().view(">u8").ravel()
    return found


def row_id_texts(column: pa.ChunkedArray | pa.Array) -> pa.Array:
    """Each row id as the text `sampling.row_id_text` makes of it (a non-blank string as it is,
    an integer in decimal), null where no sample can use it: a whole column at once."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    kind = column.type
    if pa.types.is_dictionary(kind):
        column, kind = column.cast(kind.value_type), kind.value_type
    if pa.types.is_integer(kind):
        return column.cast(pa.string())
    if not (pa.types.is_string(kind) or pa.types.is_large_string(kind)):
        return pa.nulls(len(column), pa.string())
    text = column.cast(pa.string())
    # utf8_trim_whitespace strips what str.strip() strips (checked over every code point)
    blank = pc.equal(pc.utf8_length(pc.utf8_trim_whitespace(text)), 0)
    return pc.if_else(blank, pa.scalar(None, pa.string()), text)


def stratum_of(row: dict[str, Any], segments: Sequence[str]) -> str:
    """`app=search|tenant=acme`: the segment values of a row, `all` without segments."""
    if not segments:
        return ALL
    return "|".join(
        f"{column}={NULL_SEGMENT if row.get(column) is None else row[column]}"
        for column in segments
    )


def strata(table: pa.Table, segments: Sequence[str]) -> tuple[list[str], npt.NDArray[np.int64]]:
    """The day's strata: their names (`stratum_of`'s) and each row's index among them.

    Each segment column is dictionary-encoded and only its distinct values become text (as
    `stratum_of` writes them, through Python's `str`), so the rows cost array arithmetic."""
    import pyarrow.compute as pc

    combined = np.zeros(table.num_rows, dtype=np.int64)
    texts: list[list[str]] = []
    for column in segments:
        if column in table.column_names:
            encoded = pc.dictionary_encode(table.column(column)).combine_chunks()
            values = [str(value) for value in encoded.dictionary.to_pylist()]
            codes = pc.fill_null(encoded.indices, len(values)).to_numpy().astype(np.int64)
        else:  # a missing column reads as null in every row, as `row.get` did
            values, codes = [], np.zeros(table.num_rows, dtype=np.int64)
        texts.append([f"{column}={value}" for value in [*values, NULL_SEGMENT]])
        combined = combined * len(texts[-1]) + codes
    if not segments:
        return [ALL], combined
    present, inverse = np.unique(combined, return_inverse=True)
    names: list[str] = []
    for combination in present.tolist():
        parts, code = [], combination
        for column_texts in reversed(texts):
            code, index = divmod(code, len(column_texts))
            parts.append(column_texts[index])
        names.append("|".join(reversed(parts)))
    # distinct codes may share a name (a value written "(null)" beside a null): one stratum
    unique_names = list(dict.fromkeys(names))
    position = {name: index for index, name in enumerate(unique_names)}
    renamed = np.array([position[name] for name in names], dtype=np.int64)
    return unique_names, renamed[inverse.reshape(-1)]


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


def labellable(scored: pa.Table, metrics: Sequence[str]) -> npt.NDArray[np.bool_]:
    """The rows with a metric that was asked of the judge (a missing status column counts as
    asked, as a null status does)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    asked = np.zeros(scored.num_rows, dtype=bool)
    refused = pa.array(UNLABELLABLE, pa.string())
    for metric in metrics:
        name = f"{metric}_status"
        if name not in scored.column_names:
            return np.ones(scored.num_rows, dtype=bool)
        status = pc.fill_null(scored.column(name).cast(pa.string()), "")
        asked |= np.asarray(pc.invert(pc.is_in(status, value_set=refused)), dtype=bool)
    return asked


def candidates(
    scored: pa.Table, metrics: Sequence[str], segments: Sequence[str]
) -> tuple[pa.Array, npt.NDArray[np.int64], list[str]]:
    """The rows that can be labelled (a usable id, its first such row when repeated, and a
    metric that was asked of the judge): their ids, their strata's indices, the strata's names."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if ROW_ID_COLUMN not in scored.column_names:
        return pa.array([], pa.string()), np.zeros(0, dtype=np.int64), []
    ids = row_id_texts(scored.column(ROW_ID_COLUMN))
    usable = labellable(scored, metrics) & np.asarray(pc.is_valid(ids), dtype=bool)
    rows = np.flatnonzero(usable)
    kept_ids = ids.take(pa.array(rows))
    codes = pc.dictionary_encode(kept_ids).indices.to_numpy()
    _, first = np.unique(codes, return_index=True)
    rows = rows[np.sort(first)]
    names, stratum = strata(scored, segments)
    return ids.take(pa.array(rows)), stratum[rows], names


def label_queue(
    scored: pa.Table, metrics: Sequence[str], segments: Sequence[str], per_day: int
) -> pa.Table:
    """The day's queue: `per_day` rows (fewer on a smaller day), in the order the labelling
    page shows them (by the hash: no stratum comes first)."""
    import pyarrow as pa

    ids, stratum, names = candidates(scored, metrics, segments)
    counts = np.bincount(stratum, minlength=len(names))
    sizes = {name: int(count) for name, count in zip(names, counts, strict=True) if count}
    given = allocate(sizes, per_day)
    order = _hash_order(ids)
    # each row's rank within its stratum in the hash order: kept while under its labels
    ordered = stratum[order]
    by_stratum = np.argsort(ordered, kind="stable")
    starts = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int64)
    rank = np.empty(len(order), dtype=np.int64)
    rank[by_stratum] = np.arange(len(order)) - starts[ordered[by_stratum]]
    allowed = np.array([given.get(name, 0) for name in names], dtype=np.int64)
    chosen = order[rank < allowed[ordered]] if len(order) else order
    chosen_ids = ids.take(pa.array(chosen)).to_pylist()
    records = [
        {
            "row_id": row_id,
            "position": position,
            "stratum": names[code],
            "stratum_rows": sizes[names[code]],
            "stratum_labels": given[names[code]],
        }
        for position, (row_id, code) in enumerate(
            zip(chosen_ids, stratum[chosen].tolist(), strict=True)
        )
    ]
    return pa.Table.from_pylist(records, schema=queue_schema())


def _hash_order(ids: pa.Array) -> npt.NDArray[np.int64]:
    """The rows by (hash, id): the hash alone, unless two ids share one."""
    import pyarrow as pa

    hashes = label_hashes(ids)
    order = np.argsort(hashes, kind="stable")
    if len(order) > 1 and not np.all(np.diff(hashes[order]) > 0):
        table = pa.table({"hash": hashes, "row_id": ids, "at": np.arange(len(ids))})
        ordered = table.sort_by([("hash", "ascending"), ("row_id", "ascending")])
        return np.asarray(ordered.column("at"), dtype=np.int64)
    return order.astype(np.int64)
