"""The morning message's settings (`spec`, the `[notify]` section); what it says is
`ragas_ops.quality.morning_message`, and the Airflow notifier that sends it
`ragas_ops.airflow.notify`."""
