"""The Superset bundle holds together: every chart's dataset, every dataset's database, every
chart of the dashboard's layout and every filter's dataset are in it, and the zip points the
database where it is told."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from ragas_ops.quality.bi_database import VIEWS, iceberg_sources, parquet_sources, view_statements
from ragas_ops.quality.superset import (
    BUNDLE,
    DATABASE_UUID,
    TOP_FOLDER,
    bundle_files,
    bundle_zip,
    duckdb_uri,
)


def configs(folder: str) -> list[dict[str, Any]]:
    return [
        yaml.safe_load((BUNDLE / path).read_text())
        for path in bundle_files()
        if path.parts[0] == folder
    ]


def laid_out_charts(dashboard: dict[str, Any]) -> list[dict[str, Any]]:
    items = dashboard["position"].values()
    return [item["meta"] for item in items if isinstance(item, dict) and item["type"] == "CHART"]


def test_every_reference_of_the_bundle_resolves_inside_it() -> None:
    [database] = configs("databases")
    datasets = {config["uuid"]: config for config in configs("datasets")}
    charts = {config["uuid"]: config for config in configs("charts")}
    [dashboard] = configs("dashboards")

    assert database["uuid"] == DATABASE_UUID
    assert {config["database_uuid"] for config in datasets.values()} == {DATABASE_UUID}
    assert {config["table_name"] for config in datasets.values()} == set(VIEWS)
    assert {config["dataset_uuid"] for config in charts.values()} <= set(datasets)
    for config in charts.values():
        context = json.loads(config["query_context"])
        columns = {column["column_name"] for column in datasets[config["dataset_uuid"]]["columns"]}
        for query in context["queries"]:
            assert {where["col"] for where in query["filters"]} <= columns, config["slice_name"]
    laid_out = [meta["uuid"] for meta in laid_out_charts(dashboard)]
    assert sorted(laid_out) == sorted(charts)
    chart_ids = {meta["chartId"] for meta in laid_out_charts(dashboard)}
    for native in dashboard["metadata"]["native_filter_configuration"]:
        assert set(native["scope"]["excluded"]) <= chart_ids
        for target in native["targets"]:
            if "datasetUuid" in target:
                dataset = datasets[target["datasetUuid"]]
                assert target["column"]["name"] in {c["column_name"] for c in dataset["columns"]}


def test_the_zip_points_the_database_at_the_uri_given(tmp_path: Path) -> None:
    uri = duckdb_uri(tmp_path / "bi.duckdb")
    zipped = bundle_zip(tmp_path / "bundle.zip", uri, ["'/x/iceberg.duckdb_extension'"])

    with zipfile.ZipFile(zipped) as bundle:
        names = bundle.namelist()
        database = json.loads(bundle.read(f"{TOP_FOLDER}/databases/ragas_ops_warehouse.yaml"))
    assert len(names) == len(bundle_files())
    assert database["sqlalchemy_uri"] == f"duckdb:///{tmp_path / 'bi.duckdb'}"
    assert database["extra"]["engine_params"]["connect_args"] == {
        "read_only": True,
        "preload_extensions": ["'/x/iceberg.duckdb_extension'"],
    }


def test_the_views_read_both_formats_and_quote_what_they_are_given() -> None:
    parquet = view_statements(parquet_sources("/lake/it's"), ["faithfulness"])
    assert "'/lake/it''s/scored/dt=*/scored.parquet'" in parquet[-1]
    assert "hive_types = {'dt': VARCHAR}" in parquet[0]
    iceberg = view_statements(
        iceberg_sources({"scored": "s.json", "daily_metrics": "d.json"}), ["a", "b"]
    )
    assert "iceberg_scan('d.json')" in iceberg[0]
    assert iceberg[-1].count("UNION ALL") == 1
    with pytest.raises(ValueError, match="at least one metric"):
        view_statements(parquet_sources("/lake"), [])


def test_the_verdict_table_is_sorted_by_day_newest_first() -> None:
    """In aggregate mode Superset sorts a table by its sort metric (else by its first metric,
    the regressed groupings): the verdicts' is the day, in the form the UI runs and in the
    saved query alike. Checked here as the bundle says it; `make dashboard-test` renders it."""
    chart = yaml.safe_load((BUNDLE / "charts" / "regressions.yaml").read_text())
    form = json.loads(chart["query_context"])["form_data"]
    for data in (chart["params"], form):
        assert data["timeseries_limit_metric"]["sqlExpression"] == "MAX(dt)"
        assert data["order_desc"] is True
