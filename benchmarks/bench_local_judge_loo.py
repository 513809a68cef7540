"""Leave-one-out over the WikiEval sample rows for the local judge's choices.

The local judge has a few choices that a data set could tune: how many of the answer's points
its complete question joins (`QUESTION_SENTENCES`, answer relevance), whether every generated
question covers all of them or the n questions narrow to the first points (`whole`), the share of a question's
similarity that is its form (`QUESTION_FORM_WEIGHT`, answer relevance) and the cuts of context
relevance (`EXTRACT_MARGIN`, `PART_MIN_SIMILARITY`). For each held-out row, the value that agrees
best with people on the *other* rows is chosen from a small grid (ties: the shipped value) and
the held-out row is scored with it. The leave-one-out agreement is the share of held-out rows
that agree; beside it, the agreement of the shipped values on all rows (in-sample) and the best
in-sample value. A leave-one-out figure far below the in-sample one says the choice was fitted
to the rows.

    python benchmarks/bench_local_judge_loo.py [WIKIEVAL_FILE]
"""

from __future__ import annotations

import asyncio
import itertools
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ragas_ops.config import Settings
from ragas_ops.evaluation.stats import agreement
from ragas_ops.evaluation.wikieval import load_wikieval
from ragas_ops.judge.factory import build_judge
from ragas_ops.judge.local.evidence import (
    EXTRACT_MARGIN,
    PART_MIN_SIMILARITY,
    is_noncommittal,
    needed_sentences,
    part_texts,
    strip_prefix,
)
from ragas_ops.judge.local.generator import QUESTION_SENTENCES, generated_questions
from ragas_ops.judge.local.judge import LocalJudge
from ragas_ops.judge.local.questions import QUESTION_FORM_WEIGHT, question_similarity
from ragas_ops.metrics.answer_relevance.local import measure as answer_relevance_measure
from ragas_ops.text import split_sentences

SAMPLE = next(
    (
        folder / "shared/data/wikieval-sample/wikieval_sample.jsonl"
        for folder in Path(__file__).resolve().parents
        if (folder / "shared/data/wikieval-sample").is_dir()
    ),
    Path("wikieval_sample.jsonl"),
)
POINTS = (1, 2, 3, 4)
FORM_WEIGHTS = (0.0, 0.15, 0.3, 0.5)
WHOLE = (False, True)
MARGINS = (0.05, 0.10, 0.15, 0.20, 0.25)
PART_MINS = (0.1, 0.2, 0.3)


def leave_one_out(table: dict[Any, list[float]], shipped: Any) -> tuple[float, list[Any]]:
    """(held-out agreement, the value chosen for each held-out row) from per-row agreements."""
    rows = len(next(iter(table.values())))
    agreed, chosen = [], []
    for held in range(rows):

        def others(value: Any, held: int = held) -> float:
            return sum(a for i, a in enumerate(table[value]) if i != held)

        best = max(others(value) for value in table)
        pick = shipped if others(shipped) == best else next(v for v in table if others(v) == best)
        chosen.append(pick)
        agreed.append(table[pick][held])
    return sum(agreed) / rows, chosen


async def _relevance(
    judge: LocalJudge, question: str, answer: str, points: int, weight: float, whole: bool
) -> float:
    """The metric's score as the local judge gives it (`LocalJudge.embed`'s vectors)."""
    if is_noncommittal(answer):
        return 0.0
    questions = generated_questions(answer, 3, points, whole=whole)
    vectors = await judge.question_vectors([question, *questions])
    return float(
        np.mean(
            [
                question_similarity(question, q, float(vectors[question] @ vectors[q]), weight)
                for q in questions
            ]
        )
    )


async def _context_relevance(
    judge: LocalJudge, question: str, contexts: Sequence[str], margin: float, part_min: float
) -> float:
    sentences = [s for c in contexts for s in split_sentences(c)]
    vectors = await judge.vectors([question, *part_texts(question), *sentences])
    needed = needed_sentences(question, contexts, vectors, margin=margin, part_min=part_min)
    return len(needed) / len(sentences) if sentences else 0.0


