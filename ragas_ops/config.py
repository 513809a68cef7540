"""All settings, in one typed place.

Precedence, lowest first: the defaults below, a TOML config file, environment variables
`RAGAS_OPS_<SECTION>_<FIELD>` (e.g. `RAGAS_OPS_JUDGE_MODEL`), then command-line options.
Every field is read by something; an unknown key in a config file is an error.
The API key is never a setting: the judge reads it from the environment variable that
`judge.api_key_env` names, so it never sits in a config file.
"""

from __future__ import annotations

import dataclasses
import math
import os
import tomllib
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args, get_type_hints
from urllib.parse import urlsplit

from ragas_ops.contract.inputs import ColumnMapping, SizeBudget
from ragas_ops.pricing import DEFAULT_PRICES, Price

# This module stays light (no numpy, pyarrow or pydantic): the DAG files read settings while
# Airflow parses them.

DEFAULT_METRICS = ("faithfulness", "answer_relevance", "context_relevance")
StructuredOutput = Literal["json_schema", "json_object", "none"]
JudgeKind = Literal["openai", "local"]
LocalBackend = Literal["auto", "onnx", "onnx-float", "torch"]
JudgeMode = Literal["sync", "batch"]
OnBatchUnanswered = Literal["sync", "status"]
SharedBudgetMode = Literal["none", "local", "redis"]
BudgetPool = Literal["nightly", "backfill"]
ServiceTier = Literal["default", "flex", "auto"]
ProviderCounts = Literal["max_tokens", "usage"]
TableFormat = Literal["parquet", "iceberg"]
ENV_PREFIX = "RAGAS_OPS_"


class ConfigError(ValueError):
    """A setting is unknown or has a value of the wrong kind."""


# A setting's range is declared on its field (dataclass metadata, also used by `contract`'s
# SizeBudget) and checked whenever a value comes from a file, the environment or the command
# line. Keys: `minimum` (inclusive), `exclusive_minimum`, `maximum` (inclusive).


def at_least_one(default: Any) -> Any:
    """A count that must be at least 1 (when set at all)."""
    return field(default=default, metadata={"minimum": 1})


def positive(default: Any) -> Any:
    """A number that must be above 0 (when set at all)."""
    return field(default=default, metadata={"exclusive_minimum": 0})


def fraction(default: Any) -> Any:
    """A share in (0, 1]."""
    return field(default=default, metadata={"exclusive_minimum": 0, "maximum": 1})


