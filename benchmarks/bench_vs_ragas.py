"""ragas-ops side by side with the reference library (ragas 0.4.3), on the same rows and server.

Both sides score the same WikiEval-sized rows (built from the WikiEval sample: each row's
question and answer get a lead-in of their own, so that no two rows send the same prompt and
no cache can answer a repeat) with faithfulness, answer relevance and context relevance,
against the project's test judge server in a process of its own (a fresh one per run, started
with the same options: same latency, same limits, full rate-limit buckets):

- ragas-ops: `score_file` (the Scorer, the OpenAI judge in sync mode, a fresh in-memory cache,
  default concurrency), with the scenario's RPM/TPM as its client budget;
- ragas: `evaluate()` with its defaults and the metrics faithfulness, answer_relevancy and
  ContextRelevance, through langchain-openai clients, run by `reference/run_ragas.py` in its own
  venv (`make bench-reference` builds it from `reference/requirements.txt`).

Scenarios: (1) 400 ms latency, no limits; (2) 400 ms latency, 600 RPM / 400k TPM on the server
and as ragas-ops' client budget (ragas has no client-side limiter). Requests and tokens come
from the server's /stats. The bound of a side is min(RPM / requests per row, TPM / tokens per
row), its own requests and tokens; a row is complete when all three scores are present and
finite. The test server is a lexical test double: these figures are about cost and throughput,
not about the quality of either library's scores.

Scenario 3 (not run by default): 600 RPM / 150k TPM, a budget that both sides reach.

Usage: python benchmarks/bench_vs_ragas.py [--rows 90] [--scenario 1|2|3 ...] [--json PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import re
import subprocess
import tempfile
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from ragas_ops_testing.judge_process import server_stats, test_judge_process
from ragas_ops_testing.judge_server import CHAT_MODEL, EMBEDDING_MODEL

from ragas_ops.config import Settings
from ragas_ops.evaluation.data import read_records
from ragas_ops.judge.local.evidence import strip_prefix
from ragas_ops.metrics import DEFAULT_METRICS
from ragas_ops.scoring.jobs import score_file

ROOT = Path(__file__).resolve().parent.parent
WIKIEVAL = ROOT.parent / "shared" / "data" / "wikieval-sample" / "wikieval_sample.jsonl"
RAGAS_PYTHON = ROOT / "benchmarks" / ".venv-ragas" / "bin" / "python"
RAGAS_RUNNER = ROOT / "benchmarks" / "reference" / "run_ragas.py"
RAGAS_METRICS = ("faithfulness", "answer_relevancy", "nv_context_relevance")

# Each base row gives 6 rows a round (3 answers x 2 context sets); the lead-ins keep every
# row's question and answer distinct. Neutral words only: no numbers, no names.
ANSWER_KINDS = ("answer", "ungrounded_answer", "poor_answer")
CONTEXT_SETS = ("context_v1", "context_v2")
QUESTION_LEADS = (
    "",
    "Quick question: ",
    "Please answer: ",
    "I would like to know: ",
    "Tell me: ",
    "One question: ",
    "A question for you: ",
    "Help me with this: ",
    "Something I wonder: ",
    "Can you say: ",
    "My question: ",
    "Please explain: ",
)
ANSWER_LEADS = ("", "In short: ", "Briefly: ", "Put simply: ")
MAX_ROUNDS = 2


@dataclass(frozen=True)
class Scenario:
    name: str
    latency_ms: int
    rpm: int | None = None
    tpm: int | None = None

    def server_options(self) -> list[str]:
        options = ["--latency-ms", str(self.latency_ms)]
        if self.rpm is not None:
            options += ["--rpm", str(self.rpm)]
        if self.tpm is not None:
            options += ["--tpm", str(self.tpm)]
        return options


SCENARIOS = {
    "1": Scenario("400 ms latency, no limits", 400),
    "2": Scenario("400 ms latency, 600 RPM / 400k TPM", 400, rpm=600, tpm=400_000),
    # Not run by default: a token budget that both libraries reach (ragas' own pace stays
    # under 400k TPM), to see what each does with 429s.
    "3": Scenario("400 ms latency, 600 RPM / 150k TPM", 400, rpm=600, tpm=150_000),
}
DEFAULT_SCENARIOS = ("1", "2")


@dataclass
class SideResult:
    """One library's run of one scenario: what the server counted and what came out."""

    side: str
    rows: int
    seconds: float
    complete_rows: int
    failures: dict[str, int]
    server: dict[str, Any]
    extra: dict[str, Any] = field(default_factory=dict)
    figures: dict[str, Any] = field(default_factory=dict)

    def compute(self, scenario: Scenario) -> None:
        stats, rows = self.server, self.rows
        answered = stats.get("answered_by_endpoint", {})
        chat, embeddings = answered.get("chat", 0), answered.get("embeddings", 0)
        tokens = stats["prompt_tokens"] + stats["completion_tokens"] + stats["embedding_tokens"]
        per_minute = self.complete_rows / (self.seconds / 60) if self.seconds else 0.0
        bound = None
        if scenario.rpm is not None and scenario.tpm is not None and chat + embeddings:
            bound = min(scenario.rpm * rows / (chat + embeddings), scenario.tpm * rows / tokens)
        self.figures = {
            "chat_requests_per_row": chat / rows,
            "embedding_requests_per_row": embeddings / rows,
            "attempts_per_row": stats["requests"] / rows,
            "prompt_tokens_per_row": stats["prompt_tokens"] / rows,
            "completion_tokens_per_row": stats["completion_tokens"] / rows,
            "embedding_tokens_per_row": stats["embedding_tokens"] / rows,
            "tokens_per_row": tokens / rows,
            "wall_seconds": self.seconds,
            "complete_rows": self.complete_rows,
            "complete_rows_per_min": per_minute,
            "bound_rows_per_min": bound,
            "share_of_bound": per_minute / bound if bound else None,
            "answered_429": stats["responses"].get("429", 0),
            "max_in_flight": stats["max_in_flight"],
            "failures": self.failures,
        }


