"""What each OpenAI model takes on Chat Completions: data, not branches in the request path.

A profile says the name of the output limit, whether a temperature other than 1 is taken, `n`,
the reasoning efforts (lowest first) and the reasoning tokens a judge's reply typically needs at
each, flex and batch, and how the provider's rate limit counts tokens. A model's name picks its
profile by its family (a dated snapshot, a new size of a known version, a gateway's
`openai/` prefix); a name it does not know gets `generic`, which sends
what every OpenAI-compatible server knows and learns from the endpoint's own 400s
(`shape.RequestShape`). As checked 2026-12-05 (docs/judge.md): every current OpenAI model takes
`max_completion_tokens`; reasoning models take only temperature 1 (the gpt-5.1 kind also
another with effort `none`), hidden reasoning tokens come out of `max_completion_tokens` and are
billed as output, and flex is offered on reasoning models only.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Literal

from ragas_ops.settings_fields import ConfigError

Temperature = Literal["any", "default_only", "with_effort_none"]

EFFORT_ORDER = ("none", "minimal", "low", "medium", "high", "xhigh", "max")
"""Every effort OpenAI names, least thought first."""
PROVIDER_DEFAULT_EFFORT = "medium"
"""The effort a reasoning model spends when none is sent (OpenAI's default)."""

JUDGE_REASONING_TOKENS: Mapping[str, int] = {
    "none": 0,
    "minimal": 12,
    "low": 64,
    "medium": 192,
    "high": 512,
    "xhigh": 1024,
    "max": 1024,
}
"""The hidden reasoning tokens one reply of a ragas-ops prompt takes on average at each
effort, as measured on the test judge (`ragas-ops estimate` counts them; a run sizes
`max_completion_tokens` for twice them and then for the most it saw). `max` (the gpt-5.6 and
gpt-6 families) is not measured: counted as `xhigh`, a lower bound, which a run corrects by
the most it saw."""


@dataclass(frozen=True)
class ModelProfile:
    """What a model takes, as its provider documents it."""

    name: str
    limit_parameter: Literal["max_tokens", "max_completion_tokens"] = "max_completion_tokens"
    temperature: Temperature = "any"
    """`any`; `default_only` (only 1: none is sent); `with_effort_none` (another only with
    `reasoning_effort: "none"`)."""
    n: bool = True
    efforts: tuple[str, ...] = ()
    """Its `reasoning_effort` values, lowest first; () for a model that does not reason."""
    flex: bool = False
    batch: bool = True
    counts: Literal["max_tokens", "usage"] = "max_tokens"
    """How its rate limit counts a request (see `limits.provider.TokenCounting`)."""
    reasoning_tokens: Mapping[str, int] = field(default_factory=dict)
    """The reasoning tokens a judge's reply takes at each effort."""
    known: bool = True
    """False for `generic`: what the model takes is learnt from the endpoint's 400s."""
    max_output_tokens: int | None = None
    """The most output tokens (visible and hidden reasoning) one reply may have, as the
    provider documents it; None: not known (`generic`): the prompt's ceiling alone bounds it."""

    @property
    def reasoning(self) -> bool:
        return bool(self.efforts)

    @property
    def lowest_effort(self) -> str | None:
        return self.efforts[0] if self.efforts else None


def _reasoning(
    name: str, efforts: tuple[str, ...], temperature: Temperature, max_output_tokens: int
) -> ModelProfile:
    return ModelProfile(
        name,
        temperature=temperature,
        efforts=efforts,
        flex=True,
        reasoning_tokens={effort: JUDGE_REASONING_TOKENS[effort] for effort in efforts},
        max_output_tokens=max_output_tokens,
    )


# Output limits as OpenAI's model pages state them (2026-12): gpt-5 and gpt-5.x 128,000,
# o3/o4-mini 100,000, gpt-4o(-mini) 16,384 (gpt-4.1 has 32,768, gpt-3.5-turbo 4,096: the
# classic family takes the usual 16,384).
GENERIC = ModelProfile("generic", limit_parameter="max_tokens", known=False)
CLASSIC = ModelProfile("classic", max_output_tokens=16_384)
GPT5 = _reasoning("gpt-5", ("minimal", "low", "medium", "high"), "default_only", 128_000)
GPT51 = _reasoning(
    "gpt-5.1", ("none", "low", "medium", "high", "xhigh"), "with_effort_none", 128_000
)
GPT6 = _reasoning(
    "gpt-6", ("none", "low", "medium", "high", "xhigh", "max"), "with_effort_none", 128_000
)
"""gpt-5.6 and gpt-6.x (-sol, -terra, -luna...): OpenAI's model pages list the efforts none
to max (medium the default) and a temperature only with effort none (docs/judge.md); their
output limit is taken as gpt-5.x's (the pages found do not state it)."""
O_SERIES = _reasoning("o-series", ("low", "medium", "high"), "default_only", 100_000)

PROFILES: Mapping[str, ModelProfile] = {
    profile.name: profile for profile in (GENERIC, CLASSIC, GPT5, GPT51, GPT6, O_SERIES)
}

_SIZE = r"(-[a-z][a-z0-9]*)*"
"""A family member's name after its version: a size or a kind (`-mini`, `-terra`, `-pro`),
any word: a new name of a known family takes the family's profile."""
FAMILIES: tuple[tuple[str, ModelProfile], ...] = (
    (rf"gpt-(5\.([6-9]|[1-9]\d)|6(\.\d+)?){_SIZE}", GPT6),
    (rf"gpt-5\.[1-5]{_SIZE}", GPT51),
    (r"gpt-5(-(mini|nano|pro|codex))?", GPT5),
    (rf"o[1-9]\d*{_SIZE}", O_SERIES),
    (r"gpt-4o(-mini)?|gpt-4\.1(-(mini|nano))?|gpt-4(-turbo)?|gpt-3\.5-turbo", CLASSIC),
)
"""A model's name (a dated snapshot `-YYYY-MM-DD` as its family, a gateway's provider prefix
`openai/` left out) and its profile: by family, so that `gpt-6.1-terra` or a size OpenAI
adds later is known by its version (a version no family holds, `gpt-7`, is `generic`)."""
_SNAPSHOT = re.compile(r"-\d{4}-\d{2}-\d{2}$")
_PROVIDER_PREFIX = re.compile(r"^[\w.-]+/")


def profile_for(model: str, chosen: str = "auto") -> ModelProfile:
    """The profile of `model`: `chosen` by its name (a `ConfigError` for a name that is no
    profile), else the first family its name matches, else `generic`."""
    if chosen != "auto":
        if chosen not in PROFILES:
            raise ConfigError(
                f"judge.model_profile: {chosen!r} is no profile; the profiles are "
                f"{', '.join(PROFILES)} (or auto)"
            )
        return PROFILES[chosen]
    family = _SNAPSHOT.sub("", _PROVIDER_PREFIX.sub("", model.lower()))
    for pattern, profile in FAMILIES:
        if re.fullmatch(pattern, family):
            return profile
    return GENERIC


def lowest_of(efforts: list[str]) -> str | None:
    """The least thought among efforts an endpoint listed (ones it names that OpenAI does not
    come last)."""
    known = [effort for effort in EFFORT_ORDER if effort in efforts]
    return known[0] if known else (efforts[0] if efforts else None)


def with_efforts(profile: ModelProfile, efforts: tuple[str, ...]) -> ModelProfile:
    """`profile` for a model found to reason with these efforts."""
    tokens = {effort: JUDGE_REASONING_TOKENS.get(effort, 0) for effort in efforts}
    return replace(profile, efforts=efforts, reasoning_tokens=tokens)