def check_base_url(url: str, source: str = "judge.base_url") -> None:
    """Refuse a base URL that is not http(s)://host[:port][/path] (a query string or fragment
    included), or that holds credentials (they would travel as Basic auth and come back in
    error messages). The message never repeats the credentials."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise ConfigError(f"{source}: the judge's base URL must start with http:// or https://")
    where = f"{parts.scheme}://{parts.hostname or ''}"
    if parts.username is not None or parts.password is not None:
        raise ConfigError(
            f"{source}: the base URL holds credentials ({parts.scheme}://***@...): credentials "
            "never travel in a URL; put the key in the environment variable that "
            "judge.api_key_env names (OPENAI_API_KEY by default)"
        )
    if not parts.hostname:
        raise ConfigError(f"{source}: the base URL has no host (expected http(s)://host/v1)")
    if "?" in url or "#" in url:
        # A query string would be sent in every request line (and logged by every proxy on
        # the way): `?api_key=KEY` is how some gateways take a key.
        raise ConfigError(
            f"{source}: the base URL {where}/... has a query string or fragment: only "
            "http(s)://host[:port][/path] is taken; a key goes in the environment variable "
            "that judge.api_key_env names"
        )
    try:
        parts.port  # noqa: B018 (urllib checks the port when it is read)
    except ValueError:
        port = parts.netloc.rpartition(":")[2]
        raise ConfigError(
            f"{source}: the base URL {where}:... has an invalid port {port!r} (1-65535)"
        ) from None


FlexDeadline = tuple[Literal["utc_time", "after_seconds"], float]
"""A parsed `judge.flex_deadline`: a UTC time of day (seconds after midnight), or seconds
after the judge started."""


def parse_flex_deadline(text: str, source: str = "judge.flex_deadline") -> FlexDeadline:
    """`HH:MM` (a UTC time of day: the first one after the run starts) or `<seconds>s` (that
    long after the judge of the run starts), or a `ConfigError` saying what is accepted."""
    value = text.strip().lower()
    hours, colon, minutes = value.partition(":")
    if colon and hours.isdigit() and minutes.isdigit() and len(minutes) == 2:
        if int(hours) < 24 and int(minutes) < 60:
            return "utc_time", float(int(hours) * 3600 + int(minutes) * 60)
    elif value.endswith("s"):
        try:
            seconds = float(value[:-1])
        except ValueError:
            seconds = -1.0
        if seconds >= 0 and seconds != float("inf"):
            return "after_seconds", seconds
    raise ConfigError(
        f"{source}: {text!r} is no deadline: expected a UTC time of day `HH:MM` (e.g. 06:30) "
        "or seconds after the run starts with an `s` (e.g. 5400s)"
    )


def check_flex_deadline(value: str, source: str = "judge.flex_deadline") -> None:
    parse_flex_deadline(value, source)


def check_shared_cache(uri: str, source: str = "judge.shared_cache") -> None:
    """Refuse a shared cache location that is not a folder, file:// or s3://bucket/prefix,
    or that holds credentials (they come from the aws connection or the AWS environment)."""
    parts = urlsplit(uri)
    if parts.scheme not in ("", "file", "s3"):
        raise ConfigError(f"{source}: use s3://bucket/prefix, a folder or a file:// URI")
    if parts.username is not None or parts.password is not None:
        raise ConfigError(
            f"{source}: the location holds credentials ({parts.scheme}://***@...): S3 "
            "credentials come from pipeline.aws_conn_id or the standard AWS chain"
        )
    if parts.scheme == "s3" and not parts.hostname:
        raise ConfigError(f"{source}: an s3:// location needs a bucket (s3://bucket/prefix)")


@dataclass
class JudgeSettings:
    """The LLM judge: where it is, what it may spend, and how it recovers."""

    kind: JudgeKind = "openai"
    """`openai`: an OpenAI-compatible LLM; `local`: the local judge (no network; `[local]`)."""
    local_model: str = "all-MiniLM-L6-v2"
    """The local judge's sentence-transformers model: the packaged default, a name, or a path."""
    local_backend: LocalBackend = "auto"
    """How the local judge runs its model: `onnx`, the packaged default as ONNX with its matrix
    products in int8 (no PyTorch, the `[local]` extra; derived once into the user's cache
    folder); `onnx-float`, the same model in float (closer to sentence-transformers' vectors,
    about 1.7 times slower); `torch`, sentence-transformers (`[local-torch]`, any model); `auto`,
    `onnx` for the packaged default when it is installed, else torch."""
    model: str = "gpt-4o-mini"
    embedding_model: str = "text-embedding-3-small"
    base_url: str | None = field(default=None, metadata={"check": check_base_url})
    """OpenAI-compatible endpoint; None means the SDK's default (or OPENAI_BASE_URL). Never
    with credentials in it (`user:key@`): the key is read from `api_key_env`."""
    api_key_env: str = "OPENAI_API_KEY"
    conn_id: str | None = "ragas_ops_judge"
    """In Airflow: the connection (type `openai`: host = the base URL, password = the key) the
    scoring tasks and the batch trigger read the endpoint and key from, through a secrets
    backend, `AIRFLOW_CONN_<ID>` or the metadata database; when it is not defined (or None),
    `base_url` and `api_key_env` as outside Airflow. The CLI never reads it."""
    rpm: int | None = positive(500)
    """Requests per minute this run may send (OpenAI tier 1 for gpt-4o-mini); None: no limit."""
    tpm: int | None = positive(200_000)
    """Tokens per minute this run may use; None: no limit."""
    max_concurrency: int = at_least_one(32)
    """Requests in flight at once."""
    timeout_seconds: float = positive(60.0)
    service_tier: ServiceTier = "default"
    """OpenAI's processing tier (docs/flex-tier.md): `default` sends none (the endpoint's own);
    `flex` asks for flex processing (the Batch API's price, slower, capacity 429s); `auto`
    sends OpenAI's `auto` (the tier set in the project's settings), handled as flex may be."""
    flex_timeout_seconds: float = positive(900.0)
    """Per-request timeout of requests sent as `flex` or `auto` (OpenAI suggests 15 minutes)."""
    flex_fallback_after_seconds: float = field(default=300.0, metadata={"minimum": 0})
    """A request answered "resource unavailable" (a flex capacity 429) for this long since the
    first one goes to the standard tier; 0: never (it gives up like a request 429ed often)."""
    flex_deadline: str | None = field(default=None, metadata={"check": check_flex_deadline})
    """After this, new requests go to the standard tier so that the run ends in time: a UTC
    time of day `HH:MM` (the first after the run starts) or `<seconds>s` after it starts;
    None: no deadline."""
    max_attempts: int = at_least_one(8)
    """Tries per request, counting the first, across 5xx errors, timeouts and replies that are
    no API reply; 429s use none (see `rate_limit_patience_seconds`)."""
    rate_limit_patience_seconds: float = positive(3600.0)
    """How long a request answered 429 is asked again (each time after its Retry-After)
    before it gives up, counted from its first 429: a 429 is the account's pace, or another
    application's use of the same limits, not a reason to lose a row."""
    structured_output: StructuredOutput = "json_schema"
    """How to ask for JSON: OpenAI's strict json_schema, plain json_object, or the prompt only."""
    embedding_batch_size: int = at_least_one(512)
    """Texts per embeddings request (OpenAI accepts up to 2048)."""
    cache_path: str | None = ".ragas-ops-cache/judge.sqlite"
    """SQLite file of cached judge responses; None keeps the cache in memory for one run."""
    shared_cache: str | None = field(default=None, metadata={"check": check_shared_cache})
    """Where every host of the deployment shares cached responses (s3://bucket/prefix, a
    folder or file://), behind the local file; None: the local file alone."""
    shared_cache_threads: int = at_least_one(16)
    """Reads and writes of the shared cache in flight at once, per scoring process."""
    shared_cache_timeout_seconds: float = positive(5.0)
    """Connect and request timeout of the shared cache's S3 store."""
    shared_cache_retry_seconds: float = positive(60.0)
    """After the shared cache failed (down, access denied), how long the local cache is used
    alone before the shared one is tried again."""
    mode: JudgeMode = "sync"
    """`sync`: one request at a time through the rate limiter; `batch`: the OpenAI Batch API
    (half the price, answers within `batch_completion_window`; the pipeline only)."""
    batch_max_requests: int = at_least_one(50_000)
    """Most requests per batch input file (OpenAI's limit); larger rounds are split."""
    batch_max_bytes: int = at_least_one(190_000_000)
    """Most bytes per batch input file (OpenAI's limit is 200 MB); larger rounds are split."""
    batch_completion_window: str = "24h"
    batch_poll_seconds: float = positive(60.0)
    """How often the Airflow triggerer asks whether submitted batches are done."""
    batch_wait_seconds: float = positive(26 * 3600)
    """How long a scoring task waits for its batches before failing (its retry re-attaches to
    them): a little more than the completion window."""
    on_batch_unanswered: OnBatchUnanswered = "sync"
    """Requests a batch did not answer (expired, failed, errors): `sync` sends them again in
    sync mode; `status` gives their rows `judge_unavailable` with the batch's reason."""
    budget_usd: float | None = positive(None)
    """Most money one run may spend on the judge (a DAG run: shared between its chunks in
    proportion to their rows); rows past it get `budget_exhausted`. None: no limit."""
    budget_tokens: int | None = at_least_one(None)
    """Most tokens (prompt + completion + embedding) one run may spend; None: no limit."""
    retry_failed: bool = False
    """Ask again the requests whose stored reply was unusable (it did not parse after the
    repair, or a content filter refused it); by default a rerun reuses those outcomes and
    pays nothing for them."""
    unreachable_after: int = field(default=20, metadata={"minimum": 0})
    """The run stops (exit 4) when this many attempts in a row failed (connection refused,
    DNS, TLS, timeouts, 5xx, replies that are no API replies) before any request succeeded;
    0: never."""
    provider_counts: ProviderCounts = "max_tokens"
    """How the provider's token limit counts a chat request: `max_tokens`, as OpenAI and Azure
    do (the prompt and max_tokens x n when it admits it, kept whatever the reply uses); `usage`,
    as vLLM behind a gateway and most gateways do (the prompt, then the completion it used: the
    judge then holds the completion it expects, learnt per prompt, not max_tokens)."""
    provider_burst_seconds: float = positive(1.0)
    """How many seconds of its rates the provider lets through at once (OpenAI: about one):
    the judge's buckets, and the shared budget's, hold no more than that."""
    rate_margin: float = field(default=0.05, metadata={"minimum": 0, "maximum": 0.5})
    """Share of `rpm` and `tpm` the judge leaves unused: paced exactly at its limit, the
    provider's bucket stays empty and a request that a busy host or the network delays lands
    on top of the next one (a 429); paced under it, the bucket refills and absorbs that."""
    admission_margin: float = field(default=0.05, metadata={"minimum": 0, "maximum": 1})
    """Share added to a request's token count at admission (messages, the response_format
    schema, max_tokens x n), against a provider counting a little more than the estimate."""
    shared_budget: SharedBudgetMode = "local"
    """`local`: the scoring processes of one machine that use one account (endpoint and model)
    share its `rpm` and `tpm` through a file beside the cache (`budget.sqlite`; see
    docs/shared-budget.md); `redis`: the processes of every machine share them through the
    Redis server at `shared_budget_url`; `none`: each process uses its static share alone."""
    backfill_share: float = field(default=0.25, metadata={"minimum": 0, "maximum": 1})
    """Under a shared budget: the share of the account kept for the backfill pool's processes
    while nightly ones have work (nightly ones have the rest); a pool alone has all of it."""
    budget_pool: BudgetPool = "nightly"
    """The pool this process counts in for the shared budget: `nightly` or `backfill`."""
    static_share: float = fraction(1.0)
    """The share of `rpm` and `tpm` this process uses when the shared budget is off or its
    file fails; the pipeline sets 1/(pool_slots + backfill_pool_slots) for its chunks."""
    shared_budget_url: str | None = None
    """With `shared_budget = redis`: the server, `redis://host:6379/0` (`rediss://` for TLS);
    never with a password in it: that comes from `shared_budget_password_env`."""
    shared_budget_password_env: str = "REDIS_PASSWORD"  # noqa: S105 (a name)
    """The environment variable holding the Redis password, if the server wants one."""


