"""The nightly pipeline as plain functions, one module per stage; `dags/` wires them into
Airflow tasks.

    plan.plan_day -> score.score_chunk (one per chunk; batch_chunk in batch mode)
        -> publish.publish_day -> aggregate.aggregate_day -> report.report_day

`chunks` reads a chunk's rows, `share` gives a scoring task its share of the judge, `manifest`
records what a run did (and the day's spend), `lake_safety` keeps runs of one day apart. Every
stage is idempotent: a retried or rerun stage overwrites what it wrote before, and the judge
cache makes rescoring unchanged rows free.
"""
