"""The shadow judge: which rows the candidate judge (`[judge.candidate]`) scores beside the
judge of record, and the settings it scores them with.

The candidate's rows are chosen by the same hash of the row id as `pipeline.sample_fraction`
(`ragas_ops.sampling`), at the smaller of the two shares: the same rows on every rerun and in
every chunking of a day, never chosen by a score, and always rows the judge of record scores
too, so every candidate score has a score of record to be compared with. A row without a
usable id cannot be chosen so: the candidate leaves it out (the count is kept).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from ragas_ops.config import ConfigError, Settings
from ragas_ops.judge.base import Judge, Usage
from ragas_ops.judge.engine.spec import FlexSpec, ModelSpec
from ragas_ops.sampling import ROW_ID_COLUMN, is_sampled, row_id_text

NO_CANDIDATE = (
    "no shadow judge is configured: set [judge.candidate] model (or kind) in the config file, "
    "or RAGAS_OPS_JUDGE_CANDIDATE_MODEL"
)


def candidate_share(settings: Settings) -> float:
    """The share of a day's rows the candidate scores: `candidate_sample`, within the rows
    the judge of record scores (`pipeline.sample_fraction`)."""
    return min(settings.judge.candidate.sample, settings.pipeline.sample_fraction)


def candidate_mask(ids: Sequence[Any], share: float) -> list[bool]:
    """For each row id, whether the candidate scores the row (never a row without an id)."""
    return [text is not None and is_sampled(text, share) for text in (row_id_text(v) for v in ids)]


@dataclass
class CandidatePick:
    """What choosing the candidate's rows saw: rows read, rows chosen, rows without an id."""

    rows: int = 0
    chosen: int = 0
    without_id: int = 0

    def of(self, tables: Iterable[pa.Table], share: float) -> Iterator[pa.Table]:
        """The chosen rows of `tables` (tables left empty are skipped), counted as they pass."""
        for table in tables:
            ids = (
                table.column(ROW_ID_COLUMN).to_pylist()
                if ROW_ID_COLUMN in table.column_names
                else [None] * table.num_rows
            )
            mask = candidate_mask(ids, share)
            self.rows += table.num_rows
            self.without_id += sum(row_id_text(value) is None for value in ids)
            self.chosen += mask.count(True)
            if any(mask):
                yield table.filter(pa.array(mask, pa.bool_()))


def candidate_settings(settings: Settings) -> Settings:
    """Settings whose judge is the candidate: its model, kind, endpoint, key and rates over
    the judge of record's (the cache, retries and budget shares are the same; the cache keys
    hold the model, so no answer of one judge is taken for the other's). Always sync and on
    the standard tier: a sample is small, and the candidate may be a model without flex. Its
    model profile is the one its name matches, at the lowest effort (the `model_*` settings
    and `reasoning_effort` are the judge of record's model's). Every row it is given is
    scored (it never samples again)."""
    spec = settings.judge.candidate
    if not spec.enabled:
        raise ConfigError(NO_CANDIDATE)
    judge = settings.judge
    kind = spec.kind or judge.kind
    endpoint = dataclasses.replace(
        judge.endpoint,
        embedding_kind=_embedding_kind(judge.endpoint.embedding_kind, kind, judge.kind),
        model=spec.model or judge.endpoint.model,
        embedding_model=spec.embedding_model or judge.endpoint.embedding_model,
        base_url=spec.base_url or judge.endpoint.base_url,
        api_key_env=spec.api_key_env or judge.endpoint.api_key_env,
        # A candidate endpoint of its own is not the record's Airflow connection.
        conn_id=None if spec.base_url else judge.endpoint.conn_id,
    )
    limits = dataclasses.replace(
        judge.limits,
        rpm=spec.rpm if spec.rpm is not None else judge.limits.rpm,
        tpm=spec.tpm if spec.tpm is not None else judge.limits.tpm,
    )
    candidate = dataclasses.replace(
        judge,
        kind=kind,
        endpoint=endpoint,
        limits=limits,
        batch=dataclasses.replace(judge.batch, mode="sync"),
        flex=FlexSpec(),
        # The record's model overrides are about its model: the candidate's profile is the
        # one its name matches, at the lowest effort its profile lists.
        model=ModelSpec(),
    )
    pipeline = dataclasses.replace(settings.pipeline, sample_fraction=1.0)
    return dataclasses.replace(settings, judge=candidate, pipeline=pipeline)


