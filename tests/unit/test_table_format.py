"""The `[warehouse]` settings: the table format, the catalog URI and its errors, and the
password that never shows (in a setting's repr, a config error or a catalog error)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from ragas_ops.config import ConfigError, Settings, load_settings, masked_catalog_uri
from ragas_ops.contract.layout import Lake
from ragas_ops.secrets import secret_forms
from ragas_ops.tables.format import (
    IcebergDayTables,
    ParquetDayTables,
    day_tables,
    local_table_formats,
    missing_for,
)
from ragas_ops.tables.iceberg import INSTALL_HINT, local_catalog_path

PASSWORD = "Pg-s3cret-0123456789"


def test_parquet_is_the_default_and_iceberg_is_one_setting(tmp_path: Path) -> None:
    settings = Settings()
    settings.pipeline.warehouse_uri = str(tmp_path / "warehouse")
    assert isinstance(day_tables(Lake(settings.pipeline), settings), ParquetDayTables)

    pytest.importorskip("pyiceberg")
    iceberg = load_settings(environ={"RAGAS_OPS_WAREHOUSE_TABLE_FORMAT": "iceberg"})
    iceberg.pipeline.warehouse_uri = str(tmp_path / "warehouse")
    tables = day_tables(Lake(iceberg.pipeline), iceberg)
    assert isinstance(tables, IcebergDayTables)
    assert (tmp_path / "warehouse" / "_iceberg_catalog.sqlite").exists()


def test_a_local_warehouse_says_which_table_formats_it_holds(tmp_path: Path) -> None:
    """What the demo asks before it scores into a warehouse an earlier run filled in the
    other format (it sets that one aside)."""
    warehouse = tmp_path / "warehouse"
    assert local_table_formats(warehouse) == set()
    settings = Settings()
    settings.pipeline.warehouse_uri = str(warehouse)
    Path(Lake(settings.pipeline).scored("2026-01-02").path).parent.mkdir(parents=True)
    assert local_table_formats(warehouse) == {"parquet"}

    pytest.importorskip("pyiceberg")
    iceberg = load_settings(environ={"RAGAS_OPS_WAREHOUSE_TABLE_FORMAT": "iceberg"})
    iceberg.pipeline.warehouse_uri = str(warehouse)
    day_tables(Lake(iceberg.pipeline), iceberg)
    assert local_catalog_path(warehouse).exists()
    assert local_table_formats(warehouse) == {"parquet", "iceberg"}


def test_a_table_format_says_what_it_needs_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    assert missing_for("parquet") is None
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    assert missing_for("parquet") is None
    assert missing_for("iceberg") == INSTALL_HINT


def test_an_unknown_table_format_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="delta"):
        load_settings(environ={"RAGAS_OPS_WAREHOUSE_TABLE_FORMAT": "delta"})


def test_a_catalog_uri_that_is_not_a_sql_database_is_refused_without_its_password() -> None:
    uri = f"https://admin:{PASSWORD}@catalog.example.com/iceberg"
    with pytest.raises(ConfigError) as raised:
        load_settings(environ={"RAGAS_OPS_WAREHOUSE_CATALOG_URI": uri})
    message = str(raised.value)
    assert "not a SQLAlchemy URL" in message
    assert "admin:***@catalog.example.com" in message
    assert not any(form in message for form in secret_forms(PASSWORD))


def test_the_catalog_password_never_shows_in_the_settings_repr() -> None:
    uri = f"postgresql+psycopg2://ragas:{PASSWORD}@db.internal/catalog"
    settings = load_settings(environ={"RAGAS_OPS_WAREHOUSE_CATALOG_URI": uri})
    assert settings.warehouse.catalog_uri == uri
    assert PASSWORD not in repr(settings)
    assert masked_catalog_uri(uri) == "postgresql+psycopg2://ragas:***@db.internal/catalog"


def test_an_s3_warehouse_without_a_catalog_is_a_config_error() -> None:
    pytest.importorskip("pyiceberg")
    settings = load_settings(environ={"RAGAS_OPS_WAREHOUSE_TABLE_FORMAT": "iceberg"})
    settings.pipeline.warehouse_uri = "s3://bucket/warehouse"
    with pytest.raises(ConfigError, match=r"warehouse.catalog_uri is needed"):
        day_tables(Lake(settings.pipeline), settings)


def test_a_catalog_that_cannot_be_reached_is_a_config_error_without_its_password(
    tmp_path: Path,
) -> None:
    pytest.importorskip("pyiceberg")
    uri = f"postgresql+psycopg2://ragas:{PASSWORD}@127.0.0.1:9/catalog"
    settings = load_settings(
        environ={
            "RAGAS_OPS_WAREHOUSE_TABLE_FORMAT": "iceberg",
            "RAGAS_OPS_WAREHOUSE_CATALOG_URI": uri,
        }
    )
    settings.pipeline.warehouse_uri = str(tmp_path / "warehouse")
    with pytest.raises(ConfigError) as raised:
        day_tables(Lake(settings.pipeline), settings)
    message = str(raised.value)
    assert "the Iceberg catalog postgresql+psycopg2://ragas:***@127.0.0.1:9/catalog" in message
    assert not any(form in message for form in secret_forms(PASSWORD))
