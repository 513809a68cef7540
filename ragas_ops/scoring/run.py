"""The one scoring loop: tables in, one Parquet file out, published whole or not at all.

The CLI's file job (`scoring.jobs.score_file`) and the pipeline's chunks (`pipeline.score.
score_chunk`, and each pass of `pipeline.batch_chunk`) all score through `score_into`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import pyarrow as pa

from ragas_ops.config import Settings
from ragas_ops.judge.base import Judge
from ragas_ops.metrics import build_metrics
from ragas_ops.metrics.base import Metric
from ragas_ops.metrics.criteria import register_criteria
from ragas_ops.scoring.scorer import Scorer
from ragas_ops.storage import Location, ParquetOutput

MismatchMessage = Callable[[int, int], str]
"""How a `RowCountMismatch` is worded, from the rows expected and the rows scored."""


class RowCountMismatch(RuntimeError):
    """Rows in and rows out of a step differ: nothing is published."""


def configured_metrics(settings: Settings) -> list[Metric]:
    """The metrics the settings name, with their options; the settings' criteria are
    registered first (each is a metric of its name)."""
    register_criteria(settings.criteria)
    return build_metrics(settings.metrics.names, settings.metrics.options)


def scorer_for(settings: Settings, judge: Judge, metrics: Sequence[Metric] | None = None) -> Scorer:
    """The scorer of the configured metrics (or of `metrics`, built from the settings
    already), judged by `judge`, with the settings' columns, size budget and sampling."""
    return Scorer(
        configured_metrics(settings) if metrics is None else metrics,
        judge,
        settings.columns,
        settings.size_budget,
        sample_fraction=settings.pipeline.sample_fraction,
    )


def row_count_error(expected: int, scored: int) -> str:
    """The message of a `RowCountMismatch` when the caller has no better one."""
    return f"read {expected} rows but scored {scored}"


async def score_into(
    scorer: Scorer,
    tables: Iterable[pa.Table],
    target: Location,
    schema: pa.Schema,
    *,
    expected_rows: int,
    staging: Location | None = None,
    on_table: Callable[[pa.Table], object] | None = None,
    mismatch: MismatchMessage = row_count_error,
    complete: Callable[[], bool] | None = None,
) -> bool:
    """Score `tables` into a Parquet file at `target` with the output `schema`, published
    only when every one of `expected_rows` rows was scored; closes the scorer's judge.

    The output is opened before the first table (the CLI's file job did so, the chunks did
    it on the first scored table): a stream without rows then still publishes an empty file
    with the output's columns, and the schema is the one every scored table must have.
    Any failure, and a row count other than `expected_rows` (`RowCountMismatch`, worded by
    `mismatch(expected, scored)`), aborts the output: no partial file is left. `on_table`
    sees each scored table once written (a progress bar). When `complete` says False after
    the stream (a batch-mode pass still waiting for answers: its rows are not final, so
    neither counted nor kept), the output is discarded and the result is False; otherwise
    it is committed and the result is True.
    """
    try:
        output = ParquetOutput(target, schema, staging=staging)
    except BaseException:
        await scorer.judge.aclose()
        raise
    try:
        async for table in scorer.score_stream(tables):
            output.write(table)
            if on_table is not None:
                on_table(table)
        keep = complete is None or complete()
        if keep and scorer.summary.rows != expected_rows:
            raise RowCountMismatch(mismatch(expected_rows, scorer.summary.rows))
    except BaseException:
        output.abort()
        raise
    finally:
        await scorer.judge.aclose()
    if not keep:
        output.abort()
        return False
    output.commit()
    return True
