"""The flex tier's settings (`FlexSpec`), which `tiers.TierPolicy` follows; `[judge]` keys of
the config file (see `config.JudgeSettings`). A settings module: it imports nothing of
ragas_ops but the settings toolkit."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ragas_ops.settings_fields import ConfigError, positive, setting

ServiceTier = Literal["default", "flex", "auto"]
FlexDeadline = tuple[Literal["utc_time", "after_seconds"], float]
"""A parsed `judge.flex_deadline`: a UTC time of day (seconds after midnight), or seconds
after the judge started."""


def parse_flex_deadline(text: str, source: str = "judge.flex_deadline") -> FlexDeadline:
    """`HH:MM` (a UTC time of day: the first one after the run starts) or `<seconds>s` (that
    long after the judge of the run starts), or a `ConfigError` saying what is accepted."""
    value = text.strip().lower()
    hours, colon, minutes = value.partition(":")
    if colon and hours.isdigit() and minutes.isdigit() and len(minutes) == 2:
        if int(hours) < 24 and int(minutes) < 60:
            return "utc_time", float(int(hours) * 3600 + int(minutes) * 60)
    elif value.endswith("s"):
        try:
            seconds = float(value[:-1])
        except ValueError:
            seconds = -1.0
        if seconds >= 0 and seconds != float("inf"):
            return "after_seconds", seconds
    raise ConfigError(
        f"{source}: {text!r} is no deadline: expected a UTC time of day `HH:MM` (e.g. 06:30) "
        "or seconds after the run starts with an `s` (e.g. 5400s)"
    )


def check_flex_deadline(value: str, source: str = "judge.flex_deadline") -> None:
    parse_flex_deadline(value, source)


@dataclass
class FlexSpec:
    """Which service tier requests ask for, and when a flex request goes to the standard one."""

    service_tier: ServiceTier = "default"
    """OpenAI's processing tier (docs/flex-tier.md): `default` sends none (the endpoint's own);
    `flex` asks for flex processing (the Batch API's price, slower, capacity 429s); `auto`
    sends OpenAI's `auto` (the tier set in the project's settings), handled as flex may be."""
    timeout_seconds: float = positive(900.0, key="flex_timeout_seconds")
    """Per-request timeout of requests sent as `flex` or `auto` (OpenAI suggests 15 minutes)."""
    fallback_after_seconds: float = setting(300.0, key="flex_fallback_after_seconds", minimum=0)
    """A request answered "resource unavailable" (a flex capacity 429) for this long since the
    first one goes to the standard tier; 0: never (it gives up like a request 429ed often)."""
    deadline: str | None = setting(None, key="flex_deadline", check=check_flex_deadline)
    """After this, new requests go to the standard tier so that the run ends in time: a UTC
    time of day `HH:MM` (the first after the run starts) or `<seconds>s` after it starts;
    None: no deadline."""


TokenLimitParameter = Literal["auto", "max_tokens", "max_completion_tokens"]
SendTemperature = Literal["auto", "yes", "no"]
EFFORT_CHOICES = ("lowest", "provider")
"""`reasoning_effort` besides a model's own values: its lowest, or none sent (the provider's)."""


def check_reasoning_effort(value: str, source: str = "judge.reasoning_effort") -> None:
    if not value.strip() or value != value.strip():
        raise ConfigError(f"{source}: an effort, `lowest` or `provider`, not {value!r}")


@dataclass
class ModelSpec:
    """What the judge's model takes (`profiles.ModelProfile`): its profile by default, each
    part overridable, and the reasoning effort it is asked for."""

    profile: str = setting("auto", key="model_profile")
    """The profile the model's requests are built with (docs/judge.md): `auto`, the one its
    name matches (a model it does not know: `generic`, learning from the endpoint's 400s); or a
    profile's name, for a model on a gateway under a name of its own."""
    limit_parameter: TokenLimitParameter = "auto"
    """The name of the output limit sent: `max_completion_tokens` (every current OpenAI
    model), `max_tokens` (endpoints that know only that one); `auto`: the profile's."""
    send_temperature: SendTemperature = "auto"
    """Whether a prompt's temperature is sent: `no` for a model that takes only its default
    (1); `auto`: the profile's."""
    shutdown_warning_days: int = setting(30, minimum=0)
    """A run warns (score's output, the plan log, the manifest) when the endpoint says the
    judge's or the embedding model shuts down within this many days."""
    reasoning_effort: str = setting("lowest", check=check_reasoning_effort)
    """The reasoning effort asked of a reasoning model: `lowest` (the lowest its profile
    lists: judging needs little thought, and effort costs tokens and time), `provider` (none
    sent: the provider's default, `medium` at OpenAI), or a value of its profile's."""
