"""The log writer: day partitions, flushing by size, age and at close, concurrency (threads and
asyncio), the bounded buffer, and storage going away and coming back (moto S3 over HTTP)."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pytest
from ragas_ops_testing.judge_server import JudgeServer

from ragas_ops.capture import LogWriter
from tests.fixtures.capture_pipeline import partition_rows, score_partition
from tests.support import start_moto


def wait_until(condition: Callable[[], bool], seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return condition()


def test_rows_land_in_the_day_partition_of_their_utc_timestamp(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    with LogWriter(str(raw), app="support-bot") as writer:
        first = writer.append(
            "What is the capital of France?",
            ["Paris is the capital of France.", "France is in Europe."],
            "Paris.",
            model="gpt-4o-mini",
            tenant="acme",
            timestamp=datetime(2026, 11, 28, 23, 59, 59, tzinfo=UTC),
        )
        second = writer.append(
            "Who wrote Hamlet?",
            ("Hamlet is a tragedy by Shakespeare.",),
            "Shakespeare.",
            id="given-id",
            timestamp=datetime(2026, 11, 29, 0, 0, 1, tzinfo=UTC),
            latency_ms=120,
            flags={"beta": True},
        )
        third = writer.append(
            "One context as a string",
            "The only context.",
            None,
            tenant=None,
            timestamp=datetime(2026, 11, 29, 0, 0, 2, tzinfo=UTC),
        )
    assert first is not None
    assert second == "given-id"
    assert third is not None
    assert writer.stats()["written_rows"] == 3
    assert writer.dropped == 0
    day_one = partition_rows(raw, "2026-11-28")
    day_two = partition_rows(raw, "2026-11-29")
    assert [row["id"] for row in day_one] == [first]
    assert day_one[0]["contexts"] == ["Paris is the capital of France.", "France is in Europe."]
    assert day_one[0]["app"] == "support-bot"
    assert day_one[0]["model"] == "gpt-4o-mini"
    assert "latency_ms" not in day_one[0]  # columns are those of the file's rows
    assert day_two[1]["contexts"] == ["The only context."]
    assert day_two[1]["answer"] is None
    assert day_two[0]["id"] == "given-id"
    assert day_two[0]["contexts"] == ["Hamlet is a tragedy by Shakespeare."]
    assert day_two[0]["latency_ms"] == "120"
    assert day_two[0]["flags"] == '{"beta": true}'
    assert day_two[0]["timestamp"] == datetime(2026, 11, 29, 0, 0, 1, tzinfo=UTC)
    files = sorted((raw / "dt=2026-11-29").iterdir())
    assert len(files) == 1
    assert files[0].name.startswith("part-2")
    assert files[0].name.endswith(".parquet")
    schema = pa.parquet.read_schema(files[0])
    assert schema.field("contexts").type == pa.list_(pa.string())
    assert schema.field("timestamp").type == pa.timestamp("us", tz="UTC")


def test_a_json_logs_string_timestamps_and_ids_keep_every_row(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    stamps = ["2026-11-21T10:00:00Z", "2026-11-21T12:00:00+02:00", "2026-11-21T10:00:00"]
    with LogWriter(str(raw)) as writer:
        ids = [
            writer.append(
                f"Question {number}?",
                ["A context."],
                "An answer.",
                id=number,
                timestamp=stamps[number % 3],
            )
            for number in range(30)
        ]
    assert ids == [str(number) for number in range(30)]
    assert writer.dropped == 0
    assert writer.stats()["written_rows"] == 30
    rows = partition_rows(raw, "2026-11-21")
    assert [row["id"] for row in rows] == ids
    assert {row["timestamp"] for row in rows} == {datetime(2026, 11, 21, 10, 0, tzinfo=UTC)}


@pytest.mark.parametrize(
    ("timestamp", "error"),
    [("yesterday", ValueError), ([2026, 11, 21], TypeError), (True, TypeError)],
)
def test_a_timestamp_that_is_no_time_is_refused_at_append(
    tmp_path: Path, timestamp: object, error: type[Exception]
) -> None:
    with LogWriter(str(tmp_path)) as writer:
        with pytest.raises(error, match="timestamp"):
            writer.append("Q?", ["C."], "A.", timestamp=timestamp)  # type: ignore[arg-type]
        assert writer.buffered == 0
    assert writer.dropped == 0


def test_flushes_by_size_and_by_age_in_the_background(tmp_path: Path) -> None:
    writer = LogWriter(str(tmp_path), max_rows_per_file=10, flush_interval=0.3)
    try:
        for number in range(25):
            writer.append(f"q{number}", [f"c{number}"], f"a{number}")
        # two full files are written without any flush() call, the rest within the interval
        assert wait_until(lambda: writer.written_rows == 25, 5)
        assert writer.written_files >= 3
        assert writer.buffered == 0
    finally:
        writer.close()
    day = datetime.now(UTC).date().isoformat()
    rows = partition_rows(tmp_path, day)
    assert sorted(row["question"] for row in rows) == sorted(f"q{n}" for n in range(25))
    assert all(row["answer"] == "a" + row["question"][1:] for row in rows)


def test_many_threads_and_coroutines_lose_and_duplicate_nothing(tmp_path: Path) -> None:
    writer = LogWriter(str(tmp_path), max_rows_per_file=97, flush_interval=0.05)
    threads, per_thread = 8, 250

    def work(thread: int) -> None:
        for number in range(per_thread):
            writer.append(f"t{thread}-{number}", ["context"], "answer", thread=thread)

    async def coroutines() -> None:
        async def one(number: int) -> None:
            await asyncio.sleep(0)
            writer.append(f"async-{number}", ["context"], "answer")

        await asyncio.gather(*(one(number) for number in range(500)))
        assert await writer.aflush()

    workers = [threading.Thread(target=work, args=(index,)) for index in range(threads)]
    for worker in workers:
        worker.start()
    asyncio.run(coroutines())
    for worker in workers:
        worker.join()
    assert writer.flush()
    writer.close()
    rows = partition_rows(tmp_path, datetime.now(UTC).date().isoformat())
    questions = [row["question"] for row in rows]
    assert len(questions) == threads * per_thread + 500
    assert len(set(questions)) == len(questions)
    assert len({row["id"] for row in rows}) == len(rows)
    assert writer.dropped == 0


def test_two_writers_on_one_prefix_never_overwrite_each_other(tmp_path: Path) -> None:
    writers = [LogWriter(str(tmp_path), flush_interval=3600) for _ in range(4)]
    for round_ in range(5):
        for index, writer in enumerate(writers):
            writer.append(f"w{index}-{round_}", ["c"], "a")
            writer.flush()
    for writer in writers:
        writer.close()
    day = datetime.now(UTC).date().isoformat()
    assert len(list((tmp_path / f"dt={day}").glob("*.parquet"))) == 20
    assert len(partition_rows(tmp_path, day)) == 20


def test_a_full_buffer_drops_and_counts_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the log prefix should be")  # every write fails
    writer = LogWriter(str(blocked), max_buffered_rows=5, flush_interval=0.05, retry_seconds=0.05)
    with caplog.at_level(logging.WARNING, logger="ragas_ops.capture"):
        ids = [writer.append(f"q{n}", ["c"], "a") for n in range(8)]
        assert wait_until(lambda: writer.last_error is not None, 5)
    assert ids[:5] == [value for value in ids[:5] if value is not None]
    assert ids[5:] == [None, None, None]
    assert writer.dropped == 3
    assert writer.buffered == 5
    messages = [record.getMessage() for record in caplog.records]
    assert sum("dropped a row" in message for message in messages) == 1  # rate-limited
    assert any("cannot write" in message for message in messages)
    writer.close(timeout=5)
    assert writer.dropped == 8  # the 5 that could never be written are lost at close
    assert writer.append("after close", ["c"], "a") is None


def test_s3_outage_is_absorbed_and_the_buffer_is_written_when_s3_returns(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The writer's S3 server (moto over HTTP) is stopped: appends keep returning at once,
    rows wait up to the bound and then are counted as dropped; a new server on the same port
    brings the same bucket back (moto keeps its state in the process) and the waiting rows are
    written."""
    import boto3
    import pyarrow.dataset as pads
    import pyarrow.fs as pafs
    from moto.server import ThreadedMotoServer

    server, endpoint = start_moto(monkeypatch)
    host, port = server.get_host_and_port()
    s3 = boto3.client("s3", endpoint_url=endpoint)
    s3.create_bucket(Bucket="logs")
    writer = LogWriter(
        "s3://logs/raw",
        max_buffered_rows=20,
        max_rows_per_file=1_000,
        flush_interval=0.1,
        retry_seconds=0.1,
        max_retry_seconds=0.3,
    )
    running = [server]
    try:
        writer.append("before the outage", ["c"], "a")
        assert writer.flush(10)
        running.pop().stop()
        slowest = 0.0
        for number in range(30):
            started = time.perf_counter()
            writer.append(f"during {number}", ["c"], "a")
            slowest = max(slowest, time.perf_counter() - started)
        assert slowest < 0.05  # never waits for storage
        assert not writer.flush(10)
        assert writer.buffered == 20
        assert writer.dropped == 10
        assert writer.last_error is not None
        back = ThreadedMotoServer(ip_address=host, port=int(port), verbose=False)
        back.start()
        running.append(back)
        assert wait_until(lambda: writer.buffered == 0, 20), writer.stats()
        assert writer.last_error is None
    finally:
        writer.close(timeout=10)
        for still in running:
            still.stop()
        running.clear()
    back = ThreadedMotoServer(ip_address=host, port=int(port), verbose=False)
    back.start()
    try:
        listed = s3.list_objects_v2(Bucket="logs", Prefix="raw/")["Contents"]
        keys = [item["Key"] for item in listed if not item["Key"].endswith("/")]  # folder marker
        day = datetime.now(UTC).date().isoformat()
        assert all(key.startswith(f"raw/dt={day}/part-") for key in keys), keys
        assert all(key.endswith(".parquet") for key in keys), keys
        table = pads.dataset(
            f"logs/raw/dt={day}",
            filesystem=pafs.S3FileSystem(
                endpoint_override=f"{host}:{port}",
                scheme="http",
                access_key="testing",
                secret_key="testing",
                region="us-east-1",
            ),
            format="parquet",
        ).to_table()
    finally:
        back.stop()
    questions = sorted(table.column("question").to_pylist())
    assert questions == sorted(["before the outage", *(f"during {n}" for n in range(20))])
    assert writer.dropped == 10


