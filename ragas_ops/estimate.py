"""What a scoring run would cost, estimated before it runs: no judge is called, nothing is spent.

The estimate walks the rows a run would score (a Parquet file or folder, or days of the
pipeline's raw lake), keeps the rows that the sample fraction chooses and the contract lets
each metric use, and builds each metric's real chat messages from the row's data: tokens are
counted the way the judge counts them before sending (`estimate_tokens`, ~4 characters a
token, plus 4 a message). A judge's reply cannot be known in advance, so each one is stood in
for by an output of the prompt's own output model, sized as each metric assumes
(`Metric.expected_calls`; the assumptions are printed with every estimate).

Only the columns the contract needs are read, a batch of rows at a time.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from ragas_ops.config import Settings
from ragas_ops.contract.inputs import (
    ABSENT,
    ColumnMapping,
    Interaction,
    add_pass_through,
    check_columns,
    repair_utf8,
    schema_with_contract_names,
    validate_row,
    with_contract_names,
)
from ragas_ops.contract.layout import Lake, parse_day
from ragas_ops.contract.logs import is_text_log
from ragas_ops.contract.row_ids import derived_id, file_key
from ragas_ops.judge.factory import reasoning_estimate
from ragas_ops.judge.tokens import MAX_EMBEDDING_TOKENS_PER_REQUEST, MESSAGE_OVERHEAD_TOKENS
from ragas_ops.metrics import metric_kind
from ragas_ops.metrics.base import Metric
from ragas_ops.pipeline.plan import plan_day
from ragas_ops.pricing import Price, price_for
from ragas_ops.prompts import Prompt
from ragas_ops.sampling import ROW_ID_COLUMN, row_id_text, sample_mask
from ragas_ops.scoring.run import configured_metrics
from ragas_ops.scoring.scorer import pass_through_columns
from ragas_ops.storage import Location, StorageError, locate, read_text_log_or_fail
from ragas_ops.text import estimate_tokens

READ_BATCH_ROWS = 4096
MAX_DAYS = 3660

GENERAL_ASSUMPTIONS = (
    "prompt tokens: each metric's real messages built from the row, counted as the judge "
    "does (~4 characters a token, 1 a non-ASCII character, +4 a message); a provider's "
    "tokenizer may differ by 10-20%",
    "rows whose fields break the contract for a metric cost nothing for it, as in a run",
    "no judge cache hits, no prompt caching, no retries or repairs: rows scored before "
    "(a rerun, a backfill of unchanged rows) are free in reality",
    "batch mode: chat requests at the Batch API's price (Price.batch_discount, half for "
    "OpenAI); embeddings are not batched and cost the sync price",
)


def assumptions(metric_names: Sequence[str]) -> list[str]:
    """What the estimate assumes: how tokens are counted, then what each metric assumes of
    the judge's replies (its `estimate_assumption`), then what holds for every run."""
    declared = [
        kind.estimate_assumption
        for name in metric_names
        if (kind := metric_kind(name)) is not None and kind.estimate_assumption
    ]
    first, *rest = GENERAL_ASSUMPTIONS
    return [first, *dict.fromkeys(declared), *rest]


@dataclass
class Tally:
    """What scoring some rows would take."""

    rows: int = 0
    rows_sampled: int = 0
    rows_without_id: int = 0
    """Rows scored though a sample fraction was set, because they have no usable id."""
    repeated_rows: int = 0
    """Sampled rows whose question, contexts and answer an earlier row of the input has: the
    run asks the judge once for them (the cache answers the others), the estimate counts each."""
    chat_requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    reasoning_tokens: int = 0
    """Of `completion_tokens`: a reasoning model's hidden reasoning, billed as output."""
    embedding_requests: int = 0
    embedding_tokens: int = 0
    requests_by_metric: Counter[str] = field(default_factory=Counter)
    files: int = 0
    rejected_files: list[str] = field(default_factory=list)

    def add(self, other: Tally) -> None:
        self.rows += other.rows
        self.rows_sampled += other.rows_sampled
        self.rows_without_id += other.rows_without_id
        self.repeated_rows += other.repeated_rows
        self.chat_requests += other.chat_requests
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.reasoning_tokens += other.reasoning_tokens
        self.embedding_requests += other.embedding_requests
        self.embedding_tokens += other.embedding_tokens
        self.requests_by_metric.update(other.requests_by_metric)
        self.files += other.files
        self.rejected_files += other.rejected_files


