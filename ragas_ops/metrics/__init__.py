"""The metrics: the paper's three, and its two baselines. One package per metric, which owns
everything about it (formula, prompts, options, evidence, cost figures, the local judge's rules,
the test judge's answers) and registers it (see `registry`); this package imports every package
in it, then every team's metric package that names itself in the entry-point group
`ragas_ops.metrics` (docs/criteria.md), so the CLI, every Airflow task and the test judge know
the same metrics. `base`, `registry` and `lexical` (the test judge's toolkit) are shared by
them; `criteria` scores the config file's own criteria."""

from __future__ import annotations

import importlib
import pkgutil
from importlib.metadata import entry_points
from typing import Any

from ragas_ops.config import DEFAULT_METRICS
from ragas_ops.metrics.base import Metric, MetricResult
from ragas_ops.metrics.registry import (
    build_metrics,
    metric_kind,
    register_metric,
    registered_metrics,
    registered_prompts,
)
from ragas_ops.prompts import Prompt

_NOT_METRICS = frozenset({"base", "registry", "lexical"})

for _module in pkgutil.iter_modules(__path__):
    if _module.name not in _NOT_METRICS:
        importlib.import_module(f"{__name__}.{_module.name}")

ENTRY_POINT_GROUP = "ragas_ops.metrics"
"""Where a metric package outside ragas-ops names itself (`[project.entry-points."ragas_ops.
metrics"]` in its pyproject.toml): a module that registers its metrics when imported, or a
function of no arguments that registers them."""


class MetricPackageError(ImportError):
    """A metric package named in the entry-point group failed to load."""


def load_metric_packages() -> list[str]:
    """Import every metric package of the entry-point group (once: Python caches modules);
    returns the entry points loaded. A package that fails names itself in the error: a worker
    that silently lacks a metric would write a table without it."""
    loaded = []
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        try:
            target = entry.load()
            if callable(target):
                target()
        except Exception as error:
            raise MetricPackageError(
                f"the metric package {entry.value!r} (entry point {entry.name!r} of "
                f"{ENTRY_POINT_GROUP}) failed to load: {error}"
            ) from error
        loaded.append(f"{entry.name} = {entry.value}")
    return loaded


load_metric_packages()

ALL_PROMPTS: tuple[Prompt[Any], ...] = registered_prompts()
"""Every prompt of the package's metrics (and of the GPT Ranking baseline)."""

__all__ = [
    "ALL_PROMPTS",
    "DEFAULT_METRICS",
    "ENTRY_POINT_GROUP",
    "Metric",
    "MetricPackageError",
    "MetricResult",
    "build_metrics",
    "load_metric_packages",
    "metric_kind",
    "register_metric",
    "registered_metrics",
]
