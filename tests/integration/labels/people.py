""" "People" labelling a day's queue of the sample logs through the same code path as the
labelling page and the import: an answer with an invented fact is unfaithful (0), any other
faithful (1). Shared by the label tests that build a lake day by day."""

from __future__ import annotations

import pyarrow as pa

from ragas_ops.config import Settings
from ragas_ops.labels.store import Candidate, check_candidates, queue_rows, write_labels
from ragas_ops.samples import TOPICS
from ragas_ops.tables.format import DayTables


def people_label(answer: str) -> str:
    """What a person says of an answer's faithfulness: an invented fact makes it 0."""
    return "0" if any(topic.unfaithful_answer in answer for topic in TOPICS) else "1"


def label_the_queue(tables: DayTables, day: str, settings: Settings, logs: pa.Table) -> int:
    """Label the faithfulness of every row of the day's queue; how many labels were written."""
    answers = {row["id"]: row["answer"] for row in logs.to_pylist()}
    candidates = [
        Candidate(
            number,
            day,
            row["row_id"],
            "faithfulness",
            people_label(answers[row["row_id"]]),
            "people",
        )
        for number, row in enumerate(queue_rows(tables, day, settings), 1)
    ]
    checked = check_candidates(tables, candidates, settings.metrics.names)
    assert checked.refused == []
    write_labels(tables, checked, "test/1")
    return len(candidates)
