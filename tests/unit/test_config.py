"""Settings: defaults < TOML file < RAGAS_OPS_* environment, all typed and checked."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from ragas_ops.config import (
    SECTIONS,
    ConfigError,
    JudgeSettings,
    Settings,
    apply_mapping,
    environment_names,
    load_settings,
    section_keys,
    unknown_environment_names,
)
from ragas_ops.contract.inputs import ColumnMapping, SizeBudget
from ragas_ops.metrics import DEFAULT_METRICS
from ragas_ops.pricing import DEFAULT_PRICES, Price


def _file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "ragas-ops.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults():
    settings = load_settings(environ={})
    assert settings.judge.endpoint.model == "gpt-5.4-mini"
    assert settings.judge.endpoint.embedding_model == "text-embedding-3-small"
    assert settings.judge.endpoint.base_url is None
    assert settings.judge.endpoint.api_key_env == "OPENAI_API_KEY"
    assert settings.judge.limits.rpm == 500
    assert settings.judge.limits.tpm == 200_000
    assert settings.judge.endpoint.structured_output == "json_schema"
    assert settings.metrics.names == DEFAULT_METRICS
    assert settings.metrics.options == {}
    assert settings.columns == ColumnMapping()
    assert settings.size_budget == SizeBudget()
    assert settings.prices == dict(DEFAULT_PRICES)
    assert settings.batch_rows == 256


def test_environment_variables_of_other_programs_are_ignored():
    settings = load_settings(environ={"OPENAI_API_KEY": "sk-x", "PATH": "/bin", "RAGAS_OPS": "x"})
    assert settings == Settings()


def test_a_config_file_overrides_the_defaults_it_names_and_keeps_the_others(tmp_path):
    path = _file(
        tmp_path,
        """
batch_rows = 64

[judge]
model = "gpt-4.1-mini"
base_url = "http://localhost:8000/v1"
rpm = 60
timeout_seconds = 30
cache_path = "none"

[metrics]
names = ["faithfulness", "context_relevance"]

[metrics.answer_relevance]
questions = 5
question_strategy = "sample"

[columns]
question = "query"
contexts = "retrieved_docs"

