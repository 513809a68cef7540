"""The `[notify]` section of the config file: when the morning message is sent, through which
Airflow connection, in which shape. A settings module: it imports nothing of ragas_ops but the
settings toolkit."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ragas_ops.settings_fields import setting

NotifyWhen = Literal["never", "regressions", "always"]
NotifyStyle = Literal["slack", "json", "email"]


@dataclass
class NotifySpec:
    """The morning message's settings (docs/notify.md)."""

    when: NotifyWhen = "never"
    """`never`; `regressions`: on a night whose verdict is a regression, or that did not
    finish; `always`: every night."""
    conn_id: str = "ragas_ops_notify"
    """The Airflow connection it is sent through: an HTTP connection whose host is the
    webhook's URL (`slack`, `json`), or an SMTP connection (`email`)."""
    style: NotifyStyle = "slack"
    """`slack`: a Slack incoming webhook's JSON (`{"text": ...}`, mrkdwn); `json`: the message
    as fields (`verdict`, `moved`, `cost_usd`, `warnings`, `report_url`, `text`...) for any
    webhook; `email`: an e-mail through Airflow's SMTP connection."""
    report_url: str | None = setting(None)
    """The report's link, with `{day}` for the day (e.g. the quality page,
    `https://airflow.example.com/rag-quality/report?day={day}`); none: the report file's URI."""
    email_to: str | None = setting(None)
    """`email`: the recipients, comma-separated."""