@dataclass(frozen=True)
class Prices:
    """The judge's models and their prices (None: no price known, so the cost is unknown)."""

    chat_model: str
    embedding_model: str
    chat: Price | None
    embedding: Price | None

    @classmethod
    def of(cls, settings: Settings) -> Prices:
        judge = settings.judge.endpoint
        return cls(
            judge.model,
            judge.embedding_model,
            price_for(judge.model, settings.prices),
            price_for(judge.embedding_model, settings.prices),
        )

    def cost(self, tally: Tally, *, batch: bool) -> float | None:
        """USD for the tally's tokens; None when a model that would be used has no price."""
        total = 0.0
        if tally.prompt_tokens or tally.completion_tokens:
            if self.chat is None:
                return None
            total += self.chat.cost(tally.prompt_tokens, tally.completion_tokens, batch=batch)
        if tally.embedding_tokens:
            if self.embedding is None:
                return None
            total += self.embedding.cost(tally.embedding_tokens, 0)  # never batched
        return total


@dataclass
class Estimate:
    """The estimate of a run: one tally per part (a day, or the input), and their total."""

    settings: Settings
    source: str
    """What was estimated: the input, or the raw lake and its days."""
    parts: list[tuple[str, Tally]]

    @property
    def prices(self) -> Prices:
        return Prices.of(self.settings)

    @property
    def total(self) -> Tally:
        total = Tally()
        for _, tally in self.parts:
            total.add(tally)
        return total

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: settings that shape the estimate, every part, the total, assumptions."""
        prices = self.prices
        return {
            "source": self.source,
            "judge_model": prices.chat_model,
            "reasoning": dataclasses.asdict(reasoning_estimate(self.settings.judge)),
            "embedding_model": prices.embedding_model,
            "judge_price_per_million_tokens": _price_dict(prices.chat),
            "embedding_price_per_million_tokens": _price_dict(prices.embedding),
            "metrics": list(self.settings.metrics.names),
            "sample_fraction": self.settings.pipeline.sample_fraction,
            "parts": [
                {"part": label, **self._tally_dict(tally, prices)} for label, tally in self.parts
            ],
            "total": self._tally_dict(self.total, prices),
            "pace": dataclasses.asdict(judge_pace(self.settings, self.total)),
            "assumptions": assumptions(self.settings.metrics.names),
        }

    @staticmethod
    def _tally_dict(tally: Tally, prices: Prices) -> dict[str, Any]:
        return {
            "rows": tally.rows,
            "rows_sampled": tally.rows_sampled,
            "rows_without_id": tally.rows_without_id,
            "repeated_rows": tally.repeated_rows,
            "files": tally.files,
            "rejected_files": tally.rejected_files,
            "chat_requests": tally.chat_requests,
            "chat_requests_by_metric": dict(sorted(tally.requests_by_metric.items())),
            "prompt_tokens": tally.prompt_tokens,
            "completion_tokens": tally.completion_tokens,
            "reasoning_tokens": tally.reasoning_tokens,
            "embedding_requests": tally.embedding_requests,
            "embedding_tokens": tally.embedding_tokens,
            "cost_usd": {
                "sync": prices.cost(tally, batch=False),
                "batch": prices.cost(tally, batch=True),
            },
        }

    def lines(self) -> list[str]:
        """The estimate as text: models and prices, one line per part, the total, assumptions."""
        prices = self.prices
        metrics = ", ".join(self.settings.metrics.names)
        lines = [
            "estimate only: no judge was called and nothing was spent",
            f"source: {self.source}",
            f"judge {prices.chat_model}: {_price_text(prices.chat, batched=True)}",
            self._reasoning_line(),
            f"embeddings {prices.embedding_model}: {_price_text(prices.embedding)}",
            f"metrics: {metrics}; sample_fraction {self.settings.pipeline.sample_fraction:g}",
            "",
            f"{'part':<12}{'rows':>10}{'sampled':>10}{'requests':>10}{'prompt tok':>13}"
            f"{'compl. tok':>12}{'emb. req':>9}{'emb. tok':>11}{'sync USD':>12}{'batch USD':>12}",
        ]
        lines += [self._line(label, tally, prices) for label, tally in self.parts]
        total = self.total
        lines.append(self._line("total", total, prices))
        lines.append(judge_pace(self.settings, total).line())
        lines += self._notes(total)
        lines += [
            "",
            "assumptions:",
            *(f"- {line}" for line in assumptions(self.settings.metrics.names)),
        ]
        return lines

    def _reasoning_line(self) -> str:
        reasoning = reasoning_estimate(self.settings.judge)
        if not reasoning.tokens_per_reply:
            return f"reasoning: none (profile {reasoning.profile})"
        effort = reasoning.effort or "none sent: the provider's default, medium"
        return (
            f"reasoning: profile {reasoning.profile}, effort {effort}: about "
            f"{reasoning.tokens_per_reply:,} tokens a reply, billed as output "
            f"({self.total.reasoning_tokens:,} of the completion tokens)"
        )

    @staticmethod
    def _line(label: str, tally: Tally, prices: Prices) -> str:
        return (
            f"{label:<12}{tally.rows:>10,}{tally.rows_sampled:>10,}{tally.chat_requests:>10,}"
            f"{tally.prompt_tokens:>13,}{tally.completion_tokens:>12,}"
            f"{tally.embedding_requests:>9,}{tally.embedding_tokens:>11,}"
            f"{_money(prices.cost(tally, batch=False)):>12}"
            f"{_money(prices.cost(tally, batch=True)):>12}"
        )

    def _notes(self, total: Tally) -> list[str]:
        notes = []
        if total.rows_without_id:
            notes.append(
                f"note: {total.rows_without_id:,} row(s) have no usable `{ROW_ID_COLUMN}`: "
                "they are scored in full, as sampling cannot choose them"
            )
        if total.repeated_rows:
            notes.append(
                f"note: {total.repeated_rows:,} of the {total.rows_sampled:,} rows scored repeat "
                "an earlier row's question, contexts and answer: the run asks the judge once for "
                "each content (its cache answers the repeats), so it sends fewer requests and "
                "pays less than counted here; so does a rerun, whose answers are cached"
            )
        notes += [f"note: rejected, not scored: {file}" for file in total.rejected_files]
        return ["", *notes] if notes else []


@dataclass(frozen=True)
class JudgePace:
    """How long the judge's requests take at the account's limits, and which limits."""

    rpm: float | None
    tpm: float | None
    limits: str
    """Where the limits come from: the provider's statement a recent run kept (`stated`),
    the config (`configured`), or the defaults (`default`)."""
    kept_in: str | None
    minutes: float | None
    """None: no limit, or nothing asked of an endpoint."""

    def line(self) -> str:
        where = {
            "stated": f"as the provider stated them to a recent run (kept in {self.kept_in})",
            "configured": "as configured",
            "default": "the defaults: no run has kept what the provider states (it paces "
            "to that once its first answer states it)",
        }[self.limits]
        rates = f"rpm {_rate(self.rpm)}, tpm {_rate(self.tpm)}, {where}"
        if self.minutes is None:
            return f"judge time: no limit to pace to ({rates})"
        return f"judge time: at least {self.minutes:,.1f} min at {rates}"


def judge_pace(settings: Settings, total: Tally) -> JudgePace:
    """The judge time of `total` at the account's limits, less `rate_margin`: the limits the
    provider stated to a run within `stated.RECENT_DAYS` when `rpm`/`tpm` were not set (kept
    beside the cache by the judge), else the settings. A floor: a provider counting
    `max_tokens` at admission counts more tokens than the reply uses."""
    from ragas_ops.judge.factory import capabilities, recently_stated_limits
    from ragas_ops.judge.limits.spec import DefaultRate

    judge = settings.judge
    limits = judge.limits
    rpm, tpm = limits.rpm, limits.tpm
    source, kept_in = "configured", None
    if isinstance(rpm, DefaultRate) or isinstance(tpm, DefaultRate):
        source = "default"
        known = recently_stated_limits(judge)
        if known is not None:
            stated_rpm, stated_tpm, kept_in = known
            rpm = stated_rpm if isinstance(rpm, DefaultRate) and stated_rpm else rpm
            tpm = stated_tpm if isinstance(tpm, DefaultRate) and stated_tpm else tpm
            source = "stated"
    minutes: float | None = None
    if capabilities(judge).endpoint:
        share = 1.0 - limits.rate_margin
        tokens = total.prompt_tokens + total.completion_tokens + total.embedding_tokens
        requests = total.chat_requests + total.embedding_requests
        bounds = [
            amount / (rate * share)
            for amount, rate in ((requests, rpm), (tokens, tpm))
            if rate is not None
        ]
        minutes = max(bounds) if bounds else None
    return JudgePace(
        None if rpm is None else float(rpm),
        None if tpm is None else float(tpm),
        source,
        kept_in,
        minutes,
    )


def _rate(value: float | None) -> str:
    return "unlimited" if value is None else f"{value:,.0f}"


def _price_dict(price: Price | None) -> dict[str, float] | None:
    if price is None:
        return None
    return {
        "input": price.input_per_million,
        "output": price.output_per_million,
        "batch_discount": price.batch_discount,
    }


def _price_text(price: Price | None, batched: bool = False) -> str:
    if price is None:
        return 'price unknown, so the cost is unknown (add [prices."MODEL"] to the config file)'
    text = f"${price.input_per_million:g} per 1M input tokens"
    if price.output_per_million:
        text += f", ${price.output_per_million:g} per 1M output tokens"
    if batched:
        text += f"; batch mode x{price.batch_discount:g}"
    return text


def _money(value: float | None) -> str:
    return "unknown" if value is None else f"{value:,.4f}"


# --- what one row costs -------------------------------------------------------------------------


class _RowCounter:
    """Adds up the requests and tokens of rows, metric by metric, as a run would send them."""

    def __init__(
        self, metrics: Sequence[Metric], *, schema_in_text: bool, reasoning_per_reply: int = 0
    ) -> None:
        unknown = [
            metric.name
            for metric in metrics
            if type(metric).expected_calls is Metric.expected_calls
        ]
        if unknown:
            raise ValueError(f"no cost estimate for metric(s) {unknown}")
        self.metrics = metrics
        self.reasoning_per_reply = reasoning_per_reply
        """Hidden reasoning tokens each reply spends before its answer (the model's profile,
        at the effort asked)."""
        self.schema_in_text = schema_in_text
        """As the judge sends it: the schema is in the text unless it is a strict
        response_format (`openai_judge.chat_messages`)."""
        self._system_tokens: dict[str, int] = {}

    def count(self, row: Interaction, tally: Tally) -> None:
        """Add the chat requests the row's metrics would send, and their tokens."""
        for metric in self.metrics:
            if row.problem_with(metric.requires):
                continue
            for call in metric.expected_calls(row):
                tally.chat_requests += 1
                tally.requests_by_metric[metric.name] += 1
                tally.prompt_tokens += self._prompt_tokens(call.prompt, call.data)
                reasoning = call.n * self.reasoning_per_reply
                tally.reasoning_tokens += reasoning
                tally.completion_tokens += reasoning
                tally.completion_tokens += call.n * estimate_tokens(call.reply.model_dump_json())

    def embedding_inputs(self, row: Interaction) -> list[tuple[str | None, int]]:
        """The texts the row's metrics would embed, with their tokens: known ones such as the
        row's question (so a repeat in the same batch is not counted twice, as the judge embeds
        each distinct text once), and ones the judge writes first, such as answer relevance's
        generated questions (None: not known yet; each the metric's `written_text_tokens`)."""
        texts: list[tuple[str | None, int]] = []
        for metric in self.metrics:
            if row.problem_with(metric.requires):
                continue
            tokens = metric.written_text_tokens  # an unknown text: one the judge writes first
            texts += [
                (text, tokens if text is None else estimate_tokens(text))
                for text in metric.expected_embedding_inputs(row)
            ]
        return texts

    def _prompt_tokens(self, prompt: Prompt[Any], data: Mapping[str, Any]) -> int:
        total = 0
        for message in prompt.messages(data, schema_in_text=self.schema_in_text):
            if message["role"] == "system":  # static per prompt: counted once
                if prompt.id not in self._system_tokens:
                    self._system_tokens[prompt.id] = estimate_tokens(message["content"])
                total += self._system_tokens[prompt.id]
            else:
                total += estimate_tokens(message["content"])
            total += MESSAGE_OVERHEAD_TOKENS
        return total


