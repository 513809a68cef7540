"""Answer relevance on WikiEval-like pairs written by an independent author, dev and test apart.

`tests/data/wikieval_like_authored.jsonl` holds 48 rows written for this benchmark by someone
who saw neither the local judge's rules nor the WikiEval sample rows, following the paper's
construction: a question (most of two parts) about a Wikipedia-style passage, the complete
answer, and an answer written "in an incomplete manner" (`shape`: a part skipped, skipped and
padded, said to be not provided, both parts answered vaguely, one short sentence). People would
prefer the complete answer; a method agrees on a row when it scores it higher (a tie counts half).

The split was fixed before any row was scored: odd ids are dev (for choices), even ids are test
(reported, never used to choose). Printed per split and per shape: the paper's metric, GPT Score
and GPT Ranking (both orders) with the local judge, and word overlap.

    python benchmarks/bench_authored_pairs.py [--split dev|test|all] [--rows]
"""

from __future__ import annotations

import argparse
import asyncio
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from ragas_ops.config import Settings
from ragas_ops.contract.inputs import SizeBudget, validate_row
from ragas_ops.evaluation.overlap import answer_relevance_overlap
from ragas_ops.evaluation.stats import agreement
from ragas_ops.judge.factory import build_judge
from ragas_ops.metrics.answer_relevance import AnswerRelevance
from ragas_ops.metrics.gpt_ranking import rank_pair
from ragas_ops.metrics.gpt_score import GptScore

DATA = Path(__file__).resolve().parents[1] / "tests/data/wikieval_like_authored.jsonl"
METHODS = ("Ragas", "GPT Score", "GPT Ranking", "Word overlap")


def split_of(row: dict[str, Any]) -> str:
    return "dev" if int(row["id"]) % 2 else "test"


async def agreements(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    settings = Settings()
    settings.judge.kind = "local"
    settings.judge.cache.path = None
    judge = build_judge(settings)
    budget = SizeBudget()
    good = [validate_row(r["question"], [r["context"]], r["answer"], budget) for r in rows]
    poor = [validate_row(r["question"], [r["context"]], r["poor_answer"], budget) for r in rows]
    scores: dict[str, list[Any]] = {}
    for method, metric in (
        ("Ragas", AnswerRelevance()),
        ("GPT Score", GptScore("answer_relevance")),
    ):
        results = await metric.score_rows([*good, *poor], judge)
        halves = zip(results[: len(rows)], results[len(rows) :], strict=True)
        scores[method] = [(complete.score, partial.score) for complete, partial in halves]
    rankings = []
    for row in rows:
        first = await rank_pair(
            judge, "answer_relevance", question=row["question"], first=row["answer"],
            second=row["poor_answer"], contexts=[row["context"]],
        )  # fmt: skip
        second = await rank_pair(
            judge, "answer_relevance", question=row["question"], first=row["poor_answer"],
            second=row["answer"], contexts=[row["context"]],
        )  # fmt: skip
        rankings.append(((first.better == 1) + (second.better == 2)) / 2)
    await judge.aclose()
    records = []
    for index, row in enumerate(rows):
        record = {"id": row["id"], "split": split_of(row), "shape": row["shape"]}
        for method in ("Ragas", "GPT Score"):
            good_score, poor_score = scores[method][index]
            record[method] = agreement(good_score or 0.0, poor_score or 0.0)
            record[f"{method} scores"] = (good_score, poor_score)
        record["GPT Ranking"] = rankings[index]
        record["Word overlap"] = agreement(
            answer_relevance_overlap(row["question"], row["answer"]),
            answer_relevance_overlap(row["question"], row["poor_answer"]),
        )
        records.append(record)
    return records


def table(records: list[dict[str, Any]]) -> list[str]:
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for record in records:
        groups[record["split"]].append(record)
        groups[f"{record['split']}: {record['shape']}"].append(record)
    lines = [f"{'rows':<28}{'n':>4}" + "".join(f"{m:>14}" for m in METHODS)]
    for name in sorted(groups, key=lambda g: (g.split(":")[0], ":" in g, g)):
        group = groups[name]
        cells = "".join(f"{sum(r[m] for r in group) / len(group):>14.2f}" for m in METHODS)
        lines.append(f"{name:<28}{len(group):>4}{cells}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=("dev", "test", "all"), default="dev")
    parser.add_argument("--rows", action="store_true", help="print each row's scores")
    options = parser.parse_args()
    rows = [json.loads(line) for line in DATA.read_text().splitlines() if line.strip()]
    if options.split != "all":
        rows = [row for row in rows if split_of(row) == options.split]
    records = asyncio.run(agreements(rows))
    print(f"WikiEval-like authored pairs ({DATA.name}), {len(records)} rows, local judge")
    print("\n".join(table(records)))
    if options.rows:
        for record in records:
            complete, partial = (
                "-" if score is None else f"{score:.3f}" for score in record["Ragas scores"]
            )
            print(f"{record['id']:>3} {record['shape']:<18} Ragas {complete} vs {partial}")


if __name__ == "__main__":
    main()
