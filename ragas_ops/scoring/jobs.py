"""Jobs that read, score and write: what the CLI runs (and the DAGs call)."""

from __future__ import annotations

import sys
import time
from collections import Counter
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.fs as pafs
from tqdm import tqdm

from ragas_ops.config import Settings
from ragas_ops.contract.inputs import (
    ContractError,
    FileSchema,
    check_columns,
    check_names,
    repair_utf8,
    unify_inputs,
)
from ragas_ops.contract.outputs import output_column_names, output_schema
from ragas_ops.contract.row_ids import with_id_column
from ragas_ops.contract.status import Status
from ragas_ops.judge.base import Judge, Usage
from ragas_ops.judge.factory import build_judge, judge_identity, shutdown_warnings
from ragas_ops.scoring.run import configured_metrics, score_into, scorer_for
from ragas_ops.scoring.scorer import RunSummary
from ragas_ops.storage import (
    Location,
    StorageError,
    listing,
    locate,
    no_parquet,
    read_files,
    read_footer,
    remove_leftovers,
)


@dataclass
class ScoreOutcome:
    """What `score_file` did: rows, statuses and means per metric, spend and time."""

    output: str
    metrics: list[str]
    summary: RunSummary
    judge: str
    total: Usage
    events: Counter[str]
    seconds: float
    sample_fraction: float = 1.0
    ignored: list[str] = field(default_factory=list)
    """Files below the input that are not log file names: not read."""
    caveats: tuple[str, ...] = ()
    """What a reader of these scores must know of the judge (`JudgeIdentity.caveats`)."""
    warnings: list[str] = field(default_factory=list)
    """The judge's models that shut down soon (`judge.factory.shutdown_warnings`)."""

    def summary_lines(self) -> list[str]:
        rate = self.summary.rows / self.seconds if self.seconds else 0.0
        lines = [
            f"scored {self.summary.rows:,} rows -> {self.output} in {self.seconds:.1f} s "
            f"({rate:.1f} rows/s), judge {self.judge}",
            f"{'metric':<28}{'scored':>8}{'mean':>8}  failures and other statuses",
        ]
        if self.sample_fraction < 1.0:
            lines.insert(1, self._sampling_line())
        if self.ignored:
            shown = ", ".join(self.ignored[:5]) + (", ..." if len(self.ignored) > 5 else "")
            lines.insert(1, f"not read, not log file names: {len(self.ignored)} file(s): {shown}")
        for metric in self.metrics:
            statuses = self.summary.statuses.get(metric, Counter())
            mean = self.summary.mean(metric)
            others = ", ".join(
                f"{status} {count}"
                for status, count in sorted(statuses.items())
                if status != Status.OK
            )
            lines.append(
                f"{metric:<28}{statuses[Status.OK]:>8}"
                f"{'-' if mean is None else f'{mean:.3f}':>8}  {others or 'none'}"
            )
        total = self.total
        retries = ", ".join(
            f"{name.removeprefix('retry_')} {count}"
            for name, count in sorted(self.events.items())
            if name.startswith("retry_")
        )
        lines += [
            f"requests: {total.requests:,} chat + {total.embedding_requests:,} embeddings; "
            f"retried: {retries or 'none'}; repairs: {self.events['repair']}; "
            f"cache hits: {self.events['cache_hit']:,} chat answers, "
            f"{self.events['embedding_cache_hit']:,} embeddings",
            f"tokens: {total.prompt_tokens:,} prompt ({total.cached_prompt_tokens:,} cached), "
            f"{total.completion_tokens:,} completion"
            + (f" ({total.reasoning_tokens:,} reasoning)" if total.reasoning_tokens else "")
            + f", {total.embedding_tokens:,} embeddings",
            "cost: "
            + (
                'unknown (no price for a model in use: add a [prices."MODEL"] table to the '
                "config file)"
                if total.cost_usd is None
                else f"${total.cost_usd:,.4f}"
            ),
        ]
        if set(total.requests_by_tier) - {"default"}:
            lines.append(self._tiers_line())
        lines += self.caveats
        lines += [f"warning: {warning}" for warning in self.warnings]
        return lines

    def _tiers_line(self) -> str:
        """Which service tiers answered, and why requests left flex (docs/flex-tier.md)."""
        answered = ", ".join(
            f"{tier} {count:,}" for tier, count in sorted(self.total.requests_by_tier.items())
        )
        return (
            f"service tiers: {answered} answered; {self.events['flex_fallback']:,} fell back "
            f"after waiting on flex, {self.events['flex_after_deadline']:,} after the deadline"
        )

    def _sampling_line(self) -> str:
        summary = self.summary
        sampled = summary.rows - summary.rows_not_sampled
        share = sampled / summary.rows if summary.rows else 0.0
        line = (
            f"sampled {sampled:,} of {summary.rows:,} rows ({share:.1%}; sample_fraction "
            f"{self.sample_fraction:g}); the other {summary.rows_not_sampled:,} are not_sampled"
        )
        if summary.rows_without_id:
            line += (
                f"; {summary.rows_without_id:,} row(s) without a usable id were scored, not sampled"
            )
        return line


