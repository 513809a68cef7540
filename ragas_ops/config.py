"""All settings, in one typed place.

Precedence, lowest first: the defaults below, a TOML config file, environment variables
`RAGAS_OPS_<SECTION>_<FIELD>` (e.g. `RAGAS_OPS_JUDGE_MODEL`), then command-line options.
Every field is read by something; an unknown key in a config file is an error.
The API key is never a setting: the judge reads it from the environment variable that
`judge.api_key_env` names, so it never sits in a config file.
"""

from __future__ import annotations

import dataclasses
import difflib
import logging
import math
import os
import tomllib
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args, get_type_hints
from urllib.parse import urlsplit

from ragas_ops.contract.inputs import ColumnMapping, SizeBudget
from ragas_ops.contract.logs import ReadLimits
from ragas_ops.criteria.spec import CriterionSpec, read_criteria
from ragas_ops.judge.anthropic.spec import AnthropicSpec
from ragas_ops.judge.azure.spec import AzureSpec
from ragas_ops.judge.bedrock.spec import BedrockSpec
from ragas_ops.judge.cache.spec import CacheSpec
from ragas_ops.judge.engine.spec import FlexSpec, ModelSpec
from ragas_ops.judge.limits.spec import LimitsSpec, SharedBudgetSpec
from ragas_ops.judge.local.spec import LocalSpec
from ragas_ops.judge.spec import BatchSpec, CandidateSpec, EndpointSpec, check_judge_kind
from ragas_ops.labels.spec import LabelsSpec
from ragas_ops.notify.spec import NotifySpec
from ragas_ops.pricing import DEFAULT_PRICES, Price
from ragas_ops.settings_fields import ConfigError as ConfigError  # noqa: PLC0414 (re-exported)
from ragas_ops.settings_fields import at_least_one, fraction, positive, setting_key

# This module stays light (no numpy, pyarrow or pydantic): the DAG files read settings while
# Airflow parses them.

DEFAULT_METRICS = ("faithfulness", "answer_relevance", "context_relevance")
TableFormat = Literal["parquet", "iceberg"]
log = logging.getLogger(__name__)

ENV_PREFIX = "RAGAS_OPS_"


@dataclass
class JudgeSettings:
    """The LLM judge: which kind, and one spec per part it configures, each declared beside
    its part. The config file's `[judge]` table, the `RAGAS_OPS_JUDGE_*` variables and the
    flags name the specs' settings flat (`rpm`, `cache_path`): each spec field declares its key."""

    kind: str = field(default="openai", metadata={"check": check_judge_kind})
    """`openai`: an OpenAI-compatible LLM; `local`: the local judge (no network; `[local]`);
    or the name a provider package registers (`judge.providers.register_provider`)."""
    endpoint: EndpointSpec = field(default_factory=EndpointSpec)
    """Where requests go and how they are made and retried (`judge/spec.py`)."""
    limits: LimitsSpec = field(default_factory=LimitsSpec)
    """The account's rates and a run's budget (`judge/limits/spec.py`)."""
    shared_budget: SharedBudgetSpec = field(default_factory=SharedBudgetSpec)
    """How the processes on one account share its rates (`judge/limits/spec.py`)."""
    cache: CacheSpec = field(default_factory=CacheSpec)
    """The local and the shared response cache (`judge/cache/spec.py`)."""
    batch: BatchSpec = field(default_factory=BatchSpec)
    """Sync or batch mode, and the batches' sizes and waits (`judge/spec.py`)."""
    flex: FlexSpec = field(default_factory=FlexSpec)
    """The service tier and the flex tier's timeouts and deadline (`judge/engine/spec.py`)."""
    model: ModelSpec = field(default_factory=ModelSpec)
    """What the model takes and the effort asked of it (`judge/engine/spec.py`)."""
    local: LocalSpec = field(default_factory=LocalSpec)
    """The local judge's model and how it runs (`judge/local/spec.py`)."""
    anthropic: AnthropicSpec = field(default_factory=AnthropicSpec)
    """The Anthropic judge's thinking and prompt caching (`judge/anthropic/spec.py`)."""
    azure: AzureSpec = field(default_factory=AzureSpec)
    """Azure OpenAI's API version and credentials (`judge/azure/spec.py`)."""
    bedrock: BedrockSpec = field(default_factory=BedrockSpec)
    """Amazon Bedrock's region and credentials (`judge/bedrock/spec.py`)."""
    candidate: CandidateSpec = field(default_factory=CandidateSpec, metadata={"table": True})
    """A shadow judge beside the judge of record (`judge/spec.py`): `[judge.candidate]` in
    the config file, `candidate_<name>` flat."""


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

