"""Throughput of the local judge on realistic rows, and what the encoder did for it.

Realistic rows are WikiEval-sized: a question, a context of 15 sentences in three passages and
an answer of 3 to 5 sentences, built from the BEGIN dev files (`shared/data/begin/*_dev.jsonl`):
the question is a record's dialogue turn, the context starts with the record's own knowledge
snippet and is filled from the other records' snippets, the answer is the record's response
(grounded or not, as BEGIN's systems wrote it) followed by sentences of the context. Two sets:

- `realistic`: `--rows` rows (500); the 2,866 distinct snippet sentences fill 7,500 context
  slots, so each comes back in about 2.6 rows, as popular documents do in retrieval logs;
- `distinct`: as many rows as the snippets fill with no sentence used twice (190): the worst
  case for the vector cache, every context sentence is new.

Rows go through the `Scorer` exactly as `ragas-ops score` runs them (tables of `batch_rows`, two
in flight, the metrics of a table concurrently), with `judge.kind = "local"`, no response
cache, after the model is loaded and warmed up. Printed per set: rows/s, the texts the
metrics asked vectors for, the texts and tokens the encoder ran, its calls and mean batch, the
process's peak RSS and the load average (the machine is shared: wall time varies with the load,
the counts do not). `--cli` also times `ragas-ops score --judge local` end to end on a Parquet
file of the realistic rows (startup and model loading included). `--baselines` times GPT Score
(its three metrics) and GPT Ranking (three dimensions, each row against the next).

    python benchmarks/bench_local_judge.py [--rows 500] [--backend B] [--cli] [--baselines]
        [--no-paper] [--encoder]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import resource
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ragas_ops.config import Settings
from ragas_ops.contract.inputs import Interaction, SizeBudget, validate_row
from ragas_ops.evaluation.begin import load_begin
from ragas_ops.judge.local.judge import LocalJudge, embedder_for
from ragas_ops.judge.local.onnx_embedder import OnnxEmbedder
from ragas_ops.judge.local.spec import LocalBackend
from ragas_ops.metrics import build_metrics
from ragas_ops.metrics.gpt_ranking import rank_pair
from ragas_ops.scoring.scorer import Scorer
from ragas_ops.text import split_sentences

BEGIN = next(
    (
        folder / "shared/data/begin"
        for folder in Path(__file__).resolve().parents
        if (folder / "shared/data/begin").is_dir()
    ),
    Path("shared/data/begin"),
)
PAPER_METRICS = ["faithfulness", "answer_relevance", "context_relevance"]
CONTEXT_SENTENCES = 15
SEED = 14


def realistic_rows(count: int | None = None, *, distinct: bool = False) -> list[dict[str, Any]]:
    """Rows of WikiEval size from the BEGIN dev records (see the module docstring). With
    `distinct`, no context sentence is used twice and `count` is capped by the pool."""
    records = [row for path in sorted(BEGIN.glob("*_dev.jsonl")) for row in load_begin(path)]
    if not records:
        raise SystemExit(f"no BEGIN dev files under {BEGIN}")
    random.Random(SEED).shuffle(records)
    pool = list(dict.fromkeys(s for r in records for s in split_sentences(r["knowledge"])))
    random.Random(SEED).shuffle(pool)
    limit = len(pool) // CONTEXT_SENTENCES if distinct else None
    count = min(count or limit or 500, limit or sys.maxsize)
    used: set[str] = set()
    rows: list[dict[str, Any]] = []
    cursor = 0
    for record in records:
        if len(rows) == count:
            break
        own = split_sentences(record["knowledge"])[:CONTEXT_SENTENCES]
        if distinct and used.intersection(own):
            continue
        context = list(own)
        while len(context) < CONTEXT_SENTENCES:
            sentence = pool[cursor % len(pool)]
            cursor += 1
            if sentence not in context and not (distinct and sentence in used):
                context.append(sentence)
        used.update(context)
        response = split_sentences(record["response"])[:2]
        answer = [*response, *own[: 4 - len(response)], *context[len(own) :]][: 3 + len(rows) % 3]
        passages = [" ".join(context[start : start + 5]) for start in (0, 5, 10)]
        rows.append(
            {"question": record["message"], "contexts": passages, "answer": " ".join(answer)}
        )
    return rows


class CountingEmbedder:
    """The judge's embedder, counting what it is asked to encode."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name
        self.calls = 0
        self.texts = 0
        self.characters = 0
        self.largest = 0
        self.seconds = 0.0
        self._tokens_before = 0
        self._lock = threading.Lock()
        self._active = 0
        self._since = 0.0

    @property
    def batches_at_once(self) -> int:
        return int(getattr(self.inner, "batches_at_once", 1))

    @property
    def tokens(self) -> int | None:
        """Tokens the model ran, when the embedder counts them (the ONNX one does)."""
        count = getattr(self.inner, "tokens_encoded", None)
        return None if count is None else int(count) - self._tokens_before

    def encode(self, texts: Sequence[str]) -> np.ndarray[Any, np.dtype[np.float32]]:
        with self._lock:  # `seconds` is the time at least one call runs (calls overlap)
            if not self._active:
                self._since = time.perf_counter()
            self._active += 1
        try:
            vectors = np.asarray(self.inner.encode(texts), dtype=np.float32)
        finally:
            with self._lock:
                self._active -= 1
                if not self._active:
                    self.seconds += time.perf_counter() - self._since
        self.calls += 1
        self.texts += len(texts)
        self.characters += sum(map(len, texts))
        self.largest = max(self.largest, len(texts))
        return vectors

    def reset(self) -> None:
        self.calls = self.texts = self.characters = self.largest = 0
        self.seconds = 0.0
        self._tokens_before = int(getattr(self.inner, "tokens_encoded", 0))


