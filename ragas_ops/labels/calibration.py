"""A day's judge-human agreement and corrected means, per metric and segment, from the labels
of the last `labels.window_days` days: the columns the aggregate adds to the daily metrics.

For a day D and a grouping (every row, or one value of one segment column) and a metric:
- the labelled pairs are the labels of rows scored in the window (D and the days before it)
  whose score for the metric is `ok` and whose judge is one that scored D's rows of the
  grouping (a label pairs with the score of the judge that scored its row: after a change of
  judge, the labels of the old judge's rows no longer say how far the new judge is off, so
  they are left out until the day's own judge has enough);
- several people's labels of one row and metric are averaged to one;
- each pair is weighed by its stratum's rows over its labels (`labels.queue`);
- the corrected mean is plain PPI (`ppi.ppi_mean` with `lam = 1`) of the pairs and of every
  `ok` score of D: D's judge mean plus the window's mean human-minus-judge difference, D's mean on
  the people's scale with its interval, assuming the judge's offset from people held over the
  window (what the agreement over time shows);
- the agreement is `agreement.agreement` of the pairs.
Below `ppi.MIN_LABELS` pairs (or under 2 rows scored) the figures are null and `labels_status`
says `too_few_labels`; with no pair at all, `no_labels`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import date, timedelta
from typing import TYPE_CHECKING, Any

import numpy as np

from ragas_ops.labels.agreement import agreement
from ragas_ops.labels.ppi import ppi_mean
from ragas_ops.labels.queue import ALL, NULL_SEGMENT, row_id_texts
from ragas_ops.labels.store import unique_labels
from ragas_ops.sampling import ROW_ID_COLUMN

if TYPE_CHECKING:
    import numpy.typing as npt
    import pyarrow as pa

    from ragas_ops.config import Settings
    from ragas_ops.tables.format import DayTables

CALIBRATION_COLUMNS: tuple[tuple[str, str], ...] = (
    ("labels", "int64"),
    ("labels_status", "string"),
    ("corrected_mean", "float64"),
    ("corrected_ci_low", "float64"),
    ("corrected_ci_high", "float64"),
    ("agreement_mad", "float64"),
    ("agreement_spearman", "float64"),
    ("agreement_kappa", "float64"),
)
"""The columns added to the daily metrics, in order (documented in docs/tables.md)."""
OK = "ok"


def window_days(day: str, days: int) -> list[str]:
    """`days` days ending with `day`, oldest first."""
    anchor = date.fromisoformat(day)
    return [(anchor - timedelta(days=offset)).isoformat() for offset in range(days - 1, -1, -1)]


def _segment_texts(table: pa.Table, segments: Sequence[str]) -> pa.Table:
    """The table with its segment columns as the daily metrics write them (text, nulls
    `(null)`)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    for column in segments:
        if column in table.column_names:
            text = pc.fill_null(pc.cast(table.column(column), pa.string()), NULL_SEGMENT)
            table = table.set_column(table.column_names.index(column), column, text)
    return table


