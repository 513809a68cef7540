"""Languages said honestly (issue 41): Chinese, Japanese, Arabic and Hindi rows through the
local judge (`unsupported_language`, naming the script, never a score) and through the test
judge over HTTP (scored, each context counted as its three sentences in all four scripts)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from ragas_ops_testing.judge_server import JudgeServer

from ragas_ops.cli.main import EXIT_OK, main
from ragas_ops.contract.status import Status
from tests.integration.e2e.test_score_e2e import score_args
from tests.support import TEST_KEY

METRICS = ("faithfulness", "answer_relevance", "context_relevance")
# (language, script named in the reason, question, three-sentence context, answer)
ROWS = [
    (
        "zh",
        "Han",
        "中国的首都是哪里？",
        "北京是中国的首都。上海是中国最大的城市！你知道广州在哪里吗？",
        "中国的首都是北京。",
    ),
    (
        "ja",
        "Japanese kana",
        "日本の首都はどこですか？",
        "東京は日本の首都です。大阪は二番目に大きい都市です。京都には古い寺がたくさんあります。",
        "日本の首都は東京です。",
    ),
    (
        "ar",
        "Arabic",
        "ما هي عاصمة مصر؟",
        "القاهرة هي عاصمة مصر. هل تعرف أن الإسكندرية ثاني أكبر مدينة؟ يمر نهر النيل بالقاهرة",
        "عاصمة مصر هي القاهرة.",
    ),
    (
        "hi",
        "Devanagari",
        "भारत की राजधानी क्या है?",
        "नई दिल्ली भारत की राजधानी है। मुंबई भारत का सबसे बड़ा शहर है। गंगा एक पवित्र नदी है।",
        "भारत की राजधानी नई दिल्ली है।",
    ),
]


@pytest.fixture
def logs(tmp_path: Path) -> Path:
    path = tmp_path / "logs.parquet"
    table = pa.table(
        {
            "id": [language for language, *_ in ROWS],
            "question": [question for _, _, question, _, _ in ROWS],
            "contexts": [[context] for *_, context, _ in ROWS],
            "answer": [answer for *_, answer in ROWS],
        }
    )
    pq.write_table(table, path)
    return path


def test_the_local_judge_says_it_cannot_read_these_rows_and_names_their_script(
    logs: Path,
) -> None:
    out = logs.parent / "local.parquet"
    assert main(["score", str(logs), str(out), "--judge", "local", "--no-progress"]) == EXIT_OK
    scored = pq.read_table(out).to_pylist()
    for row, (language, script, *_) in zip(scored, ROWS, strict=True):
        for metric in METRICS:
            assert row[f"{metric}_status"] == Status.UNSUPPORTED_LANGUAGE, (language, metric)
            assert row[f"{metric}_score"] is None
            assert script in row[f"{metric}_reason"]
            assert "LLM judge" in row[f"{metric}_reason"]


def test_a_latin_script_row_quoting_a_foreign_name_is_still_scored_by_the_local_judge(
    tmp_path: Path,
) -> None:
    path = tmp_path / "logs.parquet"
    pq.write_table(
        pa.table(
            {
                "question": ["What is the capital of Egypt?"],
                "contexts": [["Cairo (القاهرة) is the capital of Egypt. It lies on the Nile."]],
                "answer": ["The capital of Egypt is Cairo."],
            }
        ),
        path,
    )
    out = tmp_path / "out.parquet"
    assert main(["score", str(path), str(out), "--judge", "local", "--no-progress"]) == EXIT_OK
    row = pq.read_table(out).to_pylist()[0]
    assert {row[f"{metric}_status"] for metric in METRICS} == {Status.OK}


def test_the_test_judge_scores_them_and_counts_three_sentences_in_every_script(
    logs: Path, judge_server: JudgeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    out = logs.parent / "test-judge.parquet"
    assert main(score_args(judge_server, logs, out, logs.parent / "cache.sqlite")) == EXIT_OK
    scored = pq.read_table(out).to_pylist()
    for row, (language, *_) in zip(scored, ROWS, strict=True):
        assert row["context_relevance_status"] == Status.OK, (language, row)
        evidence = json.loads(row["context_relevance_evidence"])
        assert evidence["sentences_in_context"] == 3, (language, evidence)
        assert row["context_relevance_version"].startswith("context_relevance/v2")
