"""Everything that imports Airflow: the task context helpers, the operators and triggers,
the demo's DagBag driver. The only room of the package that may import `airflow`."""
