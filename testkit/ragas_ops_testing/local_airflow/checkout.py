"""The checkout of ragas-ops the launchers run Airflow from: it holds `dags/`, `plugins/` and
`docker/`, beside the library's own folder. Found from the library, not from this kit, which
may be installed from elsewhere: the DAG file imports `ragas_ops` from this checkout."""

from __future__ import annotations

from pathlib import Path

import ragas_ops

PROJECT = Path(ragas_ops.__file__).resolve().parents[1]
DAG_ID = "ragas_ops_nightly"
"""The nightly DAG of `dags/ragas_ops_nightly.py`."""
