"""Throughput of the local judge: rows scored per second with the paper's three metrics.

Scores generated sample interactions (the demo's, `ragas_ops.samples`: short), rows of realistic
size (WikiEval-sized: a 15-sentence context and a 4-sentence answer, built from the BEGIN
dev knowledge snippets when present, else from the sample passages) and, when present, BEGIN
dev rows, with `judge.kind = "local"`, no cache, and prints rows/s. The model is loaded and
warmed up before the clock starts (about 4 s, once per process: torch's first large batch
takes about twice as long as the next ones, so one batch of the rows' own texts runs first).

    python benchmarks/bench_local_judge.py [--rows N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from pathlib import Path

from ragas_ops.config import Settings
from ragas_ops.contract.inputs import SizeBudget, validate_row
from ragas_ops.judge.factory import build_judge
from ragas_ops.metrics import build_metrics

BEGIN_DEV = next(
    (
        folder / "shared/data/begin/begin_v2_wow_dev.jsonl"
        for folder in Path(__file__).resolve().parents
        if (folder / "shared/data/begin").is_dir()
    ),
    Path("shared/data/begin/begin_v2_wow_dev.jsonl"),
)


async def _rate(rows: list, names: list[str]) -> float:  # type: ignore[type-arg]
    settings = Settings()
    settings.judge.kind = "local"
    settings.judge.cache_path = None
    judge = build_judge(settings)
    # Warm-up, once per process like the model's loading: the first large batch is slow.
    await judge.embed([f"{row.question} {row.answer}"[:300] for row in rows[:128]])
    started = time.perf_counter()
    for metric in build_metrics(names):
        await metric.score_rows(rows, judge)
    return len(rows) / (time.perf_counter() - started)


def realistic_rows(count: int, budget: SizeBudget) -> list:  # type: ignore[type-arg]
    """`count` distinct rows of WikiEval size: a question, a context of 15 sentences (three
    passages of five), an answer of 4 sentences, 3 from the context and one it lacks."""
    from ragas_ops.samples import PADDING, TOPICS
    from ragas_ops.text import split_sentences

    if BEGIN_DEV.exists():
        rows = [json.loads(line) for line in BEGIN_DEV.read_text().splitlines()]
        pool = [s for r in rows for s in split_sentences(r["knowledge"])]
        questions = [r["message"] for r in rows]
    else:
        pool = [s for t in TOPICS for s in split_sentences(t.passage)] + list(PADDING)
        questions = [t.question for t in TOPICS]
    made = []
    for index in range(count):
        context = [pool[(index * 7 + k) % len(pool)] for k in range(15)]
        answer = [*context[2:5], f"It was first described in {1900 + index % 120}."]
        made.append(
            validate_row(
                f"{questions[index % len(questions)]} ({index})",
                [" ".join(context[:5]), " ".join(context[5:10]), " ".join(context[10:])],
                " ".join(answer),
                budget,
            )
        )
    return made


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=400)
    options = parser.parse_args()
    from ragas_ops.samples import sample_interactions

    budget = SizeBudget()
    samples = [
        validate_row(r["question"], r["contexts"], r["answer"], budget)
        for r in sample_interactions(options.rows).to_pylist()
    ]
    three = ["faithfulness", "answer_relevance", "context_relevance"]
    print(
        f"sample logs, {len(samples)} rows, 3 metrics: {asyncio.run(_rate(samples, three)):.1f} rows/s"
    )
    realistic = realistic_rows(min(options.rows, 200), budget)
    rate = asyncio.run(_rate(realistic, three))
    print(
        f"realistic rows (15-sentence context, 4-sentence answer), {len(realistic)} rows, "
        f"3 metrics: {rate:.1f} rows/s"
    )
    if BEGIN_DEV.exists():
        rows = [json.loads(line) for line in BEGIN_DEV.read_text().splitlines()]
        begin = [validate_row(r["message"], [r["knowledge"]], r["response"], budget) for r in rows]
        rate = asyncio.run(_rate(begin, three))
        print(f"BEGIN wow dev, {len(begin)} rows, 3 metrics: {rate:.1f} rows/s")


if __name__ == "__main__":
    main()
