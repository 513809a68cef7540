"""A model's shutdown seen coming: once per run, the endpoint is asked about the judge's models
(`GET /v1/models/{model}`: OpenAI's `shutdown_date`, and a `Sunset` header where a provider
sends one, RFC 8594), and a model that shuts down within `judge.shutdown_warning_days` is
named with its date and the successor the price table knows. An endpoint that does not
answer this, or answers without a date (a gateway, a proxy), is not the last word: the dates
OpenAI announced that this project keeps (`ANNOUNCED_SHUTDOWNS`) are used then, and a model
neither names gives no warning and no failure. One that answers something odd (a
`shutdown_date` of `1e308`, `-1e20`, `NaN`, text that is no date, a lookup that fails in any
way) gives a warning in the log naming the endpoint and the field, never a refusal: the
lookup is advice."""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import urlsplit

import openai

from ragas_ops.judge.endpoint import effective_base_url
from ragas_ops.judge.limits.provider import provider_number
from ragas_ops.pricing import Price, successor_of
from ragas_ops.secrets import Secret

log = logging.getLogger(__name__)

LOOKUP_TIMEOUT_SECONDS = 5.0
"""A model's lookup is a courtesy: it never holds a run up for long."""
LAST_EPOCH_SECOND = 253_402_300_799
"""9999-12-31T23:59:59Z: the last moment a `date` holds."""

ANNOUNCED_SHUTDOWNS: Mapping[str, date] = {
    # OpenAI's deprecations page, "2026-06-11: GPT-5 and o3 model deprecations" (read
    # 2026-12-06 through the copies quoted in docs/judge.md): the aliases and their snapshots.
    **dict.fromkeys(
        ("gpt-5", "gpt-5-mini", "gpt-5-nano", "gpt-5-pro", "o3", "o3-pro"), date(2026, 12, 11)
    ),
    # "2026-10-14: GPT-4 series model deprecations".
    **dict.fromkeys(("gpt-4o", "gpt-4o-mini", "gpt-4.1", "gpt-4.1-mini"), date(2027, 1, 14)),
}
"""Shutdown dates OpenAI announced, by model (a dated snapshot `-YYYY-MM-DD` of one shares its
date): what a run warns of when the endpoint does not say."""


def announced_shutdown(model: str) -> date | None:
    """The announced shutdown of `model` or of the model it is a dated snapshot of."""
    name = _SNAPSHOT.sub("", model)
    return ANNOUNCED_SHUTDOWNS.get(name)


_SNAPSHOT = re.compile(r"-\d{4}-\d{2}-\d{2}$")


@dataclass(frozen=True)
class ShutdownNotice:
    """A model of the judge that shuts down soon."""

    role: str
    """`judge` or `embedding`."""
    model: str
    shutdown_date: date
    days_left: int
    successor: str | None

    def line(self) -> str:
        when = (
            f"shut down on {self.shutdown_date.isoformat()} ({-self.days_left} days ago)"
            if self.days_left < 0
            else f"shuts down on {self.shutdown_date.isoformat()} (in {self.days_left} days)"
        )
        then = (
            f"the price table's successor is {self.successor}"
            if self.successor
            else "the price table names no successor"
        )
        return (
            f"{self.role} model {self.model} {when}; {then}: see docs/judge.md#moving-to-another-"
            "model (a shadow judge shows what the change does to the scores)"
        )


def shutdown_notices(
    models: Mapping[str, str],
    base_url: str | None,
    api_key: Secret,
    prices: Mapping[str, Price],
    *,
    warning_days: int,
    today: date,
) -> list[ShutdownNotice]:
    """The models (by role) that shut down within `warning_days` of `today`, as the endpoint
    says; none when it says nothing or cannot be asked (an odd answer: a warning in the log,
    naming the endpoint and the field)."""
    notices = []
    where = _shown_endpoint(base_url)
    try:
        client = openai.OpenAI(
            api_key=api_key.reveal() or "no-key",
            base_url=effective_base_url(base_url),
            timeout=LOOKUP_TIMEOUT_SECONDS,
            max_retries=0,
        )
    except Exception as error:
        log.warning("%s/models: the shutdown lookup failed (%s): no warning", where, error)
        return []
    with client:
        for role, model in dict.fromkeys(models.items()):
            try:
                ends = _shutdown_date(client, model, where)
            except Exception as error:
                log.warning(
                    "%s/models/%s: the shutdown lookup failed (%s: %s): no date from it",
                    where,
                    model,
                    type(error).__name__,
                    error,
                )
                ends = None
            ends = ends or announced_shutdown(model)
            if ends is None:
                continue
            days_left = (ends - today).days
            if days_left <= warning_days:
                notices.append(
                    ShutdownNotice(role, model, ends, days_left, successor_of(model, prices))
                )
    return notices


def _shown_endpoint(base_url: str | None) -> str:
    """The endpoint as a log line may name it: no user, password or query."""
    parts = urlsplit(effective_base_url(base_url) or "https://api.openai.com/v1")
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}{parts.path.rstrip('/')}"


def _shutdown_date(client: openai.OpenAI, model: str, where: str) -> date | None:
    try:
        raw = client.models.with_raw_response.retrieve(model)
        body: Any = raw.http_response.json()
    except (openai.OpenAIError, ValueError) as error:  # no answer, 404, not JSON: no warning
        log.debug("model %s: no lifecycle information (%s)", model, type(error).__name__)
        return None
    said = body.get("shutdown_date") if isinstance(body, dict) else None
    found = _as_date(said)
    if found is None and said is not None:
        log.warning(
            "%s/models/%s: field shutdown_date holds %.60r, not a date (ISO 8601, or seconds "
            "since the epoch up to year 9999): ignored, no shutdown warning",
            where,
            model,
            said,
        )
    sunset = raw.headers.get("sunset")
    if found is None and sunset:
        found = _sunset(sunset)
        if found is None:
            log.warning(
                "%s/models/%s: header Sunset holds %.60r, not an HTTP date: ignored",
                where,
                model,
                sunset,
            )
    return found


def _as_date(value: Any) -> date | None:
    """A `shutdown_date` as OpenAI gives it: an ISO date, or seconds since the epoch (read by
    `provider_number`: `inf`, `nan`, negative or past year 9999 is none)."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        seconds = provider_number(value, lowest=0, highest=LAST_EPOCH_SECOND)
        return None if seconds is None else datetime.fromtimestamp(seconds, UTC).date()
    if isinstance(value, str):
        try:
            return date.fromisoformat(value[:10])
        except ValueError:
            return None
    return None


def _sunset(header: str | None) -> date | None:
    """RFC 8594's `Sunset: <HTTP-date>`."""
    if not header:
        return None
    try:
        return parsedate_to_datetime(header).date()
    except (TypeError, ValueError, OverflowError):
        return None
