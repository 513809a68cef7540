"""`ragas-ops warehouse upgrade`: bring a warehouse written by an earlier version up to date.

Today that is one step: a Parquet warehouse whose `runs` folders hold manifests named
`<run>.<publish>.json` (written before the `runs` table had Parquet rows, which pandas,
pyarrow datasets and Spark refuse as not Parquet) gets each run's row and the manifests their
underscore (`pipeline.manifest.migrate_manifests`). Running it again changes nothing.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ragas_ops.config import load_settings
from ragas_ops.contract.layout import Lake


def add_warehouse_parser(commands: Any) -> None:
    """Add `warehouse upgrade` to the main parser's subcommands."""
    warehouse = commands.add_parser(
        "warehouse", help="the warehouse's upkeep: upgrade one written by an earlier version"
    )
    actions = warehouse.add_subparsers(dest="action", required=True, metavar="ACTION")
    upgrade = actions.add_parser(
        "upgrade",
        help="give the runs of an older Parquet warehouse their table rows (safe to repeat)",
    )
    upgrade.add_argument("--config", type=Path, help="TOML config file")
    upgrade.add_argument("-v", "--verbose", action="store_true")
    upgrade.set_defaults(run=_run_upgrade)


def _run_upgrade(options: argparse.Namespace) -> int:
    from ragas_ops.pipeline.manifest import migrate_manifests, retype_run_rows

    settings = load_settings(options.config)
    lake = Lake(settings.pipeline)
    where = lake.warehouse.uri
    if settings.warehouse.table_format != "parquet":
        print(f"{where}: the {settings.warehouse.table_format} format's runs table is up to date")
        return 0
    moved = migrate_manifests(lake)
    for uri in moved:
        print(f"  {uri}")
    print(f"{where}: {len(moved)} run manifest(s) given their row of the runs table")
    retyped = retype_run_rows(lake)
    for uri in retyped:
        print(f"  {uri}")
    print(f"{where}: {len(retyped)} runs row(s) given published_at and finished_at as timestamps")
    return 0
