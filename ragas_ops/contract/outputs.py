"""The output contract: the columns every scored table has besides its input's."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import pyarrow as pa

from ragas_ops.contract.inputs import ContractError, output_name_clashes


class NamedMetric(Protocol):
    """What the output schema needs to know of a metric: its name, the prefix of its columns."""

    @property
    def name(self) -> str: ...


ROW_COLUMNS: tuple[tuple[str, pa.DataType], ...] = (
    ("judge", pa.string()),
    ("embedding_model", pa.string()),
    ("judge_requests", pa.int64()),
    ("prompt_tokens", pa.int64()),
    ("cached_prompt_tokens", pa.int64()),
    ("completion_tokens", pa.int64()),
    ("embedding_tokens", pa.int64()),
    ("judge_cache_hits", pa.int64()),
    ("cost_usd", pa.float64()),
    ("judge_service_tier", pa.string()),
    ("scored_at", pa.timestamp("us", tz="UTC")),
    ("ragas_ops_version", pa.string()),
)
METRIC_SUFFIXES: tuple[tuple[str, pa.DataType], ...] = (
    ("score", pa.float64()),
    ("status", pa.string()),
    ("reason", pa.string()),
    ("evidence", pa.string()),
    ("version", pa.string()),
)


def output_column_names(metric_names: Sequence[str]) -> list[str]:
    """The columns a scored table adds to its input's, for the metrics named."""
    return [column.name for column in _added_columns(metric_names)]


def output_schema(input_schema: pa.Schema, metrics: Sequence[NamedMetric]) -> pa.Schema:
    """The input's columns, then each metric's five columns, then the row's accounting. An
    input column named like one of them, in any case, is refused (`check_schema` refuses its
    file before any scoring: this guards callers that did not check)."""
    added = _added_columns([metric.name for metric in metrics])
    clashes = output_name_clashes(input_schema.names, [column.name for column in added])
    if clashes:
        raise ContractError(
            f"the input already has output column(s) {clashes}: score the raw log, not a scored "
            "table, or rename those columns"
        )
    return pa.schema([*input_schema, *added])


def _added_columns(metric_names: Sequence[str]) -> list[pa.Field]:
    return [
        pa.field(f"{name}_{suffix}", kind)
        for name in metric_names
        for suffix, kind in METRIC_SUFFIXES
    ] + [pa.field(name, kind) for name, kind in ROW_COLUMNS]
