"""Bad command lines and settings of `ragas-ops score`, as the user meets them: an exit code
and one line on stderr naming what is wrong, never a traceback, never a silent success."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest
from ragas_ops_testing.judge_server import JudgeServer

from ragas_ops.cli.main import EXIT_UNREACHABLE, EXIT_USAGE, main
from ragas_ops.samples import sample_interactions
from tests.integration.e2e.test_score_e2e import score_args
from tests.support import TEST_KEY


@pytest.fixture
def logs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    path = tmp_path / "logs.parquet"
    pq.write_table(sample_interactions(4, seed=3), path)
    return path


def score(server: JudgeServer, source: Path | str, target: Path | str, *extra: str) -> int:
    cache = Path(str(source)).parent / "cache" / "judge.sqlite"
    return main(score_args(server, source, target, cache, *extra))


def only_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    return lines[0]


def test_a_config_file_that_does_not_exist_is_named_with_exit_2(
    judge_server: JudgeServer, logs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = logs.parent / "nope.toml"
    assert score(judge_server, logs, logs.parent / "out.parquet", "--config", str(missing)) == (
        EXIT_USAGE
    )
    line = only_error_line(capsys)
    assert str(missing) in line
    assert "No such file" in line
    assert judge_server.stats()["requests"] == 0


def test_a_config_file_that_is_not_toml_is_named_with_exit_2(
    judge_server: JudgeServer, logs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = logs.parent / "broken.toml"
    broken.write_text("[judge\nmodel = 1\n")
    assert score(judge_server, logs, logs.parent / "out.parquet", "--config", str(broken)) == (
        EXIT_USAGE
    )
    line = only_error_line(capsys)
    assert str(broken) in line
    assert "not valid TOML" in line
    assert "line 1" in line


def test_an_unreachable_s3_output_is_a_message_with_exit_4_before_any_judge_call(
    judge_server: JudgeServer,
    logs: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A port nothing listens on: the store refuses every connection at once.
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    assert score(judge_server, logs, "s3://lake/scored/out.parquet") == EXIT_UNREACHABLE
    line = only_error_line(capsys)
    assert "storage failed, nothing was written" in line
    assert "lake" in line
    assert score(judge_server, "s3://lake/raw/dt=2026-12-01", logs.parent / "out.parquet") == (
        EXIT_UNREACHABLE
    )
    assert "storage failed" in only_error_line(capsys)
    assert judge_server.stats()["requests"] == 0


def test_an_empty_metrics_list_is_refused_not_a_table_without_scores(
    judge_server: JudgeServer, logs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = logs.parent / "out.parquet"
    assert score(judge_server, logs, target, "--metrics", "") == EXIT_USAGE
    line = only_error_line(capsys)
    assert "names is empty" in line
    assert "faithfulness" in line
    assert not target.exists()


@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_a_timeout_that_is_not_a_finite_number_names_the_setting_before_anything_is_created(
    judge_server: JudgeServer, logs: Path, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    config = logs.parent / "judge.toml"
    config.write_text(f"[judge]\ntimeout_seconds = {value}\n")
    target = logs.parent / "out.parquet"
    assert score(judge_server, logs, target, "--config", str(config)) == EXIT_USAGE
    line = only_error_line(capsys)
    assert "timeout_seconds" in line
    assert str(config) in line
    assert "not a finite number" in line
    # refused while reading the settings: no cache folder, no budget.sqlite, no output
    assert not (logs.parent / "cache").exists()
    assert not target.exists()
    assert judge_server.stats()["requests"] == 0


def test_a_nan_from_the_flag_or_the_environment_is_refused_too(
    judge_server: JudgeServer,
    logs: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    target = logs.parent / "out.parquet"
    assert score(judge_server, logs, target, "--timeout", "nan") == EXIT_USAGE
    assert "timeout_seconds: nan is not a finite number" in only_error_line(capsys)
    monkeypatch.setenv("RAGAS_OPS_PIPELINE_SAMPLE_FRACTION", "NaN")
    assert score(judge_server, logs, target) == EXIT_USAGE
    assert "RAGAS_OPS_PIPELINE_SAMPLE_FRACTION" in only_error_line(capsys)
