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
