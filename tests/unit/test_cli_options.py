"""The command line's setting flags come from one table: each names a real setting, and a flag
given on the command line wins over the environment."""

from __future__ import annotations

import dataclasses

import pytest

from ragas_ops.cli.main import build_parser
from ragas_ops.cli.options import SETTING_FLAGS, settings_from_options
from ragas_ops.config import Settings, section_keys


@pytest.mark.parametrize("option", SETTING_FLAGS, ids=lambda option: option.flag)
def test_every_flag_names_a_setting(option) -> None:
    section, _, name = option.setting.rpartition(".")
    if section:
        assert name in section_keys(type(getattr(Settings(), section)))
    else:
        assert name in {item.name for item in dataclasses.fields(Settings)}


def test_flags_override_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGAS_OPS_JUDGE_MODEL", "from-env")
    monkeypatch.setenv("RAGAS_OPS_JUDGE_RPM", "100")
    arguments = ["score", "in.parquet", "out.parquet", "--model", "from-flag", "--rpm", "none"]
    arguments += ["--batch-rows", "7", "--column", "question=query", "--judge", "local"]

    settings = settings_from_options(build_parser().parse_args(arguments))

    assert settings.judge.endpoint.model == "from-flag"
    assert settings.judge.limits.rpm is None
    assert settings.judge.kind == "local"
    assert settings.batch_rows == 7
    assert settings.columns.question == "query"


def test_a_flag_outside_its_range_is_a_config_error() -> None:
    from ragas_ops.config import ConfigError

    options = build_parser().parse_args(["score", "a", "b", "--concurrency", "0"])
    with pytest.raises(ConfigError, match="max_concurrency must be at least 1"):
        settings_from_options(options)
