"""The warehouse's table formats. `parquet` (the default) is Hive-style day folders of Parquet
files, published by `pipeline`; `iceberg` keeps the same tables as Apache Iceberg tables in a SQL
catalog (`iceberg.py`, the `[iceberg]` extra): one atomic overwrite per day, snapshots to travel
back to, and a schema history."""
