"""The warehouse's table formats, behind one seam (`format.DayTables`, chosen by
`warehouse.table_format`): `parquet` (the default), Hive-style day folders of Parquet files;
`iceberg`, the same tables as Apache Iceberg tables in a SQL catalog (`iceberg.py`, the
`[iceberg]` extra): one atomic overwrite per day, snapshots to travel back to, and a schema
history."""
