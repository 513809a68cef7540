"""The "RAG quality" dashboard for Apache Superset, as code: a bundle of YAML files in
Superset's own export format (version 1.0.0) under `bundle/`, versioned with the package.

The bundle holds one database (DuckDB, over the views of `ragas_ops.quality.bi_database`),
five datasets (the views), eight charts and the dashboard with its three native filters
(date range, segment, judge). `bundle_zip` packs it for `superset import-dashboards` (or the
UI's import), with the database URI and engine parameters of the Superset it goes into: the
URI in the YAML is a placeholder, since where the database file lies is the deployment's.

Nothing here imports Superset: the zip is built with the standard library.
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

BUNDLE = Path(__file__).parent / "bundle"
DATABASE_FILE = Path("databases") / "ragas_ops_warehouse.yaml"
DATABASE_UUID = "4073028e-088e-52ad-8d49-3908fbfed20b"  # as in bundle/databases/
DATABASE_NAME = "ragas-ops warehouse (DuckDB)"
DASHBOARD_SLUG = "rag-quality"
TOP_FOLDER = "ragas_ops_rag_quality"


def duckdb_uri(database: Path) -> str:
    """The SQLAlchemy URI of a DuckDB file for duckdb-engine (an absolute path)."""
    return f"duckdb:///{database.resolve()}"


def database_config(uri: str, preload_extensions: Sequence[str] = ()) -> dict[str, Any]:
    """The bundle's database, pointed at `uri`, read-only; `preload_extensions` are DuckDB
    extensions duckdb-engine loads on each connection (a name, or a quoted path of an
    extension file: `iceberg_scan` needs `avro` and `iceberg` loaded, offline)."""
    connect_args: dict[str, Any] = {"read_only": True}
    if preload_extensions:
        connect_args["preload_extensions"] = list(preload_extensions)
    return {
        "allow_csv_upload": False,
        "allow_ctas": False,
        "allow_cvas": False,
        "allow_dml": False,
        "allow_run_async": False,
        "cache_timeout": None,
        "database_name": DATABASE_NAME,
        "expose_in_sqllab": True,
        "extra": {
            "allows_virtual_table_explore": True,
            "engine_params": {"connect_args": connect_args},
        },
        "sqlalchemy_uri": uri,
        "uuid": DATABASE_UUID,
        "version": "1.0.0",
    }


def bundle_files() -> list[Path]:
    """The bundle's YAML files, relative to `BUNDLE`."""
    return sorted(path.relative_to(BUNDLE) for path in BUNDLE.rglob("*.yaml"))


def bundle_zip(target: Path, uri: str, preload_extensions: Sequence[str] = ()) -> Path:
    """Write the bundle as the zip `superset import-dashboards -p` reads, its database
    pointed at `uri` (JSON is YAML: the database file is written as JSON)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as bundle:
        for relative in bundle_files():
            name = f"{TOP_FOLDER}/{relative.as_posix()}"
            if relative == DATABASE_FILE:
                config = database_config(uri, preload_extensions)
                bundle.writestr(name, json.dumps(config, indent=2) + "\n")
            else:
                bundle.writestr(name, (BUNDLE / relative).read_text())
    return target