class _Batches:
    """The embeddings requests of scoring batches: a run embeds each batch of `batch_rows`
    rows at once, `embedding_batch_size` texts (and at most the API's tokens) a request."""

    def __init__(self, settings: Settings, tally: Tally) -> None:
        self.batch_rows = settings.batch_rows
        self.per_request = settings.judge.endpoint.embedding_batch_size
        self.tally = tally
        self.rows = 0
        self.texts: list[int] = []
        self.known: set[str] = set()

    def add(self, texts: Sequence[tuple[str | None, int]]) -> None:
        for text, tokens in texts:
            if text is not None:
                if text in self.known:
                    continue
                self.known.add(text)
            self.texts.append(tokens)
        self.rows += 1
        if self.rows >= self.batch_rows:
            self.close()

    def close(self) -> None:
        """End the current batch (at the end of the input, or of a pipeline chunk)."""
        if self.texts:
            tokens = sum(self.texts)
            self.tally.embedding_tokens += tokens
            self.tally.embedding_requests += max(
                math.ceil(len(self.texts) / self.per_request),
                math.ceil(tokens / MAX_EMBEDDING_TOKENS_PER_REQUEST),
            )
        self.rows, self.texts, self.known = 0, [], set()


# --- reading the rows ---------------------------------------------------------------------------


