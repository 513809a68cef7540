"""A user's own logs as they are, JSON Lines and CSV, scored by `score` and estimated by
`estimate`: no conversion to Parquet first."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from ragas_ops_testing.judge_server import JudgeServer

from ragas_ops.cli.main import EXIT_OK, EXIT_USAGE, main
from ragas_ops.contract.status import Status
from tests.integration.e2e.test_score_e2e import METRICS, score_args
from tests.support import (
    TEST_KEY,
    USERS_LOG_COLUMNS,
    USERS_LOG_SEGMENTS,
    users_log_config,
    write_users_jsonl_log,
)


def test_a_users_jsonl_log_is_scored_row_for_row(
    judge_server: JudgeServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    lines = write_users_jsonl_log(tmp_path / "logs" / "app.jsonl", rows=30)
    config = users_log_config(tmp_path / "ragas-ops.toml")
    target = tmp_path / "out" / "scored.parquet"
    args = score_args(judge_server, tmp_path / "logs" / "app.jsonl", target, tmp_path / "c.db")

    assert main([*args, "--config", str(config)]) == EXIT_OK

    scored = pq.read_table(target)
    assert scored.num_rows == 30
    assert scored.column("request_id").to_pylist() == [line["request_id"] for line in lines]
    questions = scored.column(USERS_LOG_COLUMNS["question"]).to_pylist()
    assert questions == [line["request"]["question"] for line in lines]
    contexts = scored.column(USERS_LOG_COLUMNS["contexts"]).to_pylist()
    assert contexts == [[doc["text"] for doc in line["retrieval"]["documents"]] for line in lines]
    assert scored.schema.field("timestamp").type == pa.timestamp("us", tz="UTC")
    stamps = [stamp.isoformat() for stamp in scored.column("timestamp").to_pylist()]
    assert stamps == [line["timestamp"].replace("Z", "+00:00") for line in lines]
    for segment in USERS_LOG_SEGMENTS:  # carried through as they were logged
        assert scored.column(segment).to_pylist() == [line[segment] for line in lines]
    for metric in METRICS:  # every row scored: a score, or a defined not_applicable
        statuses = [Status(value) for value in scored.column(f"{metric}_status").to_pylist()]
        assert not [status for status in statuses if status.is_failure], (metric, statuses)
        assert statuses.count(Status.OK) >= 25, (metric, statuses)
    assert "scored 30 rows" in capsys.readouterr().out


def test_a_csv_log_with_json_contexts_is_scored(
    judge_server: JudgeServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    lines = write_users_jsonl_log(tmp_path / "unused.jsonl", rows=6)
    source = tmp_path / "app.csv"
    with source.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["id", "timestamp", "question", "contexts", "answer", "tenant"])
        for index, line in enumerate(lines):
            texts = [doc["text"] for doc in line["retrieval"]["documents"]]
            writer.writerow(
                [
                    index,
                    line["timestamp"],
                    line["request"]["question"],
                    json.dumps(texts),
                    line["response"]["text"],
                    line["tenant"],
                ]
            )
    target = tmp_path / "scored.parquet"

    assert main(score_args(judge_server, source, target, tmp_path / "c.db")) == EXIT_OK

    scored = pq.read_table(target)
    assert scored.column("id").to_pylist() == list(range(6))
    assert scored.column("contexts").to_pylist()[0] == [
        doc["text"] for doc in lines[0]["retrieval"]["documents"]
    ]
    assert scored.schema.field("timestamp").type == pa.timestamp("us", tz="UTC")
    assert set(scored.column("faithfulness_status").to_pylist()) == {Status.OK}


def test_a_jsonl_log_is_estimated(tmp_path: Path) -> None:
    write_users_jsonl_log(tmp_path / "app.jsonl", rows=30)
    config = users_log_config(tmp_path / "ragas-ops.toml")
    report = tmp_path / "estimate.json"

    code = main(
        ["estimate", str(tmp_path / "app.jsonl"), "--config", str(config), "--json", str(report)]
    )

    assert code == EXIT_OK
    assert json.loads(report.read_text())["total"]["rows"] == 30


def test_context_objects_without_the_text_field_name_the_setting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_users_jsonl_log(tmp_path / "app.jsonl", rows=3)
    config = users_log_config(tmp_path / "ragas-ops.toml")
    config.write_text(config.read_text().replace("[pipeline]", 'context_text = "body"\n[pipeline]'))

    code = main(["estimate", str(tmp_path / "app.jsonl"), "--config", str(config)])

    assert code == EXIT_USAGE
    error = capsys.readouterr().err
    assert "columns.context_text" in error
    assert "['text', 'score']" in error