async def measure(rows: list[dict[str, Any]]) -> dict[str, dict[Any, list[float]]]:
    settings = Settings()
    settings.judge.kind = "local"
    settings.judge.cache.path = None
    judge = build_judge(settings)
    assert isinstance(judge, LocalJudge)
    tables: dict[str, dict[Any, list[float]]] = {"answer_relevance": {}, "context_relevance": {}}
    for points, weight, whole in itertools.product(POINTS, FORM_WEIGHTS, WHOLE):
        tables["answer_relevance"][(points, weight, whole)] = [
            agreement(
                await _relevance(judge, q, strip_prefix(str(r["answer"])), points, weight, whole),
                await _relevance(
                    judge, q, strip_prefix(str(r["poor_answer"])), points, weight, whole
                ),
            )
            for r in rows
            for q in [strip_prefix(str(r["question"]))]
        ]
    # GPT Score and GPT Ranking with the local judge share the form weight (their measure sees
    # the question): the score is rounded to 0-10 as the prompt's reply is, the ranking is not.
    tables["gpt_score_answer_relevance"] = {}
    tables["gpt_ranking_answer_relevance"] = {}
    for weight in FORM_WEIGHTS:
        measured = [
            (
                await answer_relevance_measure(judge, q, str(r["answer"]), [], form_weight=weight),
                await answer_relevance_measure(
                    judge, q, str(r["poor_answer"]), [], form_weight=weight
                ),
            )
            for r in rows
            for q in [strip_prefix(str(r["question"]))]
        ]
        tables["gpt_score_answer_relevance"][weight] = [
            agreement(round(good[0] * 10), round(poor[0] * 10)) for good, poor in measured
        ]
        tables["gpt_ranking_answer_relevance"][weight] = [
            agreement(good[0], poor[0]) for good, poor in measured
        ]
    for margin, part_min in itertools.product(MARGINS, PART_MINS):
        tables["context_relevance"][(margin, part_min)] = [
            agreement(
                await _context_relevance(judge, q, list(r["context_v1"]), margin, part_min),
                await _context_relevance(judge, q, list(r["context_v2"]), margin, part_min),
            )
            for r in rows
            for q in [strip_prefix(str(r["question"]))]
        ]
    return tables


def main(argv: Sequence[str] = sys.argv[1:]) -> None:
    path = Path(argv[0]) if argv else SAMPLE
    rows = load_wikieval(path)
    tables = asyncio.run(measure(rows))
    shipped: dict[str, Any] = {
        "answer_relevance": (QUESTION_SENTENCES, QUESTION_FORM_WEIGHT, True),
        "context_relevance": (EXTRACT_MARGIN, PART_MIN_SIMILARITY),
        "gpt_score_answer_relevance": QUESTION_FORM_WEIGHT,
        "gpt_ranking_answer_relevance": QUESTION_FORM_WEIGHT,
    }
    describe: dict[str, Callable[[Any], str]] = {
        "answer_relevance": lambda v: (
            f"points={v[0]}, form weight={v[1]:.2f}, {'whole' if v[2] else 'prefixes'}"
        ),
        "context_relevance": lambda v: f"margin={v[0]:.2f}, part_min={v[1]:.1f}",
        "gpt_score_answer_relevance": lambda v: f"form weight={v:.2f}",
        "gpt_ranking_answer_relevance": lambda v: f"form weight={v:.2f}",
    }
    print(f"Leave-one-out over {len(rows)} WikiEval rows ({path.name}), local judge (Ragas rows)")
    for name, table in tables.items():
        held_out, chosen = leave_one_out(table, shipped[name])
        in_sample = sum(table[shipped[name]]) / len(rows)
        best = max(table, key=lambda v: sum(table[v]))
        print(
            f"{name}: leave-one-out {held_out:.2f}; shipped {describe[name](shipped[name])} "
            f"in-sample {in_sample:.2f}; best in-sample {describe[name](best)} "
            f"{sum(table[best]) / len(rows):.2f}; chosen per held-out row: "
            + ", ".join(sorted({describe[name](v) for v in chosen}))
        )


if __name__ == "__main__":
    main()
