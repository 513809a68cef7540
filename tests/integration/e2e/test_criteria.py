"""A team's own criteria, written in the config file (the demo's two: `cites_source`, pass/fail
reading the pass-through column `citations`, and `completeness`, a 1-5 scale): scored by
`ragas-ops score` against `ragas-ops test-judge` (both processes of their own, which build the
criteria from the same file), estimated within 15%, cached by version (an unchanged rerun
sends nothing, an edited criterion is a new version), refused honestly by the local judge."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from ragas_ops_testing import judge_process
from ragas_ops_testing.judge_server import JudgeServer
from ragas_ops_testing.local_airflow.demo import DEMO_CRITERIA, write_demo_config

from ragas_ops.config import apply_mapping, load_settings
from ragas_ops.contract.status import Status
from ragas_ops.estimate import estimate_input
from ragas_ops.samples import sample_interactions
from ragas_ops.scoring.jobs import score_file
from tests.support import TEST_KEY, settings_for

CRITERIA = ("cites_source", "completeness")
QUESTION = "When did the Millau Viaduct open and how tall is its highest mast?"
FULL = "The Millau Viaduct opened in 2004 and its highest mast is 343 metres tall. (Source: KB-7.)"
ROWS = {
    "id": ["cited", "wrong source", "half", "refusal", "no citations"],
    "question": [QUESTION] * 5,
    "contexts": [["The Millau Viaduct opened in 2004. Its highest mast is 343 metres tall."]] * 5,
    "answer": [FULL, FULL, "It opened in 2004.", "I'm sorry, I could not find that.", FULL],
    "citations": [["KB-7"], ["DOC-9"], ["KB-7"], ["KB-7"], None],
}
# The test judge's rule (metrics/criteria/double.py): the share of the reference's content
# words the answer holds. cites_source: "kb", "7" of the citations; pass at one half.
# completeness: of the question's millau, viaduct, open, tall, highest, mast: 6/6 -> level 5
# (1.0), 1/6 -> floor(1/6 * 4 + 0.5) = 1, level 2 (0.25), 0/6 -> level 1 (0.0).
EXPECTED = {
    "cites_source": {"cited": 1.0, "wrong source": 0.0, "half": 0.0, "refusal": 0.0},
    "completeness": {
        "cited": 1.0,
        "wrong source": 1.0,
        "half": 0.25,
        "refusal": 0.0,
        "no citations": 1.0,
    },
}


def scores(path: Path, name: str) -> dict[str, float]:
    table = pq.read_table(path)
    return {
        row_id: score
        for row_id, score in zip(
            table["id"].to_pylist(), table[f"{name}_score"].to_pylist(), strict=True
        )
        if score is not None
    }


def test_two_criteria_are_scored_by_the_cli_against_the_test_judge_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = write_demo_config(tmp_path)
    monkeypatch.setenv("RAGAS_OPS_CONFIG", str(config))  # the test judge reads it too
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    source, target = tmp_path / "logs.parquet", tmp_path / "scored.parquet"
    pq.write_table(pa.table(ROWS), source)
    with judge_process.test_judge_process() as base_url:
        finished = subprocess.run(
            [
                sys.executable,
                "-m",
                "ragas_ops.cli",
                "score",
                str(source),
                str(target),
                "--config",
                str(config),
                "--base-url",
                base_url,
                "--model",
                "test-judge",
                "--embedding-model",
                "test-embedding",
                "--cache",
                str(tmp_path / "c.sqlite"),
                "--rpm",
                "none",
                "--tpm",
                "none",
                "--no-progress",
            ],
            capture_output=True,
            text=True,
            env=os.environ.copy(),
            timeout=300,
            check=False,
        )
        stats = judge_process.server_stats(base_url)
    assert finished.returncode == 0, finished.stderr
    for name in CRITERIA:
        assert scores(target, name) == EXPECTED[name]
    table = pq.read_table(target).to_pylist()
    by_id = {row["id"]: row for row in table}
    missing = by_id["no citations"]
    assert missing["cites_source_status"] == Status.INVALID_INPUT
    assert "citations is missing" in missing["cites_source_reason"]
    evidence = json.loads(by_id["half"]["completeness_evidence"])
    assert evidence["level"] == "2"
    assert evidence["levels"] == ["1", "2", "3", "4", "5"]
    assert '"open"' in evidence["explanation"]
    version = load_settings(config).criteria["completeness"].version
    assert by_id["half"]["completeness_version"] == (
        f"completeness/criterion-{version} (criterion.completeness.{version}/v1)"
    )
    # Three distinct (question, answer) pairs: a repeated one is one call (the cache).
    assert stats["requests_by_prompt"][f"criterion.completeness.{version}"] == 3
    assert "completeness" in finished.stdout + finished.stderr  # the run's summary names it


def criteria_settings(server: JudgeServer, tmp_path: Path, text: str = DEMO_CRITERIA) -> object:
    settings = settings_for(server, tmp_path)
    apply_mapping(settings, tomllib.loads(text), source="criteria")
    return settings


ESTIMATE_WITHIN = 0.15


def test_the_estimate_of_two_criteria_is_within_15_percent_of_the_run(
    judge_server: JudgeServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    source = tmp_path / "logs.parquet"
    pq.write_table(sample_interactions(80, seed=4, citations=True), source)
    settings = settings_for(judge_server, tmp_path)
    apply_mapping(
        settings,
        {**tomllib.loads(DEMO_CRITERIA), "metrics": {"names": list(CRITERIA)}},
        source="criteria",
    )
    assert settings.metrics.names == CRITERIA

    estimated = estimate_input(str(source), settings).total
    assert judge_server.stats()["requests"] == 0
    asyncio.run(score_file(str(source), str(tmp_path / "scored.parquet"), settings, progress=False))
    real = judge_server.stats()

    # The estimate counts every row; the judge asks once for rows whose fields repeat.
    chat = real["requests_by_endpoint"]["chat"]
    assert chat <= estimated.chat_requests <= chat * (1 + ESTIMATE_WITHIN)
    for name in CRITERIA:
        sent = sum(
            count
            for prompt, count in real["requests_by_prompt"].items()
            if prompt.startswith(f"criterion.{name}.")
        )
        assert sent <= estimated.requests_by_metric[name] <= sent * (1 + ESTIMATE_WITHIN)
    print(
        f"criteria estimate: {estimated.chat_requests} requests vs {chat}, prompt tokens "
        f"{estimated.prompt_tokens} vs {real['prompt_tokens']}, completion tokens "
        f"{estimated.completion_tokens} vs {real['completion_tokens']}"
    )
    assert estimated.prompt_tokens == pytest.approx(real["prompt_tokens"], rel=ESTIMATE_WITHIN)
    assert estimated.completion_tokens == pytest.approx(
        real["completion_tokens"], rel=ESTIMATE_WITHIN
    )


def criterion_requests(server: JudgeServer, name: str) -> int:
    return sum(
        count
        for prompt, count in server.stats()["requests_by_prompt"].items()
        if prompt.startswith(f"criterion.{name}.")
    )


def test_an_unchanged_rerun_pays_nothing_and_an_edited_criterion_is_a_new_version(
    judge_server: JudgeServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    source = tmp_path / "logs.parquet"
    pq.write_table(pa.table(ROWS), source)
    settings = settings_for(judge_server, tmp_path)
    apply_mapping(settings, tomllib.loads(DEMO_CRITERIA), source="criteria")
    asyncio.run(score_file(str(source), str(tmp_path / "first.parquet"), settings, progress=False))
    first = judge_server.stats()["requests"]
    assert criterion_requests(judge_server, "completeness") == 3

    asyncio.run(score_file(str(source), str(tmp_path / "again.parquet"), settings, progress=False))
    assert judge_server.stats()["requests"] == first, "an unchanged rerun sends nothing"
    again = pq.read_table(tmp_path / "again.parquet")
    assert set(again["judge_requests"].to_pylist()) == {0}
    assert set(again["cost_usd"].to_pylist()) <= {0.0, None}

    edited = DEMO_CRITERIA.replace("every part of the question, from", "every part, from")
    assert edited != DEMO_CRITERIA
    settings = settings_for(judge_server, tmp_path)
    apply_mapping(settings, tomllib.loads(edited), source="criteria")
    asyncio.run(score_file(str(source), str(tmp_path / "edited.parquet"), settings, progress=False))
    assert criterion_requests(judge_server, "completeness") == 6, "asked again, new version"
    assert criterion_requests(judge_server, "cites_source") == 4, "the other one is unchanged"
    before = pq.read_table(tmp_path / "first.parquet")["completeness_version"][0].as_py()
    after = pq.read_table(tmp_path / "edited.parquet")["completeness_version"][0].as_py()
    assert before != after
    assert after.startswith("completeness/criterion-")


def test_the_local_judge_says_it_cannot_judge_a_criterion_and_scores_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = tmp_path / "logs.parquet"
    pq.write_table(pa.table(ROWS), source)
    settings = load_settings(write_demo_config(tmp_path))
    settings.judge.kind = "local"
    settings.judge.cache.path = None
    summary = asyncio.run(
        score_file(str(source), str(tmp_path / "local.parquet"), settings, progress=False)
    )
    scored = pq.read_table(tmp_path / "local.parquet").to_pylist()
    for row in scored:
        assert row["completeness_status"] == Status.UNSUPPORTED_CRITERION
        assert row["completeness_score"] is None
        assert "cannot apply a free-text criterion" in row["completeness_reason"]
    assert {row["cites_source_status"] for row in scored} == {
        Status.UNSUPPORTED_CRITERION,
        Status.INVALID_INPUT,  # the row without citations: its input first
    }
    assert {row["faithfulness_status"] for row in scored} <= {Status.OK, Status.NOT_APPLICABLE}
    assert summary.summary.statuses["completeness"][Status.UNSUPPORTED_CRITERION] == len(scored)


def test_sampling_leaves_the_same_rows_out_of_every_criterion_and_the_estimate_counts_them(
    judge_server: JudgeServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    source = tmp_path / "logs.parquet"
    pq.write_table(sample_interactions(40, seed=6, citations=True), source)
    settings = settings_for(judge_server, tmp_path)
    apply_mapping(
        settings,
        {**tomllib.loads(DEMO_CRITERIA), "metrics": {"names": list(CRITERIA)}},
        source="criteria",
    )
    settings.pipeline.sample_fraction = 0.5
    estimated = estimate_input(str(source), settings).total
    asyncio.run(score_file(str(source), str(tmp_path / "scored.parquet"), settings, progress=False))
    rows = pq.read_table(tmp_path / "scored.parquet").to_pylist()
    left_out = {row["id"] for row in rows if row["cites_source_status"] == Status.NOT_SAMPLED}
    assert left_out == {row["id"] for row in rows if row["completeness_status"] == "not_sampled"}
    assert 0 < len(left_out) < len(rows)
    assert estimated.rows_sampled == len(rows) - len(left_out)
    sent = judge_server.stats()["requests_by_endpoint"]["chat"]
    assert sent <= estimated.chat_requests <= sent * (1 + ESTIMATE_WITHIN)
