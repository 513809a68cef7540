"""The reference side of `bench_vs_ragas.py`: ragas 0.4.3 `evaluate()` over a file of rows.

Runs in its own venv (`benchmarks/.venv-ragas`, see requirements.txt next to this file), never
in the project's. ragas keeps its defaults (RunConfig: 16 workers, 10 retries, 180 s timeout);
the LLM and the embeddings are langchain-openai clients pointed at the benchmark's test server.

Usage: run_ragas.py --rows ROWS.jsonl --base-url URL --chat-model M --embedding-model M --output OUT.json
Each input line: {"id", "question", "answer", "contexts"}. The output holds the scores per row
(NaN written as null), the wall time of `evaluate()` and the library versions.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
import warnings
from importlib.metadata import version
from pathlib import Path
from typing import Any

os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")  # no analytics call: the machine is offline

METRIC_COLUMNS = ("faithfulness", "answer_relevancy", "nv_context_relevance")


def read_rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def evaluate_rows(
    rows: list[dict[str, Any]], base_url: str, chat_model: str, embedding_model: str
) -> tuple[list[dict[str, Any]], float]:
    """ragas' scores for each row (in row order) and the seconds `evaluate()` took."""
    from langchain_openai import ChatOpenAI, OpenAIEmbeddings
    from ragas import EvaluationDataset, evaluate

    with warnings.catch_warnings():  # the metric instances moved; these are evaluate()'s own
        warnings.simplefilter("ignore", DeprecationWarning)
        from ragas.metrics import ContextRelevance, answer_relevancy, faithfulness

    llm = ChatOpenAI(model=chat_model, base_url=base_url, api_key="test")
    # check_embedding_ctx_length=False: otherwise tiktoken downloads its encoding (offline here)
    embeddings = OpenAIEmbeddings(
        model=embedding_model, base_url=base_url, api_key="test", check_embedding_ctx_length=False
    )
    dataset = EvaluationDataset.from_list(
        [
            {
                "user_input": r["question"],
                "response": r["answer"],
                "retrieved_contexts": r["contexts"],
            }
            for r in rows
        ]
    )
    started = time.monotonic()
    result = evaluate(
        dataset,
        metrics=[faithfulness, answer_relevancy, ContextRelevance()],
        llm=llm,
        embeddings=embeddings,
        show_progress=False,
    )
    seconds = time.monotonic() - started
    frame = result.to_pandas()
    scored = []
    for row, record in zip(rows, frame.to_dict("records"), strict=True):
        scores = {}
        for column in METRIC_COLUMNS:
            value = record.get(column)
            scores[column] = float(value) if value is not None and math.isfinite(value) else None
        scored.append({"id": row["id"], **scores})
    return scored, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=Path, required=True)
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--chat-model", required=True)
    parser.add_argument("--embedding-model", required=True)
    parser.add_argument("--output", type=Path, required=True)
    options = parser.parse_args()
    scored, seconds = evaluate_rows(
        read_rows(options.rows), options.base_url, options.chat_model, options.embedding_model
    )
    versions = {name: version(name) for name in ("ragas", "langchain-openai", "openai")}
    options.output.write_text(
        json.dumps({"seconds": seconds, "versions": versions, "rows": scored}, indent=1),
        encoding="utf-8",
    )


if __name__ == "__main__":
    main()
