"""`ragas-ops init`: a config file guessed from a sample of the user's nested log, shown,
written on `--yes`, and then read by `score` with the ids and times where the log keeps them."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from ragas_ops_testing.judge_server import JudgeServer

from ragas_ops.cli.main import EXIT_OK, EXIT_USAGE, main
from tests.integration.e2e.test_score_e2e import score_args
from tests.support import TEST_KEY, write_users_jsonl_log

DAY = "2026-11-21"


def test_init_guesses_shows_and_writes_a_config_that_score_reads(
    judge_server: JudgeServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    sample = tmp_path / "logs" / f"dt={DAY}" / "app.jsonl"
    lines = write_users_jsonl_log(sample, rows=12, day=DAY, nested_keys=True)
    config = tmp_path / "ragas-ops.toml"

    assert main(["init", str(sample), "--output", str(config), "--yes"]) == EXIT_OK

    shown = capsys.readouterr().out
    assert "answer     <- response.text  e.g. " in shown
    assert "id         <- request.id  e.g. 'req-000'" in shown
    assert "segments   <- tenant, channel" in shown
    written = config.read_text()
    assert 'id = "request.id"' in written
    assert 'timestamp = "meta.ts"' in written
    target = tmp_path / "scored.parquet"
    args = score_args(judge_server, sample, target, tmp_path / "cache.db")
    assert main([*args, "--config", str(config)]) == EXIT_OK
    scored = pq.read_table(target)
    assert scored.column("id").to_pylist() == [line["request"]["id"] for line in lines]
    assert scored.schema.field("timestamp").type == pa.timestamp("us", tz="UTC")


def test_init_asks_before_writing_and_never_replaces_a_file_silently(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sample = tmp_path / "app.jsonl"
    write_users_jsonl_log(sample, rows=6)
    config = tmp_path / "ragas-ops.toml"

    assert main(["init", str(sample), "--output", str(config)]) == EXIT_USAGE  # stdin: no tty
    assert "pass --yes" in capsys.readouterr().err
    assert not config.exists()
    config.write_text("# mine\n")
    assert main(["init", str(sample), "--output", str(config), "--yes"]) == EXIT_USAGE
    assert config.read_text() == "# mine\n"


def test_a_field_init_cannot_find_is_refused_naming_the_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sample = tmp_path / "odd.jsonl"
    sample.write_text('{"ask": "Why?", "docs": ["Because."], "said": "Because."}\n' * 3)

    assert main(["init", str(sample), "--output", str(tmp_path / "c.toml"), "--yes"]) == 2
    assert "no column found for question, answer: name it with --column" in capsys.readouterr().err

    fixed = ["--column", "question=ask", "--column", "answer=said"]
    assert main(["init", str(sample), "--output", str(tmp_path / "c.toml"), "--yes", *fixed]) == 0
