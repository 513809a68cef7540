"""`ragas-ops labels export|import` round trip on a warehouse the pipeline's steps wrote (the
test judge over HTTP), with a spreadsheet-edited CSV, in both table formats."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from ragas_ops_testing.judge_server import JudgeServer

from ragas_ops.cli.main import main
from ragas_ops.config import Settings
from ragas_ops.contract.layout import Lake
from ragas_ops.samples import sample_interactions
from ragas_ops.tables.format import day_tables
from tests.pipeline_steps import run_day
from tests.support import settings_for

DAYS = ["2026-11-20", "2026-11-21"]
METRICS = ("faithfulness", "answer_relevance", "context_relevance")


@pytest.fixture(scope="module", params=["parquet", "iceberg"])
def warehouse(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Settings, Path]:
    root = tmp_path_factory.mktemp(f"labels-{request.param}")
    server = JudgeServer().start()
    try:
        settings = settings_for(server, root)
        settings.pipeline.raw_uri = str(root / "raw")
        settings.pipeline.warehouse_uri = str(root / "warehouse")
        settings.pipeline.segments = ("app",)
        settings.warehouse.table_format = request.param
        lake = Lake(settings.pipeline)
        for index, day in enumerate(DAYS):
            run_day(lake, day, settings, sample_interactions(30, seed=index, day=day), report=False)
    finally:
        server.stop()
    config = root / "ragas-ops.toml"
    config.write_text(
        f'[pipeline]\nraw_uri = "{root / "raw"}"\nwarehouse_uri = "{root / "warehouse"}"\n'
        f'segments = ["app"]\n[warehouse]\ntable_format = "{request.param}"\n'
    )
    return settings, config


def labels_in_warehouse(settings: Settings) -> list[dict[str, object]]:
    tables = day_tables(Lake(settings.pipeline), settings)
    return sorted(
        (row for table in tables.read_labels(DAYS) for row in table.to_pylist()),
        key=lambda row: (str(row["dt"]), str(row["row_id"]), str(row["metric"])),
    )


def spreadsheet_edit(exported: Path, edited: Path) -> list[dict[str, str]]:
    """What a person does in a spreadsheet: fill the metric columns, make a few mistakes, and
    save as CSV with Excel's byte-order mark and CRLF line ends."""
    with exported.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    for index, row in enumerate(rows):
        row["faithfulness"] = ("1", "0.5", "0")[index % 3]
        row["answer_relevance"] = "1.0" if index % 2 else ""  # blank: not labelled
        row["labeller"] = "ana"
    bad = [
        {**rows[0], "row_id": "no-such-row"},  # not in the queue
        {**rows[1], "faithfulness": "2"},  # out of range
        {**rows[2], "faithfulness": "some"},  # not a level
        {**rows[3]},  # the same row and metrics again
    ]
    for row in bad[1:]:
        row["answer_relevance"] = ""
    with edited.open("w", encoding="utf-8-sig", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]), lineterminator="\r\n")
        writer.writeheader()
        writer.writerows([*rows, *bad])
    return rows