# --------------------------------------------------------------------------------------------
# The rows
# --------------------------------------------------------------------------------------------


def build_rows(path: Path, count: int) -> list[dict[str, Any]]:
    """`count` rows from the WikiEval file: every answer kind with every context set, round
    after round, each with its own id and its own lead-ins."""
    base = read_records(path)
    per_round = len(base) * len(ANSWER_KINDS) * len(CONTEXT_SETS)
    if not 0 < count <= per_round * MAX_ROUNDS:
        raise SystemExit(f"--rows must be in [1, {per_round * MAX_ROUNDS}] for {path.name}")
    rows = []
    for number in range(count):
        round_, rest = divmod(number, per_round)
        source, rest = divmod(rest, len(ANSWER_KINDS) * len(CONTEXT_SETS))
        kind, context = divmod(rest, len(CONTEXT_SETS))
        record = base[source]
        question_lead = QUESTION_LEADS[round_ * 6 + kind * 2 + context]
        answer_lead = ANSWER_LEADS[round_ * 2 + context]
        rows.append(
            {
                "id": f"wikieval-{source:02d}-{ANSWER_KINDS[kind]}-{CONTEXT_SETS[context]}-{round_}",
                "question": question_lead + strip_prefix(str(record["question"])),
                "answer": answer_lead + strip_prefix(str(record[ANSWER_KINDS[kind]])),
                "contexts": [str(text) for text in record[CONTEXT_SETS[context]]],
            }
        )
    return rows


# --------------------------------------------------------------------------------------------
# The two sides
# --------------------------------------------------------------------------------------------


