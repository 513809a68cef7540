"""The "RAG quality" page's reading and rendering, on a warehouse the pipeline's own steps
wrote (local and on S3 over HTTP), and the rule that a path from a request stays inside it."""

from __future__ import annotations

import dataclasses
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from ragas_ops_testing.judge_server import JudgeServer

from ragas_ops.config import Settings
from ragas_ops.contract.layout import Lake
from ragas_ops.pipeline.manifest import manifest_base, write_manifest
from ragas_ops.quality.daily_metrics import daily_metrics
from ragas_ops.quality.view import (
    UnsafePath,
    load_overview,
    render_page,
    report_file,
    tables_at,
)
from ragas_ops.samples import sample_interactions
from ragas_ops.storage import locate
from tests.fixtures.scored_tables import METRICS, fake_scored_day
from tests.pipeline_steps import run_day
from tests.support import TEST_KEY, settings_for

DAYS = [f"2026-11-{day:02d}" for day in range(23, 29)]
LAST = DAYS[-1]
# One judge cache for every warehouse built here: the same days' rows are scored once.
JUDGE_CACHE = Path(tempfile.mkdtemp(prefix="ragas-ops-view-")) / "judge.sqlite"


def warehouse_settings(server: JudgeServer, tmp_path: Path, raw: str, warehouse: str) -> Settings:
    settings = settings_for(server, tmp_path, cache_path=str(JUDGE_CACHE))
    settings.pipeline.raw_uri = raw
    settings.pipeline.warehouse_uri = warehouse
    settings.pipeline.segments = ("app", "model_version")
    settings.pipeline.chunk_rows = 50
    return settings


def build_warehouse(settings: Settings, days: list[str] = DAYS, rows: int = 24) -> Lake:
    """Logs for `days` (the last one a bad day), each scored, published, aggregated and
    reported by the pipeline's steps, as the DAG runs them."""
    os.environ.setdefault("OPENAI_API_KEY", TEST_KEY)
    lake = Lake(settings.pipeline)
    for index, day in enumerate(days):
        table = sample_interactions(
            rows, seed=index, day=day, unfaithful_share=0.6 if day == days[-1] else 0.05
        )
        run_day(lake, day, settings, table, row_group_size=16)
    return lake


@pytest.fixture(scope="session")
def local_warehouse(tmp_path_factory: pytest.TempPathFactory) -> tuple[Settings, Path]:
    server = JudgeServer().start()
    try:
        root = tmp_path_factory.mktemp("lake")
        settings = warehouse_settings(server, root, str(root / "raw"), str(root / "warehouse"))
        build_warehouse(settings)
    finally:
        server.stop()
    return settings, root / "warehouse"


def test_the_page_shows_the_latest_days_verdicts_reports_and_worst_examples(
    local_warehouse: tuple[Settings, Path],
) -> None:
    settings, root = local_warehouse
    warehouse = locate(str(root))

    overview = load_overview(warehouse, settings, days=5)

    assert tables_at(warehouse, settings).metrics_days() == DAYS
    assert overview.days == DAYS[-5:]
    assert overview.selected == LAST
    assert overview.metrics == list(settings.metrics.names)
    assert ("app", "support-bot") in overview.groupings
    assert overview.groupings[0] == ("all", "all")
    assert overview.verdicts[LAST].report.verdict.value == "regression", "the bad day"
    assert overview.verdicts[DAYS[-2]].report.verdict.value != "regression"
    worst = overview.examples["faithfulness"]
    assert len(worst) == 3
    assert worst[0].score <= worst[1].score <= worst[2].score
    assert worst[0].evidence is not None
    assert worst[0].evidence["statements"]
    assert [c for c, _ in worst[0].segments] == ["app", "model_version"]

    page = render_page(overview, "/rag-quality", days=5)

    assert '<dt>Unsupported</dt><dd dir="auto">' in page, (
        "the least faithful answer's unsupported statements"
    )

    assert "Regression on 2026-11-28" in page
    assert "<th class='l'>judge</th>" in page
    assert f"<code>{overview.verdicts[LAST].report.findings[0].scored_with.judge}</code>" in page
    # the run id wraps only between its parts (the column broke it mid-word at 1400 px)
    assert (
        f"<code>scheduled__<wbr>{LAST}<wbr>T00:00:00+00:00</code><br>"
        f"<span class='muted small'>scored {LAST}" in page
    )
    assert "overflow-wrap:anywhere" not in page
    assert "/rag-quality/reports/dt=2026-11-28/report.html" in page
    assert "/rag-quality/?day=2026-11-24&amp;days=5" in page
    assert DAYS[0] not in page, "only the latest 5 days"
    assert "<script" not in page


