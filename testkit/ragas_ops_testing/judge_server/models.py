"""The models the test judge plays: a classic model (any name it does not know), reasoning
models of each kind OpenAI sells on Chat Completions, and a retired one.

A reasoning model is as strict as OpenAI's (checked 2026-12-05, docs/judge.md): `max_tokens`
is refused (400 `unsupported_parameter`, "Use 'max_completion_tokens' instead"), a
`temperature` other than 1 is refused (400 `unsupported_value`; the gpt-5.1 kind takes one only
with `reasoning_effort: "none"`), an effort the model lacks is refused (400 `unsupported_value`,
param `reasoning_effort`), and `service_tier: "flex"` is taken only by reasoning models. Its
hidden reasoning tokens, spent by effort (`medium` when none is sent), come out of
`max_completion_tokens` first: a budget they use up gives `finish_reason: "length"` and empty
content. They are reported in `usage.completion_tokens_details.reasoning_tokens` and counted in
`completion_tokens`, so they are billed as output.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

GPT5_EFFORTS = ("minimal", "low", "medium", "high")
GPT51_EFFORTS = ("none", "low", "medium", "high", "xhigh")
GPT6_EFFORTS = ("none", "low", "medium", "high", "xhigh", "max")
"""gpt-5.6 and gpt-6.x, as OpenAI's model pages list them (temperature only with none)."""
O_SERIES_EFFORTS = ("low", "medium", "high")
DEFAULT_EFFORT = "medium"

REASONING_TOKENS_BY_EFFORT: Mapping[str, int] = {
    "none": 0,
    "minimal": 12,
    "low": 64,
    "medium": 192,
    "high": 512,
    "xhigh": 1024,
    "max": 2048,
}
"""The mean hidden reasoning tokens of one reply at each effort; a reply spends this
+-25%, drawn from its prompt (the same request thinks as long each time)."""


@dataclass(frozen=True)
class ServedModel:
    """What one model takes on Chat Completions, and when it shuts down."""

    id: str
    efforts: tuple[str, ...] = ()
    """Its `reasoning_effort` values; () for a classic model (no hidden reasoning)."""
    temperature_with_effort: str | None = None
    """The effort under which a temperature other than 1 is taken (the gpt-5.1 kind:
    "none"); None: never (a reasoning model) or always (a classic one)."""
    shutdown_date: str | None = None
    """ISO date its provider stops serving it (`GET /v1/models/{id}`), or None."""
    retired: bool = False
    """Past its shutdown: every request is 404 `model_not_found`."""

    @property
    def reasoning(self) -> bool:
        return bool(self.efforts)

    def description(self) -> dict[str, Any]:
        """`GET /v1/models/{id}`'s object."""
        described: dict[str, Any] = {
            "id": self.id,
            "object": "model",
            "created": 0,
            "owned_by": "ragas-ops-test-double",
        }
        if self.shutdown_date is not None:
            described["shutdown_date"] = _as_sent(self.shutdown_date)
        return described


def _as_sent(shutdown_date: str) -> Any:
    """A shutdown date as the endpoint sends it: an ISO date as text; a number (seconds since
    the epoch, as some providers send it, or an odd one: `1e308`, `NaN`, `-1e20`) as a JSON
    number (`NaN` and `Infinity` as Python's json writes them)."""
    try:
        return float(shutdown_date)
    except ValueError:
        return shutdown_date


def _classic(name: str, shutdown_date: str | None = None) -> ServedModel:
    return ServedModel(name, shutdown_date=shutdown_date)


MODELS: Mapping[str, ServedModel] = {
    model.id: model
    for model in (
        _classic("gpt-4o-mini", "2027-01-14"),
        _classic("gpt-4.1-mini"),
        ServedModel("gpt-5", GPT5_EFFORTS, shutdown_date="2026-12-11"),
        ServedModel("gpt-5-mini", GPT5_EFFORTS, shutdown_date="2026-12-11"),
        ServedModel("gpt-5-nano", GPT5_EFFORTS),
        ServedModel("gpt-5.1", GPT51_EFFORTS, temperature_with_effort="none"),
        ServedModel("gpt-5.4", GPT51_EFFORTS, temperature_with_effort="none"),
        ServedModel("gpt-5.4-mini", GPT51_EFFORTS, temperature_with_effort="none"),
        ServedModel("gpt-6.1-terra", GPT6_EFFORTS, temperature_with_effort="none"),
        ServedModel("gpt-6.1-sol", GPT6_EFFORTS, temperature_with_effort="none"),
        ServedModel("gpt-6-luna", GPT6_EFFORTS, temperature_with_effort="none"),
        ServedModel("o3", O_SERIES_EFFORTS, shutdown_date="2026-12-11"),
        ServedModel("o4-mini", O_SERIES_EFFORTS),
        ServedModel("gpt-4.5-preview", shutdown_date="2025-07-14", retired=True),
    )
}
"""The models it knows; any other name is played as a classic model (what it always did)."""