[size_budget]
answer_chars = 1000
""",
    )
    settings = load_settings(path, environ={})
    assert settings.batch_rows == 64
    assert settings.judge.endpoint.model == "gpt-4.1-mini"
    assert settings.judge.endpoint.base_url == "http://localhost:8000/v1"
    assert settings.judge.limits.rpm == 60
    assert settings.judge.limits.tpm == 200_000  # untouched
    assert settings.judge.endpoint.timeout_seconds == 30.0
    assert isinstance(settings.judge.endpoint.timeout_seconds, float)
    assert settings.judge.cache.path is None
    assert settings.metrics.names == ("faithfulness", "context_relevance")
    assert settings.metrics.options == {
        "answer_relevance": {"questions": 5, "question_strategy": "sample"}
    }
    assert settings.columns == ColumnMapping(question="query", contexts="retrieved_docs")
    assert settings.size_budget == SizeBudget(answer_chars=1000)


def test_environment_variables_override_the_file(tmp_path):
    path = _file(tmp_path, '[judge]\nmodel = "from-file"\nrpm = 60\n')
    settings = load_settings(
        path,
        environ={
            "RAGAS_OPS_JUDGE_MODEL": "from-env",
            "RAGAS_OPS_JUDGE_RPM": "none",
            "RAGAS_OPS_JUDGE_TPM": "90000",
            "RAGAS_OPS_METRICS_NAMES": "faithfulness, answer_relevance",
            "RAGAS_OPS_BATCH_ROWS": "32",
            "RAGAS_OPS_COLUMNS_ANSWER": "response",
            "RAGAS_OPS_SIZE_BUDGET_QUESTION_CHARS": "100",
            "RAGAS_OPS_METRICS_QUESTION_STRATEGY": "sample",
        },
    )
    assert settings.judge.endpoint.model == "from-env"
    assert settings.judge.limits.rpm is None
    assert settings.judge.limits.tpm == 90_000
    assert settings.metrics.names == ("faithfulness", "answer_relevance")
    assert settings.batch_rows == 32
    assert settings.columns.answer == "response"
    assert settings.size_budget.question_chars == 100
    assert settings.metrics.options == {"answer_relevance": {"question_strategy": "sample"}}


@pytest.mark.parametrize("value", ["none", "None", "NULL", ""])
def test_an_optional_setting_is_unset_by_none_null_or_empty(value):
    settings = load_settings(environ={"RAGAS_OPS_JUDGE_TPM": value})
    assert settings.judge.limits.tpm is None


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("colour = 'blue'\n", "unknown setting 'colour'"),
        ("[judge]\nmodle = 'gpt-4o'\n", "unknown setting 'modle'"),
        ("[metrics]\nquestions = 3\n", "unknown setting 'questions'"),
        ("[columns]\nreply = 'response'\n", "unknown setting 'reply'"),
        ("judge = 'gpt-4o'\n", "expected a table of settings"),
    ],
)
def test_an_unknown_or_misplaced_key_in_the_file_is_an_error(tmp_path, text, where):
    with pytest.raises(ConfigError, match=where):
        load_settings(_file(tmp_path, text), environ={})


@pytest.mark.parametrize(
    ("name", "meant"),
    [
        ("RAGAS_OPS_JUDGE_MODLE", "RAGAS_OPS_JUDGE_MODE"),
        ("RAGAS_OPS_PIPELINE_CHUNKROWS", "RAGAS_OPS_PIPELINE_CHUNK_ROWS"),
        ("RAGAS_OPS_BATCHROWS", "RAGAS_OPS_BATCH_ROWS"),
        (
            "RAGAS_OPS_METRICS_ANSWER_RELEVANCE_QUESTION",
            "RAGAS_OPS_METRICS_ANSWER_RELEVANCE_QUESTIONS",
        ),
    ],
)
def test_an_environment_setting_close_to_a_known_one_is_a_typo_and_an_error(name, meant):
    with pytest.raises(
        ConfigError, match=f"unknown environment setting {name}; did you mean {meant}"
    ):
        load_settings(environ={name: "3"})


@pytest.mark.parametrize(
    "name", ["RAGAS_OPS_LOG_LEVEL", "RAGAS_OPS_COLOUR", "RAGAS_OPS_PRICES_X", "RAGAS_OPS_JUDGE"]
)
def test_an_unknown_environment_variable_far_from_every_setting_is_named_in_a_warning(name, caplog):
    with caplog.at_level(logging.WARNING, logger="ragas_ops.config"):
        settings = load_settings(environ={name: "x", "RAGAS_OPS_JUDGE_MODEL": "gpt-5-mini"})
    assert settings.judge.endpoint.model == "gpt-5-mini"  # the others still apply
    (warning,) = [record.getMessage() for record in caplog.records]
    assert f"not ragas-ops settings: {name} " in warning


def test_every_documented_environment_setting_is_known():
    for name in ("RAGAS_OPS_JUDGE_MODEL", "RAGAS_OPS_CONFIG", "RAGAS_OPS_BATCH_ROWS"):
        assert name in environment_names()
    assert unknown_environment_names({"RAGAS_OPS_PIPELINE_CHUNK_ROWS": "5", "HOME": "/"}) == []


@pytest.mark.parametrize(
    ("environ", "where"),
    [
        ({"RAGAS_OPS_JUDGE_RPM": "fast"}, "'fast' is not a valid int"),
        ({"RAGAS_OPS_JUDGE_RPM": "1.5"}, "'1.5' is not a valid int"),
        ({"RAGAS_OPS_JUDGE_TIMEOUT_SECONDS": "soon"}, "not a valid float"),
        ({"RAGAS_OPS_BATCH_ROWS": "many"}, "RAGAS_OPS_BATCH_ROWS"),
        ({"RAGAS_OPS_METRICS_ANSWER_RELEVANCE_QUESTIONS": "three"}, "not a valid int"),
    ],
)
def test_a_value_of_the_wrong_type_is_an_error_that_names_its_source(environ, where):
    with pytest.raises(ConfigError, match=where):
        load_settings(environ=environ)


def test_a_value_of_the_wrong_type_in_the_file_is_an_error(tmp_path):
    with pytest.raises(ConfigError, match=r"\[judge\] max_attempts: 'lots' is not a valid int"):
        load_settings(_file(tmp_path, "[judge]\nmax_attempts = 'lots'\n"), environ={})


@pytest.mark.parametrize(
    "environ",
    [
        {"RAGAS_OPS_JUDGE_STRUCTURED_OUTPUT": "xml"},
        {"RAGAS_OPS_JUDGE_STRUCTURED_OUTPUT": "JSON_SCHEMA"},
    ],
)
def test_a_value_outside_a_literal_is_an_error_that_lists_the_choices(environ):
    with pytest.raises(ConfigError, match="is not one of"):
        load_settings(environ=environ)


def test_a_literal_value_inside_its_choices_is_accepted():
    settings = load_settings(environ={"RAGAS_OPS_JUDGE_STRUCTURED_OUTPUT": "json_object"})
    assert settings.judge.endpoint.structured_output == "json_object"


def test_a_prices_table_adds_a_model_and_overrides_a_default(tmp_path):
    path = _file(
        tmp_path,
        """