def test_worst_examples_on_the_page_ask_distinct_questions(
    local_warehouse: tuple[Settings, Path],
) -> None:
    settings, root = local_warehouse
    scored = pq.read_table(root / "scored" / f"dt={LAST}" / "scored.parquet")
    ok = [s == "ok" for s in scored["faithfulness_status"].to_pylist()]
    questions = [q for q, keep in zip(scored["question"].to_pylist(), ok, strict=True) if keep]
    assert len(set(questions)) < len(questions), "the day repeats questions, as logs do"

    overview = load_overview(locate(str(root)), settings, days=1, worst=5)

    for metric, examples in overview.examples.items():
        assert len({example.question for example in examples}) == len(examples), metric
        assert len(examples) == min(5, len(set(questions)))


def fake_warehouse(root: Path, judges: dict[str, str], run_ids: dict[str, str]) -> Lake:
    """Daily metrics (from fake scored days, `judges`: day -> judge) and a manifest per day."""
    settings = Settings()
    settings.pipeline.raw_uri, settings.pipeline.warehouse_uri = str(root / "raw"), str(root)
    lake = Lake(settings.pipeline)
    for index, (day, judge) in enumerate(judges.items()):
        scored = fake_scored_day(day, 80, seed=index, judge=judge)
        table = daily_metrics(day, scored, METRICS, ["app"], bootstrap_samples=50)
        target = lake.daily_metrics(day)
        target.filesystem.create_dir(target.path.rsplit("/", 1)[0], recursive=True)
        pq.write_table(table, target.path)
        run_id = run_ids.get(day, f"manual__{day}")
        write_manifest(lake, day, run_id, manifest_base(day, run_id, settings))
    return lake


def test_a_judge_change_shows_as_not_checked_with_the_judge_and_the_change_marked(
    tmp_path: Path,
) -> None:
    days = [f"2026-11-{day:02d}" for day in range(20, 29)]
    judges = {day: "local:bge-small" for day in days[:6]} | {
        day: "openai:gpt-4o-mini@api.openai.com" for day in days[6:]
    }
    backfill = "backfill__2026-11-29T00:00:00+00:00"
    fake_warehouse(tmp_path, judges, {LAST: backfill})
    settings = Settings()

    overview = load_overview(locate(str(tmp_path)), settings, days=9)
    page = render_page(overview, "/rag-quality", days=9)

    assert overview.verdicts[LAST].report.verdict.value == "not_checked"
    assert overview.verdicts[days[6]].report.verdict.value == "not_checked"
    assert overview.verdicts[days[5]].report.verdict.value != "not_checked"
    change = (
        f"the judge changed from local:bge-small to openai:gpt-4o-mini@api.openai.com on {days[6]}"
    )
    assert [c.day for c in overview.changes] == [days[6]] * len(METRICS)
    assert "<span class='badge not_checked'>not checked</span>" in page
    assert "<code>openai:gpt-4o-mini@api.openai.com</code>" in page
    assert "<code>local:bge-small</code>" in page
    assert page.count(f"title='{change}") >= len(METRICS)
    wrapped = "backfill__<wbr>2026-11-29<wbr>T00:00:00+00:00"
    assert f"<code>{wrapped}</code><br><span class='muted small'>scored {LAST}</span>" in page


def test_an_older_day_can_be_selected(local_warehouse: tuple[Settings, Path]) -> None:
    settings, root = local_warehouse

    overview = load_overview(locate(str(root)), settings, days=3, selected=DAYS[-2])

    assert overview.days == DAYS[-4:-1]
    assert overview.selected == DAYS[-2]
    assert overview.examples["answer_relevance"]


