"""Adding a metric is adding a package: a toy metric with a prompt (`toy_metric/`: formula,
prompt, option, explanation, the local judge's rule, the test judge's answer), registered by
this test only, is scored by the test judge over HTTP and by the local judge, configured by its
own `[metrics.answer_focus]` table and derived flag, estimated, and run through the pipeline's
steps: published, aggregated, reported and shown on the quality page, with its own title,
heading and explanations. No file outside its package names it."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from ragas_ops_testing.judge_server import JudgeServer

from ragas_ops.cli.main import build_parser
from ragas_ops.cli.options import settings_from_options
from ragas_ops.estimate import estimate_input
from ragas_ops.metrics import build_metrics
from ragas_ops.quality.view import load_overview, render_page
from ragas_ops.scoring.jobs import score_file
from ragas_ops.scoring.run import configured_metrics
from ragas_ops.storage import locate
from tests.integration.dag.test_plugin_quality_view import build_warehouse, warehouse_settings
from tests.integration.e2e import toy_metric
from tests.support import TEST_KEY, settings_for

ROWS = {
    "id": ["focused", "digressive", "refusal"],
    "question": ["When did the Millau Viaduct open?"] * 3,
    "contexts": [["The Millau Viaduct opened to traffic in December 2004."]] * 3,
    "answer": [
        "The Millau Viaduct opened in 2004.",
        "The viaduct opened in 2004. I enjoy long drives. Cheese is tasty.",
        "I do not know.",
    ],
}
SCORES = {"focused": 1.0, "digressive": pytest.approx(1 / 3), "refusal": 0.0}
DAYS = ["2026-11-27", "2026-11-28"]


@pytest.fixture
def toy() -> Iterator[str]:
    toy_metric.register()
    yield toy_metric.NAME
    toy_metric.forget()


def test_an_unregistered_metric_is_unknown() -> None:
    with pytest.raises(ValueError, match="unknown metric"):
        build_metrics([toy_metric.NAME])


def _scores(path: Path, name: str) -> dict[str, float]:
    scored = pq.read_table(path)
    assert set(scored[f"{name}_status"].to_pylist()) == {"ok"}
    assert scored[f"{name}_version"][0].as_py() == f"{name}/v1 ({name}.off_topic/v1)"
    return dict(zip(scored["id"].to_pylist(), scored[f"{name}_score"].to_pylist(), strict=True))


def test_a_toy_metric_with_a_prompt_is_scored_by_the_test_judge_and_the_local_judge(
    toy: str, judge_server: JudgeServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    source = tmp_path / "log.parquet"
    pq.write_table(pa.table(ROWS), source)
    settings = settings_for(judge_server, tmp_path)
    settings.metrics.names = (toy, "faithfulness")

    asyncio.run(score_file(str(source), str(tmp_path / "test.parquet"), settings, progress=False))
    assert _scores(tmp_path / "test.parquet", toy) == SCORES
    assert judge_server.stats()["requests_by_prompt"][f"{toy}.off_topic"] == 3

    settings.judge.kind = "local"
    settings.judge.cache.path = None
    asyncio.run(score_file(str(source), str(tmp_path / "local.parquet"), settings, progress=False))
    assert _scores(tmp_path / "local.parquet", toy) == SCORES
    assert pq.read_table(tmp_path / "local.parquet")["judge"][0].as_py().startswith("local:")

    estimate = estimate_input(str(source), settings)
    assert estimate.total.requests_by_metric[toy] == 3
    assert "- answer focus: one request a row, the judge lists no sentence" in estimate.lines()


def test_a_toy_metrics_option_comes_from_its_table_and_its_derived_flag(
    toy: str, tmp_path: Path
) -> None:
    config = tmp_path / "ragas-ops.toml"
    config.write_text(f'[metrics]\nnames = ["{toy}"]\n\n[metrics.{toy}]\ntolerated = 1\n')
    arguments = ["score", "in.parquet", "out.parquet", "--config", str(config)]
    (metric,) = configured_metrics(settings_from_options(build_parser().parse_args(arguments)))
    assert metric.tolerated == 1  # type: ignore[attr-defined]
    flagged = build_parser().parse_args([*arguments, "--answer-focus-tolerated", "2"])
    (metric,) = configured_metrics(settings_from_options(flagged))
    assert metric.tolerated == 2  # type: ignore[attr-defined]


def test_a_toy_metric_with_a_prompt_runs_through_the_pipeline_report_and_quality_page(
    toy: str, judge_server: JudgeServer, tmp_path: Path
) -> None:
    settings = warehouse_settings(
        judge_server, tmp_path, str(tmp_path / "raw"), str(tmp_path / "warehouse")
    )
    settings.metrics.names = (toy, "faithfulness")
    build_warehouse(settings, days=DAYS, rows=24)

    daily = pq.read_table(tmp_path / f"warehouse/daily_metrics/dt={DAYS[-1]}/daily_metrics.parquet")
    overall = [
        row for row in daily.to_pylist() if row["metric"] == toy and row["segment_column"] == "all"
    ]
    assert len(overall) == 1
    assert overall[0]["rows_scored"] == 24
    report = (tmp_path / f"warehouse/reports/dt={DAYS[-1]}/report.html").read_text()
    assert "Answer focus" in report
    assert "Most digressive answers" in report
    assert "Off the question" in report

    overview = load_overview(locate(str(tmp_path / "warehouse")), settings, days=2)
    assert overview.examples[toy]
    page = render_page(overview, "/rag-quality")
    assert "<dt>Off the question</dt>" in page, "the toy metric explains its worst example"