[prices."my-model"]
input_per_million = 1.0
output_per_million = 3.0

[prices."gpt-4o-mini"]
input_per_million = 0.1
output_per_million = 0.4
cached_input_per_million = 0.05
""",
    )
    settings = load_settings(path, environ={})
    assert settings.prices["my-model"] == Price(1.0, 3.0)
    assert settings.prices["gpt-4o-mini"] == Price(0.1, 0.4, 0.05)
    assert settings.prices["gpt-4o"] == DEFAULT_PRICES["gpt-4o"]  # the others stay
    assert DEFAULT_PRICES["gpt-4o-mini"] == Price(0.15, 0.60, 0.075)  # defaults not mutated


@pytest.mark.parametrize(
    "text",
    [
        '[prices."my-model"]\ninput_per_million = 1.0\nper_request = 2.0\n',
        'prices = "cheap"\n',
    ],
)
def test_a_broken_prices_table_is_an_error(tmp_path, text):
    with pytest.raises(ConfigError, match="prices"):
        load_settings(_file(tmp_path, text), environ={})


# -- wrong types that used to be converted silently -----------------------------------------------


@pytest.mark.parametrize(
    "text", ["batch_rows = true\n", "[judge]\nrpm = 1.9\n", "[judge]\nmax_attempts = false\n"]
)
def test_a_bool_or_fraction_for_an_int_setting_is_an_error(tmp_path, text):
    # int(True) is 1 and int(1.9) is 1: neither may be taken silently.
    with pytest.raises(ConfigError):
        load_settings(_file(tmp_path, text), environ={})


def test_a_number_for_the_metric_names_is_a_config_error(tmp_path):
    # Used to escape as a bare TypeError from list(5).
    with pytest.raises(ConfigError, match="names"):
        load_settings(_file(tmp_path, "[metrics]\nnames = 5\n"), environ={})


@pytest.mark.parametrize(
    "text",
    [
        "[metrics]\nnames = [1, 2]\n",
        "[judge]\ntimeout_seconds = true\n",
        '[prices]\n"my-model" = 1.0\n',
    ],
)
def test_other_values_of_the_wrong_kind_are_config_errors(tmp_path, text):
    with pytest.raises(ConfigError):
        load_settings(_file(tmp_path, text), environ={})


@pytest.mark.parametrize(
    "text",
    ["[judge]\nmodel = ['gpt-4o']\n", "[judge]\napi_key_env = 5\n", "[columns]\nanswer = 1\n"],
)
def test_a_value_that_is_not_text_for_a_text_setting_is_an_error(tmp_path, text):
    with pytest.raises(ConfigError):
        load_settings(_file(tmp_path, text), environ={})


def test_a_whole_number_rate_is_a_price(tmp_path):
    path = _file(tmp_path, '[prices."my-model"]\ninput_per_million = 1\n')
    price = load_settings(path, environ={}).prices["my-model"]
    assert price == Price(1.0)
    assert isinstance(price.input_per_million, float)


def test_a_price_that_is_not_a_number_is_an_error(tmp_path):
    # Used to be accepted, and to fail mid-run inside Price.cost.
    path = _file(tmp_path, '[prices."my-model"]\ninput_per_million = "cheap"\n')
    with pytest.raises(ConfigError, match="my-model"):
        load_settings(path, environ={})


@pytest.mark.parametrize(
    "text",
    [
        "[judge]\nmax_concurrency = 0\n",
        "[judge]\nmax_attempts = 0\n",
        "[judge]\nrpm = 0\n",
        "[judge]\ntimeout_seconds = -1\n",
        "batch_rows = 0\n",
    ],
)
def test_a_count_or_limit_below_one_is_an_error(tmp_path, text):
    with pytest.raises(ConfigError):
        load_settings(_file(tmp_path, text), environ={})


def _ranged_fields() -> list[tuple[str, str, float]]:
    """(section, setting, a value just outside its declared range)."""
    settings = Settings()
    found = []
    for section in SECTIONS:
        for key, (_, item, _) in section_keys(type(getattr(settings, section))).items():
            if "minimum" in item.metadata:
                found.append((section, key, item.metadata["minimum"] - 1))
            elif "exclusive_minimum" in item.metadata:
                found.append((section, key, item.metadata["exclusive_minimum"]))
    return found


@pytest.mark.parametrize(("section", "name", "outside"), _ranged_fields())
def test_a_value_outside_a_declared_range_is_refused(
    section: str, name: str, outside: float
) -> None:
    with pytest.raises(ConfigError, match=name):
        apply_mapping(Settings(), {section: {name: outside}}, source="test")


def test_ranges_are_declared_on_the_fields_that_need_them() -> None:
    ranged = {name for _, name, _ in _ranged_fields()}
    assert {"max_concurrency", "rpm", "sample_fraction", "question_chars", "chunk_rows"} <= ranged
    assert {"shared_cache_threads", "batch_max_requests", "flex_timeout_seconds"} <= ranged


JUDGE_KEYS = [
    "kind",
    "model_profile",
    "limit_parameter",
    "send_temperature",
    "reasoning_effort",
    "shutdown_warning_days",
    "local_model",
    "local_backend",
    "model",
    "embedding_model",
    "embedding_kind",
    "anthropic_thinking",
    "anthropic_thinking_budget_tokens",
    "anthropic_prompt_caching",
    "base_url",
    "api_key_env",
    "conn_id",
    "rpm",
    "tpm",
    "max_concurrency",
    "timeout_seconds",
    "service_tier",
    "flex_timeout_seconds",
    "flex_fallback_after_seconds",
    "flex_deadline",
    "max_attempts",
    "rate_limit_patience_seconds",
    "structured_output",
    "embedding_batch_size",
    "cache_path",
    "shared_cache",
    "shared_cache_threads",
    "shared_cache_timeout_seconds",
    "shared_cache_retry_seconds",
    "mode",
    "batch_max_requests",
    "batch_max_bytes",
    "batch_completion_window",
    "batch_poll_seconds",
    "batch_wait_seconds",
    "on_batch_unanswered",
    "budget_usd",
    "budget_tokens",
    "retry_failed",
    "unreachable_after",
    "provider_counts",
    "provider_burst_seconds",
    "rate_margin",
    "admission_margin",
    "shared_budget",
    "backfill_share",
    "budget_pool",
    "static_share",
    "shared_budget_url",
    "shared_budget_password_env",
]
"""The `[judge]` keys as they were when JudgeSettings was one flat dataclass of 46 fields."""


def test_the_judges_keys_are_the_flat_ones_of_before() -> None:
    # and the shadow judge's, new: `[judge.candidate]`, flat as `candidate_<name>`
    keys = section_keys(JudgeSettings)
    assert sorted(key for key in keys if not key.startswith("candidate_")) == sorted(JUDGE_KEYS)


@pytest.mark.parametrize(
    ("name", "value", "path", "expected"),
    [
        ("RAGAS_OPS_JUDGE_CACHE_PATH", "none", "cache.path", None),
        ("RAGAS_OPS_JUDGE_SHARED_CACHE_THREADS", "4", "cache.shared_threads", 4),
        ("RAGAS_OPS_JUDGE_BATCH_MAX_REQUESTS", "10", "batch.max_requests", 10),
        ("RAGAS_OPS_JUDGE_MODE", "batch", "batch.mode", "batch"),
        ("RAGAS_OPS_JUDGE_ON_BATCH_UNANSWERED", "status", "batch.on_unanswered", "status"),
        ("RAGAS_OPS_JUDGE_FLEX_DEADLINE", "06:30", "flex.deadline", "06:30"),
        ("RAGAS_OPS_JUDGE_SERVICE_TIER", "flex", "flex.service_tier", "flex"),
        ("RAGAS_OPS_JUDGE_LOCAL_MODEL", "m", "local.model", "m"),
        ("RAGAS_OPS_JUDGE_SHARED_BUDGET", "redis", "shared_budget.mode", "redis"),
        ("RAGAS_OPS_JUDGE_BUDGET_POOL", "backfill", "shared_budget.pool", "backfill"),
        (
            "RAGAS_OPS_JUDGE_SHARED_BUDGET_URL",
            "redis://h:1/0",
            "shared_budget.url",
            "redis://h:1/0",
        ),
        ("RAGAS_OPS_JUDGE_RPM", "60", "limits.rpm", 60),
        ("RAGAS_OPS_JUDGE_MAX_ATTEMPTS", "2", "endpoint.max_attempts", 2),
        ("RAGAS_OPS_JUDGE_KIND", "local", "kind", "local"),
    ],
)
def test_a_flat_key_sets_the_field_of_the_spec_that_declares_it(
    name: str, value: str, path: str, expected: object
) -> None:
    found: object = load_settings(environ={name: value}).judge
    for part in path.split("."):
        found = getattr(found, part)
    assert found == expected


def test_a_spec_setting_out_of_range_is_named_by_its_key_and_source(tmp_path: Path) -> None:
    path = _file(tmp_path, "[judge]\nshared_cache_threads = 0\n")
    with pytest.raises(ConfigError, match=r"\[judge\]: shared_cache_threads must be at least 1"):
        load_settings(path, environ={})
    with pytest.raises(ConfigError, match="RAGAS_OPS_JUDGE_FLEX_DEADLINE: '7pm' is no deadline"):
        load_settings(environ={"RAGAS_OPS_JUDGE_FLEX_DEADLINE": "7pm"})


def test_an_unknown_judge_key_lists_the_flat_keys() -> None:
    with pytest.raises(ConfigError, match="unknown setting 'path'") as refused:
        apply_mapping(Settings(), {"judge": {"path": "x"}}, source="test")
    assert "'cache_path'" in str(refused.value)
    assert "'endpoint'" not in str(refused.value)


def test_max_chunks_above_airflows_mapping_limit_is_refused_when_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("AIRFLOW__CORE__MAX_MAP_LENGTH", raising=False)
    assert (
        load_settings(environ={"RAGAS_OPS_PIPELINE_MAX_CHUNKS": "1024"}).pipeline.max_chunks == 1024
    )

    with pytest.raises(
        ConfigError, match=r"max_chunks is 1025, above Airflow's \[core\] max_map_length \(1024\)"
    ):
        load_settings(environ={"RAGAS_OPS_PIPELINE_MAX_CHUNKS": "1025"})
    monkeypatch.setenv("AIRFLOW__CORE__MAX_MAP_LENGTH", "4096")  # an Airflow allowed more
    assert (
        load_settings(environ={"RAGAS_OPS_PIPELINE_MAX_CHUNKS": "2000"}).pipeline.max_chunks == 2000
    )


def test_every_unknown_key_of_a_file_is_named_at_once_with_what_it_is_close_to(
    tmp_path: Path,
) -> None:
    text = "[judgee]\nmodel = 'x'\n[pipeline]\nsegmnets = ['app']\nchunk_rowz = 5\nzzz = 1\n"

    with pytest.raises(ConfigError) as refused:
        load_settings(_file(tmp_path, text), environ={})
    assert "unknown section [judgee] (did you mean [judge]?)" in str(refused.value)
    pipeline = "[pipeline]\nsegmnets = ['app']\nchunk_rowz = 5\nzzz = 1\n"
    with pytest.raises(ConfigError) as refused:
        load_settings(_file(tmp_path, pipeline), environ={})

    said = str(refused.value)
    assert "unknown setting 'segmnets' (did you mean 'segments'?)" in said
    assert "unknown setting 'chunk_rowz' (did you mean 'chunk_rows'?)" in said
    assert "unknown setting 'zzz'; known:" in said