def test_the_nightly_scoring_reads_the_writer_s_files_unchanged(
    tmp_path: Path, judge_server: JudgeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    raw = tmp_path / "raw"
    day = "2026-11-29"
    stamp = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
    with LogWriter(str(raw), max_rows_per_file=7, app="bot") as writer:
        for number in range(20):
            writer.append(
                f"Where is city {number}?",
                [f"City {number} is in country {number}.", "Unrelated text."],
                f"City {number} is in country {number}.",
                timestamp=stamp,
                tenant=f"tenant-{number % 3}",
            )
    logged = partition_rows(raw, day)
    scored = score_partition(raw, day, judge_server, tmp_path, monkeypatch)
    assert len(scored) == len(logged) == 20
    columns = ("id", "timestamp", "question", "contexts", "answer", "app", "tenant")
    assert sorted(tuple(row[c] for c in columns) for row in scored) == sorted(
        tuple(row[c] for c in columns) for row in logged
    )
    assert {row["faithfulness_status"] for row in scored} == {"ok"}


def test_the_process_wide_writer_takes_the_log_prefix_from_the_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ragas_ops import capture
    from ragas_ops.capture.writer import _Process

    monkeypatch.setattr(_Process, "writer", None)  # and back to none afterwards
    monkeypatch.setenv("RAGAS_OPS_PIPELINE_RAW_URI", str(tmp_path / "raw"))
    writer = capture.configure(app="settings-bot")
    try:
        assert capture.default_writer() is writer
        assert capture.append("q", ["c"], "a", tenant="t") is not None
        assert writer.flush()
    finally:
        writer.close()
    [row] = partition_rows(tmp_path / "raw", datetime.now(UTC).date().isoformat())
    assert (row["question"], row["app"], row["tenant"]) == ("q", "settings-bot", "t")


def _append_in_child(writer: LogWriter) -> None:
    writer.append("from the child", ["c"], "a")
    writer.close()


def test_a_forked_worker_writes_its_own_rows(tmp_path: Path) -> None:
    import multiprocessing

    writer = LogWriter(str(tmp_path), flush_interval=3600)
    writer.append("from the parent", ["c"], "a")  # buffered in the parent only
    child = multiprocessing.get_context("fork").Process(target=_append_in_child, args=(writer,))
    child.start()
    child.join(30)
    assert child.exitcode == 0
    writer.close()
    rows = partition_rows(tmp_path, datetime.now(UTC).date().isoformat())
    assert sorted(row["question"] for row in rows) == ["from the child", "from the parent"]
    assert len({path.name.split("-")[-2] for path in tmp_path.glob("*/*.parquet")}) == 2  # pids


def test_rows_still_buffered_are_written_when_the_interpreter_exits(tmp_path: Path) -> None:
    import subprocess
    import sys

    program = (
        "from ragas_ops.capture import LogWriter\n"
        f"writer = LogWriter({str(tmp_path)!r}, flush_interval=3600)\n"
        "writer.append('written at exit', ['c'], 'a')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "cannot write" not in done.stderr
    rows = partition_rows(tmp_path, datetime.now(UTC).date().isoformat())
    assert [row["question"] for row in rows] == ["written at exit"]
