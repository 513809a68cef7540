"""BEGIN: faithfulness used as an attribution classifier.

Each BEGIN row is a dialogue response, the knowledge snippet it should be grounded in, and a
human label: `Fully attributable`, `Not fully attributable` or `Generic`. The faithfulness
score (question = the previous turn, contexts = [knowledge], answer = the response) ranks
responses; we report ROC AUC and the balanced accuracy at the threshold that is best on the dev
files, applied unchanged to the test files, per data source and per generating model.

Generic responses are neither attributable nor not: they are reported apart. Rows whose
faithfulness is not_applicable (a question back, a refusal: no claim to check) or failed are
counted and listed by label; the AUC is given over the scored rows and, as a second figure,
over all rows with those counted as not attributable (score 0).

Both releases are read: v2 (`knowledge, message, response, begin_label`) and v1 (`evidence,
previous turn, response, gold label`; `entailment` is attributable, `generic` is Generic).
A file is dev or test by its name (`..._dev...` / `..._test...`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ragas_ops.contract.inputs import SizeBudget, validate_row
from ragas_ops.evaluation.data import read_records
from ragas_ops.evaluation.overlap import faithfulness_overlap
from ragas_ops.evaluation.results import RowResults, row_key
from ragas_ops.evaluation.stats import balanced_accuracy, best_threshold, roc_auc
from ragas_ops.judge.base import Judge
from ragas_ops.metrics.faithfulness import Faithfulness

ATTRIBUTABLE, NOT_ATTRIBUTABLE, GENERIC = "Fully attributable", "Not fully attributable", "Generic"
CHUNK_ROWS = 256


def split_of(path: Path) -> str:
    name = path.name.lower()
    for split in ("dev", "test"):
        if f"_{split}" in name or name.startswith(f"{split}_"):
            return split
    raise ValueError(f"{path}: cannot tell dev from test by the name (want _dev or _test in it)")


def load_begin(path: Path) -> list[dict[str, Any]]:
    """Rows in one shape: split, data_source, model, knowledge, message, response, label."""
    split = split_of(path)
    rows = []
    for number, raw in enumerate(read_records(path), start=1):
        if "begin_label" in raw:
            label = str(raw["begin_label"])
            knowledge, message = raw.get("knowledge"), raw.get("message")
            source, model = raw.get("data_source", "?"), raw.get("model_name", "?")
        elif "gold label" in raw:
            gold = str(raw["gold label"])
            label = (
                ATTRIBUTABLE
                if gold == "entailment"
                else GENERIC
                if gold == "generic"
                else NOT_ATTRIBUTABLE
            )
            knowledge, message = raw.get("evidence"), raw.get("previous turn")
            source, model = "wow-v1", "?"
        else:
            raise ValueError(f"{path}: row {number} is neither BEGIN v1 nor v2")
        if label not in (ATTRIBUTABLE, NOT_ATTRIBUTABLE, GENERIC):
            raise ValueError(f"{path}: row {number} has an unknown label {label!r}")
        rows.append(
            {
                "file": path.name,
                "split": split,
                "data_source": str(source),
                "model": str(model),
                "knowledge": knowledge,
                "message": message,
                "response": raw.get("response"),
                "label": label,
            }
        )
    return rows


async def run_begin(
    rows: Sequence[dict[str, Any]],
    judge: Judge,
    results: RowResults,
    progress: Callable[[int], Any] | None = None,
) -> list[dict[str, Any]]:
    """Faithfulness and word overlap of every row, reusing rows already in the results file."""
    keys = [row_key("begin", row) for row in rows]
    done = results.done()
    todo = [i for i, key in enumerate(keys) if key not in done]
    if progress:
        progress(len(rows) - len(todo))
    metric = Faithfulness()
    budget = SizeBudget()
    for start in range(0, len(todo), CHUNK_ROWS):
        chunk = todo[start : start + CHUNK_ROWS]
        interactions = [
            validate_row(
                rows[i]["message"] or "", [rows[i]["knowledge"] or ""], rows[i]["response"], budget
            )
            for i in chunk
        ]
        scored = await metric.score_rows(interactions, judge)
        fresh = []
        for i, result in zip(chunk, scored, strict=True):
            row = rows[i]
            fresh.append(
                {
                    "key": keys[i],
                    **{k: row[k] for k in ("file", "split", "data_source", "model", "label")},
                    "faithfulness": result.score,
                    "status": result.status.value,
                    "reason": result.reason,
                    "word_overlap": faithfulness_overlap(
                        str(row["response"] or ""), [str(row["knowledge"] or "")]
                    ),
                }
            )
        results.append(fresh)
        done.update({record["key"]: record for record in fresh})
        if progress:
            progress(len(chunk))
    return [done[key] for key in keys]


def _classify(
    records: Sequence[dict[str, Any]], score: str, threshold: float | None
) -> dict[str, Any]:
    """AUC and balanced accuracy of `score` over the attributable / not attributable rows."""
    judged = [r for r in records if r["label"] != GENERIC]
    scored = [r for r in judged if _has(r, score)]
    labels = [r["label"] == ATTRIBUTABLE for r in scored]
    values = [float(r[score]) for r in scored]
    all_labels = [r["label"] == ATTRIBUTABLE for r in judged]
    all_values = [float(r[score]) if _has(r, score) else 0.0 for r in judged]
    out: dict[str, Any] = {
        "rows": len(judged),
        "scored": len(scored),
        "attributable": sum(labels),
        "roc_auc": roc_auc(labels, values),
        "roc_auc_all_rows": roc_auc(all_labels, all_values),
    }
    if threshold is not None and scored:
        out["balanced_accuracy"] = balanced_accuracy(labels, values, threshold)
        out["balanced_accuracy_all_rows"] = balanced_accuracy(all_labels, all_values, threshold)
    return out


def _has(record: dict[str, Any], score: str) -> bool:
    """Word overlap scores every row; faithfulness only the rows whose status is ok."""
    return record[score] is not None and (score == "word_overlap" or record["status"] == "ok")


def _groups(records: Sequence[dict[str, Any]], field: str) -> dict[str, list[dict[str, Any]]]:
    groups: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        groups.setdefault(str(record[field]), []).append(record)
    return dict(sorted(groups.items()))


def report(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Per split: overall, per data source and per model, for faithfulness and word overlap."""
    summary: dict[str, Any] = {"thresholds": {}, "splits": {}}
    dev = [r for r in records if r["split"] == "dev"]
    for score in ("faithfulness", "word_overlap"):
        basis = dev or list(records)  # no dev file: the threshold is chosen in-sample (said so)
        usable = [r for r in basis if r["label"] != GENERIC and _has(r, score)]
        summary["thresholds"][score] = {
            "value": best_threshold(
                [r["label"] == ATTRIBUTABLE for r in usable], [float(r[score]) for r in usable]
            ),
            "chosen_on": "dev" if dev else "the same rows (no dev file given)",
        }
    for split, rows in _groups(records, "split").items():
        entry: dict[str, Any] = {"rows": len(rows)}
        for score in ("faithfulness", "word_overlap"):
            threshold = summary["thresholds"][score]["value"]
            entry[score] = {
                "all": _classify(rows, score, threshold),
                "by_data_source": {
                    k: _classify(v, score, threshold)
                    for k, v in _groups(rows, "data_source").items()
                },
                "by_model": {
                    k: _classify(v, score, threshold) for k, v in _groups(rows, "model").items()
                },
            }
        generic = [r for r in rows if r["label"] == GENERIC]
        generic_scores = [float(r["faithfulness"]) for r in generic if r["status"] == "ok"]
        entry["generic"] = {
            "rows": len(generic),
            "statuses": dict(Counter(r["status"] for r in generic)),
            "mean_faithfulness": sum(generic_scores) / len(generic_scores)
            if generic_scores
            else None,
        }
        entry["not_scored"] = {
            status: dict(Counter(r["label"] for r in rows if r["status"] == status))
            for status in sorted({r["status"] for r in rows} - {"ok"})
        }
        summary["splits"][split] = entry
    return summary


