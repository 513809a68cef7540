"""The judge providers: each registers its name, what it can do and how it is built, and the
factory looks them up by `judge.kind` (the built-in `openai` and `local` are registered by the
factory; a provider package calls `register_provider`). Light: a provider's own modules are
imported by its functions, when a judge of its kind is asked for."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ragas_ops.judge.spec import JUDGE_KINDS
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
    """The provider of judge kind `kind`; a ConfigError naming the known kinds if none is."""
    found = _PROVIDERS.get(kind)
    if found is None:
        known = ", ".join(sorted(_PROVIDERS))
        raise ConfigError(f"judge.kind: unknown judge kind {kind!r}; the known kinds: {known}")
    return found


def registered_providers() -> Mapping[str, Provider]:
    return dict(_PROVIDERS)