@dataclass
class Measured:
    rows: int
    seconds: float
    encoder: CountingEmbedder
    asked: int | None
    reused: int | None
    load: float
    cpu_seconds: float
    """CPU time of the process (all its threads) over the run: load moves it far less than wall
    time, so it compares two versions measured at different loads."""

    def line(self, label: str) -> str:
        enc = self.encoder
        tokens = f", {enc.tokens:,} tokens" if enc.tokens is not None else ""
        asked = (
            f"vectors asked for {self.asked:,} texts ({self.reused:,} reused), "
            if self.asked is not None and self.reused is not None
            else ""
        )
        mean = enc.texts / enc.calls if enc.calls else 0.0
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        return (
            f"{label}: {self.rows} rows, {self.rows / self.seconds:.1f} rows/s ({self.seconds:.2f} s), "
            f"CPU {1000 * self.cpu_seconds / self.rows:.1f} ms a row; "
            f"{asked}encoded {enc.texts:,} texts "
            f"({enc.characters:,} chars{tokens}) in {enc.calls} calls (mean {mean:.1f}, "
            f"largest {enc.largest}), encoder busy {enc.seconds:.1f} s; peak RSS {rss:.0f} MiB; load {self.load:.2f}"
        )


def _judge(backend: LocalBackend) -> tuple[LocalJudge, CountingEmbedder]:
    counting = CountingEmbedder(embedder_for(Settings().judge.local.model, backend))
    return LocalJudge(embedder=counting), counting


def _stat(judge: LocalJudge, name: str) -> int | None:
    """A counter of the judge's encoding statistics, when this version keeps them."""
    stats = getattr(judge, "encoding", None)
    return None if stats is None else int(getattr(stats, name))


async def _warm(judge: LocalJudge, counting: CountingEmbedder) -> None:
    """Load the model and run one batch (outside the clock; its vectors are not kept)."""
    await asyncio.to_thread(counting.inner.encode, [f"warm-up sentence {i}." for i in range(64)])


async def _measure(
    count: int, backend: LocalBackend, work: Callable[[LocalJudge], Awaitable[None]]
) -> Measured:
    """Run `work` on a fresh judge (no vectors kept), loaded and warmed outside the clock:
    wall and CPU time, the load at the start, what the encoder did."""
    judge, counting = _judge(backend)
    await _warm(judge, counting)
    counting.reset()
    load = os.getloadavg()[0]
    started, cpu = time.perf_counter(), time.process_time()
    await work(judge)
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    asked, reused = _stat(judge, "asked"), _stat(judge, "reused")
    return Measured(count, seconds, counting, asked, reused, load, cpu)


async def measure(
    rows: list[dict[str, Any]], metrics: list[str], backend: LocalBackend = "auto"
) -> Measured:
    """Score `rows` as `ragas-ops score` does."""
    batch = Settings().batch_rows
    tables = [pa.Table.from_pylist(rows[i : i + batch]) for i in range(0, len(rows), batch)]

    async def score(judge: LocalJudge) -> None:
        async for _ in Scorer(build_metrics(metrics), judge).score_stream(tables):
            pass

    return await _measure(len(rows), backend, score)