def _rows_of(table: pa.Table, row_ids: set[str]) -> dict[str, dict[str, Any]]:
    """The first row of each of `row_ids` in the table (a repeated id: its first row, as the
    queue takes), as a dict; only those rows are turned into Python objects."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if ROW_ID_COLUMN not in table.column_names or not row_ids:
        return {}
    ids = row_id_texts(table.column(ROW_ID_COLUMN))
    wanted = pc.is_in(ids, value_set=pa.array(sorted(row_ids), pa.string()))
    picked = table.filter(wanted)
    found: dict[str, dict[str, Any]] = {}
    for row_id, row in zip(ids.filter(wanted).to_pylist(), picked.to_pylist(), strict=True):
        found.setdefault(row_id, row)
    return found


def labelled_pairs(
    tables: DayTables,
    day: str,
    today: pa.Table,
    settings: Settings,
) -> list[dict[str, Any]]:
    """Every (row, metric) labelled in the window, with its averaged label, its row's score,
    status, judge and segments, and its weight (none, and no day read, without labels)."""
    metrics, segments = settings.metrics.names, settings.pipeline.segments
    labels: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    # one label per person, row and metric, whatever writers raced to store
    for label in unique_labels(tables, window_days(day, settings.labels.window_days)):
        if label["metric"] in metrics:
            labels[(str(label["dt"]), label["row_id"], label["metric"])].append(label["label"])
    columns = [
        ROW_ID_COLUMN,
        "judge",
        *segments,
        *(f"{metric}_{suffix}" for metric in metrics for suffix in ("score", "status")),
    ]
    pairs = []
    for labelled_day in sorted({key[0] for key in labels}):
        scored = today if labelled_day == day else tables.read_scored(labelled_day, columns=columns)
        labelled_ids = {row_id for dt, row_id, _ in labels if dt == labelled_day}
        rows = _rows_of(_segment_texts(scored, segments), labelled_ids)
        queue = tables.read_label_queue(labelled_day)
        weights = (
            {}
            if queue is None
            else {
                entry["row_id"]: entry["stratum_rows"] / entry["stratum_labels"]
                for entry in queue.to_pylist()
            }
        )
        for (dt, row_id, metric), given in sorted(labels.items()):
            row = rows.get(row_id) if dt == labelled_day else None
            if row is None or row_id not in weights:
                continue
            pairs.append(
                {
                    "dt": dt,
                    "row_id": row_id,
                    "metric": metric,
                    "label": sum(given) / len(given),
                    "score": row.get(f"{metric}_score"),
                    "status": row.get(f"{metric}_status"),
                    "judge": row.get("judge"),
                    "weight": weights[row_id],
                    **{column: row.get(column) for column in segments},
                }
            )
    return pairs


def calibration(
    tables: DayTables,
    day: str,
    today: pa.Table,
    settings: Settings,
    *,
    pairs: list[dict[str, Any]] | None = None,
) -> dict[tuple[str, str, str], dict[str, Any]]:
    """The calibration columns of each (segment_column, segment_value, metric) of the day
    (`pairs`: the day's `labelled_pairs`, when already read). Without a labelled pair in the
    window, nothing of the day is computed: every key says `no_labels`."""
    import pyarrow as pa
    import pyarrow.compute as pc

    metrics, segments = settings.metrics.names, settings.pipeline.segments
    if pairs is None:
        pairs = labelled_pairs(tables, day, today, settings)
    groupings: list[tuple[str, str, npt.NDArray[np.bool_] | None]] = [(ALL, ALL, None)]
    for column in segments:
        if column not in today.column_names:
            continue
        text = pc.fill_null(pc.cast(today.column(column), pa.string()), NULL_SEGMENT)
        encoded = pc.dictionary_encode(text).combine_chunks()
        names: list[str] = encoded.dictionary.to_pylist()
        codes = encoded.indices.to_numpy() if pairs else None
        for index in sorted(range(len(names)), key=names.__getitem__):
            groupings.append((column, names[index], None if codes is None else codes == index))
    if not pairs:
        return {
            (column, value, metric): _no_labels()
            for column, value, _ in groupings
            for metric in metrics
        }
    judges = today.column("judge") if "judge" in today.column_names else None
    found = {}
    for metric in metrics:
        status = pc.fill_null(pc.cast(today.column(f"{metric}_status"), pa.string()), "")
        ok = np.asarray(pc.equal(status, OK), dtype=bool)
        score = pc.cast(today.column(f"{metric}_score"), pa.float64()).to_numpy()
        for column, value, members in groupings:
            scored = ok if members is None else ok & members
            grouped = pairs if column == ALL else [pair for pair in pairs if pair[column] == value]
            every_score = score[scored]
            day_judges: set[Any] = set()
            if len(every_score):
                day_judges = (
                    {None}
                    if judges is None
                    else set(pc.unique(judges.filter(pa.array(scored))).to_pylist())
                )
            found[(column, value, metric)] = _columns(every_score, day_judges, grouped, metric)
    return found


def _no_labels() -> dict[str, Any]:
    result: dict[str, Any] = dict.fromkeys(name for name, _ in CALIBRATION_COLUMNS)
    result["labels"] = 0
    result["labels_status"] = "no_labels"
    return result


def _columns(
    every_score: npt.NDArray[np.float64],
    judges: set[Any],
    pairs: list[dict[str, Any]],
    metric: str,
) -> dict[str, Any]:
    """The calibration columns of one grouping and metric: `every_score` the day's `ok`
    scores of the grouping (every scored row, its labelled ones too: the day's judge mean is
    the point, the labels being spread over the window), `judges` the judges that scored
    them."""
    usable = [
        pair
        for pair in pairs
        if pair["metric"] == metric and pair["status"] == OK and pair["judge"] in judges
    ]
    result: dict[str, Any] = dict.fromkeys(name for name, _ in CALIBRATION_COLUMNS)
    result["labels"] = len(usable)
    if not usable:
        result["labels_status"] = "no_labels"
        return result
    human = [pair["label"] for pair in usable]
    judged = [pair["score"] for pair in usable]
    weights = [pair["weight"] for pair in usable]
    # lam = 1 (plain PPI), not PPI++'s tuned lam: the labels come from the whole window, the
    # rows estimated from one day, and a tuned lam below 1 pulls the estimate towards the
    # window's mean by (1 - lam) times the gap between the window's and the day's judge means
    # (docs/labels.md, "Why plain PPI for a day").
    estimate = ppi_mean(human, judged, every_score, weights=weights, lam=1.0)
    result["labels_status"] = estimate.status
    result["corrected_mean"] = estimate.mean
    result["corrected_ci_low"] = estimate.ci_low
    result["corrected_ci_high"] = estimate.ci_high
    agreed = agreement(human, judged)
    result["agreement_mad"] = agreed.mean_abs_diff
    result["agreement_spearman"] = agreed.spearman
    result["agreement_kappa"] = agreed.kappa
    return result


def with_calibration(
    metrics_table: pa.Table,
    tables: DayTables,
    day: str,
    today: pa.Table,
    settings: Settings,
    *,
    pairs: list[dict[str, Any]] | None = None,
) -> pa.Table:
    """The day's daily metrics with the calibration columns (`CALIBRATION_COLUMNS`)."""
    import pyarrow as pa

    found = calibration(tables, day, today, settings, pairs=pairs)
    keys = zip(
        metrics_table.column("segment_column").to_pylist(),
        metrics_table.column("segment_value").to_pylist(),
        metrics_table.column("metric").to_pylist(),
        strict=True,
    )
    values = [found.get(key, {}) for key in keys]
    for name, kind in CALIBRATION_COLUMNS:
        column = [row.get(name) for row in values]
        if name == "labels_status":
            column = [text or "no_labels" for text in column]
        elif name == "labels":
            column = [count or 0 for count in column]
        metrics_table = metrics_table.append_column(name, pa.array(column, getattr(pa, kind)()))
    return metrics_table
