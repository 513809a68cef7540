"""The judge's endpoint and key from an Airflow connection (`judge.conn_id`).

The connection has the shape of the OpenAI provider's `openai` type: its host is the base URL
(`https://api.openai.com/v1`, or any OpenAI-compatible endpoint), its password is the key. So
the key lives where Airflow users keep credentials (a secrets backend, the Connections UI,
`AIRFLOW_CONN_RAGAS_OPS_JUDGE`) and Airflow masks it in task logs as it masks every connection
password. The scoring tasks and the batch trigger both resolve it here; a connection that is not
defined leaves `judge.base_url` and `judge.api_key_env` in charge, as in the CLI.

The key leaves this module only inside a `Secret` (its repr is masked), or in the mapping that
`environment` hands to the judge's factory in place of the process environment.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from airflow.sdk import BaseHook
from airflow.sdk.exceptions import AirflowNotFoundException

from ragas_ops.airflow.task_context import mask_task_logs
from ragas_ops.config import Settings
from ragas_ops.judge.spec import check_base_url
from ragas_ops.secrets import Secret

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class JudgeEndpoint:
    """Where the judge is reached and with which key; `source` says where they came from."""

    base_url: str | None
    api_key: Secret
    source: str


class JudgeHook(BaseHook):
    """The judge's connection: host = base URL, password = API key (the `openai` type)."""

    conn_name_attr = "judge_conn_id"
    default_conn_name = "ragas_ops_judge"
    conn_type = "openai"
    hook_name = "ragas-ops judge (OpenAI-compatible)"

    def __init__(self, judge_conn_id: str = default_conn_name, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.judge_conn_id = judge_conn_id

    @classmethod
    def get_ui_field_behaviour(cls) -> dict[str, Any]:
        return {
            "hidden_fields": ["schema", "port", "login", "extra"],
            "relabeling": {"host": "Base URL", "password": "API key"},
            "placeholders": {"host": "https://api.openai.com/v1"},
        }

    def endpoint(self, base_url: str | None, api_key_env: str) -> JudgeEndpoint | None:
        """The connection's endpoint (its blanks filled from `base_url` and the key in
        `api_key_env`), or None when the connection is not defined."""
        try:
            connection = self.get_connection(self.judge_conn_id)
        except AirflowNotFoundException:
            return None
        return endpoint_of(connection, self.judge_conn_id, base_url, api_key_env)

    async def aendpoint(self, base_url: str | None, api_key_env: str) -> JudgeEndpoint | None:
        """`endpoint` from async code (the triggerer's event loop)."""
        try:
            connection = await self.aget_connection(self.judge_conn_id)
        except AirflowNotFoundException:
            return None
        return endpoint_of(connection, self.judge_conn_id, base_url, api_key_env)


def endpoint_of(
    connection: Any, conn_id: str, base_url: str | None, api_key_env: str
) -> JudgeEndpoint:
    """The endpoint an `openai`-shaped connection gives; what it leaves blank comes from the
    settings (`base_url`) and the environment (`api_key_env`)."""
    url = connection_base_url(connection) or base_url
    if url:
        check_base_url(url, f"connection {conn_id}'s host")
    password = connection.password or os.environ.get(api_key_env, "")
    return JudgeEndpoint(url, Secret(password), f"connection {conn_id}")


def connection_base_url(connection: Any) -> str | None:
    """The base URL of the connection: its host when that is a URL (the JSON or UI form);
    from a URI-form connection (`openai://:KEY@host:port/path`), built from host, port and
    path, over https unless the host is the loopback."""
    host = (connection.host or "").strip()
    if not host:
        return None
    if "://" in host:
        return host
    port = f":{connection.port}" if connection.port else ""
    path = f"/{connection.schema.strip('/')}" if connection.schema else ""
    scheme = "http" if urlsplit(f"//{host}").hostname in ("127.0.0.1", "localhost") else "https"
    return f"{scheme}://{host}{port}{path}"


def judge_endpoint(settings: Settings) -> JudgeEndpoint:
    """Where this task's judge is: the `judge.conn_id` connection when it is defined, else
    `judge.base_url` and the key in `judge.api_key_env` (said once in the task's log)."""
    from ragas_ops.judge.factory import api_key_env

    judge = settings.judge.endpoint
    variable = api_key_env(settings.judge)  # the provider's: OPENAI_API_KEY, ANTHROPIC_API_KEY
    if judge.conn_id:
        found = JudgeHook(judge.conn_id).endpoint(judge.base_url, variable)
        if found is not None:
            mask_task_logs()  # the connection's key, registered by its Secret
            return found
        log.info("no Airflow connection %s: the judge's key from $%s", judge.conn_id, variable)
    key = Secret(os.environ.get(variable, ""))
    return JudgeEndpoint(judge.base_url, key, f"${variable}")


def with_endpoint(settings: Settings, endpoint: JudgeEndpoint) -> tuple[Settings, dict[str, str]]:
    """`settings` pointing at the endpoint, and the environment the judge's factory reads the
    key from (the process environment with the endpoint's key under `judge.api_key_env`)."""
    spec = dataclasses.replace(settings.judge.endpoint, base_url=endpoint.base_url)
    judge = dataclasses.replace(settings.judge, endpoint=spec)
    environ: dict[str, str] = {**os.environ}
    from ragas_ops.judge.factory import api_key_env

    environ[api_key_env(judge)] = endpoint.api_key.reveal()
    return dataclasses.replace(settings, judge=judge), environ


def environment_for(settings: Settings) -> tuple[Settings, Mapping[str, str]]:
    """`with_endpoint` of this task's endpoint (see `judge_endpoint`)."""
    return with_endpoint(settings, judge_endpoint(settings))


def model_shutdown_warnings(settings: Settings) -> list[str]:
    """Once per run (the plan task): the judge's models its endpoint (this task's, as the
    scoring tasks reach it) says shut down soon (`judge.factory.shutdown_warnings`)."""
    from ragas_ops.judge.factory import shutdown_warnings

    judged, environ = environment_for(settings)
    return shutdown_warnings(judged, environ)