def check_aliases(aliases: Mapping[str, str]) -> None:
    """Refuse an alias played as a model the table does not hold."""
    for alias, played in aliases.items():
        if played not in MODELS:
            raise ValueError(f"model_aliases: {alias!r} is played as {played!r}, not a model")


class ModelRefusal(Exception):
    """A request the model refuses: the status, OpenAI's message, `code` and `param`."""

    def __init__(self, status: int, message: str, code: str, param: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.param = param


def served_model(
    name: str,
    aliases: Mapping[str, str],
    shutdown_dates: Mapping[str, str],
) -> ServedModel:
    """The model a request names, played as its alias says (an unknown name on an unknown
    gateway that behaves as a known model), with a shutdown date the settings may set."""
    played = MODELS.get(aliases.get(name, name))
    model = ServedModel(name) if played is None else _renamed(played, name)
    if name in shutdown_dates:
        return ServedModel(
            model.id,
            model.efforts,
            model.temperature_with_effort,
            shutdown_dates[name],
            model.retired,
        )
    return model


def _renamed(model: ServedModel, name: str) -> ServedModel:
    return ServedModel(
        name, model.efforts, model.temperature_with_effort, model.shutdown_date, model.retired
    )


def check_request(model: ServedModel, request: Mapping[str, Any]) -> str | None:
    """Refuse what the model refuses (`ModelRefusal`); the effort it reasons at (None: a
    classic model)."""
    if model.retired:
        raise ModelRefusal(
            404,
            f"The model `{model.id}` does not exist or you do not have access to it.",
            "model_not_found",
        )
    tier = request.get("service_tier")
    if not model.reasoning:
        if "reasoning_effort" in request:
            raise ModelRefusal(
                400,
                "Unrecognized request argument supplied: reasoning_effort",
                "unsupported_parameter",
                "reasoning_effort",
            )
        if tier == "flex":
            raise ModelRefusal(
                400,
                f"Invalid service_tier argument: flex processing is not available for {model.id}.",
                "invalid_value",
                "service_tier",
            )
        return None
    if "max_tokens" in request:
        raise ModelRefusal(
            400,
            "Unsupported parameter: 'max_tokens' is not supported with this model. Use "
            "'max_completion_tokens' instead.",
            "unsupported_parameter",
            "max_tokens",
        )
    effort = request.get("reasoning_effort", DEFAULT_EFFORT)
    if effort not in model.efforts:
        listed = ", ".join(f"'{value}'" for value in model.efforts[:-1])
        raise ModelRefusal(
            400,
            f"Unsupported value: 'reasoning_effort' does not support {effort!r} with this "
            f"model. Supported values are: {listed}, and '{model.efforts[-1]}'.",
            "unsupported_value",
            "reasoning_effort",
        )
    temperature = request.get("temperature")
    if (temperature is not None and temperature != 1) and (
        model.temperature_with_effort is None or effort != model.temperature_with_effort
    ):
        raise ModelRefusal(
            400,
            f"Unsupported value: 'temperature' does not support {temperature} with this "
            "model. Only the default (1) value is supported.",
            "unsupported_value",
            "temperature",
        )
    return str(effort)


def reasoning_tokens(effort: str | None, prompt_text: str, choice: int) -> int:
    """The hidden reasoning tokens one reply spends: the effort's mean +-25%, drawn from the
    prompt and the choice (the same request thinks as long each time)."""
    if effort is None:
        return 0
    mean = REASONING_TOKENS_BY_EFFORT[effort]
    digest = hashlib.sha256(f"{prompt_text}\0{choice}".encode()).digest()
    share = int.from_bytes(digest[:4], "big") / 2**32  # in [0, 1)
    return round(mean * (0.75 + 0.5 * share))