def check_metric_names(names: tuple[str, ...], source: str = "metrics.names") -> None:
    """Refuse an empty list: a run that computes no metric would write a table of no scores
    and exit as if it had scored."""
    if not names:
        raise ConfigError(
            f"{source}: names is empty: name at least one metric, e.g. {','.join(DEFAULT_METRICS)}"
        )


@dataclass
class MetricSettings:
    names: tuple[str, ...] = field(default=DEFAULT_METRICS, metadata={"check": check_metric_names})
    options: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Each metric's options, `[metrics.<name>]` in the config file: as given here; the
    metric's package declares, types and checks them when the metric is built
    (`metrics.registry.build_metrics`), so this file lists no metric's options."""


MOVED_METRIC_KEYS = {
    "answer_relevance_questions": ("answer_relevance", "questions"),
    "question_strategy": ("answer_relevance", "question_strategy"),
}
"""Keys of `[metrics]` that became a metric's options (`[metrics.<name>]`): still read, from a
file with a deprecation message; as environment variables they stay the way to set them."""

_METRIC_OPTIONS: dict[str, type[Any]] = {}


def register_metric_options(metric: str, options: type[Any]) -> None:
    """Check `[metrics.<metric>]` against `options` (a dataclass of settings) as it is read, so
    a bad value names its file or variable; the metric's registration calls this. A table of a
    metric not registered yet is checked when the metrics are built."""
    _METRIC_OPTIONS[metric] = options


