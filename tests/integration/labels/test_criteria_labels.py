"""Labels of the demo's two criteria: on the labelling page (served over HTTP by uvicorn),
whose choices are each criterion's own levels (fail/pass; 1-5, each described), and imported
from a CSV that names levels (`pass`, `4`) or their values; then the day's agreement and
PPI-corrected mean of each criterion in daily_metrics."""

from __future__ import annotations

import csv
import json
import re
import threading
import time
import tomllib
import urllib.parse
import urllib.request
from collections.abc import Iterator
from http.cookiejar import CookieJar
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import uvicorn
from ragas_ops_testing.judge_process import free_port
from ragas_ops_testing.judge_server import JudgeServer
from ragas_ops_testing.local_airflow.demo import DEMO_CRITERIA

from ragas_ops.cli.main import main
from ragas_ops.config import Settings, apply_mapping
from ragas_ops.contract.layout import Lake
from ragas_ops.pipeline.aggregate import aggregate_day
from ragas_ops.quality.app import create_app
from ragas_ops.samples import sample_interactions
from ragas_ops.tables.format import day_tables
from tests.pipeline_steps import run_day
from tests.support import settings_for

DAY = "2026-11-20"


@pytest.fixture
def warehouse(tmp_path: Path) -> Iterator[tuple[Settings, Path]]:
    server = JudgeServer().start()
    try:
        settings = settings_for(server, tmp_path)
        apply_mapping(settings, tomllib.loads(DEMO_CRITERIA), source="demo")
        settings.pipeline.raw_uri = str(tmp_path / "raw")
        settings.pipeline.warehouse_uri = str(tmp_path / "warehouse")
        settings.labels.per_day = 30
        logs = sample_interactions(40, seed=2, day=DAY, citations=True)
        run_day(Lake(settings.pipeline), DAY, settings, logs, report=False)
    finally:
        server.stop()
    config = tmp_path / "ragas-ops.toml"
    config.write_text(
        f'[pipeline]\nraw_uri = "{tmp_path / "raw"}"\n'
        f'warehouse_uri = "{tmp_path / "warehouse"}"\n[labels]\nper_day = 30\n\n{DEMO_CRITERIA}'
    )
    return settings, config


def labels(settings: Settings) -> list[dict[str, object]]:
    tables = day_tables(Lake(settings.pipeline), settings)
    return [row for table in tables.read_labels([DAY]) for row in table.to_pylist()]


@pytest.fixture
def page(warehouse: tuple[Settings, Path]) -> Iterator[str]:
    settings, _ = warehouse
    app = create_app(lambda: None, settings=lambda: settings, labeller=lambda: "ana")
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)


def test_the_page_offers_each_criterions_levels_and_saves_them(
    warehouse: tuple[Settings, Path], page: str
) -> None:
    settings, _ = warehouse
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(CookieJar()))
    with opener.open(f"{page}/label?day={DAY}") as reply:
        form = reply.read().decode()
    # keys 1-9 for the paper's three metrics, then 0 and a for pass/fail, b-f for 1-5
    choices = re.findall(r"name='m_(\w+)' value='([^']+)' accesskey='(\w)'[^>]*> ([^<]+)<", form)
    own = [(value, key, text) for metric, value, key, text in choices if metric == "cites_source"]
    assert own == [
        ("0", "0", "fail: The row does not meet the criterion. (0) "),
        ("1", "a", "pass: The row meets the criterion. (1) "),
    ]
    scale = [(value, key) for metric, value, key, _ in choices if metric == "completeness"]
    assert scale == [("0", "b"), ("0.25", "c"), ("0.5", "d"), ("0.75", "e"), ("1", "f")]
    assert "4: Addresses most of the question; a minor part is missing. (0.75)" in form
    assert "every part of the question, from the contexts." in form  # the criterion asked
    assert re.search(r"<h2>citations</h2>(KB-2-\d{5}|DOC-\d{4})<", form)  # what it reads
    csrf = re.search(r"name='csrf' value='([^']+)'", form)
    row_id = re.search(r"name='row_id' value='([^']+)'", form)
    assert csrf
    assert row_id
    body = urllib.parse.urlencode(
        {
            "csrf": csrf.group(1),
            "day": DAY,
            "row_id": row_id.group(1),
            "after": "0",
            "m_cites_source": "1",
            "m_completeness": "0.75",
        }
    ).encode()
    with opener.open(urllib.request.Request(f"{page}/label", data=body)) as reply:
        assert "Saved 2 label(s)" in reply.read().decode()
    saved = {row["metric"]: row["label"] for row in labels(settings)}
    assert saved == {"cites_source": 1.0, "completeness": 0.75}

    refused = urllib.parse.urlencode(
        {"csrf": csrf.group(1), "day": DAY, "row_id": row_id.group(1), "m_completeness": "0.6"}
    ).encode()
    with pytest.raises(urllib.error.HTTPError) as error:
        opener.open(urllib.request.Request(f"{page}/label", data=refused))
    assert error.value.code == 400
    assert "0.75 (4)" in error.value.read().decode()


def test_csv_labels_name_levels_and_feed_agreement_and_the_corrected_mean(
    warehouse: tuple[Settings, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings, config = warehouse
    exported = tmp_path / "queue.csv"
    args = ["--config", str(config)]
    assert main(["labels", "export", str(exported), "--day", DAY, *args]) == 0
    with exported.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert list(rows[0])[:6] == ["dt", "row_id", "question", "contexts", "answer", "citations"]
    assert {"cites_source", "completeness"} <= set(rows[0])  # citations: shown, not a label
    assert all(json.loads(row["citations"]) for row in rows)
    for index, row in enumerate(rows):
        row["cites_source"] = ("pass", "fail", "1")[index % 3]
        row["completeness"] = ("4", "5", "0.25")[index % 3]
        row["labeller"] = "ana"
    bad = {**rows[0], "cites_source": "maybe", "completeness": "", "row_id": rows[1]["row_id"]}
    edited = tmp_path / "edited.csv"
    with edited.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows([*rows, bad])
    capsys.readouterr()
    assert main(["labels", "import", str(edited), "--skip-refused", *args]) == 0
    _out, err = capsys.readouterr()
    assert "label 'maybe' is not one of 0 (fail), 1 (pass)" in err
    values = {(row["metric"], row["label"]) for row in labels(settings)}
    assert {("cites_source", 1.0), ("cites_source", 0.0), ("completeness", 0.75)} <= values
    assert ("completeness", 1.0) in values
    assert ("completeness", 0.25) in values

    aggregate_day(Lake(settings.pipeline), DAY, settings)
    daily = pq.read_table(
        Path(settings.pipeline.warehouse_uri)
        / "daily_metrics"
        / f"dt={DAY}"
        / "daily_metrics.parquet"
    ).to_pylist()
    for name in ("cites_source", "completeness"):
        (row,) = [r for r in daily if r["segment_column"] == "all" and r["metric"] == name]
        assert len(rows) - 3 <= row["labels"] <= len(rows), (name, row)  # scored ones only
        assert row["agreement_mad"] is not None
        assert row["corrected_ci_low"] <= row["corrected_mean"] <= row["corrected_ci_high"]