def run_ragas_ops(rows: list[dict[str, Any]], scenario: Scenario, work: Path) -> SideResult:
    source, target = work / "rows.parquet", work / "ragas_ops_scored.parquet"
    pq.write_table(pa.Table.from_pylist(rows), source)
    settings = Settings()
    settings.judge.endpoint.model = CHAT_MODEL
    settings.judge.endpoint.embedding_model = EMBEDDING_MODEL
    settings.judge.cache.path = None  # in memory: a fresh cache for this run only
    settings.judge.limits.rpm = scenario.rpm
    settings.judge.limits.tpm = scenario.tpm
    with test_judge_process(*scenario.server_options()) as url:
        settings.judge.endpoint.base_url = url
        outcome = asyncio.run(score_file(str(source), str(target), settings, progress=False))
        stats = server_stats(url)
    scored = pq.read_table(target).to_pylist()
    failures = {
        metric: sum(not _finite(row, metric) for row in scored) for metric in DEFAULT_METRICS
    }
    complete = sum(all(_finite(row, metric) for metric in DEFAULT_METRICS) for row in scored)
    extra: dict[str, Any] = {name: count for name, count in outcome.events.items() if count}
    extra["statuses"] = {
        metric: dict(Counter(row[f"{metric}_status"] for row in scored))
        for metric in DEFAULT_METRICS
    }
    return SideResult("ragas-ops", len(rows), outcome.seconds, complete, failures, stats, extra)


def _finite(row: dict[str, Any], metric: str) -> bool:
    score = row[f"{metric}_score"]
    return row[f"{metric}_status"] == "ok" and score is not None and math.isfinite(score)


# Lines ragas writes while it runs, worth counting.
RAGAS_LOG_LINES = {
    "errors_skipped_as_nan": re.compile(r"An error occurred: .*Skipping a sample"),
    "exceptions_in_jobs": re.compile(r"Exception raised in Job"),
    "fewer_generations_than_requested": re.compile(r"LLM returned \d+ generations instead"),
}


def run_ragas(
    rows: list[dict[str, Any]], scenario: Scenario, work: Path, python: Path
) -> SideResult:
    rows_file, output, log = work / "rows.jsonl", work / "ragas_scored.json", work / "ragas.log"
    rows_file.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    with test_judge_process(*scenario.server_options()) as url:
        command = [
            str(python),
            str(RAGAS_RUNNER),
            *("--rows", str(rows_file), "--base-url", url, "--output", str(output)),
            *("--chat-model", CHAT_MODEL, "--embedding-model", EMBEDDING_MODEL),
        ]
        environment = {**os.environ, "RAGAS_DO_NOT_TRACK": "true"}
        with log.open("w", encoding="utf-8") as sink:
            finished = subprocess.run(
                command, stdout=sink, stderr=subprocess.STDOUT, env=environment, check=False
            )
        stats = server_stats(url)
    text = log.read_text(encoding="utf-8", errors="replace")
    if finished.returncode != 0:
        raise SystemExit(f"the ragas runner failed ({finished.returncode}):\n{text[-3000:]}")
    result = json.loads(output.read_text(encoding="utf-8"))
    scored = result["rows"]
    if [row["id"] for row in scored] != [row["id"] for row in rows]:
        raise SystemExit("the ragas runner returned other rows than it was given")
    failures = {metric: sum(row[metric] is None for row in scored) for metric in RAGAS_METRICS}
    complete = sum(all(row[metric] is not None for metric in RAGAS_METRICS) for row in scored)
    extra = {name: len(pattern.findall(text)) for name, pattern in RAGAS_LOG_LINES.items()}
    extra["versions"] = result["versions"]
    return SideResult("ragas", len(rows), result["seconds"], complete, failures, stats, extra)


# --------------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------------

