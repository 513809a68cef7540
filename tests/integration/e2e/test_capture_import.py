"""`ragas-ops import`: OpenInference spans (JSON lines, in the OpenTelemetry SDK's, OTLP/JSON
and Phoenix's flattened layouts) into the log lake, and read by the nightly scoring."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from ragas_ops_testing.judge_server import JudgeServer

from ragas_ops.capture.openinference import ImportOutcome, import_traces, interactions, read_spans
from ragas_ops.cli.main import main
from tests.fixtures.capture_pipeline import partition_rows, score_partition

TRACES = Path(__file__).resolve().parents[2] / "fixtures" / "openinference_traces.jsonl"


def test_the_cli_imports_each_trace_into_its_day(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    raw = tmp_path / "raw"
    assert main(["import", str(TRACES), "--to", str(raw), "--set", "source=phoenix"]) == 0
    printed = capsys.readouterr().out
    assert "imported 3 interaction(s) into 2 file(s)" in printed
    assert "skipped 1: a trace without retrieved documents" in printed
    assert "line 4 is not JSON" in printed

    [france] = partition_rows(raw, "2026-11-27")
    assert france["question"] == "What is the capital of France?"
    assert france["contexts"] == [
        "Paris is the capital and largest city of France.",
        "France is a country in Western Europe.",
    ]
    assert france["answer"] == "Paris is the capital of France."
    assert france["timestamp"] == datetime(2026, 11, 27, 23, 59, 58, tzinfo=UTC)
    assert france["id"] == "0000000000000101"
    assert france["trace_id"] == "5b8aa5a2d2c872e8321cf37308d69df2"
    assert (france["model"], france["tenant"], france["app"]) == (
        "gpt-4o-mini",
        "acme",
        "atlas-bot",
    )
    assert (france["session_id"], france["user_id"]) == ("session-1", "user-9")
    assert json.loads(france["context_ids"]) == ["doc-1", "doc-7"]
    assert json.loads(france["context_scores"]) == [0.91, 0.55]
    assert json.loads(france["context_metadata"]) == [{"source": "atlas"}] * 2
    assert france["source"] == "phoenix"

    day = sorted(partition_rows(raw, "2026-11-28"), key=lambda row: row["timestamp"])
    assert [(row["question"], row["contexts"], row["answer"]) for row in day] == [
        (
            "Who painted the Mona Lisa?",
            ["The Mona Lisa is a portrait by Leonardo da Vinci."],
            "Leonardo da Vinci painted it.",
        ),
        (
            "How tall is the Eiffel Tower?",
            ["The Eiffel Tower is 330 metres tall.", "It was completed in 1889."],
            "About 330 metres.",
        ),
    ]
    assert day[0]["model"] == "gpt-4o"
    assert day[0]["tenant"] == "louvre"

    # importing the same export again replaces its files: no duplicated rows
    assert main(["import", str(TRACES), "--to", str(raw)]) == 0
    assert len(partition_rows(raw, "2026-11-28")) == 2
    assert len(list((raw / "dt=2026-11-28").glob("*.parquet"))) == 1


def test_imported_history_is_scored_by_the_nightly_steps(
    tmp_path: Path, judge_server: JudgeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    raw = tmp_path / "raw"
    import_traces([TRACES], str(raw))
    scored = score_partition(raw, "2026-11-28", judge_server, tmp_path, monkeypatch)
    assert sorted(row["question"] for row in scored) == [
        "How tall is the Eiffel Tower?",
        "Who painted the Mona Lisa?",
    ]
    assert {row["faithfulness_status"] for row in scored} == {"ok"}


def test_keep_without_contexts_and_a_missing_file(tmp_path: Path) -> None:
    outcome = import_traces([TRACES], str(tmp_path), keep_without_contexts=True)
    assert outcome.rows == 4
    [hello] = [row for row in partition_rows(tmp_path, "2026-11-28") if row["contexts"] == []]
    assert (hello["question"], hello["answer"]) == ("Say hello", "Hello!")
    assert main(["import", str(tmp_path / "nope.jsonl"), "--to", str(tmp_path)]) == 2


def test_spans_written_by_the_opentelemetry_sdk(tmp_path: Path) -> None:
    """Spans of a real OpenTelemetry tracer, exported with the SDK's own `to_json`."""
    pytest.importorskip("opentelemetry.sdk")
    from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
    from opentelemetry.sdk.trace.export import (
        SimpleSpanProcessor,
        SpanExporter,
        SpanExportResult,
    )

    lines: list[str] = []

    class ToLines(SpanExporter):
        def export(self, spans: object) -> SpanExportResult:
            assert isinstance(spans, list | tuple)
            for span in spans:
                assert isinstance(span, ReadableSpan)
                lines.append(span.to_json(indent=None))
            return SpanExportResult.SUCCESS

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(ToLines()))
    tracer = provider.get_tracer("app")
    for number in range(3):
        with tracer.start_as_current_span("rag") as root:
            root.set_attribute("openinference.span.kind", "CHAIN")
            root.set_attribute("input.value", f"question {number}")
            with tracer.start_as_current_span("retrieve") as retrieve:
                retrieve.set_attribute("openinference.span.kind", "RETRIEVER")
                for index in range(2):
                    key = f"retrieval.documents.{index}.document"
                    retrieve.set_attribute(f"{key}.content", f"context {number}.{index}")
                    retrieve.set_attribute(f"{key}.id", f"d{index}")
            root.set_attribute("output.value", f"answer {number}")
    outcome = ImportOutcome()
    rows = interactions(read_spans(lines, outcome), outcome)
    assert outcome.traces == 3
    assert sorted((row[2], row[3], row[4]) for row in rows) == [
        (f"question {n}", [f"context {n}.0", f"context {n}.1"], f"answer {n}") for n in range(3)
    ]


