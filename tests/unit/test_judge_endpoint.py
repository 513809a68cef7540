"""The judge's endpoint: checked base URLs (no credentials, valid ports), and a normalised
name that is part of the judge's identity."""

from __future__ import annotations

import pytest

from ragas_ops.config import ConfigError
from ragas_ops.judge.endpoint import describe_judge, effective_base_url, endpoint_name
from ragas_ops.judge.spec import check_base_url


@pytest.mark.parametrize(
    ("url", "name"),
    [
        ("https://api.openai.com/v1", "api.openai.com"),
        ("https://API.OpenAI.com:443/v1/", "api.openai.com"),
        ("http://127.0.0.1:8787/v1", "127.0.0.1:8787"),
        ("http://localhost/v1", "localhost"),
        (
            "https://myco.openai.azure.com/openai/deployments/gpt4",
            "myco.openai.azure.com/openai/deployments/gpt4",
        ),
        ("http://[::1]:8000/v1", "[::1]:8000"),
    ],
)
def test_the_endpoint_name_is_the_normalised_base_url_without_scheme_or_default_parts(
    url: str, name: str
) -> None:
    assert endpoint_name(url) == name


def test_the_judge_name_keeps_the_prefix_reports_match_on():
    name = describe_judge("test-judge", "127.0.0.1:8787")
    assert name == "openai:test-judge@127.0.0.1:8787"
    assert name.startswith("openai:test-judge")


def test_without_a_setting_the_sdks_own_choice_is_used():
    assert effective_base_url(None, {}) == "https://api.openai.com/v1"
    assert effective_base_url(None, {"OPENAI_BASE_URL": "http://10.0.0.5:8000/v1"}) == (
        "http://10.0.0.5:8000/v1"
    )
    with pytest.raises(ConfigError, match="OPENAI_BASE_URL: the base URL holds credentials"):
        effective_base_url(None, {"OPENAI_BASE_URL": "http://u:p@10.0.0.5/v1"})


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("http://user:sk-secret-123@host/v1", "holds credentials"),
        ("http://sk-secret-123@host/v1", "holds credentials"),
        ("http://host:99999/v1", "invalid port '99999'"),
        ("http://host:abc/v1", "invalid port 'abc'"),
        ("ftp://host/v1", "must start with http:// or https://"),
        ("host/v1", "must start with http:// or https://"),
        ("http://:80/v1", "has no host"),
    ],
)
def test_a_bad_base_url_is_refused_clearly_and_without_its_credentials(
    url: str, message: str
) -> None:
    with pytest.raises(ConfigError, match=message) as raised:
        check_base_url(url)
    assert "sk-secret-123" not in str(raised.value)


def test_what_a_judge_can_do_is_asked_of_its_kind_not_tested_where_it_is_used() -> None:
    from ragas_ops.config import JudgeSettings
    from ragas_ops.judge.factory import capabilities
    from ragas_ops.judge.providers import registered_providers
    from ragas_ops.judge.spec import JUDGE_KINDS, installed_kinds

    providers = registered_providers()
    assert JUDGE_KINDS <= set(providers) == installed_kinds()  # every kind has its provider
    assert capabilities(JudgeSettings(kind="openai")) == providers["openai"].capabilities
    openai = capabilities(JudgeSettings(kind="openai"))
    assert (openai.batch, openai.endpoint, openai.embeddings) == (True, True, True)
    local = capabilities(JudgeSettings(kind="local"))
    assert (local.batch, local.endpoint) == (False, False)


def test_the_built_in_providers_are_found_through_their_entry_points() -> None:
    """As a provider package outside the repository is: by its entry point, in the
    `ragas_ops.judge_providers` group, not by an import in the factory."""
    from importlib.metadata import entry_points

    from ragas_ops.judge.spec import PROVIDER_GROUP

    declared = {point.name: point.value for point in entry_points(group=PROVIDER_GROUP)}
    assert declared["openai"] == "ragas_ops.judge.openai.provider:OPENAI"
    assert declared["local"] == "ragas_ops.judge.local.provider:LOCAL"


def test_an_unknown_judge_kind_is_refused_naming_the_known_ones(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from ragas_ops.config import ConfigError, JudgeSettings, load_settings
    from ragas_ops.judge.factory import capabilities

    monkeypatch.setenv("RAGAS_OPS_JUDGE_KIND", "anthropic")
    with pytest.raises(ConfigError, match="unknown judge kind 'anthropic'; the known kinds: "):
        load_settings(None)
    monkeypatch.setenv("RAGAS_OPS_JUDGE_KIND", "local")
    monkeypatch.setenv("RAGAS_OPS_JUDGE_CANDIDATE_KIND", "gemini")
    with pytest.raises(ConfigError, match="unknown judge kind 'gemini'; the known kinds: local, "):
        load_settings(None)
    with pytest.raises(ConfigError, match=r"judge\.kind: unknown judge kind 'bedrock'"):
        capabilities(JudgeSettings(kind="bedrock"))  # set in code, past the settings' check