@dataclass
class _ReadBatch:
    """Some rows of a file, only the columns the estimate needs."""

    ids: list[Any]
    questions: list[Any]
    contexts: list[Any]
    answers: list[Any]
    ends_row_group: bool
    passed: dict[str, list[Any]] = field(default_factory=dict)
    """The pass-through columns the metrics read (a criterion's), those the file has."""


def _read(
    filesystem: Any, path: str, settings: Settings, extra: Sequence[str] = ()
) -> Iterator[_ReadBatch]:
    """The rows of one file, a batch at a time, row group by row group, read as `score` reads
    them (undecodable bytes as U+FFFD); a file whose data cannot be read is a StorageError
    naming it."""
    try:
        yield from _read_groups(filesystem, path, settings, extra)
    except (OSError, pa.ArrowException) as error:
        if isinstance(error, StorageError):
            raise
        filesystem.get_file_info(path)  # an outage is itself, not a broken file
        raise StorageError(f"{path}: its data cannot be read: {error}") from None


def _read_groups(
    filesystem: Any, path: str, settings: Settings, extra: Sequence[str]
) -> Iterator[_ReadBatch]:
    mapping = settings.columns
    contract = [mapping.question, mapping.contexts, mapping.answer]
    if is_text_log(path):  # no row groups: the whole file is one, as `score` reads it
        table = read_text_log_or_fail(filesystem, path, mapping, settings.pipeline.read_limits())
        check_columns(table.schema, mapping)
        has_id = ROW_ID_COLUMN in table.column_names
        present = [name for name in extra if name in table.column_names]
        batches = table.to_batches(max_chunksize=READ_BATCH_ROWS)
        position = 0
        for index, batch in enumerate(batches):
            last = index == len(batches) - 1
            yield _read_batch(
                batch, mapping, has_id, present, (path, position), ends_row_group=last
            )
            position += batch.num_rows
        return
    with filesystem.open_input_file(path) as handle:
        parquet = pq.ParquetFile(handle)
        check_columns(parquet.schema_arrow, mapping)
        names = schema_with_contract_names(parquet.schema_arrow, mapping).names
        has_id = ROW_ID_COLUMN in names
        present = [name for name in extra if name in parquet.schema_arrow.names]
        id_source = mapping.source(ROW_ID_COLUMN)
        id_column = (
            id_source.split(".")[0] if id_source not in parquet.schema_arrow.names else id_source
        )
        wanted = [*contract, id_column] if has_id else contract
        read = list(dict.fromkeys([*wanted, *present]))
        position = 0
        for group in range(parquet.metadata.num_row_groups):
            previous = None
            for batch in parquet.iter_batches(
                batch_size=READ_BATCH_ROWS, row_groups=[group], columns=read
            ):
                if previous is not None:
                    yield _read_batch(
                        previous, mapping, has_id, present, (path, position), ends_row_group=False
                    )
                    position += previous.num_rows
                previous = batch
            if previous is not None:
                yield _read_batch(
                    previous, mapping, has_id, present, (path, position), ends_row_group=True
                )
                position += previous.num_rows