def forget_metric_options(metric: str) -> None:
    """The counterpart of `register_metric_options` (a metric registered for a while)."""
    _METRIC_OPTIONS.pop(metric, None)


def _metric_settings(
    section: MetricSettings, values: Any, source: str, *, from_file: bool = True
) -> MetricSettings:
    """`[metrics]`: its own settings, each `[metrics.<name>]` table (a metric's options, merged
    over the ones given before) and the keys that moved into such a table. `source` is the
    file's name (or the environment variable's)."""
    section_source = f"{source} [metrics]" if from_file else source
    if not isinstance(values, Mapping):
        raise ConfigError(f"{section_source}: expected a table of settings")
    given: dict[str, dict[str, Any]] = {}
    own: dict[str, Any] = {}
    for key, value in values.items():
        if key in MOVED_METRIC_KEYS:
            metric, option = MOVED_METRIC_KEYS[key]
            if from_file:
                warnings.warn(
                    f"{section_source}: {key} is deprecated; write it as "
                    f"[metrics.{metric}] {option}",
                    FutureWarning,
                    stacklevel=3,
                )
            given.setdefault(metric, {})[option] = value
        elif isinstance(value, Mapping):
            given.setdefault(key, {}).update(value)
        else:
            own[key] = value
    for metric, table in given.items():
        if metric in _METRIC_OPTIONS:
            where = f"{source} [metrics.{metric}]" if from_file else source
            updated_section(_METRIC_OPTIONS[metric](), table, where)
    options = {name: dict(table) for name, table in section.options.items()}
    for metric, table in given.items():
        options.setdefault(metric, {}).update(table)
    updated: MetricSettings = updated_section(section, own, section_source)
    return dataclasses.replace(updated, options=options)