AIRFLOW_MAX_MAP_LENGTH = 1024
"""Airflow's default `[core] max_map_length`: the most mapped tasks one task may expand to."""


def check_max_chunks(value: int, source: str) -> None:
    """Refuse more chunks than Airflow can map: the day would fail at its mapping with
    "unmappable_return_value_length", after the plan, with no manifest or report."""
    limit = int(os.environ.get("AIRFLOW__CORE__MAX_MAP_LENGTH", AIRFLOW_MAX_MAP_LENGTH))
    if value > limit:
        raise ConfigError(
            f"{source}: max_chunks is {value}, above Airflow's [core] max_map_length "
            f"({limit}): a day cut in more chunks than that cannot be mapped. Set it to at most "
            f"{limit} (chunks grow past chunk_rows to fit), or raise max_map_length "
            "(AIRFLOW__CORE__MAX_MAP_LENGTH) first"
        )


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
    max_chunks: int = field(default=512, metadata={"minimum": 1, "check": check_max_chunks})
    """Most mapped tasks per day: at most Airflow's `[core] max_map_length` (1024 unless
    AIRFLOW__CORE__MAX_MAP_LENGTH says otherwise), refused above it."""
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
    """Columns the daily metrics are broken down by (e.g. app, model_version): the plan
    refuses a day whose files have none of a segment's column, before any request."""
    regression_window_days: int = at_least_one(7)
    regression_threshold: float = positive(0.05)
    """A drop of the daily mean below the trailing mean by more than this is a regression."""
    on_regression: OnProblem = "warn"
    max_quiet_days: int = field(default=3, metadata={"minimum": 0})
    """Nights in a row without traffic (no row logged since the raw root's last earlier day
    folder) after which the run fails, so that a writer that stopped is seen; 0: never."""
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
    max_log_line_bytes: int = at_least_one(16_777_216)
    """A JSON Lines or CSV file with a longer line is rejected by name as it streams in,
    before it is read whole (16 MiB: far above the size budget's texts)."""
    max_log_cell_bytes: int = at_least_one(16_777_216)
    """A CSV file with a longer cell (a quoted one may span lines) is rejected by name."""
    max_input_columns: int = at_least_one(1_000)
    """An input file (Parquet, JSON Lines, CSV) with more columns is rejected by name, from
    its footer or its header, before its rows are read."""

    def read_limits(self) -> ReadLimits:
        """The bounds every input file is read within (`contract.logs.ReadLimits`)."""
        return ReadLimits(self.max_log_line_bytes, self.max_log_cell_bytes, self.max_input_columns)


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
    labels: LabelsSpec = field(default_factory=LabelsSpec)
    notify: NotifySpec = field(default_factory=NotifySpec)
    prices: dict[str, Price] = field(default_factory=lambda: dict(DEFAULT_PRICES))
    batch_rows: int = at_least_one(256)
    """Rows scored together: the unit of streaming, progress and embeddings batching."""
    criteria: dict[str, CriterionSpec] = field(default_factory=dict)
    """The team's own judged criteria, `[criteria.<name>]` (`criteria/spec.py`): each one is
    scored as a metric of that name, after the metrics `[metrics] names` lists."""


