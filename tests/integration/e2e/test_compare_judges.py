"""`ragas-ops compare-judges` over a folder: the estimate first, then both judges (the test
judge over HTTP as the judge of record, the local judge as the candidate) on the rows the
row-id hash picks, compared per metric."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from ragas_ops_testing.judge_server import JudgeServer

from ragas_ops.cli.main import EXIT_OK, EXIT_USAGE, main
from ragas_ops.judge.spec import EndpointSpec
from ragas_ops.quality.judge_comparison import comparison_cells
from ragas_ops.samples import sample_interactions
from ragas_ops.scoring.shadow import candidate_mask
from tests.support import TEST_KEY

SHARE = 0.4


@pytest.fixture
def logs(tmp_path: Path, judge_server: JudgeServer, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "logs"
    folder.mkdir()
    table = sample_interactions(50, seed=11, day="2026-11-20")
    pq.write_table(table.slice(0, 25), folder / "part-0.parquet")
    pq.write_table(table.slice(25), folder / "part-1.parquet")
    for name, value in {
        "RAGAS_OPS_JUDGE_BASE_URL": judge_server.base_url,
        "RAGAS_OPS_JUDGE_CACHE_PATH": str(tmp_path / "cache.sqlite"),
        "OPENAI_API_KEY": TEST_KEY,
    }.items():
        monkeypatch.setenv(name, value)
    return folder


def test_compare_judges_prints_the_estimate_then_the_comparison_of_a_folder(
    logs: Path, judge_server: JudgeServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    written = tmp_path / "comparison.json"
    flags = ["--candidate-kind", "local", "--candidate-sample", str(SHARE), "--rpm", "none"]

    code = main(["compare-judges", str(logs), *flags, "--json", str(written)])

    assert code == EXIT_OK
    out = capsys.readouterr().out
    lines = out.splitlines()
    ids = pa.concat_tables([pq.read_table(path) for path in sorted(logs.glob("*.parquet"))])
    chosen = candidate_mask(ids.column("id").to_pylist(), SHARE).count(True)
    assert lines[0] == f"estimate before any call (the sample: {SHARE:g} of the rows, by row id):"
    model = EndpointSpec().model  # the default judge
    assert lines[1].startswith(f"  judge      {model}: {chosen} of 50 rows, ")
    assert re.search(r" chat tokens, \$\d+\.\d{4}$", lines[1]), f"priced: {model}'s table"
    assert lines[2] == f"  candidate  the local judge: {chosen} of 50 rows, no API request, $0.0000"
    assert lines[3].startswith("  total about $")
    assert ", at most $" in lines[3]
    assert lines.index(next(line for line in lines if line.startswith("scored "))) > 3
    assert f"scored {chosen} of 50 rows with both judges" in out
    paid = judge_server.stats()["requests"]
    assert paid > 0

    rows = json.loads(written.read_text())
    assert [row["metric"] for row in rows] == [
        "faithfulness",
        "answer_relevance",
        "context_relevance",
    ]
    for row in rows:
        assert row["rows"] == chosen
        assert 2 <= row["pairs"] <= chosen
        assert row["difference_ci_low"] <= row["difference"] <= row["difference_ci_high"]
        assert row["candidate"] == "local:all-MiniLM-L6-v2-onnx-fused-int8"
        (printed,) = [line for line in lines if line.startswith(row["metric"] + " ")]
        assert re.split(r"\s{2,}", printed.strip()) == comparison_cells(row)
    assert TEST_KEY not in out

    # Again: the judge of record's answers come from the cache; nothing is paid twice.
    assert main(["compare-judges", str(logs), *flags]) == EXIT_OK
    assert judge_server.stats()["requests"] == paid


def test_compare_judges_without_a_candidate_says_how_to_name_one(
    logs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["compare-judges", str(logs)]) == EXIT_USAGE
    assert "no shadow judge is configured: set [judge.candidate] model" in capsys.readouterr().err


def test_the_estimate_of_a_run_says_what_a_shadow_judge_adds(
    logs: Path,
    judge_server: JudgeServer,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert main(["estimate", str(logs)]) == EXIT_OK
    without = capsys.readouterr().out
    assert "shadow judge" not in without
    monkeypatch.setenv("RAGAS_OPS_JUDGE_CANDIDATE_MODEL", "gpt-5-mini")
    monkeypatch.setenv("RAGAS_OPS_JUDGE_CANDIDATE_SAMPLE", str(SHARE))

    assert main(["estimate", str(logs)]) == EXIT_OK

    out = capsys.readouterr().out
    assert out.startswith(without.rstrip("\n"))  # the run's own estimate, unchanged
    ids = pa.concat_tables([pq.read_table(path) for path in sorted(logs.glob("*.parquet"))])
    chosen = candidate_mask(ids.column("id").to_pylist(), SHARE).count(True)
    (line,) = [line for line in out.splitlines() if line.startswith("shadow judge")]
    assert line.startswith(
        "shadow judge ([judge.candidate]) gpt-5-mini on at most "
        f"{chosen} rows ({SHARE:g} by row id): "
    )
    assert re.search(r" chat tokens, \$\d+\.\d{4} more \(in sync, in every mode\)$", line)
    assert judge_server.stats()["requests"] == 0, "an estimate calls no judge"


def dollars(text: str) -> float:
    return float(text.removeprefix("$"))


def test_what_compare_judges_spends_stays_within_the_printed_bound(
    tmp_path: Path,
    start_judge_server: Callable[..., JudgeServer],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A candidate answering garbage half the time (each reply repaired or retried, paid
    again) spent 1.33x the printed "at most" before: the bound is now each judge's budget."""
    server = start_judge_server(rate_malformed=0.5, seed=3)
    folder = tmp_path / "logs"
    folder.mkdir()
    pq.write_table(sample_interactions(20, seed=12, day="2026-11-20"), folder / "part-0.parquet")
    for name, value in {
        "RAGAS_OPS_JUDGE_BASE_URL": server.base_url,
        "RAGAS_OPS_JUDGE_CACHE_PATH": str(tmp_path / "cache.sqlite"),
        "OPENAI_API_KEY": TEST_KEY,
    }.items():
        monkeypatch.setenv(name, value)
    flags = ["--candidate-model", "gpt-5-mini", "--candidate-sample", "1", "--rpm", "none"]

    assert main(["compare-judges", str(folder), *flags]) == EXIT_OK

    out = capsys.readouterr().out
    (total,) = [line for line in out.splitlines() if line.startswith("  total about ")]
    about, most = re.findall(r"\$\d+\.\d{4}", total)
    (spent,) = [line for line in out.splitlines() if line.startswith("scored ")]
    judge, candidate = re.findall(r"\$\d+\.\d{4}", spent)
    assert dollars(judge) + dollars(candidate) > dollars(about), "the case: more than estimated"
    assert dollars(judge) + dollars(candidate) <= dollars(most)
