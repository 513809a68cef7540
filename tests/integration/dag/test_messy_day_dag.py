"""A day with files whose column names a reader of the scored table would change or mix up
(issue 30), over the real DAG (`dag.test()`): each such file is rejected at plan time on its
own merits, named with its reason in the manifest and both reports, and never retried; every
row of the good files is scored and published."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ragas_ops.samples import sample_interactions
from tests.integration.dag import test_pipeline_dag as dag_tests
from tests.integration.dag.test_lake_safety_dag import (
    manifests,
    raw_day,
    scored_ids,
    task_instances,
)
from tests.integration.dag.test_pipeline_dag import DAY, run_dag, state, warehouse

airflow_database = dag_tests.airflow_database
lake = dag_tests.lake


def with_column(table: pa.Table, name: str, values: list[object]) -> pa.Table:
    return table.append_column(name, pa.array(values))


def test_files_with_output_named_case_colliding_or_dt_columns_are_rejected_alone(
    lake: Path,
) -> None:
    folder = raw_day(lake)
    good = [sample_interactions(20, seed=seed, day=DAY) for seed in (21, 22)]
    pq.write_table(good[0], folder / "part-0.parquet")
    pq.write_table(good[1], folder / "part-1.parquet")
    bad = {
        "output-named.parquet": ("faithfulness_score", "output column(s) ['Faithfulness_Score']"),
        "judge-named.parquet": ("judge", "output column(s) ['judge']"),
        "case-twins.parquet": ("Question", "differ only in case ('question' and 'Question')"),
        "partition-key.parquet": ("dt", "a column 'dt'"),
    }
    for seed, (name, (column, _)) in enumerate(bad.items(), start=30):
        table = sample_interactions(5, seed=seed, day=DAY)
        column = "Faithfulness_Score" if column == "faithfulness_score" else column
        pq.write_table(with_column(table, column, ["x"] * 5), folder / name)

    run = run_dag()

    # on_bad_input = fail (the default): the day is published, then the run fails to be seen
    assert state(run) == "failed"
    assert scored_ids(lake) == good[0].column("id").to_pylist() + good[1].column("id").to_pylist()
    scored = pq.read_table(warehouse(lake, "scored", f"dt={DAY}", "scored.parquet"))
    assert scored.column("faithfulness_status").to_pylist().count("ok") >= 30, "really scored"
    assert not {"judge_1", "Question", "dt"} & set(scored.column_names) - {"judge"}
    scoring = task_instances(run, "score_chunk")
    assert len(scoring) == 2, "one chunk per good file, none for a rejected one"
    assert all(ti.try_number == 1 for ti in scoring), "nothing retried"
    (manifest,) = manifests(lake)
    reasons = {
        Path(item["path"]).name: item["reason"] for item in manifest["plan"]["rejected_files"]
    }
    assert set(reasons) == set(bad)
    for name, (_, reason) in bad.items():
        assert reason in reasons[name], (name, reasons[name])
    reports = warehouse(lake, "reports", f"dt={DAY}")
    for report in ("report.html", "report.md"):
        text = (reports / report).read_text()
        for name in bad:
            assert name in text, (report, name)


def test_a_contract_error_found_while_scoring_fails_the_task_without_retries(
    lake: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A plan that let an output-named column through (as the plan did before it checked
    names): the scoring task's ContractError is deterministic, so it is not tried again."""
    import ragas_ops.pipeline.plan

    monkeypatch.setattr(ragas_ops.pipeline.plan, "output_column_names", lambda names: [])
    monkeypatch.setenv("RAGAS_OPS_PIPELINE_TASK_RETRIES", "2")
    monkeypatch.setenv("RAGAS_OPS_PIPELINE_RETRY_DELAY_SECONDS", "0.1")
    table = sample_interactions(5, seed=40, day=DAY)
    pq.write_table(with_column(table, "cost_usd", [0.1] * 5), raw_day(lake) / "part-0.parquet")

    run = run_dag()

    assert state(run) == "failed"
    (scoring,) = task_instances(run, "score_chunk")
    assert scoring.try_number == 1, "a ContractError is not retried"
    captured = capsys.readouterr()
    assert "the input breaks the contract" in captured.out + captured.err