SECTIONS = (
    "judge",
    "metrics",
    "columns",
    "size_budget",
    "pipeline",
    "warehouse",
    "labels",
    "notify",
)
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
    """Apply a nested mapping shaped like the config file (sections, `prices`, `batch_rows`).
    Every unknown key is named at once, a table as a section, with the name it is close to."""
    top_level = [*SECTIONS, "prices", "batch_rows", "criteria"]
    unknown = [
        unknown_key(key, top_level, section=isinstance(value, Mapping))
        for key, value in values.items()
        if key not in top_level
    ]
    if unknown:
        raise ConfigError(
            f"{source}: {'; '.join(unknown)} (the sections are "
            f"{', '.join(f'[{name}]' for name in [*SECTIONS, 'prices', 'criteria'])})"
        )
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
        elif key == "criteria":
            settings.criteria = {**settings.criteria, **read_criteria(value, source)}
        else:
            raise ConfigError(f"{source}: unknown setting {key!r}")
    include_criteria(settings)


def include_criteria(settings: Settings) -> None:
    """Every criterion is scored: its name follows the metrics `[metrics] names` lists,
    whichever source set them last (a criterion already listed keeps its place; one named
    like a metric is refused when the metrics are built: `metrics.criteria`)."""
    names = settings.metrics.names
    added = tuple(name for name in settings.criteria if name not in names)
    if added:
        settings.metrics = dataclasses.replace(settings.metrics, names=names + added)


def apply_environment(settings: Settings, environ: Mapping[str, str]) -> None:
    """Apply `RAGAS_OPS_<SECTION>_<FIELD>` variables. An unknown one close to a setting's name
    is a typo, an error; any other unknown one (another tool's variable, a setting of a later
    version) is named in a warning and left alone: a DAG file must not fail to import for it."""
    unknown = unknown_environment_names(environ)
    if unknown:
        log.warning(
            "ignoring environment variable(s) that are not ragas-ops settings: %s "
            "(the settings are in docs/configuration.md)",
            ", ".join(unknown),
        )
    for name, raw in environ.items():
        if not name.startswith(ENV_PREFIX) or name in _NOT_SETTINGS or name in unknown:
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
    include_criteria(settings)


# Variables with the prefix that name where settings are, rather than being settings.
CONFIG_FILE_ENV = "RAGAS_OPS_CONFIG"
_NOT_SETTINGS = frozenset({CONFIG_FILE_ENV})
# How close (difflib's ratio, over the name without its prefix) an unknown variable must be
# to a setting's to be taken as its typo: RAGAS_OPS_JUDGE_MODLE is, RAGAS_OPS_LOG_LEVEL is not.
_TYPO_SIMILARITY = 0.8


def unknown_key(key: str, known: Iterable[str], *, section: bool = False) -> str:
    """`key` named as unknown (a section when it holds a table), with the known name it is
    closest to, if one is close (a typo)."""
    close = difflib.get_close_matches(key, list(known), n=1, cutoff=0.6)
    if section:
        return f"unknown section [{key}]" + (f" (did you mean [{close[0]}]?)" if close else "")
    return f"unknown setting {key!r}" + (f" (did you mean {close[0]!r}?)" if close else "")


def environment_names() -> set[str]:
    """Every `RAGAS_OPS_*` variable that is a setting (or names the config file)."""
    names = {f"{ENV_PREFIX}BATCH_ROWS", *_NOT_SETTINGS}
    for section in SECTIONS:
        keys = set(section_keys(type(getattr(Settings(), section))))
        if section == "metrics":
            keys |= set(MOVED_METRIC_KEYS)
        names |= {f"{ENV_PREFIX}{section}_{key}".upper() for key in keys}
    return names


