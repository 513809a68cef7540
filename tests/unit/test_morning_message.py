"""What the morning message says of a night's manifest, and when it is sent."""

from __future__ import annotations

from ragas_ops.notify.spec import NotifySpec
from ragas_ops.quality.morning_message import is_due, morning_message, unfinished_message

MANIFEST = {
    "plan": {
        "rows": 120,
        "model_warnings": ["gpt-5-mini shuts down on 2026-12-11"],
        "rejected_files": [{"path": "raw/dt=2026-11-28/b.parquet", "reason": "no answer column"}],
        "derived_ids": 0,
        "no_traffic_reason": None,
    },
    "scoring": {"usage": {"cost_usd": 0.0123, "prompt_tokens": 900, "completion_tokens": 100}},
    "candidate": {"failed_chunks": [{"chunk": 2, "error": "401 from the candidate"}]},
    "regression": {
        "verdict": "regression",
        "summary": "Regression on 2026-11-28: faithfulness -0.2 vs its 6-day baseline.",
        "findings": [
            {
                "segment_column": "all",
                "segment_value": "all",
                "metric": "faithfulness",
                "outcome": "regression",
                "mean": 0.7,
                "ci_low": 0.6,
                "ci_high": 0.8,
                "baseline": 0.9,
                "delta": -0.2,
                "rows_scored": 120,
            },
            {
                "segment_column": "app",
                "segment_value": "bot",
                "metric": "answer_relevance",
                "outcome": "ok",
                "mean": 0.9,
                "ci_low": 0.8,
                "ci_high": 1.0,
                "baseline": 0.9,
                "delta": 0.0,
                "rows_scored": 120,
            },
        ],
    },
    "report": {"html": "s3://lake/ragas/reports/dt=2026-11-28/report.html"},
}


def test_the_message_tells_what_moved_the_cost_the_warnings_and_the_link() -> None:
    message = morning_message("2026-11-28", MANIFEST, NotifySpec())
    text = message.text()

    assert text.splitlines()[0] == "*RAG quality 2026-11-28: REGRESSION*"
    assert (
        "- faithfulness (all rows) regression: 0.700 (95% CI 0.600-0.800) vs baseline "
        "0.900 (-0.200), 120 rows" in text
    )
    assert "answer_relevance" not in text, "what did not move is not told"
    assert "120 rows scored, judge cost $0.0123 (1,000 tokens)" in text
    assert "- judge model shutting down: gpt-5-mini shuts down on 2026-12-11" in text
    assert "1 input file(s) rejected" in text
    assert "the shadow judge failed on 1 chunk(s)" in text
    assert text.endswith("Report: s3://lake/ragas/reports/dt=2026-11-28/report.html")


def test_when_decides_which_nights_are_sent() -> None:
    regression = morning_message("2026-11-28", MANIFEST, NotifySpec())
    sound = morning_message(
        "2026-11-28", {**MANIFEST, "regression": {"verdict": "ok"}}, NotifySpec()
    )
    failed = unfinished_message("2026-11-28", "scheduled__x", "no manifest was written")

    regressions = NotifySpec(when="regressions")
    assert [is_due(m, regressions) for m in (regression, sound, failed)] == [True, False, True]
    assert not any(is_due(m, NotifySpec()) for m in (regression, sound, failed)), "never"
    assert all(is_due(m, NotifySpec(when="always")) for m in (regression, sound, failed))


def test_the_report_url_setting_links_the_day() -> None:
    spec = NotifySpec(report_url="https://airflow.example.com/rag-quality/report?day={day}")

    message = morning_message("2026-11-28", MANIFEST, spec)

    assert message.report_url == "https://airflow.example.com/rag-quality/report?day=2026-11-28"
    assert message.fields()["moved"][0]["ci_low"] == 0.6
