"""The command line's options that set a setting: one table, and the flags each metric's options
give (`metric_flags`), from which the parsers get their flags and `settings_from_options` its
overrides (defaults < config file < environment < flags)."""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args, get_origin, get_type_hints

from ragas_ops.config import ConfigError, Settings, apply_mapping, load_settings
from ragas_ops.judge.engine.spec import ServiceTier
from ragas_ops.judge.spec import StructuredOutput
from ragas_ops.metrics import registered_metrics

SCORE, ESTIMATE, BENCHMARK = "score", "estimate", "benchmark"
COMPARE = "compare-judges"
BOTH = frozenset({SCORE, ESTIMATE})
JUDGE_FLAG_COMMANDS = frozenset({SCORE, BENCHMARK, COMPARE})
"""The commands that call a judge: `score`, the benchmarks against human labels, and the
comparison of the judge with a candidate."""


@dataclass(frozen=True)
class SettingFlag:
    """A flag that sets `setting` (`section.name`, a metric's option `metrics.<metric>.name`, or
    a top-level name such as `batch_rows`)."""

    flag: str
    setting: str
    help: str
    commands: frozenset[str] = BOTH
    type: Callable[[str], Any] | None = None
    choices: tuple[str, ...] | None = None
    switch: bool = False
    """A flag without a value that sets the setting to true."""

    @property
    def dest(self) -> str:
        return "setting:" + self.setting


SETTING_FLAGS: tuple[SettingFlag, ...] = (
    SettingFlag(
        "--metrics", "metrics.names", "comma-separated, e.g. faithfulness,answer_relevance"
    ),
    SettingFlag(
        "--judge",
        "judge.kind",
        "judge kind: openai, local or a registered provider's",
        JUDGE_FLAG_COMMANDS,
    ),
    SettingFlag(
        "--model",
        "judge.model",
        "judge chat model (estimate: for its price)",
        BOTH | JUDGE_FLAG_COMMANDS,
    ),
    SettingFlag(
        "--reasoning-effort",
        "judge.reasoning_effort",
        "effort asked of a reasoning model: lowest (default), provider, or a value",
        BOTH | JUDGE_FLAG_COMMANDS,
    ),
    SettingFlag(
        "--embedding-model",
        "judge.embedding_model",
        "embedding model for answer relevance",
        BOTH | JUDGE_FLAG_COMMANDS,
    ),
    SettingFlag(
        "--local-model",
        "judge.local_model",
        "the local judge's sentence-transformers model, a name or a path",
        JUDGE_FLAG_COMMANDS,
    ),
    SettingFlag(
        "--base-url",
        "judge.base_url",
        "OpenAI-compatible endpoint, e.g. http://127.0.0.1:8787/v1",
        JUDGE_FLAG_COMMANDS,
    ),
    SettingFlag(
        "--api-key-env",
        "judge.api_key_env",
        "environment variable holding the API key",
        JUDGE_FLAG_COMMANDS,
    ),
    SettingFlag(
        "--rpm", "judge.rpm", "requests per minute budget ('none': no limit)", JUDGE_FLAG_COMMANDS
    ),
    SettingFlag(
        "--tpm", "judge.tpm", "tokens per minute budget ('none': no limit)", JUDGE_FLAG_COMMANDS
    ),
    SettingFlag(
        "--concurrency",
        "judge.max_concurrency",
        "requests in flight at once",
        JUDGE_FLAG_COMMANDS,
        int,
    ),
    SettingFlag(
        "--timeout",
        "judge.timeout_seconds",
        "seconds before a request is retried",
        frozenset({SCORE}),
        float,
    ),
    SettingFlag(
        "--service-tier",
        "judge.service_tier",
        "OpenAI processing tier: flex is half the price, slower (docs/flex-tier.md)",
        frozenset({SCORE}),
        choices=get_args(ServiceTier),
    ),
    SettingFlag(
        "--flex-deadline",
        "judge.flex_deadline",
        "after this (UTC HH:MM, or 5400s from the start) requests go to the standard tier",
        frozenset({SCORE}),
    ),
    SettingFlag(
        "--max-attempts", "judge.max_attempts", "tries per request", frozenset({SCORE}), int
    ),
    SettingFlag(
        "--structured-output",
        "judge.structured_output",
        "how to ask for JSON",
        frozenset({SCORE}),
        choices=get_args(StructuredOutput),
    ),
    SettingFlag(
        "--cache",
        "judge.cache_path",
        "judge cache file ('none': in memory for this run only)",
        JUDGE_FLAG_COMMANDS,
    ),
    SettingFlag(
        "--shared-cache",
        "judge.shared_cache",
        "cache every host shares, behind the local one (s3://bucket/prefix or a folder)",
        frozenset({SCORE}),
    ),
    SettingFlag(
        "--retry-failed",
        "judge.retry_failed",
        "ask again the requests whose cached reply was unusable",
        frozenset({SCORE}),
        switch=True,
    ),
    SettingFlag("--raw-uri", "pipeline.raw_uri", "the raw lake", frozenset({ESTIMATE})),
    SettingFlag("--warehouse-uri", "pipeline.warehouse_uri", "the warehouse", frozenset({COMPARE})),
    SettingFlag(
        "--candidate-model",
        "judge.candidate_model",
        "the candidate's chat model",
        frozenset({COMPARE}),
    ),
    SettingFlag(
        "--candidate-kind",
        "judge.candidate_kind",
        "the candidate's kind (default: --judge's)",
        frozenset({COMPARE}),
    ),
    SettingFlag(
        "--candidate-base-url",
        "judge.candidate_base_url",
        "the candidate's endpoint (default: --base-url)",
        frozenset({COMPARE}),
    ),
    SettingFlag(
        "--candidate-sample",
        "judge.candidate_sample",
        "share of rows both judges score, by a hash of the row id",
        frozenset({COMPARE}),
        float,
    ),
    SettingFlag("--batch-rows", "batch_rows", "rows scored together", type=int),
    SettingFlag(
        "--sample-fraction",
        "pipeline.sample_fraction",
        "share of rows to score, in (0, 1], chosen by a hash of the row id",
    ),
)


