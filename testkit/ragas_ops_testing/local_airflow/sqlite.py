"""Airflow's metadata database on SQLite, made to wait instead of failing under load. Used by
`ragas-ops airflow up`, which names these by import path in its Airflow settings.

SQLite lets one writer in at a time, and every Airflow process writes to the one file.

- Python's sqlite3 gives up on a locked database after 5 s; `CONNECT_ARGS` (for
  `[database] sql_alchemy_connect_args`) waits up to a minute.
- A transaction that reads and then writes (a SAVEPOINT, as `airflow backfill create` uses for
  each run it creates) fails at once with "database is locked", whatever the timeout, when
  another process wrote in between: SQLite cannot upgrade its read snapshot. For the
  `airflow` commands that make or clear runs while the components run (`backfill`, `dags`,
  `tasks`), `create_metadata_engine` (put in `airflow_local_settings.py`) begins every
  transaction with BEGIN IMMEDIATE, which waits for the write lock first: SQLAlchemy's
  documented recipe. Not for the components (their transactions are many and Airflow retries
  them) nor for `db` (a migration holds a lock on one connection while it works on another).

This module imports nothing heavy: every Airflow process imports it at start-up.
"""

from __future__ import annotations

import sys
from typing import Any

BUSY_TIMEOUT_SECONDS = 60.0
CONNECT_ARGS: dict[str, Any] = {"timeout": BUSY_TIMEOUT_SECONDS}
CONNECT_ARGS_ASYNC: dict[str, Any] = {"timeout": BUSY_TIMEOUT_SECONDS}
IMMEDIATE_COMMANDS = frozenset({"backfill", "dags", "tasks"})

LOCAL_SETTINGS = '''\
"""Written by `ragas-ops airflow up` (see ragas_ops_testing.local_airflow.sqlite); replaced
by it."""

from ragas_ops_testing.local_airflow.sqlite import create_metadata_engine

__all__ = ["create_metadata_engine"]
'''


def begins_immediately(argv: list[str]) -> bool:
    """Whether this process is an `airflow` command whose transactions begin immediately."""
    return len(argv) > 1 and argv[1] in IMMEDIATE_COMMANDS


def create_metadata_engine(
    sql_alchemy_conn: str, *, engine_args: dict[str, Any], connect_args: dict[str, Any]
) -> Any:
    """Airflow's engine (as `airflow.settings.create_metadata_engine` makes it); on SQLite, in
    the commands of IMMEDIATE_COMMANDS, every transaction begins with BEGIN IMMEDIATE."""
    from sqlalchemy import create_engine, event

    engine = create_engine(sql_alchemy_conn, connect_args=connect_args, **engine_args)
    if engine.dialect.name != "sqlite" or not begins_immediately(sys.argv):
        return engine

    @event.listens_for(engine, "connect")
    def leave_transactions_to_sqlalchemy(dbapi_connection: Any, record: Any) -> None:
        dbapi_connection.isolation_level = None  # sqlite3 emits no BEGIN of its own

    @event.listens_for(engine, "begin")
    def begin_immediate(connection: Any) -> None:
        connection.exec_driver_sql("BEGIN IMMEDIATE")

    return engine