def _read_batch(
    batch: Any,
    mapping: ColumnMapping,
    has_id: bool,
    present: Sequence[str],
    at: tuple[str, int],
    *,
    ends_row_group: bool,
) -> _ReadBatch:
    """One batch's contract fields, ids (derived ones, as `score` derives them, for a file
    without an id column; `at`: the file and the batch's first row number in it) and the
    pass-through columns the metrics read that the file has (`present`)."""
    batch = repair_utf8(with_contract_names(pa.Table.from_batches([batch]), mapping))
    contract = [mapping.question, mapping.contexts, mapping.answer]
    question, contexts, answer = (batch.column(name).to_pylist() for name in contract)
    if has_id:
        ids = batch.column(ROW_ID_COLUMN).to_pylist()
    else:
        key, first = file_key(at[0]), at[1]
        rows = zip(question, contexts, answer, strict=True)
        ids = [derived_id(key, first + n, *row) for n, row in enumerate(rows)]
    passed = {name: batch.column(name).to_pylist() for name in present}
    return _ReadBatch(ids, question, contexts, answer, ends_row_group, passed)


def _tally_rows(
    files: Iterable[tuple[Any, str]], settings: Settings, chunk_rows: int | None
) -> Tally:
    """Count every row of `files`, in order, cut into scoring batches as the run would cut
    them: the pipeline (`chunk_rows` given) rebatches each chunk to `batch_rows` rows;
    `ragas-ops score` reads batches of `batch_rows` that end with each Parquet row group."""
    metrics = configured_metrics(settings)
    extra = pass_through_columns(metrics)
    schema_in_text = settings.judge.endpoint.structured_output != "json_schema"
    reasoning = reasoning_estimate(settings.judge).tokens_per_reply
    counter = _RowCounter(metrics, schema_in_text=schema_in_text, reasoning_per_reply=reasoning)
    tally = Tally()
    batches = _Batches(settings, tally)
    fraction = settings.pipeline.sample_fraction
    seen: set[str] = set()
    for filesystem, path in files:
        tally.files += 1
        for read in _read(filesystem, path, settings, extra):
            chosen = sample_mask(read.ids, fraction)
            if fraction < 1.0:
                tally.rows_without_id += sum(row_id_text(value) is None for value in read.ids)
            for index, (keep, question, contexts, answer) in enumerate(
                zip(chosen, read.questions, read.contexts, read.answers, strict=True)
            ):
                if chunk_rows and tally.rows and tally.rows % chunk_rows == 0:
                    batches.close()  # a new pipeline chunk: a new scoring task
                tally.rows += 1
                if not keep:
                    batches.add([])
                    continue
                tally.rows_sampled += 1
                content = _content_key(question, contexts, answer)
                tally.repeated_rows += content in seen
                seen.add(content)
                row = validate_row(question, contexts, answer, settings.size_budget)
                for name in extra:  # a column the file lacks: the row's problem, as in `score`
                    values = read.passed.get(name)
                    add_pass_through(row, name, values[index] if values is not None else ABSENT)
                counter.count(row, tally)
                batches.add(counter.embedding_inputs(row))
            if read.ends_row_group and not chunk_rows:
                batches.close()
    batches.close()
    return tally


