"""OpenLineage: one nightly run, with Airflow's OpenLineage provider writing its events to a
file (its `file` transport, offline), names the three output datasets with their schema.

The run is `dag.test()` in a process of its own: the provider reads its transport once per
process, and the other DAG modules run theirs without one (the provider is then disabled).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from ragas_ops_testing.judge_server import JudgeServer

from ragas_ops.samples import sample_interactions
from tests.support import TEST_KEY

pytest.importorskip(
    "airflow.providers.openlineage", reason="apache-airflow-providers-openlineage is not installed"
)

PROJECT = Path(__file__).resolve().parents[3]
DAY = "2026-11-28"
RUN = f"""
import sys
from airflow.dag_processing.dagbag import DagBag
bag = DagBag({str(PROJECT / "dags")!r})
assert not bag.import_errors, bag.import_errors
run = bag.dags["ragas_ops_nightly"].test(run_conf={{"day": {DAY!r}}})
# one write: OpenLineage's listener logs to stdout from its own thread as the run ends, and
# print's separate writes of "state:" and the state let its lines fall between them
sys.stdout.write(f"state: {{getattr(run.state, 'value', run.state)}}\\n")
"""


def nightly_run_with_lineage(tmp_path: Path, judge_server: JudgeServer) -> list[dict[str, Any]]:
    """The OpenLineage events of one nightly run over a day of 40 logged rows."""
    lake, events = tmp_path / "lake", tmp_path / "openlineage.json"
    (lake / "raw" / f"dt={DAY}").mkdir(parents=True)
    pq.write_table(sample_interactions(40, day=DAY), lake / "raw" / f"dt={DAY}" / "part-0.parquet")
    environment = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "RAGAS_OPS_"))},
        "PYTHONPATH": f"{PROJECT}:{PROJECT / 'testkit'}",
        "AIRFLOW_HOME": str(tmp_path / "airflow"),
        "AIRFLOW__CORE__DAGS_FOLDER": str(PROJECT / "dags"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__UNIT_TEST_MODE": "True",
        "AIRFLOW__OPENLINEAGE__TRANSPORT": json.dumps(
            {"type": "file", "log_file_path": str(events), "append": True}
        ),
        "AIRFLOW__OPENLINEAGE__NAMESPACE": "ragas-ops-test",
        "RAGAS_OPS_PIPELINE_RAW_URI": str(lake / "raw"),
        "RAGAS_OPS_PIPELINE_WAREHOUSE_URI": str(lake / "warehouse"),
        "RAGAS_OPS_PIPELINE_SEGMENTS": "app,model_version",
        "RAGAS_OPS_JUDGE_BASE_URL": judge_server.base_url,
        "RAGAS_OPS_JUDGE_MODEL": "test-judge",
        "RAGAS_OPS_JUDGE_EMBEDDING_MODEL": "test-embedding",
        "RAGAS_OPS_JUDGE_CACHE_PATH": str(tmp_path / "cache" / "judge.sqlite"),
        "RAGAS_OPS_JUDGE_RPM": "none",
        "RAGAS_OPS_JUDGE_TPM": "none",
        "OPENAI_API_KEY": TEST_KEY,
    }
    for command in (["-m", "airflow", "db", "migrate"], ["-c", RUN]):
        done = subprocess.run(
            [sys.executable, *command],
            env=environment,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    assert "state: success" in done.stdout, done.stdout[-2000:]
    assert TEST_KEY not in events.read_text()
    return [json.loads(line) for line in events.read_text().splitlines()]


@pytest.mark.slow
def test_a_nightly_run_names_its_three_output_datasets_with_their_schema(
    tmp_path: Path, judge_server: JudgeServer
) -> None:
    events = nightly_run_with_lineage(tmp_path, judge_server)

    warehouse = (tmp_path / "lake" / "warehouse").resolve()
    outputs = {
        event["job"]["name"]: event["outputs"]
        for event in events
        if event["eventType"] == "COMPLETE" and event["job"]["name"].count(".") == 1
    }
    written = {
        job: [(output["namespace"], output["name"]) for output in found]
        for job, found in outputs.items()
        if found
    }
    assert written == {
        "ragas_ops_nightly.publish": [("file", f"{warehouse}/scored")],
        "ragas_ops_nightly.aggregate": [("file", f"{warehouse}/daily_metrics")],
        "ragas_ops_nightly.report": [("file", f"{warehouse}/reports")],
    }
    for job, table in (("publish", "scored"), ("aggregate", "daily_metrics")):
        [output] = outputs[f"ragas_ops_nightly.{job}"]
        fields = {field["name"]: field["type"] for field in output["facets"]["schema"]["fields"]}
        day_file = warehouse / table / f"dt={DAY}" / f"{table}.parquet"
        assert fields == {field.name: str(field.type) for field in pq.read_schema(day_file)}
    scored_fields = outputs["ragas_ops_nightly.publish"][0]["facets"]["schema"]["fields"]
    assert {"faithfulness_score", "faithfulness_status", "cost_usd"} <= {
        field["name"] for field in scored_fields
    }
    assert "schema" not in outputs["ragas_ops_nightly.report"][0].get("facets", {})