def metric_flags() -> tuple[SettingFlag, ...]:
    """A flag for every option of every registered metric (`Registration.options`): its own
    `flag` and `help` if it names them, else `--<metric>-<option>`; typed as the option is."""
    flags = []
    for name, registration in registered_metrics().items():
        hints = get_type_hints(registration.options)
        for option in dataclasses.fields(registration.options):
            kind = hints[option.name]
            choices = get_args(kind) if get_origin(kind) is Literal else None
            flags.append(
                SettingFlag(
                    option.metadata.get("flag", f"--{name}-{option.name}".replace("_", "-")),
                    f"metrics.{name}.{option.name}",
                    option.metadata.get("help", f"{name.replace('_', ' ')}: {option.name}"),
                    type=None if choices or kind not in (int, float) else kind,
                    choices=choices,
                )
            )
    return tuple(flags)


PARSER_FLAGS = {
    "--config": "the config file's flag",
    "--column": "the column mapping's flag",
    "--help": "argparse's help",
}
"""The flags `add_setting_flags` adds beside the settings' (and argparse's own)."""


def setting_flags() -> tuple[SettingFlag, ...]:
    """Every setting flag: the table's, then the registered metrics' options'. A metric's
    option whose flag another flag already has is a ConfigError naming both: argparse would
    stop with a bare "conflicting option string" that names neither metric."""
    flags = SETTING_FLAGS + metric_flags()
    owners = dict(PARSER_FLAGS)
    for flag in flags:
        if flag.flag in owners:
            raise ConfigError(
                f"{_owner(flag)} takes the flag {flag.flag}, which is already {owners[flag.flag]};"
                " give the option another flag (metadata={'flag': '--...'}) or another name"
            )
        owners[flag.flag] = f"the flag of {_owner(flag)}"
    return flags


def _owner(flag: SettingFlag) -> str:
    """Who a flag sets, in words: a metric's option or a setting."""
    section, _, rest = flag.setting.partition(".")
    metric, _, option = rest.partition(".")
    if section == "metrics" and option:
        return f"metric {metric!r}'s option {option!r} ([metrics.{metric}] {option})"
    return f"the setting {flag.setting}"


def add_setting_flags(
    parser: argparse.ArgumentParser, command: str, *, columns: bool = True
) -> None:
    """The config file, the column mapping (unless `columns` is false: the benchmarks' rows
    are in their data sets' own shape), and the table's flags that `command` takes."""
    parser.add_argument("--config", type=Path, help="TOML config file (see docs: configuration)")
    for option in setting_flags():
        if command in option.commands and option.switch:
            parser.add_argument(
                option.flag,
                dest=option.dest,
                action="store_true",
                default=None,
                help=f"{option.help} ({option.setting})",
            )
        elif command in option.commands:
            parser.add_argument(
                option.flag,
                dest=option.dest,
                type=option.type or str,
                choices=option.choices,
                metavar=None if option.choices else option.flag.lstrip("-").upper(),
                help=f"{option.help} ({option.setting})",
            )
    if not columns:
        return
    parser.add_argument(
        "--column",
        action="append",
        default=[],
        metavar="FIELD=COLUMN",
        help="map a contract field to your column, e.g. --column question=query (repeatable)",
    )


def settings_from_options(options: argparse.Namespace) -> Settings:
    """Defaults < config file < environment < command-line options."""
    settings = load_settings(options.config)
    given = vars(options)
    pairs = getattr(options, "column", [])
    overrides: dict[str, Any] = {"columns": dict(_column_pair(pair) for pair in pairs)}
    for option in setting_flags():
        value = given.get(option.dest)
        if value is None:
            continue
        *tables, name = option.setting.split(".")
        table = overrides
        for key in tables:  # a metric's option is a table in [metrics]
            table = table.setdefault(key, {})
        table[name] = value
    apply_mapping(settings, overrides, source="command line")
    return settings


def _column_pair(pair: str) -> tuple[str, str]:
    field, separator, column = pair.partition("=")
    if not separator or not field or not column:
        raise ConfigError(f"--column expects FIELD=COLUMN, got {pair!r}")
    return field, column
