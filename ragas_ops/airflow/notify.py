"""The morning message's Airflow notifier: Airflow 3's `BaseNotifier`, sending through an
Airflow connection (an HTTP connection to a Slack incoming webhook or any JSON webhook, or an
SMTP connection), so the webhook's secret URL or the mail password live where Airflow keeps
connections, never in ragas-ops' settings.

The nightly DAG has it as its `on_success_callback` and `on_failure_callback` (a callback's
outcome never changes the run's state); it finds the night's manifest from the run's day and
id, and reads `[notify]` when it is called.
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any

from airflow.sdk.bases.notifier import BaseNotifier

from ragas_ops.notify.spec import NotifySpec

if TYPE_CHECKING:  # the message's module imports pyarrow: not at DAG parsing
    from ragas_ops.quality.morning_message import MorningMessage

log = logging.getLogger(__name__)


class MorningNotifier(BaseNotifier):
    """Sends the night's `MorningMessage` as `spec` says (`[notify]`)."""

    def __init__(self, spec: NotifySpec | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.spec = spec

    def render_template_fields(self, context: Any, jinja_env: Any = None) -> None:
        """Nothing to render (no template fields): and the DAG `dag.test()` gives a DAG
        callback is a serialized one without a template environment."""
        if self.template_fields:
            super().render_template_fields(context, jinja_env)

    def notify(self, context: Any) -> None:
        from ragas_ops.airflow import task_context
        from ragas_ops.quality.morning_message import is_due

        spec = self.spec or task_context.pipeline_settings().notify
        if spec.when == "never":
            return
        message = night_message(context, spec)
        if not is_due(message, spec):
            log.info(
                "morning message not sent: notify.when = %s, verdict %s", spec.when, message.verdict
            )
            return
        send(message, spec)
        log.info("morning message sent through connection %s (%s)", spec.conn_id, spec.style)


def night_message(context: Any, spec: NotifySpec) -> MorningMessage:
    """The message of the run in `context`, from its latest manifest (a run that wrote none
    did not finish)."""
    from ragas_ops.airflow import task_context
    from ragas_ops.pipeline.manifest import read_manifest
    from ragas_ops.quality.morning_message import morning_message, unfinished_message

    day = task_context.day_of_run(context)
    run_id = str(context["run_id"])
    lake = task_context.lake_for(task_context.pipeline_settings())
    try:
        manifest = read_manifest(lake, day, run_id)
    except FileNotFoundError:
        return unfinished_message(day, run_id, "no manifest was written")
    if "report" not in manifest:
        return unfinished_message(day, run_id, "published, but no report was written")
    return morning_message(day, manifest, spec)


def send(message: MorningMessage, spec: NotifySpec) -> None:
    """Send `message` through the Airflow connection `spec.conn_id`, in `spec.style`."""
    if spec.style == "email":
        send_email(message, spec)
        return
    from airflow.providers.http.hooks.http import HttpHook

    body = {"text": message.text()} if spec.style == "slack" else message.fields()
    hook = HttpHook(method="POST", http_conn_id=spec.conn_id)
    # The connection's host is the webhook's URL, whole (its path is the secret): no endpoint.
    hook.run(
        endpoint=None,
        data=json.dumps(body),
        headers={"Content-Type": "application/json"},
        extra_options={"timeout": 30, "check_response": True},
    )


def send_email(message: MorningMessage, spec: NotifySpec) -> None:
    """`message` as a plain-text e-mail through Airflow's SMTP connection `spec.conn_id`."""
    from airflow.providers.smtp.hooks.smtp import SmtpHook

    if not spec.email_to:
        raise ValueError("notify.style = email needs notify.email_to (the recipients)")
    with SmtpHook(smtp_conn_id=spec.conn_id) as smtp:
        smtp.send_email_smtp(
            to=[address.strip() for address in spec.email_to.split(",") if address.strip()],
            subject=message.title,
            html_content=f"<pre>{_escaped(message.text(bold=''))}</pre>",
        )


def _escaped(text: str) -> str:
    from html import escape

    return escape(text)
