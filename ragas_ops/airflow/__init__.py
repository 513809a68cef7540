"""Everything that imports Airflow: the task context helpers, the operators, triggers and
hooks, the Celery settings of a deployment. The only room of the package that may import
`airflow` (the local-Airflow launcher and the demo are in the test kit: ragas_ops_testing.
local_airflow)."""