OnProblem = Literal["warn", "fail"]


@dataclass
class PipelineSettings:
    """The nightly pipeline: where logs and tables live, how a day is cut, what fails a run."""

    raw_uri: str = "lake/raw"
    """Where logs land: `<raw_uri>/dt=YYYY-MM-DD/*.parquet` (a local folder, file:// or s3://)."""
    warehouse_uri: str = "lake/warehouse"
    """Where scored tables, daily metrics, manifests and reports are written."""
    aws_conn_id: str | None = None
    """Airflow aws connection for s3:// locations; none: the standard AWS credential chain."""
    chunk_rows: int = at_least_one(2000)
    """Rows per mapped scoring task (grown when a day would need more than max_chunks)."""
    max_chunks: int = at_least_one(512)
    """Most mapped tasks per day (Airflow's max_map_length is 1024 by default)."""
    pool: str = "ragas_ops_judge"
    """Airflow pool of the scoring tasks of nightly and manual runs."""
    pool_slots: int = at_least_one(4)
    """Size of that pool (`airflow pools set ragas_ops_judge 4 ...`, see docs/pipeline.md)."""
    backfill_pool: str = "ragas_ops_backfill"
    """Airflow pool of the scoring tasks of backfill runs: backfills never take the nightly
    run's slots."""
    backfill_pool_slots: int = at_least_one(2)
    """Size of that pool. The scoring tasks of a machine share the judge's rpm and tpm
    (`judge.shared_budget`); 1/(pool_slots + backfill_pool_slots) each is their static share."""
    task_retries: int = 2
    """Retries of a failed scoring task (a retry in batch mode re-attaches to its batches)."""
    retry_delay_seconds: float = positive(30.0)
    """Wait before the first retry; it doubles with each retry."""
    segments: tuple[str, ...] = ()
    """Columns the daily metrics are broken down by (e.g. app, model_version)."""
    regression_window_days: int = at_least_one(7)
    regression_threshold: float = positive(0.05)
    """A drop of the daily mean below the trailing mean by more than this is a regression."""
    on_regression: OnProblem = "warn"
    on_bad_input: OnProblem = "fail"
    """What a corrupt or contract-breaking input file does to the run (after the rest is
    scored and published): fail it, or only report it."""
    sample_fraction: float = fraction(1.0)
    """Share of rows to score, chosen by a hash of the row id (the same rows on every rerun);
    the others come out with the status `not_sampled`."""
    is_paused_upon_creation: bool | None = None
    """Whether the DAG is paused when Airflow first sees it; None: Airflow's
    `[core] dags_are_paused_at_creation` (True by default). `ragas-ops airflow up` sets False."""
    min_republish_fraction: float = field(default=0.5, metadata={"minimum": 0, "maximum": 1})
    """A rerun may not publish fewer than this share of the rows already published for the
    day (nor anything over a day whose raw partition is gone) unless the run's `allow_shrink`
    parameter says so; 0 turns the guard off (see docs/lake-safety.md)."""
    verify_input_pages: bool = True
    """The plan decodes every page of the day's files, so that a corrupt file is rejected by
    name before any judge call, not found by a scoring task halfway."""
    stale_staging_hours: float = field(default=48.0, metadata={"minimum": 0})
    """Staging folders of other runs of a day older than this are a crashed run's leftovers:
    the day's next publish deletes them (longer than a batch-mode wait)."""


