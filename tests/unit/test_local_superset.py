"""`make dashboard WAREHOUSE=...`: the dashboard's launcher reads the warehouse it is given."""

from __future__ import annotations

from pathlib import Path

import pytest
from ragas_ops_testing.local_airflow.processes import LauncherError
from ragas_ops_testing.local_superset import demo_settings


def test_a_chosen_warehouse_replaces_the_demos(tmp_path: Path) -> None:
    mine = tmp_path / "my-warehouse"
    mine.mkdir()

    settings = demo_settings(tmp_path / "demo", {}, str(mine))

    assert settings.pipeline.warehouse_uri == str(mine)
    assert demo_settings(tmp_path / "demo", {}).pipeline.warehouse_uri != str(mine)
    with pytest.raises(LauncherError, match="no such folder"):
        demo_settings(tmp_path / "demo", {}, str(tmp_path / "missing"))
