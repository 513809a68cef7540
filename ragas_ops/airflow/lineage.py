"""OpenLineage: the nightly DAG's publish, aggregate and report tasks name the datasets they
wrote, the two tables with their schema, when Airflow's OpenLineage provider is installed.

The three are TaskFlow tasks, from which the provider extracts nothing but their source code.
Its default extractor asks any operator that has a `get_openlineage_facets_on_complete`
method for the task's lineage once it succeeded; `declare_outputs` gives the operator the
DAG file built for each task that method. Without the provider nothing calls it, and the DAG
file imports nothing of OpenLineage (the method imports it when called, in the task).

The datasets follow OpenLineage's naming: a table is its folder below the warehouse
(`<warehouse>/scored`, `<warehouse>/daily_metrics`, `<warehouse>/reports`) in the namespace
`file` for a local warehouse or `s3://<bucket>` on S3, in both table formats. The schema is the
written day's (the Parquet file's footer, or the Iceberg table's); reports are files and have
none.
"""

from __future__ import annotations

from functools import partial
from typing import Any
from urllib.parse import urlparse

OUTPUT_TABLES = {"publish": "scored", "aggregate": "daily_metrics", "report": "reports"}
"""The table each task writes."""


def declare_outputs(task_output: Any) -> None:
    """Give the task behind `task_output` (what a TaskFlow task returns in the DAG) the method
    the OpenLineage provider asks for its outputs."""
    operator = task_output.operator
    table = OUTPUT_TABLES[operator.task_id]
    operator.get_openlineage_facets_on_complete = partial(lineage_on_complete, table)


def dataset_address(warehouse_uri: str, table: str) -> tuple[str, str]:
    """(namespace, name) of a warehouse folder, as OpenLineage names files and objects."""
    parsed = urlparse(warehouse_uri)
    if parsed.scheme in ("s3", "s3a", "gs"):
        return f"{parsed.scheme}://{parsed.netloc}", f"{parsed.path.strip('/')}/{table}".lstrip("/")
    from pathlib import Path

    path = parsed.path if parsed.scheme == "file" else warehouse_uri
    return "file", f"{Path(path).resolve()}/{table}"


def table_schema(table: str, day: str) -> list[tuple[str, str]]:
    """(column, type) of `table` as written for `day`; none for the reports."""
    if table == "reports":
        return []
    import pyarrow.parquet as pq

    from ragas_ops.airflow import task_context
    from ragas_ops.tables.format import IcebergDayTables, day_tables

    settings = task_context.pipeline_settings()
    lake = task_context.lake_for(settings)
    tables = day_tables(lake, settings)
    if isinstance(tables, IcebergDayTables):
        schema = tables.tables.schema(table)
    else:
        location = lake.scored(day) if table == "scored" else lake.daily_metrics(day)
        schema = pq.read_schema(location.path, filesystem=location.filesystem)
    return [(field.name, str(field.type)) for field in schema]


def lineage_on_complete(table: str, task_instance: Any) -> Any:
    """The provider's `OperatorLineage` of a task that wrote `table` for the run's day."""
    from airflow.providers.openlineage.extractors import OperatorLineage
    from openlineage.client.event_v2 import Dataset
    from openlineage.client.facet_v2 import schema_dataset

    from ragas_ops.airflow import task_context

    # The run's day as the task saw it; no XCom: the provider calls this in a forked process,
    # where a request to the task's supervisor would wait out the provider's timeout.
    day = task_context.day_of_run(task_instance.get_template_context())
    warehouse_uri = task_context.pipeline_settings().pipeline.warehouse_uri
    namespace, name = dataset_address(warehouse_uri, table)
    facets: dict[str, Any] = {}
    fields = table_schema(table, day)
    if fields:
        facets["schema"] = schema_dataset.SchemaDatasetFacet(
            fields=[
                schema_dataset.SchemaDatasetFacetFields(name=column, type=kind)
                for column, kind in fields
            ]
        )
    return OperatorLineage(outputs=[Dataset(namespace=namespace, name=name, facets=facets)])