def _content_key(question: Any, contexts: Any, answer: Any) -> str:
    """A row's content, as a short key: rows with the same key send the same prompts."""
    text = json.dumps([question, contexts, answer], ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).hexdigest()


# --- the two sources ----------------------------------------------------------------------------


def estimate_input(input_uri: str, settings: Settings) -> Estimate:
    """The cost of `ragas-ops score INPUT` (a Parquet file or a folder of them)."""
    from ragas_ops.scoring.jobs import input_schema

    location: Location = locate(input_uri)
    paths = input_schema(location, settings).paths  # the files `score` would accept
    files = [(location.filesystem, path) for path in paths]
    tally = _tally_rows(files, settings, chunk_rows=None)
    return Estimate(settings, f"{location.uri} ({len(files)} file(s))", [("input", tally)])


def estimate_days(first: str, last: str, settings: Settings) -> Estimate:
    """The cost of the pipeline's runs for the days `first` to `last` (a backfill), from the
    raw lake; a day with no folder has no rows."""
    days = day_range(first, last)
    lake = Lake(settings.pipeline)
    parts = []
    for day in days:
        plan = plan_day(lake, day, settings)
        files = [(lake.raw.filesystem, file.path) for file in plan.files]
        tally = _tally_rows(files, settings, chunk_rows=plan.chunk_rows or None)
        tally.rejected_files = [f"{file.path} ({file.reason})" for file in plan.rejected]
        parts.append((day, tally))
    span = first if first == last else f"{days[0]} to {days[-1]}"
    source = f"raw lake {lake.raw.uri}, {span} ({len(days)} day(s))"
    return Estimate(settings, source, parts)


def day_range(first: str, last: str) -> list[str]:
    """The days from `first` to `last`, both included."""
    start, end = date.fromisoformat(parse_day(first)), date.fromisoformat(parse_day(last))
    if end < start:
        raise ValueError(f"--to {last} is before --from {first}")
    count = (end - start).days + 1
    if count > MAX_DAYS:
        raise ValueError(f"{count} days is more than the {MAX_DAYS} an estimate covers")
    return [(start + timedelta(days=offset)).isoformat() for offset in range(count)]
