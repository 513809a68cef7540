"""What people read while the pipeline runs: a scoring task's log (one summary line per chunk,
not a line per HTTP request: a real chunk against the test judge over HTTP, with a rate limit
that makes it wait), the CLI's advice without a key, and the demo's verdict per day."""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from ragas_ops_testing.judge_server import JudgeServer
from ragas_ops_testing.local_airflow.demo import day_verdict

from ragas_ops.cli.main import EXIT_JUDGE, main
from ragas_ops.config import Settings
from ragas_ops.contract.layout import Lake
from ragas_ops.pipeline.manifest import manifest_base, write_manifest
from ragas_ops.pipeline.plan import plan_day
from ragas_ops.pipeline.score import HTTP_LOGGERS, score_chunk
from ragas_ops.samples import sample_interactions
from tests.support import TEST_KEY, settings_for

DAY = "2026-11-28"


def test_a_chunk_logs_one_summary_line_and_no_request_lines(
    tmp_path: Path,
    judge_server: JudgeServer,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    for name in HTTP_LOGGERS:  # as a fresh task process finds them
        monkeypatch.setattr(logging.getLogger(name), "level", logging.NOTSET)
    settings = settings_for(judge_server, tmp_path, rpm=600)
    settings.pipeline.raw_uri = str(tmp_path / "raw")
    settings.pipeline.warehouse_uri = str(tmp_path / "warehouse")
    lake = Lake(settings.pipeline)
    (tmp_path / "raw" / f"dt={DAY}").mkdir(parents=True)
    pq.write_table(
        sample_interactions(12, seed=1, day=DAY), tmp_path / "raw" / f"dt={DAY}" / "p.parquet"
    )
    chunk = plan_day(lake, DAY, settings).chunks[0]

    with caplog.at_level(logging.INFO):
        result = asyncio.run(score_chunk(lake, DAY, "manual__x", chunk=chunk, settings=settings))

    summaries = [r for r in caplog.records if r.name == "ragas_ops.pipeline.score"]
    assert len(summaries) == 1
    line = summaries[0].getMessage()
    usage = result["usage"]
    assert summaries[0].levelno == logging.INFO
    assert line.startswith(f"chunk 0 scored: {result['rows']} rows in ")
    assert (
        f"requests {usage['requests']:,} chat + {usage['embedding_requests']:,} embeddings" in line
    )
    assert f"tokens {usage['prompt_tokens']:,} prompt + {usage['completion_tokens']:,}" in line
    for metric, counts in result["statuses"].items():
        assert f"{metric} " + ", ".join(f"{s} {n:,}" for s, n in sorted(counts.items())) in line
    assert usage["requests"] > 10, "enough requests for the 600 rpm budget to make it wait"
    assert result["rate_limit_wait_seconds"] > 0
    assert f"waited {result['rate_limit_wait_seconds']:.1f} s for the rate limit" in line
    assert [r.name for r in caplog.records if r.name.startswith(("httpx", "openai"))] == []
    assert os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] == "1"
    assert TEST_KEY not in caplog.text


def test_score_without_a_key_suggests_the_local_judge(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    source = tmp_path / "in.parquet"
    pq.write_table(sample_interactions(3, seed=1, day=DAY), source)

    code = main(["score", str(source), str(tmp_path / "out.parquet")])

    error = capsys.readouterr().err
    assert code == EXIT_JUDGE
    assert "no API key: set $OPENAI_API_KEY" in error
    assert "`--judge local`" in error
    assert not (tmp_path / "out.parquet").exists()


def test_the_demo_says_each_days_verdict_beside_its_state(tmp_path: Path) -> None:
    settings = Settings()
    settings.pipeline.warehouse_uri = str(tmp_path / "warehouse")
    lake = Lake(settings.pipeline)
    run_id = "manual__2026-12-01T09:03:55+00:00"
    manifest = manifest_base(DAY, run_id, settings)
    write_manifest(lake, DAY, run_id, manifest)
    assert day_verdict(lake, DAY, run_id) == (
        "no verdict (the run stopped before the regression check)"
    )
    manifest["regression"] = {"verdict": "not_checked", "summary": "Not checked on ..."}
    write_manifest(lake, DAY, run_id, manifest)

    assert day_verdict(lake, DAY, run_id) == ("verdict NOT CHECKED: Not checked on ...")
    assert day_verdict(lake, DAY, "manual__other").startswith("no verdict")


LOAD_LOCAL_JUDGE = """
import asyncio, sys
from ragas_ops.config import Settings
from ragas_ops.pipeline.score import quiet_libraries
if sys.argv[1] == "quiet":
    quiet_libraries()
from ragas_ops.judge.factory import build_judge
settings = Settings()
settings.judge.kind, settings.judge.cache.path = "local", None
settings.judge.local.backend = "torch"  # the ONNX backend loads no weights with a progress bar
asyncio.run(build_judge(settings).embed(["hello"]))
"""


@pytest.mark.parametrize("mode", ["quiet", "as-is"])
def test_loading_the_local_model_writes_no_progress_bar_in_a_task(mode: str) -> None:
    pytest.importorskip("sentence_transformers")
    environment = {k: v for k, v in os.environ.items() if k != "HF_HUB_DISABLE_PROGRESS_BARS"}
    finished = subprocess.run(
        [sys.executable, "-c", LOAD_LOCAL_JUDGE, mode],
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    # stderr is what Airflow logs at error level; as-is shows the check can see the bar
    assert ("Loading weights" in finished.stderr) is (mode == "as-is")