TABLE_ROWS = (
    ("chat requests/row", "chat_requests_per_row", "{:.2f}"),
    ("embedding requests/row", "embedding_requests_per_row", "{:.2f}"),
    ("requests sent/row (with 429s)", "attempts_per_row", "{:.2f}"),
    ("prompt tokens/row", "prompt_tokens_per_row", "{:,.0f}"),
    ("completion tokens/row", "completion_tokens_per_row", "{:,.0f}"),
    ("embedding tokens/row", "embedding_tokens_per_row", "{:,.0f}"),
    ("tokens/row (all)", "tokens_per_row", "{:,.0f}"),
    ("wall time, s", "wall_seconds", "{:.1f}"),
    ("complete rows", "complete_rows", "{}"),
    ("complete rows/min", "complete_rows_per_min", "{:.1f}"),
    ("rate-limit bound, rows/min", "bound_rows_per_min", "{:.1f}"),
    ("share of own bound", "share_of_bound", "{:.0%}"),
    ("429s answered", "answered_429", "{}"),
    ("max requests in flight", "max_in_flight", "{}"),
)


def _cell(template: str, value: Any) -> str:
    return "-" if value is None else template.format(value)


def print_scenario(scenario: Scenario, ours: SideResult, theirs: SideResult) -> None:
    print(f"\n{scenario.name} ({ours.rows} rows)")
    print(f"{'':<32}{'ragas-ops':>14}{'ragas 0.4.3':>14}")
    for label, key, template in TABLE_ROWS:
        print(
            f"{label:<32}{_cell(template, ours.figures[key]):>14}"
            f"{_cell(template, theirs.figures[key]):>14}"
        )
    for (metric, failed), (their_metric, their_failed) in zip(
        ours.failures.items(), theirs.failures.items(), strict=True
    ):
        print(f"{'unscored: ' + metric:<32}{failed:>14}{their_failed:>14}  ({their_metric})")
    print(f"   ragas-ops judge events: {ours.extra or 'none'}")
    print(f"   ragas log: { {k: v for k, v in theirs.extra.items() if k != 'versions'} }")
    saved = 1 - ours.figures["tokens_per_row"] / theirs.figures["tokens_per_row"]
    speed = (
        ours.figures["complete_rows_per_min"] / theirs.figures["complete_rows_per_min"]
        if theirs.figures["complete_rows_per_min"]
        else math.inf
    )
    print(f"   ragas-ops: {saved:.0%} fewer tokens/row, {speed:.2f}x the complete rows/min")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=90, help="rows per run (at most 120)")
    parser.add_argument(
        "--scenario", choices=sorted(SCENARIOS), action="append", help="default: 1 and 2"
    )
    parser.add_argument("--data", type=Path, default=WIKIEVAL, help="the WikiEval JSON lines")
    parser.add_argument("--ragas-python", type=Path, default=RAGAS_PYTHON)
    parser.add_argument("--json", type=Path, help="write the figures to this JSON file")
    options = parser.parse_args()
    if not options.ragas_python.exists():
        raise SystemExit(f"{options.ragas_python} missing: run `make bench-reference`")
    rows = build_rows(options.data, options.rows)
    report: dict[str, Any] = {"rows": len(rows), "data": str(options.data), "scenarios": []}
    for key in options.scenario or DEFAULT_SCENARIOS:
        scenario = SCENARIOS[key]
        with tempfile.TemporaryDirectory() as folder:
            ours = run_ragas_ops(rows, scenario, Path(folder))
            theirs = run_ragas(rows, scenario, Path(folder), options.ragas_python)
        for side in (ours, theirs):
            side.compute(scenario)
        print_scenario(scenario, ours, theirs)
        report["scenarios"].append(
            {
                **asdict(scenario),
                "sides": {
                    side.side: {"figures": side.figures, "extra": side.extra, "server": side.server}
                    for side in (ours, theirs)
                },
            }
        )
    if options.json:
        options.json.parent.mkdir(parents=True, exist_ok=True)
        options.json.write_text(json.dumps(report, indent=1), encoding="utf-8")
        print(f"\nfigures written to {options.json}")


if __name__ == "__main__":
    main()
