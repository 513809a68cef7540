"""Which metrics exist, by name. Each metric's package registers its metrics, their options and
prompts, and its prompts' test-double answers when it is imported (`ragas_ops.metrics` imports
every package in it; the local judge's rules register in `judge.local.rules`), so adding a
metric is adding a package: nothing else lists the metrics."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ragas_ops.config import (
    ConfigError,
    forget_metric_options,
    register_metric_options,
    updated_section,
)
from ragas_ops.metrics.base import Metric
from ragas_ops.prompts import Prompt


@dataclass(frozen=True)
class NoOptions:
    """The options of a metric that takes none."""


MetricFactory = Callable[[Any], Metric]
"""Builds a metric from an instance of its registration's `options`."""


@dataclass(frozen=True)
class Registration:
    """A metric's name, the class its instances have, its options and how to build one."""

    name: str
    kind: type[Metric]
    factory: MetricFactory
    options: type[Any] = NoOptions
    """A dataclass of the metric's options (`[metrics.<name>]` in the config file), typed and
    ranged as settings are (`config.at_least_one`...); a field's metadata may name its
    command-line `flag` (default `--<name>-<option>`) and its `help`."""


DoubleAnswer = Callable[[Mapping[str, Any], int], dict[str, Any]]
"""The test judge's answer to a prompt: (the prompt's data, the sample's index when `n` > 1) ->
the output as an LLM would write it, computed with `lexical`'s deterministic measures."""

_METRICS: dict[str, Registration] = {}
_PROMPTS: dict[str, Prompt[Any]] = {}
_DOUBLE_ANSWERS: dict[str, DoubleAnswer] = {}


def register_metric(
    name: str,
    kind: type[Metric],
    factory: MetricFactory | None = None,
    options: type[Any] = NoOptions,
) -> None:
    """Make metric `name` known. `factory` builds it from an instance of `options` (default:
    `kind()`)."""
    known = _METRICS.get(name)
    if known is not None and known.kind is not kind:
        raise ValueError(f"metric {name!r} is already registered by {known.kind.__qualname__}")
    _METRICS[name] = Registration(name, kind, factory or (lambda _options: kind()), options)
    register_metric_options(name, options)


def unregister_metric(name: str) -> None:
    """Forget metric `name` (for tests and plug-ins that register a metric for a while)."""
    _METRICS.pop(name, None)
    forget_metric_options(name)


def register_prompts(*prompts: Prompt[Any]) -> None:
    """Make prompts known to the judges that recognise prompts by their text (the project's
    test judge)."""
    for prompt in prompts:
        _PROMPTS.setdefault(prompt.id, prompt)


def forget_prompts(*prompts: Prompt[Any]) -> None:
    """Forget prompts and their test-double answers (the counterpart of `register_prompts`)."""
    for prompt in prompts:
        _PROMPTS.pop(prompt.id, None)
        _DOUBLE_ANSWERS.pop(prompt.name, None)


def double_answer(prompt: Prompt[Any]) -> Callable[[DoubleAnswer], DoubleAnswer]:
    """Register the decorated function as the test judge's answer to `prompt` (the project's
    test double recognises a registered prompt by its system message and answers with it)."""

    def register(answer: DoubleAnswer) -> DoubleAnswer:
        _DOUBLE_ANSWERS[prompt.name] = answer
        return answer

    return register


def double_answer_for(prompt: Prompt[Any]) -> DoubleAnswer | None:
    return _DOUBLE_ANSWERS.get(prompt.name)


def registered_metrics() -> Mapping[str, Registration]:
    return dict(_METRICS)


def registered_prompts() -> tuple[Prompt[Any], ...]:
    return tuple(_PROMPTS.values())


def metric_kind(name: str) -> type[Metric] | None:
    """The class of metric `name`, or None for a name no module registers (an old table's)."""
    registration = _METRICS.get(name)
    return registration.kind if registration else None


def metric_options(name: str, given: Mapping[str, Any] | None = None) -> Any:
    """Metric `name`'s options: its defaults with `given` (its `[metrics.<name>]` table)
    applied, coerced and checked as every setting is; an unknown option is a ConfigError."""
    return updated_section(_METRICS[name].options(), given or {}, f"[metrics.{name}]")


def build_metrics(
    names: Sequence[str], options: Mapping[str, Mapping[str, Any]] | None = None
) -> list[Metric]:
    """The metrics named, each built with its options (`options[name]`, its `[metrics.<name>]`
    table); an unknown name is an error that lists the known ones."""
    unknown = [name for name in names if name not in _METRICS]
    if unknown:
        raise ValueError(f"unknown metric(s) {unknown}; known: {sorted(_METRICS)}")
    if len(set(names)) != len(names):
        raise ValueError(f"a metric is named twice in {list(names)}")
    given = options or {}
    strays = sorted(name for name in given if name not in _METRICS)
    if strays:
        raise ConfigError(
            f"options for unknown metric(s) {strays} ([metrics.<name>]); known: {sorted(_METRICS)}"
        )
    return [_METRICS[name].factory(metric_options(name, given.get(name))) for name in names]