CATALOG_SCHEMES = ("sqlite", "postgresql", "mysql", "mariadb", "mssql", "oracle")
"""SQLAlchemy dialects a SQL catalog may live in (with or without a `+driver`)."""


def masked_catalog_uri(uri: str) -> str:
    """The catalog URI as it may be shown: its password, if any, replaced by `***`."""
    parts = urlsplit(uri)
    if parts.password is None:
        return uri
    user = parts.username or ""
    host = parts.netloc.rpartition("@")[2]
    return parts._replace(netloc=f"{user}:***@{host}").geturl()


def check_catalog_uri(uri: str, source: str = "warehouse.catalog_uri") -> None:
    """Refuse a catalog URI that is not a SQLAlchemy URL of a SQL database (the message shows
    it with its password masked)."""
    if not uri:
        return
    scheme = urlsplit(uri).scheme
    if scheme.split("+", 1)[0] not in CATALOG_SCHEMES or "://" not in uri:
        raise ConfigError(
            f"{source}: {masked_catalog_uri(uri)!r} is not a SQLAlchemy URL of a SQL catalog "
            "(e.g. postgresql+psycopg2://user:password@host/database or sqlite:///PATH); "
            f"dialects: {list(CATALOG_SCHEMES)}"
        )


@dataclass
class WarehouseSettings:
    """How the warehouse's tables are kept (see docs/iceberg.md)."""

    table_format: TableFormat = "parquet"
    """`parquet`: Hive-style day folders of Parquet files; `iceberg`: Apache Iceberg tables
    `scored`, `daily_metrics` and `runs` in a SQL catalog (extra `[iceberg]`)."""
    catalog_uri: str | None = field(default=None, repr=False, metadata={"check": check_catalog_uri})
    """The Iceberg catalog's SQLAlchemy URL; none: SQLite beside a local lake (an s3://
    warehouse needs one every worker reaches). Its password is a secret: never shown."""
    snapshot_retention_days: int = field(default=30, metadata={"minimum": 0})
    """The maintenance DAG expires Iceberg snapshots older than this: how far back a day's
    earlier versions can be read (time travel); 0 keeps only each table's current one."""
    compact_days: int = at_least_one(7)
    """The maintenance DAG rewrites each table's latest this many days as one file each."""


@dataclass
class Settings:
    judge: JudgeSettings = field(default_factory=JudgeSettings)
    metrics: MetricSettings = field(default_factory=MetricSettings)
    columns: ColumnMapping = field(default_factory=ColumnMapping)
    size_budget: SizeBudget = field(default_factory=SizeBudget)
    pipeline: PipelineSettings = field(default_factory=PipelineSettings)
    warehouse: WarehouseSettings = field(default_factory=WarehouseSettings)
    prices: dict[str, Price] = field(default_factory=lambda: dict(DEFAULT_PRICES))
    batch_rows: int = at_least_one(256)
    """Rows scored together: the unit of streaming, progress and embeddings batching."""