def test_a_lone_surrogate_or_an_undecodable_byte_marks_its_text_and_the_rest_is_imported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """JSON may escape a lone UTF-16 surrogate ("\\udcff": half of a character cut in two) and
    an export may hold a byte that is not UTF-8: neither can be written as Parquet text. Each
    is read as U+FFFD, which scoring reports as `invalid_input` naming the field."""
    text = TRACES.read_text(encoding="utf-8")
    assert "Paris is the capital and largest" in text
    assert "Western Europe" in text
    damaged = text.replace(
        "Paris is the capital and largest", "Paris\\udcff is the capital and largest"
    )
    data = damaged.encode("utf-8").replace(b"Western Europe", b"Western \xff Europe")
    export = tmp_path / "export.jsonl"
    export.write_bytes(data)
    raw = tmp_path / "raw"

    assert main(["import", str(export), "--to", str(raw)]) == 0

    assert "imported 3 interaction(s) into 2 file(s)" in capsys.readouterr().out
    [france] = partition_rows(raw, "2026-11-27")
    assert france["contexts"] == [
        "Paris\ufffd is the capital and largest city of France.",
        "France is a country in Western \ufffd Europe.",
    ]
    assert len(partition_rows(raw, "2026-11-28")) == 2


def test_an_exports_file_names_are_the_digest_of_its_text_as_before(tmp_path: Path) -> None:
    """Importing an export again replaces its files only while their names stay the same."""
    import hashlib

    raw = tmp_path / "raw"
    assert main(["import", str(TRACES), "--to", str(raw)]) == 0
    digest = hashlib.sha256(TRACES.read_text(encoding="utf-8").encode("utf-8")).hexdigest()
    names = {path.name for path in raw.glob("dt=*/*.parquet")}
    assert names == {f"import-openinference-{digest[:16]}.parquet"}


def test_a_span_repeated_with_different_content_is_counted_and_the_later_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = TRACES.read_text(encoding="utf-8").splitlines()
    repeated = [line for line in lines if "Paris is the capital and largest" in line]
    assert len(repeated) == 1
    changed = repeated[0].replace("Paris is the capital and largest", "Paris is the largest")
    export = tmp_path / "export.jsonl"
    export.write_text("\n".join([*lines, repeated[0], changed]) + "\n", encoding="utf-8")
    raw = tmp_path / "raw"

    assert main(["import", str(export), "--to", str(raw)]) == 0

    printed = capsys.readouterr().out
    assert "skipped 1: a span repeated with different content (the later line kept)" in printed
    [france] = partition_rows(raw, "2026-11-27")
    assert france["contexts"][0] == "Paris is the largest city of France."
