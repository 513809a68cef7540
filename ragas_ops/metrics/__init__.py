"""The metrics: the paper's three, and its two baselines. One package per metric, which owns
everything about it (formula, prompts, options, evidence, cost figures, the local judge's rules,
the test judge's answers) and registers it (see `registry`); this package imports every package
in it. `base`, `registry` and `lexical` (the test judge's toolkit) are shared by them."""

from __future__ import annotations

import importlib
import pkgutil
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

ALL_PROMPTS: tuple[Prompt[Any], ...] = registered_prompts()
"""Every prompt of the package's metrics (and of the GPT Ranking baseline)."""

__all__ = [
    "ALL_PROMPTS",
    "DEFAULT_METRICS",
    "Metric",
    "MetricResult",
    "build_metrics",
    "metric_kind",
    "register_metric",
    "registered_metrics",
]
