"""The judge providers: each registers its name, what it can do and how it is built, and the
factory looks them up by `judge.kind`.

A provider is found through the `ragas_ops.judge_providers` entry point group (`PROVIDER_GROUP`),
as Airflow finds its providers: an installed package that declares

    [project.entry-points."ragas_ops.judge_providers"]
    mykind = "my_package.provider:PROVIDER"

is a judge kind in every process that has it installed (the CLI, each Airflow worker and the
triggerer), with no file of ragas_ops edited; the built-in `openai` and `local` are declared
the same way in ragas-ops' own pyproject.toml. `register_provider` makes one known for a while
in this process only (a test's). Light: a provider's entry point is loaded when a judge of its
kind is asked for, and its own modules are imported by its functions."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import TYPE_CHECKING

from ragas_ops.judge.spec import JUDGE_KINDS, PROVIDER_GROUP, installed_kinds
from ragas_ops.settings_fields import ConfigError

if TYPE_CHECKING:
    from ragas_ops.config import JudgeSettings, Settings
    from ragas_ops.judge.base import Judge, JudgeIdentity
    from ragas_ops.storage import S3Options


@dataclass(frozen=True)
class Capabilities:
    """What a kind of judge can do, as the operator, the CLI and a run need to know: asked of
    the judge's provider, not tested as `kind == ...` where it is used."""

    batch: bool
    """It has a Batch API (`judge.mode = batch`)."""
    endpoint: bool
    """It asks a remote endpoint: it needs a key or a base URL, and its models have a
    lifecycle the endpoint can be asked about."""
    embeddings: bool = True
    """It embeds texts itself (answer relevance's embeddings); False: its judge takes them
    from another provider (`judge.embedding_kind`)."""
    thinking: bool = False
    """Its models reason before answering, with an effort or a budget the settings set."""
    prompt_caching: bool = False
    """It reads the static part of a prompt from its provider's cache (billed less)."""
    flex_tier: bool = False
    """It has a cheaper, slower tier for sync requests (`judge.service_tier = flex`)."""


@dataclass(frozen=True)
class ReasoningEstimate:
    """What a judge's reply is expected to spend reasoning (`ragas-ops estimate`)."""

    profile: str
    effort: str | None
    """The effort asked (None: none sent, the provider's default)."""
    tokens_per_reply: int


BuildJudge = Callable[["Settings", Mapping[str, str], "S3Options | None"], "Judge"]
"""(the settings, the environment its key is read from, the lake's S3 options for a shared
cache) -> the judge."""


@dataclass(frozen=True)
class Provider:
    """A kind of judge (`judge.kind`)."""

    name: str
    capabilities: Capabilities
    build: BuildJudge
    identity: Callable[[JudgeSettings], JudgeIdentity]
    """Who its judge is, as results record it, without building it (no model loaded)."""
    reasoning: Callable[[JudgeSettings], ReasoningEstimate] | None = None
    """The reasoning its replies are expected to spend; None: none (a judge that does not
    reason)."""


log = logging.getLogger(__name__)
_PROVIDERS: dict[str, Provider] = {}


def register_provider(provider: Provider) -> None:
    """Make `provider` a judge kind: `judge.kind = <its name>` then builds its judge."""
    known = _PROVIDERS.get(provider.name)
    if known is not None and known is not provider:
        raise ValueError(f"judge kind {provider.name!r} is registered already")
    _PROVIDERS[provider.name] = provider
    JUDGE_KINDS.add(provider.name)


def forget_provider(name: str) -> None:
    """The counterpart of `register_provider` (a provider registered for a while)."""
    _PROVIDERS.pop(name, None)
    JUDGE_KINDS.discard(name)


def provider_for(kind: str) -> Provider:
    """The provider of judge kind `kind`, registered or installed (its entry point loaded
    now); a ConfigError naming the known kinds if none is."""
    found = _PROVIDERS.get(kind) or _installed(kind)
    if found is None:
        known = ", ".join(sorted(set(_PROVIDERS) | installed_kinds()))
        raise ConfigError(f"judge.kind: unknown judge kind {kind!r}; the known kinds: {known}")
    return found


def registered_providers() -> Mapping[str, Provider]:
    """Every provider: the installed ones (their entry points loaded) and the registered."""
    for kind in installed_kinds() - set(_PROVIDERS):
        _installed(kind)
    return dict(_PROVIDERS)


def _installed(kind: str) -> Provider | None:
    """The provider an installed package declares for `kind` (None: none does). An entry
    point that does not load, or is no `Provider` of that name, is a ConfigError naming it."""
    for point in entry_points(group=PROVIDER_GROUP, name=kind):
        try:
            provider = point.load()
        except Exception as error:
            raise ConfigError(
                f"judge.kind: the provider {kind!r} ({point.value}, entry point group "
                f"{PROVIDER_GROUP}) does not load: {type(error).__name__}: {error}"
            ) from error
        if not isinstance(provider, Provider) or provider.name != kind:
            raise ConfigError(
                f"judge.kind: the entry point {kind!r} of group {PROVIDER_GROUP} is "
                f"{point.value}, which is no judge Provider named {kind!r}"
            )
        log.debug("judge provider %r from %s", kind, point.value)
        _PROVIDERS[kind] = provider
        return provider
    return None
