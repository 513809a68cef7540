"""The labelling queue (ragas_ops.labels.queue): reproducible, blind to scores, stratified."""

from __future__ import annotations

from collections import Counter

import pyarrow as pa

from ragas_ops.labels.queue import allocate, label_queue

METRICS = ("faithfulness",)


def scored(rows: int, *, seed_scores: int = 0, apps: tuple[str, ...] = ("a",)) -> pa.Table:
    return pa.table(
        {
            "id": [f"row-{index:04d}" for index in range(rows)],
            "app": [apps[index % len(apps)] if index % 10 else apps[0] for index in range(rows)],
            "faithfulness_score": [((index * 7 + seed_scores) % 11) / 10 for index in range(rows)],
            "faithfulness_status": ["ok"] * rows,
        }
    )


def test_the_same_day_gives_the_same_queue_whatever_the_scores_and_row_order() -> None:
    first = label_queue(scored(300), METRICS, (), 20)
    rescored = scored(300, seed_scores=5)
    shuffled = rescored.take(list(reversed(range(300))))
    again = label_queue(shuffled, METRICS, (), 20)
    assert first.num_rows == 20
    assert first.column("row_id").to_pylist() == again.column("row_id").to_pylist()
    assert first.column("position").to_pylist() == list(range(20))


def test_rows_no_one_can_label_are_not_queued() -> None:
    table = scored(30)
    statuses = ["invalid_input"] * 10 + ["not_sampled"] * 10 + ["ok"] * 10
    table = table.set_column(3, "faithfulness_status", pa.array(statuses))
    ids = table.column("id").to_pylist()
    ids[25] = None  # no usable id
    table = table.set_column(0, "id", pa.array(ids))
    queued = label_queue(table, METRICS, (), 20).column("row_id").to_pylist()
    assert sorted(queued) == sorted(f"row-{index:04d}" for index in range(20, 30) if index != 25)


def test_each_segment_gets_a_label_and_the_rest_follows_the_rows() -> None:
    assert allocate({"big": 900, "mid": 90, "small": 10}, 20) == {"big": 17, "mid": 2, "small": 1}
    assert allocate({"big": 900, "mid": 90, "small": 10}, 2) == {"big": 1, "mid": 1, "small": 0}
    assert allocate({"a": 3, "b": 2}, 20) == {"a": 3, "b": 2}
    table = scored(200, apps=("web", "api", "mobile"))
    queue = label_queue(table, METRICS, ("app",), 20)
    strata = Counter(queue.column("stratum").to_pylist())
    assert sum(strata.values()) == 20
    assert set(strata) == {"app=web", "app=api", "app=mobile"}
    strata_rows = zip(
        queue.column("stratum").to_pylist(), queue.column("stratum_rows").to_pylist(), strict=True
    )
    rows = dict(strata_rows)
    assert sum(rows.values()) == 200


def per_row_queue(
    table: pa.Table, metrics: tuple[str, ...], segments: tuple[str, ...], per_day: int
) -> list[tuple[str, str, int, int]]:
    """The queue by the rule written row by row (the code before it was vectorised): the
    specification the Arrow version must meet exactly."""
    from ragas_ops.labels.queue import UNLABELLABLE, label_hash, stratum_of
    from ragas_ops.sampling import row_id_text

    seen: set[str] = set()
    rows = []
    for row in table.to_pylist():
        row_id = row_id_text(row.get("id"))
        if row_id is None or row_id in seen:
            continue
        if all(row.get(f"{metric}_status") in UNLABELLABLE for metric in metrics):
            continue
        seen.add(row_id)
        rows.append((row_id, stratum_of(row, segments)))
    sizes = Counter(stratum for _, stratum in rows)
    given = allocate(dict(sizes), per_day)
    taken: Counter[str] = Counter()
    chosen = []
    for row_id, stratum in sorted(rows, key=lambda row: (label_hash(row[0]), row[0])):
        if taken[stratum] < given[stratum]:
            taken[stratum] += 1
            chosen.append((row_id, stratum, sizes[stratum], given[stratum]))
    return chosen


def queue_rows(queue: pa.Table) -> list[tuple[str, str, int, int]]:
    assert queue.column("position").to_pylist() == list(range(queue.num_rows))
    columns = ("row_id", "stratum", "stratum_rows", "stratum_labels")
    return list(zip(*(queue.column(name).to_pylist() for name in columns), strict=True))


def test_the_arrow_queue_is_the_per_row_rule_on_awkward_days() -> None:
    rows = 3_000
    blanks = [" ", "\t", "\u00a0", "\u2003", "\x1c", "\x85", "", "\u3000"]
    ids: list[str | None] = [f"row-{index % 2_400}" for index in range(rows)]  # repeats
    for index, blank in enumerate(blanks):
        ids[index * 7] = blank
    ids[5] = None
    ids[6] = "\u200b"  # not whitespace to Python: a usable id
    statuses = [
        ["ok", "invalid_input", "not_sampled", None, "judge_unavailable"][index % 5]
        for index in range(rows)
    ]
    other = [["not_sampled", "invalid_input", "ok"][index % 3] for index in range(rows)]
    table = pa.table(
        {
            "id": ids,
            "app": [["web", "api", None, "(null)", "mobile"][index % 5] for index in range(rows)],
            "version": pa.array([[1.0, 2.5, None][index % 3] for index in range(rows)]),
            "flag": [index % 7 == 0 for index in range(rows)],
            "faithfulness_status": statuses,
            "answer_relevance_status": other,
        }
    )
    metrics = ("faithfulness", "answer_relevance")
    for segments in [(), ("app",), ("app", "version", "flag"), ("flag", "missing_column")]:
        for per_day in (0, 3, 20, 500):
            queue = label_queue(table, metrics, segments, per_day)
            assert queue_rows(queue) == per_row_queue(table, metrics, segments, per_day), (
                segments,
                per_day,
            )
    integer_ids = table.set_column(0, "id", pa.array(range(rows)))
    assert queue_rows(label_queue(integer_ids, metrics, ("app",), 20)) == per_row_queue(
        integer_ids, metrics, ("app",), 20
    )
    float_ids = table.set_column(0, "id", pa.array([float(index) for index in range(rows)]))
    assert label_queue(float_ids, metrics, (), 20).num_rows == 0
