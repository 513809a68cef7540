"""What the DAG's tasks need from Airflow: the day a run scores, its run id, and S3 credentials
from an Airflow connection. Imported inside tasks only, never while the DAG file is parsed."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

from ragas_ops.config import Settings, settings_from_environment
from ragas_ops.contract.layout import Lake, parse_day
from ragas_ops.secrets import Secret, mask_log_records, registered_secrets
from ragas_ops.storage import S3Options


def day_of_run(context: Any) -> str:
    """The day a run scores: the `day` parameter when given; else its logical date when that
    is a day (00:00 UTC: scheduled runs and backfills, whose interval [D, D+1) starts there,
    and `airflow dags test ragas_ops_nightly D`, whose inferred manual interval would be the
    day before); else the run's data interval; else the day before the run was asked for (a
    manual run without a day, or one asked for "now")."""
    requested = (context.get("params") or {}).get("day")
    if requested:
        return parse_day(requested)
    logical = context.get("logical_date")
    if logical is not None and _is_midnight_utc(logical):
        return parse_day(logical.astimezone(UTC).date().isoformat())
    start = context.get("data_interval_start")
    if start is not None:
        return parse_day(start.date().isoformat())
    run_after = context["dag_run"].run_after
    return parse_day((run_after - timedelta(days=1)).date().isoformat())


def _is_midnight_utc(moment: datetime) -> bool:
    utc = moment.astimezone(UTC)
    return (utc.hour, utc.minute, utc.second, utc.microsecond) == (0, 0, 0, 0)


def check_conf(context: Any) -> None:
    """A run's conf holds only the DAG's parameters. A mistyped key ("date" for "day") would
    otherwise be dropped, and the run would score another day than the one asked for."""
    conf = getattr(context.get("dag_run"), "conf", None) or {}
    known = set(context["dag"].params)  # the run's `params` hold the conf's keys too
    unknown = sorted(str(key) for key in conf if key not in known)
    if unknown:
        raise ValueError(
            f"the run's conf has key(s) the DAG does not take: {unknown}; its parameters are "
            f'{sorted(known)} (e.g. {{"day": "2026-11-27"}})'
        )


def allow_shrink(context: Any) -> bool:
    """The run's `allow_shrink` parameter: republish a day with fewer rows on purpose."""
    return (context.get("params") or {}).get("allow_shrink") is True


def try_number(context: Any) -> int | None:
    ti = context.get("ti")
    number = getattr(ti, "try_number", None)
    return None if number is None else int(number)


@contextmanager
def skipped_when_superseded() -> Iterator[None]:
    """A step that finds its run's table replaced by a later run's publish is skipped: the
    later run's own steps describe the day."""
    from airflow.sdk.exceptions import AirflowSkipException

    from ragas_ops.pipeline.lake_safety import Superseded

    try:
        yield
    except Superseded as error:
        raise AirflowSkipException(str(error)) from None


@contextmanager
def failed_without_retry() -> Iterator[None]:
    """A fatal judge error (bad key, unknown model, no quota) or an input that breaks the
    contract fails the task at once: a retry would only send the same requests again, or
    read the same file."""
    from airflow.sdk.exceptions import AirflowFailException

    from ragas_ops.contract.inputs import ContractError
    from ragas_ops.judge.base import JudgeFatalError

    try:
        yield
    except JudgeFatalError as error:
        raise AirflowFailException(f"the judge cannot be used, stopping: {error}") from None
    except ContractError as error:
        raise AirflowFailException(f"the input breaks the contract: {error}") from None


def is_backfill(context: Any) -> bool:
    """Whether the run was made by `airflow backfill create` (run type `backfill`)."""
    run_type = getattr(context["dag_run"], "run_type", "")
    return str(getattr(run_type, "value", run_type)) == "backfill"


def pipeline_settings() -> Settings:
    """The task's settings; first, its log records are masked (every task calls this). The
    settings' criteria are registered as metrics here, so every task (the report's, the
    labels', not only the scoring ones) knows them, and the metric packages installed in the
    worker are looked for again (a package installed after the worker started is found)."""
    from ragas_ops.metrics import load_metric_packages
    from ragas_ops.metrics.criteria import register_criteria

    load_metric_packages()
    settings = settings_from_environment()
    register_criteria(settings.criteria)
    Secret(os.environ.get(settings.judge.endpoint.api_key_env, ""))  # registers the key
    mask_task_logs()
    return settings


_GIVEN_TO_AIRFLOW: set[str] = set()


def mask_task_logs() -> None:
    """Mask the secrets this process holds (every `Secret` registers its value) in every log
    record (`mask_log_records`), and hand them to Airflow's secrets masker, which masks the
    task's own log output in the task process and in its supervisor."""
    from airflow.sdk.log import mask_secret

    mask_log_records()
    for value in registered_secrets():
        if value not in _GIVEN_TO_AIRFLOW:
            if _supervised_in_process():
                _mask_in_this_process(value)
            else:
                mask_secret(value)
            _GIVEN_TO_AIRFLOW.add(value)


def _supervised_in_process() -> bool:
    """Whether the task's supervisor is this process (`airflow dags test`, `dag.test()`)."""
    from airflow.sdk.execution_time import task_runner

    comms = getattr(task_runner, "SUPERVISOR_COMMS", None)
    return type(comms).__name__ == "InProcessSupervisorComms"


def _mask_in_this_process(value: str) -> None:
    """Airflow's masker of this process only. Airflow 3.3's in-process supervisor logs every
    message it is sent at DEBUG, a `MaskSecret`'s value included (its real supervisor omits
    that body): this process's masker is the supervisor's, so nothing needs sending."""
    from airflow.sdk._shared.secrets_masker import mask_secret as mask_here

    mask_here(value)


def lake_for(settings: Settings) -> Lake:
    """The lake, with S3 credentials from the Airflow aws connection when one is configured."""
    conn_id = settings.pipeline.aws_conn_id
    if not conn_id:
        return Lake(settings.pipeline)
    from airflow.sdk import BaseHook

    return Lake(settings.pipeline, s3_options_from(BaseHook.get_connection(conn_id)))


def s3_options_from(connection: Any) -> S3Options:
    """S3 options from an Airflow aws connection: login/password are the key pair, the extra
    may hold `endpoint_url`, `region_name` and `aws_session_token`."""
    extra = connection.extra_dejson
    defaults = S3Options.from_environ()
    token = extra.get("aws_session_token")
    options = S3Options(
        endpoint_url=extra.get("endpoint_url") or defaults.endpoint_url,
        region=extra.get("region_name") or defaults.region,
        access_key=Secret(connection.login) if connection.login else None,
        secret_key=Secret(connection.password) if connection.password else None,
        session_token=Secret(token) if token else None,
    )
    mask_task_logs()
    return options
