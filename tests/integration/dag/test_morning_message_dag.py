"""The morning message: after a regression night run by `dag.test()`, the nightly DAG's
notifier posts the verdict, what moved with its interval, the cost, the warnings and the
report's link to a webhook on 127.0.0.1 through an Airflow HTTP connection; a sound night
under `notify.when = "regressions"` posts nothing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from ragas_ops_testing.webhook import WebhookReceiver

from ragas_ops.config import settings_from_environment
from ragas_ops.contract.layout import Lake
from ragas_ops.samples import sample_interactions
from tests.integration.dag import test_pipeline_dag as dag_tests
from tests.integration.dag.test_pipeline_dag import run_dag, state, write_logs
from tests.pipeline_steps import run_day

airflow_database = dag_tests.airflow_database
lake = dag_tests.lake

BASELINE_DAYS = [f"2026-11-{day:02d}" for day in range(22, 28)]
NIGHT = "2026-11-28"
REPORT_URL = "https://airflow.example.com/rag-quality/report?day={day}"


@pytest.fixture
def webhook(monkeypatch: pytest.MonkeyPatch) -> Iterator[WebhookReceiver]:
    """A webhook receiver, and the Airflow connection `ragas_ops_notify` pointing at it."""
    receiver = WebhookReceiver().start()
    connection = {"conn_type": "http", "host": receiver.url}
    monkeypatch.setenv("AIRFLOW_CONN_RAGAS_OPS_NOTIFY", json.dumps(connection))
    yield receiver
    receiver.stop()


def baseline_then_night(root: Path, unfaithful_share: float) -> None:
    """Six sound days scored by the pipeline's steps, then the night's logs."""
    settings = settings_from_environment()
    for index, day in enumerate(BASELINE_DAYS):
        run_day(
            Lake(settings.pipeline), day, settings, sample_interactions(24, seed=index, day=day)
        )
    night = sample_interactions(24, seed=9, day=NIGHT, unfaithful_share=unfaithful_share)
    write_logs(root, NIGHT, night)


def test_a_regression_night_posts_the_morning_message_to_the_webhook(
    lake: Path, webhook: WebhookReceiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAGAS_OPS_NOTIFY_WHEN", "regressions")
    monkeypatch.setenv("RAGAS_OPS_NOTIFY_REPORT_URL", REPORT_URL)
    baseline_then_night(lake, unfaithful_share=0.6)

    run = run_dag(NIGHT)

    assert state(run) == "success", "on_regression = warn: the run stands"
    (body,) = webhook.bodies()
    text = body["text"]
    print(f"--- the morning message ---\n{text}\n---")
    assert text.startswith(f"*RAG quality {NIGHT}: REGRESSION*")
    assert "faithfulness (all rows) regression: " in text
    assert " vs baseline " in text
    assert "24 rows scored, " in text
    assert " judge tokens, cost unknown (no price for the model)" in text, "test-judge: no price"
    assert f"Report: {REPORT_URL.format(day=NIGHT)}" in text


def test_the_json_style_sends_fields_and_a_failed_run_is_told_too(
    lake: Path, webhook: WebhookReceiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAGAS_OPS_NOTIFY_WHEN", "regressions")
    monkeypatch.setenv("RAGAS_OPS_NOTIFY_STYLE", "json")
    monkeypatch.setenv("RAGAS_OPS_PIPELINE_ON_REGRESSION", "fail")
    baseline_then_night(lake, unfaithful_share=0.6)

    run = run_dag(NIGHT)

    assert state(run) == "failed", "on_regression = fail"
    (body,) = webhook.bodies()
    assert body["verdict"] == "regression"
    faithfulness = [moved for moved in body["moved"] if moved["metric"] == "faithfulness"]
    assert faithfulness
    assert all(moved["ci_low"] <= moved["mean"] <= moved["ci_high"] for moved in faithfulness)
    assert body["report_url"].endswith(f"/reports/dt={NIGHT}/report.html")
    assert body["rows"] == 24


def test_a_sound_night_sends_nothing_under_regressions_and_everything_under_always(
    lake: Path, webhook: WebhookReceiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAGAS_OPS_NOTIFY_WHEN", "regressions")
    baseline_then_night(lake, unfaithful_share=0.05)

    assert state(run_dag(NIGHT)) == "success"
    assert webhook.bodies() == []

    monkeypatch.setenv("RAGAS_OPS_NOTIFY_WHEN", "always")
    assert state(run_dag(NIGHT)) == "success"
    (body,) = webhook.bodies()
    assert "REGRESSION" not in body["text"]
    assert f"RAG quality {NIGHT}: " in body["text"]