SECTIONS = ("judge", "metrics", "columns", "size_budget", "pipeline", "warehouse")
_BATCH_ROWS = next(f for f in dataclasses.fields(Settings) if f.name == "batch_rows")


def load_settings(
    config_file: Path | None = None, environ: Mapping[str, str] | None = None
) -> Settings:
    """Defaults, then the config file, then `RAGAS_OPS_*` environment variables."""
    settings = Settings()
    if config_file is not None:
        apply_mapping(settings, _read_config_file(config_file), source=str(config_file))
    apply_environment(settings, os.environ if environ is None else environ)
    return settings


def _read_config_file(path: Path) -> dict[str, Any]:
    """The TOML file's tables, or a ConfigError naming the file and what is wrong with it."""
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except OSError as error:
        raise ConfigError(f"the config file {path} cannot be read: {error.strerror}") from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"the config file {path} is not valid TOML: {error}") from None


def apply_mapping(settings: Settings, values: Mapping[str, Any], source: str) -> None:
    """Apply a nested mapping shaped like the config file (sections, `prices`, `batch_rows`)."""
    for key, value in values.items():
        if key == "metrics":
            settings.metrics = _metric_settings(settings.metrics, value, source)
        elif key in SECTIONS:
            section = getattr(settings, key)
            setattr(settings, key, updated_section(section, value, f"{source} [{key}]"))
        elif key == "prices":
            settings.prices.update(_prices(value, source))
        elif key == "batch_rows":
            settings.batch_rows = _in_range(
                _BATCH_ROWS, _coerce(int, value, f"{source} {key}"), source
            )
        else:
            raise ConfigError(f"{source}: unknown setting {key!r}")


def apply_environment(settings: Settings, environ: Mapping[str, str]) -> None:
    """Apply `RAGAS_OPS_<SECTION>_<FIELD>` variables; unknown ones are an error, not ignored."""
    for name, raw in environ.items():
        if not name.startswith(ENV_PREFIX) or name in _NOT_SETTINGS:
            continue
        key = name.removeprefix(ENV_PREFIX).lower()
        if key == "batch_rows":
            settings.batch_rows = _in_range(_BATCH_ROWS, _coerce(int, raw, name), name)
            continue
        section_name = next((s for s in SECTIONS if key.startswith(s + "_")), None)
        if section_name is None:
            raise ConfigError(f"unknown environment setting {name}")
        values = {key[len(section_name) + 1 :]: raw}
        if section_name == "metrics":
            settings.metrics = _metric_settings(settings.metrics, values, name, from_file=False)
            continue
        section = getattr(settings, section_name)
        setattr(settings, section_name, updated_section(section, values, name))


# Variables with the prefix that name where settings are, rather than being settings.
CONFIG_FILE_ENV = "RAGAS_OPS_CONFIG"
_NOT_SETTINGS = frozenset({CONFIG_FILE_ENV})


def settings_from_environment(environ: Mapping[str, str] | None = None) -> Settings:
    """Settings for a process configured by its environment (an Airflow task, a DAG file):
    the file named by RAGAS_OPS_CONFIG, if any, then RAGAS_OPS_* variables."""
    environ = os.environ if environ is None else environ
    config_file = environ.get(CONFIG_FILE_ENV)
    return load_settings(Path(config_file) if config_file else None, environ)


def updated_section(section: Any, values: Any, source: str) -> Any:
    """A copy of the dataclass `section` with `values` (a table of the config file, or text
    from the environment) coerced to its fields' types and checked against their ranges: the
    one reader of a table of settings, also for the options a metric declares."""
    if not isinstance(values, Mapping):
        raise ConfigError(f"{source}: expected a table of settings")
    hints = get_type_hints(type(section))
    known = {f.name: f for f in dataclasses.fields(section)}
    changes = {}
    for key, value in values.items():
        if key not in known:
            raise ConfigError(f"{source}: unknown setting {key!r}; known: {sorted(known)}")
        coerced = _coerce(hints[key], value, f"{source} {key}")
        changes[key] = _in_range(known[key], coerced, source)
    return dataclasses.replace(section, **changes)


