"""The lake's one door: `contract.layout` names every path of the log lake and the warehouse,
and no other module builds a `dt=` partition path of its own."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ragas_ops.config import Settings
from ragas_ops.contract.layout import (
    Lake,
    day_folder,
    day_in_path_regex,
    day_of_folder,
    every_day_folder,
    every_day_glob,
    partition_days,
    report_of_path,
    report_path,
)
from ragas_ops.storage import locate
from ragas_ops.tables.format import ParquetDayTables

PACKAGE = Path(__file__).resolve().parents[2] / "ragas_ops"
LAYOUT = PACKAGE / "contract" / "layout.py"
DAY = "2026-11-28"


def lake_at(root: Path) -> Lake:
    settings = Settings()
    settings.pipeline.raw_uri = str(root / "raw")
    settings.pipeline.warehouse_uri = str(root / "warehouse")
    return Lake(settings.pipeline)


def test_a_day_folder_is_named_from_a_real_day_and_read_back() -> None:
    assert day_folder(DAY) == "dt=2026-11-28"
    assert day_of_folder("dt=2026-11-28") == DAY
    for name in ("dt=2026-02-30", "dt=2026-11-28x", "2026-11-28", "dt=2026-1-28", "dt="):
        assert day_of_folder(name) is None, name
    with pytest.raises(ValueError, match="YYYY-MM-DD"):
        day_folder("../2026-11-28")


def test_the_globs_and_the_regex_of_every_day_match_the_paths_the_lake_writes(
    tmp_path: Path,
) -> None:
    lake = lake_at(tmp_path)
    root = lake.warehouse.path
    assert every_day_glob(root, "scored") == f"{root}/scored/dt=*/scored.parquet"
    assert every_day_glob(f"{root}/", "daily_metrics") == (
        f"{root}/daily_metrics/dt=*/daily_metrics.parquet"
    )
    assert every_day_folder(root, "runs") == f"{root}/runs/dt=*/"
    assert re.search(day_in_path_regex("scored"), lake.scored(DAY).path)[1] == DAY  # type: ignore[index]
    assert re.search(day_in_path_regex("scored"), lake.daily_metrics(DAY).path) is None
    with pytest.raises(ValueError, match="table must be one of scored, daily_metrics"):
        every_day_glob(root, "runs")


def test_a_report_path_is_accepted_only_in_the_shape_the_pipeline_writes(tmp_path: Path) -> None:
    lake = lake_at(tmp_path)
    assert lake.report(DAY, "html").path == f"{lake.warehouse.path}/reports/dt={DAY}/report.html"
    assert report_path(DAY, "md") == ("reports", f"dt={DAY}", "report.md")
    assert report_of_path(f"dt={DAY}/report.html") == (DAY, "html")
    assert report_of_path(f"dt={DAY}/report.md") == (DAY, "md")
    for relative in (
        f"dt={DAY}/report.pdf",
        f"dt={DAY}/scored.parquet",
        f"dt={DAY}/../scored/dt={DAY}/scored.parquet",
        f"dt={DAY}/report.html/x",
        "dt=2026-02-30/report.html",
        f"dt={DAY}\\report.html",
        f"dt={DAY}/xreport.html",
        f"/dt={DAY}/report.html",
    ):
        assert report_of_path(relative) is None, relative
    with pytest.raises(ValueError, match="html or md"):
        report_path(DAY, "pdf")


def test_partition_days_lists_only_day_folders(tmp_path: Path) -> None:
    lake = lake_at(tmp_path)
    for name in ("dt=2026-11-28", "dt=2026-11-27", "dt=2026-02-30", "notes", "_staging"):
        (tmp_path / "warehouse" / "daily_metrics" / name).mkdir(parents=True)
    (tmp_path / "warehouse" / "daily_metrics" / "dt=2026-11-26").write_text("a file")

    assert lake.table_days("daily_metrics") == ["2026-11-27", "2026-11-28"]
    assert lake.table_days("scored") == []
    with pytest.raises(FileNotFoundError):
        partition_days(lake.raw, missing_ok=False)


def test_a_lake_can_stand_on_a_warehouse_its_caller_reached(tmp_path: Path) -> None:
    settings = Settings()
    settings.pipeline.warehouse_uri = str(tmp_path / "configured")
    elsewhere = locate(str(tmp_path / "reached"))

    lake = Lake(settings.pipeline, warehouse=elsewhere)

    assert lake.warehouse is elsewhere
    assert lake.scored(DAY).path == f"{elsewhere.path}/scored/dt={DAY}/scored.parquet"


def test_the_parquet_tables_read_a_few_rows_by_position_and_say_when_a_day_has_none(
    tmp_path: Path,
) -> None:
    lake = lake_at(tmp_path)
    tables = ParquetDayTables(lake)
    with pytest.raises(FileNotFoundError, match="no scored rows in"):
        tables.read_scored(DAY)
    target = lake.scored(DAY)
    Path(target.path).parent.mkdir(parents=True)
    rows = pa.table({"id": [f"r{i}" for i in range(10)], "answer": [f"a{i}" for i in range(10)]})
    pq.write_table(rows, target.path, row_group_size=3)

    found = tables.read_scored_rows(DAY, [8, 1], ["id", "not_a_column"])

    assert found == {1: {"id": "r1"}, 8: {"id": "r8"}}


def _builds_a_day_path(node: ast.AST) -> bool:
    """A string or f-string whose text puts a `dt=` partition into a path."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        text = node.value
    elif isinstance(node, ast.JoinedStr):
        text = "".join(
            part.value if isinstance(part, ast.Constant) else "{}" for part in node.values
        )
    else:
        return False
    return bool(re.search(r"(^|/)dt=(\{|\*|\?|\d|$)", text)) and "\n" not in text


def _docstrings(tree: ast.Module) -> set[int]:
    """The strings that stand alone as statements: documentation, not paths."""
    return {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
    }


def test_only_the_layout_builds_a_partition_path() -> None:
    builders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == LAYOUT:
            continue
        tree = ast.parse(path.read_text(), str(path))
        skip = _docstrings(tree)
        builders += [
            f"{path.relative_to(PACKAGE.parent)}:{node.lineno}"
            for node in ast.walk(tree)
            if id(node) not in skip and _builds_a_day_path(node)
        ]
    assert builders == [], "use contract.layout (day_folder, Lake, every_day_glob...)"
