"""Airflow UI glue: a "RAG quality" page in Airflow's navigation (Browse > RAG quality).

The page is `ragas_ops.quality.app`, mounted in Airflow's api-server at /rag-quality and shown
by the UI in a frame; its labelling page, /rag-quality/label, labels as the logged-in user.
Every route depends on Airflow's own authentication and authorisation
(`requires_access_dag` on the nightly DAG): the browser's Airflow session cookie or an API
token is needed, and the user must be allowed to read the DAG; anyone else gets 401/403.

Importing this file (every Airflow component loads plugins) imports nothing heavy: the app is
built on its first request.
"""

from __future__ import annotations

import threading
from typing import Any

from airflow.plugins_manager import AirflowPlugin

URL_PREFIX = "/rag-quality"
DAG_ID = "ragas_ops_nightly"


def build_app() -> Any:
    """The page's FastAPI app, guarded by Airflow's authentication."""
    from airflow.api_fastapi.core_api.security import requires_access_dag

    from ragas_ops.quality.app import create_app

    return create_app(
        requires_access_dag("GET", param_dag_id=DAG_ID), s3=_s3_options, labeller=_labeller()
    )


def _labeller() -> Any:
    """A dependency naming the logged-in Airflow user: the labeller of the labelling page's
    labels (anyone who may read the nightly DAG may label; the route's access check runs
    first)."""
    from airflow.api_fastapi.core_api.security import get_user
    from fastapi import Depends

    # A default, not an annotation: this module's annotations are strings, and FastAPI resolves
    # them in the module's globals, where a name imported here is not.
    def labeller(user: Any = Depends(get_user)) -> str:  # noqa: B008 (FastAPI dependency)
        return str(user.get_name())

    return labeller


def _s3_options(settings: Any) -> Any:
    """S3 credentials from the pipeline's Airflow aws connection, if one is configured (the
    api-server reads connections from the metadata database and secrets backends)."""
    conn_id = settings.pipeline.aws_conn_id
    if not conn_id:
        return None
    from airflow.models.connection import Connection

    from ragas_ops.airflow.task_context import s3_options_from

    return s3_options_from(Connection.get_connection_from_secrets(conn_id))


class LazyApp:
    """An ASGI app that builds the real one on its first request."""

    def __init__(self) -> None:
        self._app: Any = None
        self._lock = threading.Lock()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":  # nothing to start or stop
            return
        if self._app is None:
            with self._lock:
                if self._app is None:
                    self._app = build_app()
        await self._app(scope, receive, send)


class RagasOpsPlugin(AirflowPlugin):
    name = "ragas_ops"
    fastapi_apps = [  # noqa: RUF012 (AirflowPlugin declares these as class lists)
        {"app": LazyApp(), "url_prefix": URL_PREFIX, "name": "RAG quality"}
    ]
    external_views = [  # noqa: RUF012
        {
            "name": "RAG quality",
            "href": f"{URL_PREFIX}/",
            "destination": "nav",
            "category": "browse",
            "url_route": "rag-quality",
        }
    ]
