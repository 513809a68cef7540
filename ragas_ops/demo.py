"""The demo job: generate a day of sample logs, score it, and say where everything went.

With OPENAI_API_KEY set it uses OpenAI. Without it, it starts the project's local test double
of an LLM judge and says so loudly: its word-overlap heuristics show that the pipeline works,
not how good a RAG system is.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pyarrow.parquet as pq

from ragas_ops.config import Settings
from ragas_ops.jobs import ScoreOutcome, score_file
from ragas_ops.samples import sample_interactions

DEMO_DAY = "2026-11-29"


async def run_demo(folder: Path, rows: int, settings: Settings) -> ScoreOutcome:
    """Write `rows` sample interactions under `folder`/raw and score them into `folder`/scored."""
    raw = folder / "raw" / f"dt={DEMO_DAY}"
    raw.mkdir(parents=True, exist_ok=True)
    pq.write_table(sample_interactions(rows, seed=42, day=DEMO_DAY), raw / "part-0.parquet")
    target = folder / "scored" / f"dt={DEMO_DAY}" / "scored.parquet"
    if os.environ.get(settings.judge.api_key_env) or settings.judge.base_url:
        return await score_file(str(raw), str(target), settings)

    from ragas_ops.testing.judge_server import JudgeServer

    with JudgeServer() as server:
        print(
            f"No ${settings.judge.api_key_env} is set: scoring with the local TEST DOUBLE judge at "
            f"{server.base_url} (deterministic word-overlap heuristics, not an LLM). The scores "
            "show that the pipeline works, not how good a RAG system is.",
            file=sys.stderr,
        )
        settings.judge.base_url = server.base_url
        settings.judge.model = "test-judge"
        settings.judge.embedding_model = "test-embedding"
        settings.judge.rpm = settings.judge.tpm = None  # the double has no account to protect
        return await score_file(str(raw), str(target), settings)
