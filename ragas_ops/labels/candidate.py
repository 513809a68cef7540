"""The shadow judge's agreement with the people's labels, beside the judge of record's: the
`candidate_*` columns the aggregate adds to the daily metrics (docs/labels.md, "The shadow
judge against the labels").

The pairs are the labelled pairs of the calibration (`calibration.labelled_pairs`: the labels
of the window, several people's labels of a row averaged) whose row the shadow judge scored
`ok` in its sample of the row's day (`candidate_scored/`, joined by row id and day), by a
candidate judge that also scored the day D being aggregated (a change of candidate starts its
pairs afresh, as a change of the judge of record does). The measures are the judge of
record's (`agreement.agreement`: mean absolute difference, Spearman, weighted kappa), so the
two are read side by side; below `ppi.MIN_LABELS` pairs they are null and the status says
`too_few_labels`.

The overlap is small (the candidate's sample meets the labelling queue by chance: about
`candidate_sample` x `labels.per_day` pairs a day). The queue is left independent of the
candidate's sample on purpose: it must depend on the row id alone, so that the corrected means'
weights stay those of a plain stratified sample; raising `candidate_sample` or
`labels.per_day` is what raises the overlap.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ragas_ops.labels.agreement import agreement
from ragas_ops.labels.queue import ALL

if TYPE_CHECKING:
    import pyarrow as pa

CANDIDATE_AGREEMENT_COLUMNS: tuple[tuple[str, str], ...] = (
    ("candidate_judge", "string"),
    ("candidate_labels", "int64"),
    ("candidate_labels_status", "string"),
    ("candidate_agreement_mad", "float64"),
    ("candidate_agreement_spearman", "float64"),
    ("candidate_agreement_kappa", "float64"),
)
"""The columns added to the daily metrics after the calibration's (docs/tables.md)."""
NO_SHADOW_JUDGE = "no_shadow_judge"
OK = "ok"


def candidate_agreement(
    day: str,
    pairs: Sequence[Mapping[str, Any]],
    shadow: Mapping[tuple[str, str], Mapping[str, Any]],
    keys: Sequence[tuple[str, str, str]],
) -> dict[tuple[str, str, str], dict[str, Any]]:
    """The `candidate_*` columns of each (segment_column, segment_value, metric) key, from the
    shadow judge's row of each (day, row id) of the labelled days and of `day`."""
    empty = dict.fromkeys(name for name, _ in CANDIDATE_AGREEMENT_COLUMNS)
    shadow_today = [row for (row_day, _), row in shadow.items() if row_day == day]
    if not shadow_today:
        none = {**empty, "candidate_labels": 0, "candidate_labels_status": NO_SHADOW_JUDGE}
        return dict.fromkeys(keys, none)
    judges = {row.get("judge") for row in shadow_today}
    found = {}
    for column, value, metric in keys:
        human, judged = [], []
        for pair in pairs:
            row = shadow.get((pair["dt"], pair["row_id"]))
            if (
                row is None
                or pair["metric"] != metric
                or (column != ALL and pair.get(column) != value)
                or row.get(f"{metric}_status") != OK
                or row.get("judge") not in judges
            ):
                continue
            human.append(pair["label"])
            judged.append(row[f"{metric}_score"])
        result = {
            **empty,
            "candidate_judge": ", ".join(sorted(str(judge) for judge in judges)),
            "candidate_labels": len(human),
            "candidate_labels_status": "no_labels",
        }
        if human:
            agreed = agreement(human, judged)
            result["candidate_labels_status"] = agreed.status
            result["candidate_agreement_mad"] = agreed.mean_abs_diff
            result["candidate_agreement_spearman"] = agreed.spearman
            result["candidate_agreement_kappa"] = agreed.kappa
        found[(column, value, metric)] = result
    return found


def with_candidate_agreement(
    metrics_table: pa.Table,
    day: str,
    pairs: Sequence[Mapping[str, Any]],
    shadow: Mapping[tuple[str, str], Mapping[str, Any]],
) -> pa.Table:
    """The day's daily metrics with the `candidate_*` columns (`CANDIDATE_AGREEMENT_COLUMNS`);
    `shadow` as `candidate_agreement` reads it."""
    import pyarrow as pa

    keys = list(
        zip(
            metrics_table.column("segment_column").to_pylist(),
            metrics_table.column("segment_value").to_pylist(),
            metrics_table.column("metric").to_pylist(),
            strict=True,
        )
    )
    found = candidate_agreement(day, pairs, shadow, sorted(set(keys)))
    for name, kind in CANDIDATE_AGREEMENT_COLUMNS:
        column = [found[key][name] for key in keys]
        metrics_table = metrics_table.append_column(name, pa.array(column, getattr(pa, kind)()))
    return metrics_table