def _embedding_kind(own: str | None, candidate: str, record: str) -> str | None:
    """The candidate's embeddings: the record's setting, else its own provider's; a candidate
    whose provider has no embeddings API (Anthropic) takes the record's kind's."""
    from ragas_ops.judge.factory import capabilities_of

    if own is not None or capabilities_of(candidate).embeddings:
        return own
    return record


def _with_budget(settings: Settings, budget_usd: float | None) -> Settings:
    """`settings` whose judge may spend at most `budget_usd` (None or 0: as they are)."""
    if not budget_usd:
        return settings
    limits = dataclasses.replace(settings.judge.limits, budget_usd=budget_usd)
    return dataclasses.replace(settings, judge=dataclasses.replace(settings.judge, limits=limits))


@dataclass
class FolderComparison:
    """`compare-judges` over a folder: the comparison and what each judge did for it."""

    comparison: pa.Table
    """A row per metric (`quality.judge_comparison.JUDGE_COMPARISON_SCHEMA`)."""
    pick: CandidatePick
    judge: str
    candidate: str
    judge_usage: Usage
    candidate_usage: Usage


async def compare_folder(
    input_uri: str,
    settings: Settings,
    *,
    judge: Judge | None = None,
    candidate: Judge | None = None,
    budgets: tuple[float | None, float | None] = (None, None),
) -> FolderComparison:
    """Score the candidate's sample of a Parquet file or folder with both judges and compare
    them (the judge of record's answers come from the cache when the rows were scored
    before). Nothing is written. `budgets`: the most each judge (record, candidate) may
    spend in USD, over `judge.budget_usd` (None: as configured; 0: a judge with no API
    request)."""
    from ragas_ops.contract.inputs import repair_utf8
    from ragas_ops.judge.factory import build_judge
    from ragas_ops.quality.judge_comparison import compare_judges, paired_scores
    from ragas_ops.scoring.jobs import input_schema
    from ragas_ops.scoring.run import configured_metrics, scorer_for
    from ragas_ops.storage import locate, read_files

    shadow = candidate_settings(settings)  # no candidate: a ConfigError before any reading
    metrics = configured_metrics(settings)
    source = locate(input_uri)
    inputs = input_schema(source, settings)
    share = candidate_share(settings)
    pick = CandidatePick()
    tables = read_files(
        source.filesystem,
        inputs.paths,
        inputs.schema,
        settings.batch_rows,
        settings.columns,
        limits=settings.pipeline.read_limits(),
    )
    chosen = list(pick.of((repair_utf8(table) for table in tables), share))
    if not pick.chosen:
        raise ConfigError(
            f"no row of {source.uri} ({pick.rows:,} rows, {pick.without_id:,} without an id) "
            f"is in a sample of {share:g} by row id: raise candidate_sample"
        )
    record = dataclasses.replace(
        settings, pipeline=dataclasses.replace(settings.pipeline, sample_fraction=1.0)
    )
    record, shadow = (
        _with_budget(judged, budget)
        for judged, budget in zip((record, shadow), budgets, strict=True)
    )
    scorers = (
        scorer_for(record, judge or build_judge(record), metrics),
        scorer_for(shadow, candidate or build_judge(shadow), metrics),
    )
    scored = []
    for scorer in scorers:
        try:
            parts = [table async for table in scorer.score_stream(chosen)]
        finally:
            await scorer.judge.aclose()
        scored.append(pa.concat_tables(parts))
    names = [metric.name for metric in metrics]
    pairs = paired_scores(scored[0], scored[1], names)
    return FolderComparison(
        comparison=compare_judges(source.uri, pairs, names),
        pick=pick,
        judge=scorers[0].judge.description,
        candidate=scorers[1].judge.description,
        judge_usage=scorers[0].judge.usage_total(),
        candidate_usage=scorers[1].judge.usage_total(),
    )