def _coerce(kind: Any, value: Any, source: str) -> Any:
    """Convert a config or environment value to the declared type, or explain why not."""
    args = get_args(kind)
    if type(None) in args:
        if value is None or (isinstance(value, str) and value.lower() in ("", "none", "null")):
            return None
        kind = next(arg for arg in args if arg is not type(None))
        args = get_args(kind)
    if args and all(isinstance(arg, str) for arg in args):  # a Literal
        if value not in args:
            raise ConfigError(f"{source}: {value!r} is not one of {list(args)}")
        return value
    if kind is bool:
        if isinstance(value, bool):
            return value
        return str(value).lower() in ("1", "true", "yes", "on")
    if getattr(kind, "__origin__", None) is tuple:
        return _names(value, source)
    return _number_or_text(kind, value, source)


def _in_range(declared: dataclasses.Field[Any], value: Any, source: str) -> Any:
    """`value`, if it is within the range declared on the setting's field (see `at_least_one`)
    and passes the field's own check (`metadata["check"]`, e.g. the judge's base URL)."""
    if value is None:
        return value
    key, bounds = declared.name, declared.metadata
    check = bounds.get("check")
    if check is not None:
        check(value, source)
    low, above = bounds.get("minimum"), bounds.get("exclusive_minimum")
    high = bounds.get("maximum")
    if high is not None:
        inside = (
            value <= high and (low is None or value >= low) and (above is None or value > above)
        )
        if not inside:
            left = f"[{low:g}" if low is not None else f"({above:g}"
            raise ConfigError(f"{source}: {key} must be in {left}, {high:g}], got {value!r}")
    if low is not None and value < low:
        raise ConfigError(f"{source}: {key} must be at least {low}, got {value!r}")
    if above is not None and value <= above:
        raise ConfigError(f"{source}: {key} must be positive (or none for no limit), got {value!r}")
    return value


def _names(value: Any, source: str) -> tuple[str, ...]:
    """A list of names, from a TOML array or a comma-separated string."""
    if isinstance(value, str):
        value = value.split(",")
    if not isinstance(value, list | tuple) or not all(isinstance(item, str) for item in value):
        raise ConfigError(f"{source}: expected a list of names, got {value!r}")
    return tuple(item.strip() for item in value if item.strip())


def _number_or_text(kind: Any, value: Any, source: str) -> Any:
    """int, float or str from a TOML value of that kind or from text; a bool or a fraction
    for a whole number is refused rather than silently converted."""
    refused = (
        isinstance(value, bool)
        or (kind is int and not isinstance(value, int | str))
        or (kind is float and not isinstance(value, int | float | str))
        or (kind is str and not isinstance(value, str))
    )
    if not refused:
        try:
            converted = kind(value)
        except (TypeError, ValueError):
            pass
        else:
            if kind is float and not math.isfinite(converted):
                # NaN passes every range check (all comparisons are false) and inf means
                # nothing as a timeout, a price or a share; "none" is how to say "no limit".
                raise ConfigError(f"{source}: {value!r} is not a finite number")
            return converted
    raise ConfigError(f"{source}: {value!r} is not a valid {kind.__name__}")


def _prices(values: Any, source: str) -> dict[str, Price]:
    if not isinstance(values, Mapping):
        raise ConfigError(f"{source} [prices]: expected one table per model")
    prices = {}
    for model, table in values.items():
        where = f"{source} [prices.{model!r}]"
        if not isinstance(table, Mapping):
            raise ConfigError(f"{where}: expected a table of rates")
        rates = {
            name: _number_or_text(float, rate, f"{where} {name}") for name, rate in table.items()
        }
        try:
            prices[model] = Price(**rates)
        except TypeError as error:
            raise ConfigError(f"{where}: {error}") from None
    return prices
