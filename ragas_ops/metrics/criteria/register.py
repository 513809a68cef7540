"""Criteria become registered metrics: every process that scores, estimates or serves the test
judge registers the criteria of its settings (`register_criteria`)."""

from __future__ import annotations

from collections.abc import Mapping

from ragas_ops.criteria.spec import CriterionSpec
from ragas_ops.labels.definitions import register_label_levels
from ragas_ops.metrics.criteria.double import answer_criterion
from ragas_ops.metrics.criteria.local import cannot_judge_criterion
from ragas_ops.metrics.criteria.metric import Criterion, criterion_prompt
from ragas_ops.metrics.registry import (
    MetricFactory,
    metric_kind,
    register_metric,
    register_prompts,
)


def register_criteria(specs: Mapping[str, CriterionSpec]) -> None:
    """Make each criterion a registered metric with its prompt, the local judge's answer (it
    cannot judge one) and the test judge's: every process that scores, estimates or serves the
    test judge calls this with the criteria of its settings. A criterion registered before
    under the same name is replaced (its text changed between two runs of one process); one
    named like another metric is refused."""
    for name, spec in specs.items():
        kind = metric_kind(name)
        if kind is not None and kind is not Criterion:
            raise ValueError(
                f"[criteria.{name}]: {name!r} is the name of a metric "
                f"({kind.__qualname__}); name the criterion after what it checks"
            )
        prompt = criterion_prompt(spec)
        register_metric(name, Criterion, _factory(spec))
        register_prompts(prompt)
        cannot_judge_criterion(prompt)
        answer_criterion(prompt, spec)
        register_label_levels(
            name,
            spec.criterion,
            [
                (f"{spec.score_of(level):g}", level, description)
                for level, description in spec.levels
            ],
        )


def _factory(spec: CriterionSpec) -> MetricFactory:
    return lambda _options: Criterion(spec)
