"""What people read: daily aggregates and the regression check, the report, the BI SQL
and the "RAG quality" view."""