@dataclass(frozen=True)
class InputFiles:
    """What `score` reads: the schema, the Parquet files and their rows, and the files below
    the input that are not log file names (not read; named in the summary)."""

    schema: pa.Schema
    paths: list[str]
    rows: int
    ignored: list[str]


def input_schema(source: Location, settings: Settings) -> InputFiles:
    """The schema a Parquet file or folder is read with (the contract's types and the union of
    the files' other columns), its files and its rows. Any file that cannot be read or breaks
    the contract is a ContractError naming every such file and why: nothing is scored."""
    paths, ignored = listing(source)
    if not paths:
        raise no_parquet(source, ignored)
    footers, unreadable = [], []
    for path in paths:
        try:
            footers.append(
                read_footer(
                    source.filesystem, path, settings.columns, settings.pipeline.read_limits()
                )
            )
        except StorageError as error:  # names the file; an outage is not a StorageError
            unreadable.append(str(error))
    output_names = output_column_names(settings.metrics.names)
    unified = unify_inputs(
        [FileSchema(footer.path, footer.schema, footer.rows) for footer in footers],
        settings.columns,
        output_names,
    )
    if unreadable or unified.rejected or unified.schema is None:
        if len(paths) == 1 and footers:
            check_names(footers[0].schema.names, output_names)  # the detailed messages
            check_columns(footers[0].schema, settings.columns)
        reasons = [*unreadable, *(f"{path}: {why}" for path, why in unified.rejected.items())]
        raise ContractError(f"input file(s) rejected: {'; '.join(reasons)}")
    rows = sum(footer.rows for footer in footers)
    return InputFiles(with_id_column(unified.schema), paths, rows, ignored)


def check_output(source: Location, paths: list[str], target: Location) -> None:
    """Refuse, before any judge is paid, an output that could not be written (an existing
    folder) or that the input would read: the input file itself, or a file in its folder
    (the next run would read the scores as logs)."""
    if target.filesystem.get_file_info(target.path).type == pafs.FileType.Directory:
        raise ContractError(
            f"the output {target.uri} is a folder: name a file, such as {target.uri}/scored.parquet"
        )
    if type(target.filesystem) is not type(source.filesystem):
        return
    if target.path in paths or target.path == source.path:
        raise ContractError(
            f"the output {target.uri} is the input: the scores would replace the logs they "
            "were read from; write them to another file"
        )
    if target.path.startswith(source.path.rstrip("/") + "/"):
        raise ContractError(
            f"the output {target.uri} is inside the input folder {source.uri}: the next run "
            "of this input would read the scores as logs; write them outside it"
        )


async def score_file(
    input_uri: str,
    output_uri: str,
    settings: Settings,
    progress: bool = True,
    judge: Judge | None = None,
) -> ScoreOutcome:
    """Score every row of a Parquet file or folder into one Parquet file, published whole."""
    started = time.monotonic()
    metrics = configured_metrics(settings)  # a bad metric name fails before any reading
    source = locate(input_uri)
    inputs = input_schema(source, settings)  # before any judge is paid
    schema, paths, row_count = inputs.schema, inputs.paths, inputs.rows
    target = locate(output_uri)
    check_output(source, paths, target)
    tables = (
        repair_utf8(table)
        for table in read_files(
            source.filesystem,
            paths,
            schema,
            settings.batch_rows,
            settings.columns,
            limits=settings.pipeline.read_limits(),
        )
    )
    remove_leftovers(target)  # the staging files of a killed earlier run of this output
    warnings = shutdown_warnings(settings)  # once per run, before the first row is paid
    judge = judge or build_judge(settings)
    scorer = scorer_for(settings, judge, metrics)
    bar = tqdm(total=row_count, unit="row", disable=not progress, file=sys.stderr)
    try:
        await score_into(
            scorer,
            tables,
            target,
            output_schema(schema, metrics),
            expected_rows=row_count,
            on_table=lambda table: bar.update(table.num_rows),
        )
    finally:
        bar.close()
    return ScoreOutcome(
        output=output_uri,
        metrics=[metric.name for metric in metrics],
        summary=scorer.summary,
        judge=judge.description,
        total=judge.usage_total(),
        events=judge.events,
        seconds=time.monotonic() - started,
        sample_fraction=settings.pipeline.sample_fraction,
        ignored=inputs.ignored,
        caveats=judge_identity(settings.judge).caveats,
        warnings=warnings,
    )