def test_logged_text_is_escaped(local_warehouse: tuple[Settings, Path]) -> None:
    settings, root = local_warehouse
    overview = load_overview(locate(str(root)), settings, days=1)
    example = overview.examples["faithfulness"][0]
    hostile = "<script>alert(1)</script>"
    statement = {"statement": f"S {hostile}", "verdict": "no", "explanation": f"E {hostile}"}
    overview.examples["faithfulness"][0] = dataclasses.replace(
        example,
        question=f"Q {hostile}",
        answer=f"A {hostile}",
        reason=f"R {hostile}",
        evidence={"statements": [statement], "supported": 0, "total": 1},
    )

    page = render_page(overview, "/rag-quality")

    assert "<script" not in page
    escaped = "&lt;script&gt;alert(1)&lt;/script&gt;"
    for shown in (f"Q {escaped}", f"A {escaped}", f"R {escaped}", f"S {escaped}", f"E {escaped}"):
        assert shown in page, shown


def test_an_empty_warehouse_says_so(tmp_path: Path) -> None:
    overview = load_overview(locate(str(tmp_path / "nothing")), Settings())

    assert overview.days == []
    assert "No daily metrics in the warehouse yet" in render_page(overview, "/rag-quality")


@pytest.mark.parametrize(
    "relative",
    [
        "../../../etc/passwd",
        "dt=2026-11-28/../../../../etc/passwd",
        "dt=2026-11-28/../report.html",
        "/etc/passwd",
        "dt=2026-11-28/report.html/../../x",
        "dt=2026-11-28\\..\\..\\report.html",
        "dt=2026-11-28/report.json",
        "dt=../report.html",
        "dt=2026-13-45/report.html",
        "dt=2026-11-28/report.html\x00.png",
        "",
    ],
)
def test_a_path_from_a_request_never_leaves_the_reports(tmp_path: Path, relative: str) -> None:
    with pytest.raises(UnsafePath):
        report_file(locate(str(tmp_path)), relative)


def test_a_symlink_out_of_the_warehouse_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "report.html").write_text("secret")
    reports = tmp_path / "warehouse" / "reports"
    reports.mkdir(parents=True)
    (reports / "dt=2026-11-28").symlink_to(outside)

    with pytest.raises(UnsafePath):
        report_file(locate(str(tmp_path / "warehouse")), "dt=2026-11-28/report.html")


def test_a_link_inside_the_warehouse_is_not_served_as_a_report(tmp_path: Path) -> None:
    warehouse = tmp_path / "warehouse"
    scored = warehouse / "scored" / "dt=2026-11-28"
    scored.mkdir(parents=True)
    (scored / "scored.parquet").write_bytes(b"PAR1 not a page PAR1")
    reports = warehouse / "reports" / "dt=2026-11-28"
    reports.mkdir(parents=True)
    (reports / "report.html").symlink_to(scored / "scored.parquet")
    (reports / "report.md").write_text("# the day")

    with pytest.raises(UnsafePath, match="a link below the warehouse"):
        report_file(locate(str(warehouse)), "dt=2026-11-28/report.html")
    # a warehouse reached through a link of its own is served
    (tmp_path / "lake").symlink_to(warehouse)
    location, media_type = report_file(locate(str(tmp_path / "lake")), "dt=2026-11-28/report.md")
    assert media_type.startswith("text/markdown")
    assert location.path.endswith("reports/dt=2026-11-28/report.md")


def test_the_page_reads_a_warehouse_on_s3(
    start_s3: Callable[[], str], tmp_path: Path, judge_server: JudgeServer
) -> None:
    import boto3

    endpoint = start_s3()
    boto3.client("s3", endpoint_url=endpoint).create_bucket(Bucket="lake")
    settings = warehouse_settings(judge_server, tmp_path, "s3://lake/raw", "s3://lake/warehouse")
    build_warehouse(settings)
    warehouse = locate(settings.pipeline.warehouse_uri)

    overview = load_overview(warehouse, settings)
    location, media_type = report_file(warehouse, f"dt={LAST}/report.html")

    assert overview.days == DAYS
    assert overview.verdicts[LAST].report.verdict.value == "regression"
    assert overview.examples["faithfulness"]
    assert media_type.startswith("text/html")
    assert location.uri == f"s3://lake/warehouse/reports/dt={LAST}/report.html"
    assert "<html" in location.read_text().lower()