def test_export_is_blind_and_import_refuses_bad_rows_with_reasons_writing_nothing(
    warehouse: tuple[Settings, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings, config = warehouse
    exported = tmp_path / "queue.csv"
    args = ["--config", str(config)]
    assert main(["labels", "export", str(exported), "--day", DAYS[1], "--days", "2", *args]) == 0
    header = exported.read_text().splitlines()[0].split(",")
    assert header == ["dt", "row_id", "question", "contexts", "answer", *METRICS, "labeller"]
    assert not any("score" in name or "evidence" in name for name in header)  # blind
    with exported.open(newline="") as handle:
        queued = list(csv.DictReader(handle))
    assert len(queued) == 40  # labels.per_day = 20 of each day's 30 rows
    assert {row["dt"] for row in queued} == set(DAYS)
    assert all(json.loads(row["contexts"]) for row in queued)
    capsys.readouterr()

    edited = tmp_path / "queue-edited.csv"
    rows = spreadsheet_edit(exported, edited)
    assert main(["labels", "import", str(edited), *args]) == 1
    err = capsys.readouterr().err
    refused = [line for line in err.splitlines() if line.startswith("refused:")]
    assert len(refused) == 4, err
    assert f"record 41 ({rows[0]['dt']}, no-such-row, faithfulness): the row is not" in err
    assert (
        f"record 42 ({rows[1]['dt']}, {rows[1]['row_id']}, faithfulness): label '2' is not" in err
    )
    assert f"record 43 ({rows[2]['dt']}, {rows[2]['row_id']}, faithfulness): label 'some'" in err
    assert f"record 44 ({rows[3]['dt']}, {rows[3]['row_id']}, faithfulness): a duplicate" in err
    assert "(unknown row)" in err
    assert "4 of 64 label(s) refused; nothing was written" in err
    assert labels_in_warehouse(settings) == []

    # the rows that passed, written when told to; the same file again is all duplicates
    assert main(["labels", "import", str(edited), "--skip-refused", *args]) == 0
    assert "60 label(s) added, 4 refused, in 2 day(s)" in capsys.readouterr().out
    written = labels_in_warehouse(settings)
    assert len(written) == 60
    assert {row["labeller"] for row in written} == {"ana"}
    assert {row["page_version"] for row in written} == {"import/1"}
    assert {row["label"] for row in written} == {0.0, 0.5, 1.0}
    assert main(["labels", "import", str(edited), *args]) == 1
    assert capsys.readouterr().err.count("a duplicate: this person labelled") == 61
    assert len(labels_in_warehouse(settings)) == 60

    # what is left to label: every row still lacks context_relevance; ana's faithfulness and
    # answer relevance labels are marked done ("-")
    again = tmp_path / "again.jsonl"
    assert (
        main(
            [
                "labels",
                "export",
                str(again),
                "--day",
                DAYS[1],
                "--days",
                "2",
                "--labeller",
                "ana",
                *args,
            ]
        )
        == 0
    )
    records = [json.loads(line) for line in again.read_text().splitlines()]
    assert len(records) == 40
    assert {record["faithfulness"] for record in records} == {"-"}
    assert {record["context_relevance"] for record in records} == {""}
    assert all(isinstance(record["contexts"], list) for record in records)


def test_an_unreadable_file_is_refused_before_anything(
    warehouse: tuple[Settings, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, config = warehouse
    broken = tmp_path / "labels.jsonl"
    broken.write_text('{"dt": "2026-11-20", "row_id": "x", "faithfulness": 1}\n{not json\n')
    assert main(["labels", "import", str(broken), "--config", str(config)]) == 2
    assert "line 2 is not JSON" in capsys.readouterr().err


def queued_row(config: Path, tmp_path: Path) -> dict[str, str]:
    exported = tmp_path / "queue.csv"
    assert main(["labels", "export", str(exported), "--day", DAYS[0], "--config", str(config)]) == 0
    with exported.open(newline="") as handle:
        return next(csv.DictReader(handle))


def test_one_person_spelt_three_ways_is_one_labeller_and_formulas_are_refused(
    warehouse: tuple[Settings, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings, config = warehouse
    row = queued_row(config, tmp_path)
    metric = "context_relevance"
    args = ["--config", str(config)]
    for number, name in enumerate(["bo", "bo ", " Bo"]):
        path = tmp_path / f"bo-{number}.jsonl"
        record = {"dt": row["dt"], "row_id": row["row_id"], metric: 1, "labeller": name}
        path.write_text(json.dumps(record) + "\n")
        assert main(["labels", "import", str(path), *args]) == (0 if number == 0 else 1), name
    assert "a duplicate: this person labelled" in capsys.readouterr().err
    mine = [label for label in labels_in_warehouse(settings) if label["labeller"] == "bo"]
    assert len(mine) == 1

    formula = tmp_path / "formula.csv"
    formula.write_text(
        f"dt,row_id,{metric},labeller\n"
        f'{row["dt"]},{row["row_id"]},1,"=HYPERLINK(""http://evil.example"",""x"")"\n'
    )
    assert main(["labels", "import", str(formula), *args]) == 1
    assert "begins with '=', a spreadsheet formula's sign" in capsys.readouterr().err
    assert not [label for label in labels_in_warehouse(settings) if "=" in str(label["labeller"])]


def test_every_malformed_line_of_an_import_is_one_line_of_error(
    warehouse: tuple[Settings, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings, config = warehouse
    row = queued_row(config, tmp_path)
    before = len(labels_in_warehouse(settings))
    good = {"dt": row["dt"], "row_id": row["row_id"], "context_relevance": 1, "labeller": "cy"}
    hostile = tmp_path / "hostile.jsonl"
    hostile.write_text(
        "\n".join(
            [
                json.dumps(good),
                "[1, 2]",
                "42",
                '"a string"',
                json.dumps({**good, "labeller": {"name": "cy"}}),
                json.dumps({**good, "labeller": 7}),
                "[" * 100_000 + "]" * 100_000,
            ]
        )
        + "\n"
    )
    capsys.readouterr()

    assert main(["labels", "import", str(hostile), "--config", str(config)]) == 2

    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert [line.split("hostile.jsonl: ", 1)[1] for line in lines[:-1]] == [
        "line 2 is a JSON list, not an object",
        "line 3 is a JSON int, not an object",
        "line 4 is a JSON str, not an object",
        "record 5: the labeller is JSON (dict), not a name",
        "record 6: the labeller is JSON (int), not a name",
        "line 7 is JSON nested too deep to read",
    ]
    assert lines[-1] == "6 malformed record(s): nothing was checked or written"
    assert len(labels_in_warehouse(settings)) == before


def test_a_200_mb_csv_cell_is_refused_without_reading_it_whole(
    warehouse: tuple[Settings, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, config = warehouse
    huge = tmp_path / "huge.csv"
    with huge.open("w") as handle:
        handle.write("dt,row_id,context_relevance,labeller\n2026-11-20,x,1,")
        block = "a" * (1 << 20)
        for _ in range(200):
            handle.write(block)
        handle.write("\n")
    capsys.readouterr()

    assert main(["labels", "import", str(huge), "--config", str(config)]) == 2

    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert err.count("\n") == 1
    assert "line 2 is longer than 4,194,304 characters: refused" in err
