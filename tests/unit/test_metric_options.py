"""A metric's options belong to its package: `[metrics.<name>]` in the config file, typed and
checked by the options the metric registers, with command-line flags derived from them; the
keys they moved from still work, with a deprecation message."""

from __future__ import annotations

import contextlib
import dataclasses
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ragas_ops.cli.main import EXIT_USAGE, build_parser, main
from ragas_ops.cli.options import metric_flags, settings_from_options
from ragas_ops.config import ConfigError, load_settings
from ragas_ops.metrics import registered_metrics
from ragas_ops.metrics.answer_relevance import AnswerRelevance
from ragas_ops.metrics.faithfulness import Faithfulness
from ragas_ops.metrics.registry import register_metric, unregister_metric
from ragas_ops.scoring.run import configured_metrics


def _relevance(settings) -> AnswerRelevance:  # type: ignore[no-untyped-def]
    settings.metrics.names = ("answer_relevance",)
    (metric,) = configured_metrics(settings)
    assert isinstance(metric, AnswerRelevance)
    return metric


def _file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "ragas-ops.toml"
    path.write_text(text)
    return path


def test_a_metrics_table_configures_its_metric(tmp_path: Path) -> None:
    text = '[metrics.answer_relevance]\nquestions = 5\nquestion_strategy = "sample"\n'
    metric = _relevance(load_settings(_file(tmp_path, text), environ={}))
    assert (metric.questions, metric.strategy) == (5, "sample")


@pytest.mark.parametrize(
    ("text", "environ", "error", "where"),
    [
        ("[metrics.answer_relevance]\nquestions = 0\n", {}, "must be at least 1", "toml"),
        ("[metrics.answer_relevance]\nquestions = 'many'\n", {}, "not a valid int", "toml"),
        ('[metrics.answer_relevance]\nquestion_strategy = "x"\n', {}, "is not one of", "toml"),
        ("[metrics.answer_relevance]\nquestionz = 3\n", {}, "unknown setting 'questionz'", "toml"),
        ("", {"RAGAS_OPS_METRICS_QUESTION_STRATEGY": "x"}, "is not one of", "RAGAS_OPS_METRICS"),
        ("[metrics]\nanswer_relevance_questions = 0\n", {}, "must be at least 1", "toml"),
        ("[metrics.no_such_metric]\nlimit = 3\n", {}, "options for unknown metric", ""),
    ],
)
def test_a_bad_option_is_a_config_error_that_names_its_source(
    tmp_path: Path, text: str, environ: dict[str, str], error: str, where: str
) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        with pytest.raises(ConfigError, match=error) as raised:
            _relevance(load_settings(_file(tmp_path, text), environ=environ))
    assert where in str(raised.value)


@pytest.mark.parametrize(
    ("text", "environ"),
    [
        ('[metrics]\nanswer_relevance_questions = 5\nquestion_strategy = "sample"\n', {}),
        (
            "",
            {
                "RAGAS_OPS_METRICS_ANSWER_RELEVANCE_QUESTIONS": "5",
                "RAGAS_OPS_METRICS_QUESTION_STRATEGY": "sample",
            },
        ),
    ],
)
def test_the_keys_that_moved_still_work(tmp_path: Path, text: str, environ: dict[str, str]) -> None:
    """In a file with a deprecation message; as environment variables they stay the way."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        settings = load_settings(_file(tmp_path, text), environ=environ)
    deprecated = [
        str(warning.message)
        for warning in caught
        if "is deprecated; write it as [metrics.answer_relevance]" in str(warning.message)
    ]
    assert len(deprecated) == (0 if environ else 2)
    metric = _relevance(settings)
    assert (metric.questions, metric.strategy) == (5, "sample")


def test_the_flags_come_from_the_metrics_options_and_keep_their_names(tmp_path: Path) -> None:
    flags = {flag.flag: flag.setting for flag in metric_flags()}
    assert flags == {
        "--questions": "metrics.answer_relevance.questions",
        "--question-strategy": "metrics.answer_relevance.question_strategy",
    }
    config = _file(tmp_path, "[metrics.answer_relevance]\nquestions = 2\n")
    arguments = ["score", "in.parquet", "out.parquet", "--config", str(config)]
    options = build_parser().parse_args([*arguments, "--question-strategy", "sample"])
    metric = _relevance(settings_from_options(options))
    assert (metric.questions, metric.strategy) == (2, "sample")  # the file's, then the flag's
    options = build_parser().parse_args([*arguments, "--questions", "4"])
    assert _relevance(settings_from_options(options)).questions == 4


def test_every_metrics_options_are_in_the_configuration_page_with_their_defaults() -> None:
    from tests.unit.test_docs import DOCS, same_default, table_rows

    page = (DOCS / "configuration.md").read_text()
    for name, registration in registered_metrics().items():
        defaults = {
            option.name: getattr(registration.options(), option.name)
            for option in dataclasses.fields(registration.options)
        }
        if not defaults:
            continue
        rows = {row[0].strip("`"): row[1] for row in table_rows(page, f"### `[metrics.{name}]`")}
        assert sorted(rows) == sorted(defaults), name
        assert all(same_default(rows[option], value) for option, value in defaults.items())


@dataclasses.dataclass(frozen=True)
class _ToyOptions:
    model: str = "small"


@dataclasses.dataclass(frozen=True)
class _ToyRpmOptions:
    rpm: int = dataclasses.field(default=10, metadata={"flag": "--rpm"})


@dataclasses.dataclass(frozen=True)
class _ToyQuestionsOptions:
    questions: int = dataclasses.field(default=2, metadata={"flag": "--questions"})


@dataclasses.dataclass(frozen=True)
class _ToyConfigOptions:
    file: str = dataclasses.field(default="", metadata={"flag": "--config"})


@contextlib.contextmanager
def _registered(name: str, options: type[Any]) -> Iterator[None]:
    register_metric(name, Faithfulness, options=options)
    try:
        yield
    finally:
        unregister_metric(name)


@pytest.mark.parametrize(
    ("name", "options", "owners"),
    [
        # derived: --embedding-model, the judge's embedding model's flag
        ("embedding", _ToyOptions, ["'embedding''s option 'model'", "judge.embedding_model"]),
        ("toy", _ToyRpmOptions, ["'toy''s option 'rpm'", "the setting judge.rpm"]),
        ("toy", _ToyQuestionsOptions, ["'toy''s option 'questions'", "'answer_relevance''s"]),
        ("toy", _ToyConfigOptions, ["'toy''s option 'file'", "the config file's flag"]),
    ],
)
def test_a_metric_option_whose_flag_another_flag_has_is_an_error_naming_both(
    name: str, options: type[Any], owners: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with _registered(name, options):
        with pytest.raises(ConfigError, match="takes the flag --") as raised:
            build_parser()
        assert main(["score", "in.parquet", "out.parquet"]) == EXIT_USAGE
    for owner in owners:
        assert owner in str(raised.value)
    error = capsys.readouterr().err
    assert error.startswith("ragas-ops: error: metric "), "a message, not a traceback"
    assert all(owner in error for owner in owners)
    build_parser()  # once the metric is gone, the flags are apart again


def test_a_metric_option_with_a_flag_of_its_own_is_a_flag(tmp_path: Path) -> None:
    """An option named as a setting (`model`) gets its metric's prefix: no clash."""
    with _registered("toy", _ToyOptions):
        options = build_parser().parse_args(["score", "in", "out", "--toy-model", "large"])
        settings = settings_from_options(options)
    assert settings.metrics.options["toy"] == {"model": "large"}
    assert settings.judge.endpoint.model != "large"