def _fmt(value: Any) -> str:
    return "-" if value is None else f"{value:.3f}"


def report_lines(summary: dict[str, Any], judge: str) -> list[str]:
    lines = [f"BEGIN: faithfulness as an attribution classifier, judge {judge}"]
    for score, chosen in summary["thresholds"].items():
        lines.append(
            f"threshold for {score}: {chosen['value']:.3f} (chosen on {chosen['chosen_on']})"
        )
    header = (
        f"{'':<24}{'rows':>6}{'scored':>8}{'AUC':>8}{'AUC all':>9}{'bal.acc':>9}"
        f"{'| overlap AUC':>14}{'bal.acc':>9}"
    )
    for split, entry in summary["splits"].items():
        lines += ["", f"{split} ({entry['rows']} rows)", header]
        faith, overlap = entry["faithfulness"], entry["word_overlap"]
        groups = [("all", faith["all"], overlap["all"])]
        for kind in ("by_data_source", "by_model"):
            groups += [
                (f"{kind.removeprefix('by_')} {name}", cell, overlap[kind][name])
                for name, cell in faith[kind].items()
            ]
        for name, cell, base in groups:
            lines.append(
                f"{name:<24}{cell['rows']:>6}{cell['scored']:>8}{_fmt(cell['roc_auc']):>8}"
                f"{_fmt(cell['roc_auc_all_rows']):>9}{_fmt(cell.get('balanced_accuracy')):>9}"
                f"{_fmt(base['roc_auc_all_rows']):>14}{_fmt(base.get('balanced_accuracy_all_rows')):>9}"
            )
        generic = entry["generic"]
        lines.append(
            f"Generic responses (not in the figures above): {generic['rows']}, statuses "
            f"{generic['statuses'] or '-'}, mean faithfulness {_fmt(generic['mean_faithfulness'])}"
        )
        for status, labels in entry["not_scored"].items():
            lines.append(f"faithfulness {status}: {sum(labels.values())} rows, by label {labels}")
    lines += [
        "",
        "AUC: over the rows faithfulness scored; AUC all: every non-Generic row, unscored ones "
        "(no claim to check, failures) counted as score 0. Word overlap scores every row.",
    ]
    return lines