async def measure_ranking(rows: list[Interaction], backend: LocalBackend = "auto") -> Measured:
    """GPT Ranking's three dimensions on each row against the next one."""

    async def rank(judge: LocalJudge) -> None:
        calls = []
        for row, other in zip(rows, rows[1:] + rows[:1], strict=True):
            q, c, a = row.question or "", row.contexts or [], row.answer or ""
            second = other.answer or ""
            calls += [
                rank_pair(judge, "faithfulness", question=q, first=a, second=second, contexts=c),
                rank_pair(judge, "answer_relevance", question=q, first=a, second=second),
                rank_pair(
                    judge, "context_relevance", question=q, first=c, second=other.contexts or []
                ),
            ]
        await asyncio.gather(*calls)

    return await _measure(len(rows), backend, rank)


def measure_encoder(rows: list[dict[str, Any]], texts: int = 1000) -> list[str]:
    """The encoder alone on the rows' first `texts` distinct sentences, in each precision:
    tokens/s and CPU, and the int8 vectors' cosine with the float ones."""
    sentences = list(
        dict.fromkeys(s for row in rows for c in row["contexts"] for s in split_sentences(c))
    )[:texts]
    lines, vectors = [], {}
    for precision in ("float", "int8"):
        embedder = OnnxEmbedder(precision)
        embedder.encode(sentences[:64])  # load (and derive) outside the clock
        before = embedder.tokens_encoded
        load = os.getloadavg()[0]
        started, cpu = time.perf_counter(), time.process_time()
        vectors[precision] = embedder.encode(sentences)
        seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
        tokens = embedder.tokens_encoded - before
        lines.append(
            f"encoder alone, {precision}: {len(sentences):,} sentences, {tokens:,} tokens in "
            f"{seconds:.2f} s = {tokens / seconds:,.0f} tokens/s, CPU {cpu:.2f} s; load {load:.2f}"
        )
    cosines = (vectors["float"] * vectors["int8"]).sum(axis=1)
    lines.append(
        f"int8 against float vectors: cosine mean {cosines.mean():.4f}, "
        f"1st percentile {np.percentile(cosines, 1):.4f}, least {cosines.min():.4f}"
    )
    return lines


def measure_cli(rows: list[dict[str, Any]], backend: LocalBackend = "auto") -> str:
    """`ragas-ops score --judge local` on a Parquet file of `rows`, timed from the outside."""
    with tempfile.TemporaryDirectory() as folder:
        source, target = Path(folder) / "rows.parquet", Path(folder) / "scored.parquet"
        pq.write_table(pa.Table.from_pylist(rows), source)
        cli = Path(sys.executable).with_name("ragas-ops")
        # no response cache: a second run would answer every row from the first one's
        command = [str(cli), "score", "--judge", "local", "--cache", "none", "--no-progress"]
        load = os.getloadavg()[0]
        started = time.perf_counter()
        environ = {**os.environ, "RAGAS_OPS_JUDGE_LOCAL_BACKEND": backend}
        subprocess.run([*command, str(source), str(target)], check=True, cwd=folder, env=environ)
        seconds = time.perf_counter() - started
        scored = pq.read_table(target).num_rows
    return (
        f"CLI `ragas-ops score --judge local` ({backend}), {scored} realistic rows: {scored / seconds:.1f} "
        f"rows/s including startup ({seconds:.2f} s); load {load:.2f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--rows", type=int, default=500)
    parser.add_argument("--cli", action="store_true", help="also time the CLI end to end")
    parser.add_argument("--baselines", action="store_true", help="also GPT Score and Ranking")
    parser.add_argument("--no-paper", action="store_true", help="skip the paper metrics' sets")
    parser.add_argument("--encoder", action="store_true", help="also the encoder alone")
    parser.add_argument(
        "--backend", choices=get_args(LocalBackend), default="auto", help="judge.local_backend"
    )
    options = parser.parse_args()
    backend = options.backend
    realistic = realistic_rows(options.rows)
    if not options.no_paper:
        print(
            asyncio.run(measure(realistic, PAPER_METRICS, backend)).line(
                "realistic, 3 paper metrics"
            )
        )
        distinct = realistic_rows(distinct=True)
        print(
            asyncio.run(measure(distinct, PAPER_METRICS, backend)).line("distinct, 3 paper metrics")
        )
    if options.baselines:
        scores = [f"gpt_score_{name}" for name in PAPER_METRICS]
        print(
            asyncio.run(measure(realistic, scores, backend)).line(
                "realistic, GPT Score (3 metrics)"
            )
        )
        budget = SizeBudget()
        valid = [validate_row(r["question"], r["contexts"], r["answer"], budget) for r in realistic]
        print(
            asyncio.run(measure_ranking(valid, backend)).line(
                "realistic, GPT Ranking (3 dimensions)"
            )
        )
    if options.encoder:
        print("\n".join(measure_encoder(realistic)))
    if options.cli:
        print(measure_cli(realistic, backend))


if __name__ == "__main__":
    main()