def unknown_environment_names(environ: Mapping[str, str]) -> list[str]:
    """The `RAGAS_OPS_*` variables of `environ` that are no setting; a ConfigError when one
    of them is close to a setting's name (a typo, which would otherwise go unnoticed)."""
    known = environment_names()
    unknown = sorted(n for n in environ if n.startswith(ENV_PREFIX) and n.upper() not in known)
    suffixes = [name.removeprefix(ENV_PREFIX) for name in known]
    for name in unknown:
        close = difflib.get_close_matches(
            name.upper().removeprefix(ENV_PREFIX), suffixes, n=1, cutoff=_TYPO_SIMILARITY
        )
        if close:
            raise ConfigError(
                f"unknown environment setting {name}; did you mean {ENV_PREFIX}{close[0]}?"
            )
    return unknown


def settings_from_environment(environ: Mapping[str, str] | None = None) -> Settings:
    """Settings for a process configured by its environment (an Airflow task, a DAG file):
    the file named by RAGAS_OPS_CONFIG, if any, then RAGAS_OPS_* variables."""
    environ = os.environ if environ is None else environ
    config_file = environ.get(CONFIG_FILE_ENV)
    return load_settings(Path(config_file) if config_file else None, environ)


def updated_section(section: Any, values: Any, source: str) -> Any:
    """A copy of the dataclass `section` with `values` (a table of the config file, or text
    from the environment) coerced to its fields' types and checked against their ranges: the
    one reader of a table of settings, also for the options a metric declares. A field that is
    itself a spec (`JudgeSettings.limits`) is read flat: each of its fields by its key."""
    if not isinstance(values, Mapping):
        raise ConfigError(f"{source}: expected a table of settings")
    known = section_keys(type(section))
    flat = _flat_tables(section, values)
    unknown = [unknown_key(key, known) for key in flat if key not in known]
    if unknown:
        raise ConfigError(f"{source}: {'; '.join(unknown)}; known: {sorted(known)}")
    own: dict[str, Any] = {}
    specs: dict[str, dict[str, Any]] = {}
    for key, value in flat.items():
        spec, declared, kind = known[key]
        changes = own if spec is None else specs.setdefault(spec, {})
        coerced = _coerce(kind, value, f"{source} {key}")
        changes[declared.name] = _in_range(declared, coerced, source)
    for spec, spec_changes in specs.items():
        own[spec] = dataclasses.replace(getattr(section, spec), **spec_changes)
    return dataclasses.replace(section, **own)


def _flat_tables(section: Any, values: Mapping[str, Any]) -> dict[str, Any]:
    """`values` with each table of a spec field marked `table` (`[judge.candidate]`) read as
    its flat keys (`model` there is `candidate_model`)."""
    tables = {
        declared.name
        for declared in dataclasses.fields(section)
        if declared.metadata.get("table") and isinstance(values.get(declared.name), Mapping)
    }
    flat = {key: value for key, value in values.items() if key not in tables}
    for name in tables:
        for key, value in values[name].items():
            flat[f"{name}_{key}"] = value
    return flat


SettingKey = tuple[str | None, dataclasses.Field[Any], Any]
"""Where a key of a table goes: the spec field holding it (None: the section's own field),
the field, and its type."""


def section_keys(section: type[Any]) -> dict[str, SettingKey]:
    """The keys of a table of settings: the section's own fields', and each spec field's
    fields' (a field whose type is a dataclass), by their keys (`settings_fields.setting_key`)."""
    keys: dict[str, SettingKey] = {}
    hints = get_type_hints(section)
    for declared in dataclasses.fields(section):
        kind = hints[declared.name]
        if not (isinstance(kind, type) and dataclasses.is_dataclass(kind)):
            keys[setting_key(declared)] = (None, declared, kind)
            continue
        spec_hints = get_type_hints(kind)
        for inner in dataclasses.fields(kind):
            keys[setting_key(inner)] = (declared.name, inner, spec_hints[inner.name])
    return keys


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
    key, bounds = setting_key(declared), declared.metadata
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
