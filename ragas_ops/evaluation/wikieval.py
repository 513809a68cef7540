"""WikiEval: agreement with human preferences, in the shape of the paper's Table 1.

For each row and quality, humans preferred one candidate over another:
- faithfulness: `answer` over `ungrounded_answer`, both against `context_v1`;
- answer relevance: `answer` over `poor_answer`;
- context relevance: `context_v1` over `context_v2`.
A method agrees on a row when it scores the preferred candidate higher; a tie counts half (and
is reported). GPT Ranking is asked in both candidate orders; each order counts half, and the
share of answers that chose the first candidate measures its position bias.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragas_ops.contract.inputs import Interaction, SizeBudget, validate_row
from ragas_ops.contract.status import Status
from ragas_ops.evaluation.data import read_records, require_columns
from ragas_ops.evaluation.overlap import (
    overlap_score,
)
from ragas_ops.evaluation.results import RowResults, row_key
from ragas_ops.evaluation.stats import agreement
from ragas_ops.judge.base import Judge, JudgeRowError
from ragas_ops.judge.local.evidence import strip_prefix
from ragas_ops.metrics.answer_relevance import AnswerRelevance
from ragas_ops.metrics.base import Metric, MetricResult
from ragas_ops.metrics.context_relevance import ContextRelevance
from ragas_ops.metrics.faithfulness import Faithfulness
from ragas_ops.metrics.gpt_ranking import rank_pair
from ragas_ops.metrics.gpt_score import GptScore

DIMENSIONS = ("faithfulness", "answer_relevance", "context_relevance")
COLUMNS = ("question", "answer", "context_v1", "context_v2", "ungrounded_answer", "poor_answer")
PAPER = {
    "Ragas": (0.95, 0.78, 0.70),
    "GPT Score": (0.72, 0.52, 0.63),
    "GPT Ranking": (0.54, 0.40, 0.52),
}
METHODS = ("Ragas", "GPT Score", "GPT Ranking", "Word overlap")
CHUNK_ROWS = 8
"""Rows scored together between two writes of the results file."""


@dataclass
class Pair:
    """The human-preferred and the other candidate of one row for one quality."""

    preferred: Interaction
    other: Interaction


def load_wikieval(path: Path) -> list[dict[str, Any]]:
    rows = read_records(path)
    require_columns(path, rows, COLUMNS)
    return rows


def pairs(row: dict[str, Any]) -> dict[str, Pair]:
    """The two candidates of each quality ("Question: "/"Answer: " prefixes removed)."""
    question = strip_prefix(str(row["question"]))
    answer = strip_prefix(str(row["answer"]))
    budget = SizeBudget()

    def make(contexts: Any, text: str) -> Interaction:
        return validate_row(question, list(contexts or []), text, budget)

    return {
        "faithfulness": Pair(
            make(row["context_v1"], answer),
            make(row["context_v1"], strip_prefix(str(row["ungrounded_answer"]))),
        ),
        "answer_relevance": Pair(
            make(row["context_v1"], answer),
            make(row["context_v1"], strip_prefix(str(row["poor_answer"]))),
        ),
        "context_relevance": Pair(make(row["context_v1"], answer), make(row["context_v2"], answer)),
    }


def _side(result: MetricResult) -> dict[str, Any]:
    return {"score": result.score, "status": result.status.value, "reason": result.reason}


async def _metric_pairs(
    metric: Metric, row_pairs: Sequence[Pair], judge: Judge
) -> list[dict[str, Any]]:
    rows = [pair.preferred for pair in row_pairs] + [pair.other for pair in row_pairs]
    results = await metric.score_rows(rows, judge)
    count = len(row_pairs)
    return [
        {"preferred": _side(results[i]), "other": _side(results[count + i])} for i in range(count)
    ]


async def _ranking(dimension: str, pair: Pair, judge: Judge) -> dict[str, Any]:
    """Ask in both orders; record which candidate was chosen each time."""

    def candidate(row: Interaction) -> str | list[str]:
        return list(row.contexts or []) if dimension == "context_relevance" else row.answer or ""

    orders = {"preferred_first": (pair.preferred, pair.other)}
    orders["preferred_second"] = (pair.other, pair.preferred)
    record: dict[str, Any] = {}
    for name, (first, second) in orders.items():
        try:
            ranking = await rank_pair(
                judge,
                dimension,
                question=pair.preferred.question or "",
                first=candidate(first),
                second=candidate(second),
                contexts=pair.preferred.contexts or [],
            )
        except JudgeRowError as error:
            record[name] = {"better": None, "status": error.status.value, "reason": str(error)}
            continue
        record[name] = {"better": ranking.better, "status": Status.OK.value, "reason": ""}
    return record


async def score_chunk(rows: Sequence[dict[str, Any]], judge: Judge) -> list[dict[str, Any]]:
    """Every method on every quality of `rows`; one record per row."""
    row_pairs = [pairs(row) for row in rows]
    metrics: dict[str, dict[str, Metric]] = {
        "Ragas": {
            "faithfulness": Faithfulness(),
            "answer_relevance": AnswerRelevance(),
            "context_relevance": ContextRelevance(),
        },
        "GPT Score": {dimension: GptScore(dimension) for dimension in DIMENSIONS},
    }
    records: list[dict[str, Any]] = [{} for _ in rows]
    for method, by_dimension in metrics.items():
        for dimension, metric in by_dimension.items():
            scored = await _metric_pairs(metric, [p[dimension] for p in row_pairs], judge)
            for record, outcome in zip(records, scored, strict=True):
                record.setdefault(dimension, {})[method] = outcome
    for dimension in DIMENSIONS:
        rankings = await asyncio.gather(
            *(_ranking(dimension, p[dimension], judge) for p in row_pairs)
        )
        for record, ranking, both in zip(records, rankings, row_pairs, strict=True):
            pair = both[dimension]
            record[dimension]["GPT Ranking"] = ranking
            record[dimension]["Word overlap"] = {
                "preferred": {"score": overlap_score(dimension, pair.preferred), "status": "ok"},
                "other": {"score": overlap_score(dimension, pair.other), "status": "ok"},
            }
    return records


async def run_wikieval(
    rows: Sequence[dict[str, Any]],
    judge: Judge,
    results: RowResults,
    progress: Callable[[int], Any] | None = None,
) -> list[dict[str, Any]]:
    """Score every row (reusing the rows the results file already holds), in input order."""
    keys = [row_key("wikieval", {c: row.get(c) for c in COLUMNS}) for row in rows]
    done = results.done()
    todo = [i for i, key in enumerate(keys) if key not in done]
    if progress:
        progress(len(rows) - len(todo))
    for start in range(0, len(todo), CHUNK_ROWS):
        chunk = todo[start : start + CHUNK_ROWS]
        records = await score_chunk([rows[i] for i in chunk], judge)
        fresh = [
            {"key": keys[i], "row": i, "source": rows[i].get("source"), **record}
            for i, record in zip(chunk, records, strict=True)
        ]
        results.append(fresh)
        done.update({record["key"]: record for record in fresh})
        if progress:
            progress(len(chunk))
    return [done[key] for key in keys]


# -- the table ---------------------------------------------------------------------------------


@dataclass
class Cell:
    """One method on one quality: agreement accuracy over the rows both sides could be scored."""

    agreed: float = 0.0
    scored: int = 0
    ties: int = 0
    unscored: int = 0

    @property
    def accuracy(self) -> float | None:
        return self.agreed / self.scored if self.scored else None


def _pair_cell(cell: Cell, outcome: dict[str, Any]) -> None:
    preferred, other = outcome["preferred"], outcome["other"]
    if preferred["status"] != "ok" or other["status"] != "ok":
        cell.unscored += 1
        return
    value = agreement(preferred["score"], other["score"])
    cell.agreed += value
    cell.scored += 1
    cell.ties += value == 0.5


def _ranking_cell(cell: Cell, outcome: dict[str, Any], bias: list[int]) -> None:
    """Each order counts half a row; `bias` counts [first chosen, answers]."""
    expected = {"preferred_first": 1, "preferred_second": 2}
    answers = [outcome[name]["better"] for name in expected]
    if None in answers:
        cell.unscored += 1
        return
    cell.agreed += sum(
        0.5 for name, got in zip(expected, answers, strict=True) if got == expected[name]
    )
    cell.scored += 1
    bias[0] += sum(answer == 1 for answer in answers)
    bias[1] += len(answers)


def table(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Agreement accuracy per method and quality, ties, unscored rows and position bias."""
    cells = {method: {dimension: Cell() for dimension in DIMENSIONS} for method in METHODS}
    bias = {dimension: [0, 0] for dimension in DIMENSIONS}
    for record in records:
        for dimension in DIMENSIONS:
            for method in METHODS:
                outcome = record[dimension][method]
                if method == "GPT Ranking":
                    _ranking_cell(cells[method][dimension], outcome, bias[dimension])
                else:
                    _pair_cell(cells[method][dimension], outcome)
    return {
        "rows": len(records),
        "methods": {
            method: {
                dimension: {
                    "accuracy": cell.accuracy,
                    "scored": cell.scored,
                    "ties": cell.ties,
                    "unscored": cell.unscored,
                }
                for dimension, cell in by_dimension.items()
            }
            for method, by_dimension in cells.items()
        },
        "paper": {
            method: dict(zip(DIMENSIONS, values, strict=True)) for method, values in PAPER.items()
        },
        "gpt_ranking_first_chosen": {
            dimension: (chosen / answers if answers else None)
            for dimension, (chosen, answers) in bias.items()
        },
    }


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def table_lines(summary: dict[str, Any], judge: str) -> list[str]:
    """The table as text: ours beside the paper's figures."""
    header = f"{'':<30}{'Faithfulness':>14}{'Answer rel.':>14}{'Context rel.':>14}"
    lines = [
        f"WikiEval agreement accuracy, {summary['rows']} rows, judge {judge}",
        "(share of rows where the human-preferred candidate scores higher; a tie counts half)",
        header,
    ]
    for method in METHODS:
        ours = summary["methods"][method]
        lines.append(
            f"{method + ' (ours)':<30}"
            + "".join(f"{_fmt(ours[d]['accuracy']):>14}" for d in DIMENSIONS)
        )
        if method in PAPER:
            lines.append(
                f"{method + ' (paper)':<30}" + "".join(f"{v:>14.2f}" for v in PAPER[method])
            )
    for method in METHODS:
        ours = summary["methods"][method]
        notes = [
            f"{d}: {ours[d]['ties']} ties"
            + (f", {ours[d]['unscored']} unscored" if ours[d]["unscored"] else "")
            for d in DIMENSIONS
        ]
        lines.append(f"{method}: " + "; ".join(notes))
    first = summary["gpt_ranking_first_chosen"]
    lines.append(
        "GPT Ranking position bias (asked in both orders; share of answers choosing the first "
        "candidate, 0.50 = none): " + ", ".join(f"{d} {_fmt(first[d])}" for d in DIMENSIONS)
    )
    return lines
