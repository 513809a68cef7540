"""The nightly pipeline as plain functions; `dags/` wires them into Airflow tasks."""
