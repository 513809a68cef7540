"""`ragas-ops benchmark wikieval|begin` end to end: over HTTP against the project's test judge
server, and with the local judge; on tiny fixtures, and on ../shared/data when it is there."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from ragas_ops_testing.judge_server import JudgeServer

from ragas_ops.cli.main import main

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "benchmarks"
SHARED = Path(__file__).resolve().parents[4] / "shared" / "data"
WIKIEVAL = FIXTURES / "wikieval_tiny.jsonl"
BEGIN = [FIXTURES / "begin_tiny_dev.jsonl", FIXTURES / "begin_tiny_test.jsonl"]
BEGIN_SAMPLE = 120
"""Rows read from each shared BEGIN dev file by the slow test."""


def _llm_options(server: JudgeServer, tmp_path: Path) -> list[str]:
    return [
        "--judge", "openai", "--base-url", server.base_url, "--model", "test-judge",
        "--embedding-model", "test-embedding", "--rpm", "none", "--tpm", "none",
        "--cache", str(tmp_path / "cache.sqlite"), "--no-progress",
    ]  # fmt: skip


def _run(args: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    out = tmp_path / "table.json"
    code = main([*args, "--results", str(tmp_path / "rows.jsonl"), "--json", str(out)])
    assert code == 0, capsys.readouterr().err
    payload: dict[str, Any] = json.loads(out.read_text())
    return payload


def test_wikieval_over_http_prints_the_table_and_resumes(
    judge_server: JudgeServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["benchmark", "wikieval", str(WIKIEVAL), *_llm_options(judge_server, tmp_path)]
    payload = _run(args, tmp_path, capsys)
    printed = capsys.readouterr().out
    assert "Ragas (paper)" in printed
    assert "0.95" in printed
    assert "a tie counts half" in printed
    assert "position bias" in printed
    assert "requests:" in printed
    assert payload["rows"] == 2
    assert payload["judge"] == f"openai:test-judge@127.0.0.1:{judge_server.port}"
    for method in ("Ragas", "GPT Score", "GPT Ranking", "Word overlap"):
        for cell in payload["methods"][method].values():
            assert cell["scored"] + cell["unscored"] == 2
            assert 0.0 <= cell["accuracy"] <= 1.0
    assert payload["paper"]["Ragas"]["faithfulness"] == 0.95
    lines = (tmp_path / "rows.jsonl").read_text().splitlines()
    assert len(lines) == 2
    before = judge_server.stats()["requests"]
    again = _run(args, tmp_path, capsys)  # resumes from the results file: nothing is asked
    assert again["methods"] == payload["methods"]
    assert judge_server.stats()["requests"] == before
    assert len((tmp_path / "rows.jsonl").read_text().splitlines()) == 2


def test_a_new_rule_or_prompt_version_rescores_instead_of_reusing_stored_rows(
    judge_server: JudgeServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from ragas_ops.metrics.faithfulness import Faithfulness

    args = ["benchmark", "begin", *map(str, BEGIN), *_llm_options(judge_server, tmp_path)]
    _run(args, tmp_path, capsys)
    stored = len((tmp_path / "rows.jsonl").read_text().splitlines())
    monkeypatch.setattr(Faithfulness, "version", Faithfulness.version + 1)
    _run(args, tmp_path, capsys)  # same rows, same judge, a new metric version
    assert len((tmp_path / "rows.jsonl").read_text().splitlines()) == 2 * stored


def test_begin_over_http_reports_dev_threshold_on_test_and_unscored_rows(
    judge_server: JudgeServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["benchmark", "begin", *map(str, BEGIN), *_llm_options(judge_server, tmp_path)]
    payload = _run(args, tmp_path, capsys)
    printed = capsys.readouterr().out
    assert "chosen on dev" in printed
    assert "Generic responses" in printed
    assert set(payload["splits"]) == {"dev", "test"}
    test = payload["splits"]["test"]
    assert test["generic"]["rows"] == 1
    assert test["faithfulness"]["all"]["rows"] == 4
    assert "balanced_accuracy" in test["faithfulness"]["all"]
    assert set(test["faithfulness"]["by_model"]) == {"t5", "gpt2", "doha", "ctrl"}
    assert payload["thresholds"]["faithfulness"]["chosen_on"] == "dev"


def test_wikieval_with_the_local_judge(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("sentence_transformers")
    args = ["benchmark", "wikieval", str(WIKIEVAL), "--judge", "local", "--no-progress"]
    payload = _run([*args, "--cache", "none"], tmp_path, capsys)
    assert payload["judge"] == "local:all-MiniLM-L6-v2-onnx-fused-int8"
    ragas = payload["methods"]["Ragas"]
    assert ragas["faithfulness"]["accuracy"] == 1.0  # made-up dates and names are caught
    assert ragas["context_relevance"]["accuracy"] == 1.0  # padding lowers the diluted context
    assert "requests: 0 chat" in capsys.readouterr().out


def test_begin_with_the_local_judge(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("sentence_transformers")
    args = ["benchmark", "begin", *map(str, BEGIN), "--judge", "local", "--no-progress"]
    payload = _run([*args, "--cache", "none"], tmp_path, capsys)
    assert payload["splits"]["test"]["faithfulness"]["all"]["roc_auc"] == 1.0
    dev = payload["splits"]["dev"]
    # "do you play it often?" claims nothing: reported as not_applicable, not dropped;
    # "i love it!" claims something about the speaker, which the knowledge cannot support.
    assert dev["not_scored"]["not_applicable"] == {"Not fully attributable": 1}
    assert dev["generic"]["mean_faithfulness"] == 0.0
    assert dev["faithfulness"]["all"]["rows"] == 5
    assert dev["faithfulness"]["all"]["scored"] == 4


@pytest.mark.slow
@pytest.mark.skipif(not SHARED.exists(), reason="../shared/data is not there")
@pytest.mark.parametrize("kind", ["http", "local"])
def test_on_the_shared_data(
    kind: str,
    start_judge_server: Callable[..., JudgeServer],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    if kind == "local":
        pytest.importorskip("sentence_transformers")
        options = ["--judge", "local", "--cache", str(tmp_path / "c.sqlite"), "--no-progress"]
    else:
        options = _llm_options(start_judge_server(), tmp_path)
    sample = SHARED / "wikieval-sample" / "wikieval_sample.jsonl"
    payload = _run(["benchmark", "wikieval", str(sample), *options], tmp_path / "w", capsys)
    assert payload["rows"] == 10
    # A sample of every BEGIN dev file keeps this test quick; the full figures are in
    # docs/evaluation.md.
    begin = []
    for path in sorted((SHARED / "begin").glob("begin_v2_*_dev.jsonl")):
        begin.append(tmp_path / path.name)
        begin[-1].write_text("".join(path.read_text().splitlines(keepends=True)[:BEGIN_SAMPLE]))
    payload = _run(["benchmark", "begin", *map(str, begin), *options], tmp_path / "b", capsys)
    assert payload["splits"]["dev"]["faithfulness"]["all"]["rows"] > len(begin) * BEGIN_SAMPLE // 2
