"""The shape of a request that fits the model: built from its profile (`profiles`) and the
`[judge]` overrides, and adjusted by what the endpoint refuses.

Requests are built in one canonical form (`max_tokens`, the prompt's `temperature`, `n`, the
effort asked for) and fitted at the wire (`fit`): the output limit under the name the model
takes, no temperature where it takes only its default, no `n` where it takes none (the judge
then asks for the samples one by one), the effort it reasons at. A 400 naming a parameter
(`unsupported_parameter`, `unsupported_value`, `invalid_value` with `param`) is learnt once
(`learn`; a gateway that sends `param: null` is read from OpenAI's message, `refused_in_message`)
and kept for the run, by every request of the run: the refused request is asked
again, and no row is lost to a parameter. Until a first chat reply arrives, a model no
profile names is asked one request at a time (`first_answer`), so that a refusal is learnt from
one request, not from every request in flight.
"""

from __future__ import annotations

import asyncio
import logging
import math
import re
from collections import Counter
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

from ragas_ops.config import JudgeSettings
from ragas_ops.judge.chat_completions.profiles import (
    JUDGE_REASONING_TOKENS,
    PROVIDER_DEFAULT_EFFORT,
    ModelProfile,
    lowest_of,
    profile_for,
)
from ragas_ops.judge.engine.spec import FlexSpec, ModelSpec
from ragas_ops.judge.engine.wire import ROOM_CEILING_FACTOR
from ragas_ops.settings_fields import ConfigError

log = logging.getLogger(__name__)

LEARNT_CODES = frozenset({"unsupported_parameter", "unsupported_value", "invalid_value"})
"""The codes of a 400 that refuse a parameter of the request, not its content."""
_REFUSED_IN_MESSAGE = re.compile(
    r"^\s*(Unsupported parameter|Unsupported value|Invalid value|Unrecognized request "
    r"argument supplied)\s*:\s*'?([A-Za-z_]+)'?",
    re.IGNORECASE,
)
_CODE_OF_PHRASE = {
    "unsupported parameter": "unsupported_parameter",
    "unsupported value": "unsupported_value",
    "invalid value": "invalid_value",
    "unrecognized request argument supplied": "unsupported_parameter",
}


def refused_in_message(message: str) -> tuple[str, str] | None:
    """The (code, param) a 400's message names when its `param` (and maybe its `code`) is
    null, as some gateways send OpenAI's refusals: OpenAI's messages begin "Unsupported
    parameter: 'max_tokens' is not supported with this model..." or "Unsupported value:
    'temperature' does not support 0.7...". None: the message names no parameter so."""
    found = _REFUSED_IN_MESSAGE.match(message or "")
    if found is None:
        return None
    return _CODE_OF_PHRASE[found.group(1).lower()], found.group(2)


_SUPPORTED_VALUES = re.compile(r"Supported values are:? (.*?)\.?$")
REASONING_HEADROOM = 2.0
"""`max_completion_tokens` holds this many times the reasoning a reply typically takes."""
SEEN_HEADROOM = 1.25
"""... and at least this many times the most a complete reply of the run took."""


def resolve_effort(profile: ModelProfile, model: str, wanted: str) -> str | None:
    """The effort to send (None: none, the provider's default) for `judge.reasoning_effort`;
    a `ConfigError` for one the model's profile does not list."""
    if wanted == "provider":
        return None
    if wanted == "lowest":
        return profile.lowest_effort
    if profile.known and wanted not in profile.efforts:
        offered = ", ".join(profile.efforts) or "none: it does not reason"
        raise ConfigError(
            f"judge.reasoning_effort: {wanted!r} is not an effort of model {model!r} "
            f"(profile {profile.name}: {offered}); set one of them, lowest or provider"
        )
    return wanted


def check_service_tier(profile: ModelProfile, model: str, flex: FlexSpec) -> None:
    """Refuse flex for a model whose profile offers none (OpenAI: reasoning models only)."""
    if flex.service_tier != "default" and profile.known and not profile.flex:
        raise ConfigError(
            f"judge.service_tier = {flex.service_tier}: model {model!r} (profile "
            f"{profile.name}) has no flex tier (OpenAI offers it on reasoning models only); "
            "set judge.service_tier = default or a reasoning model"
        )


def shape_for(settings: JudgeSettings, events: Counter[str]) -> RequestShape:
    """The request shape of the model the settings name (its profile, their overrides); a
    `ConfigError` for an effort or a tier the model's profile does not offer."""
    model = settings.endpoint.model
    profile = profile_for(model, settings.model.profile)
    check_service_tier(profile, model, settings.flex)
    return RequestShape(profile, model, settings.model, events)


class RequestShape:
    """How this run's requests are fitted to the model; learns what the endpoint refuses.
    One per judge (a run), shared by its concurrent requests."""

    def __init__(
        self, profile: ModelProfile, model: str, spec: ModelSpec, events: Counter[str]
    ) -> None:
        self.profile = profile
        self.model = model
        self._events = events
        self.limit_parameter: str = (
            profile.limit_parameter if spec.limit_parameter == "auto" else spec.limit_parameter
        )
        self.temperature = profile.temperature
        if spec.send_temperature != "auto":
            self.temperature = "any" if spec.send_temperature == "yes" else "default_only"
        self.sends_n = profile.n
        self.sends_seed = True
        self.effort = resolve_effort(profile, model, spec.reasoning_effort)
        self.reasons = profile.reasoning or self.effort is not None
        """Whether the model spends hidden reasoning tokens (learnt when it turns out to)."""
        self._fixed = {
            name
            for name, value in (
                ("max_tokens", spec.limit_parameter),
                ("max_completion_tokens", spec.limit_parameter),
                ("temperature", spec.send_temperature),
            )
            if value != "auto"
        }
        if spec.reasoning_effort not in ("lowest", "provider"):
            self._fixed.add("reasoning_effort")  # the operator's choice is not changed
        self._learnt: set[str] = set()
        self._most_reasoning = 0
        self._answered = False
        self._one_at_a_time = not profile.known
        """A model it does not know goes one request at a time until one is answered; a
        profiled one at once (a deadline or a pace may depend on it)."""
        self._first: asyncio.Lock | None = None

    # -- the request ------------------------------------------------------------------------

    def fit(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """The body's parameters as this model takes them, from the canonical ones."""
        body = dict(params)
        limit = body.pop("max_tokens", None)
        if limit is not None:
            body[self.limit_parameter] = limit
        body.pop("reasoning_effort", None)
        if self.effort is not None:
            body["reasoning_effort"] = self.effort
        if not self.sends_temperature:
            body.pop("temperature", None)
        if not self.sends_n:
            body.pop("n", None)
        if not self.sends_seed:
            body.pop("seed", None)
        return body

    @property
    def sends_temperature(self) -> bool:
        if self.temperature == "with_effort_none":
            return self.effort == "none"
        return self.temperature == "any"

    def reasoning_allowance(self) -> int:
        """Output tokens one reply may spend reasoning before its visible answer: twice what
        a reply typically takes at the effort asked (the provider's default when none), at
        least a quarter more than the most one of this run took."""
        if not self.reasons:
            return 0
        return max(self._typical_allowance(), math.ceil(SEEN_HEADROOM * self._most_reasoning))

    def _typical_allowance(self) -> int:
        if not self.reasons:
            return 0
        effort = self.effort or PROVIDER_DEFAULT_EFFORT
        typical = self.profile.reasoning_tokens.get(effort, JUDGE_REASONING_TOKENS.get(effort, 0))
        return math.ceil(REASONING_HEADROOM * typical)

    def room_ceiling(self, visible: int) -> int:
        """The most output tokens (`max_tokens`) one request of a prompt whose answer needs at
        most `visible` may get: `ROOM_CEILING_FACTOR` x (`visible` + the typical reasoning
        allowance, never what the run saw), at most the model's output limit (its profile)."""
        ceiling = ROOM_CEILING_FACTOR * (visible + self._typical_allowance())
        limit = self.profile.max_output_tokens
        return ceiling if limit is None else min(ceiling, limit)

    def saw_reasoning(self, tokens_per_reply: int) -> None:
        """A complete reply spent this many reasoning tokens: later budgets hold room for
        them (a cut reply says only that its room was spent: never learnt from)."""
        if tokens_per_reply > 0:
            self.reasons = True
            self._most_reasoning = max(self._most_reasoning, tokens_per_reply)

    # -- what the endpoint refuses ----------------------------------------------------------

    def learn(self, param: str | None, code: str | None, message: str) -> bool:
        """Whether a refusal of `param` is one the shape adjusts to (now, or already by
        another request's refusal): then the request is asked again as fitted now."""
        if param is None or code not in LEARNT_CODES or param in self._fixed:
            return False
        if param in self._learnt:
            return True
        if not self._adjust(param, code, message):
            return False
        self._learnt.add(param)
        self._events[f"adapted_{param}"] += 1
        log.warning(
            "the judge endpoint refused %r for model %r (%s): adjusted for the rest of the run "
            "(now %s)",
            param,
            self.model,
            code,
            self.describe(),
        )
        return True

    def _adjust(self, param: str, code: str, message: str) -> bool:
        if param == "max_tokens" and code == "unsupported_parameter":
            # Today's reasoning models: OpenAI names the replacement in the message.
            self.limit_parameter = "max_completion_tokens"
            self.reasons = True
        elif param == "max_completion_tokens" and code == "unsupported_parameter":
            self.limit_parameter = "max_tokens"
        elif param == "temperature":
            self.temperature = "default_only"
        elif param == "n":
            self.sends_n = False
        elif param == "seed":
            self.sends_seed = False
        elif param == "reasoning_effort":
            return self._adjust_effort(code, message)
        else:
            return False
        return True

    def _adjust_effort(self, code: str, message: str) -> bool:
        if code == "unsupported_parameter":
            self.effort = None  # it does not reason, or decides alone
            return True
        found = _SUPPORTED_VALUES.search(message)
        offered = re.findall(r"'([a-z_]+)'", found.group(1)) if found else []
        lowest = lowest_of(offered)
        if lowest is None or lowest == self.effort:
            return False
        self.effort = lowest
        self.reasons = True
        return True

    def describe(self) -> str:
        """The shape in one line, for logs."""
        sent = [self.limit_parameter]
        sent += ["temperature"] if self.sends_temperature else []
        sent += ["n"] if self.sends_n else []
        effort = f"reasoning_effort={self.effort}" if self.effort else "no reasoning_effort"
        return f"{', '.join(sent)}; {effort}"

    # -- one request at a time until the first answer ---------------------------------------

    @property
    def answered(self) -> bool:
        """Whether a chat request of the run was answered (the shape fits)."""
        return self._answered

    def confirm(self) -> None:
        self._answered = True

    @asynccontextmanager
    async def first_answer(self) -> AsyncIterator[None]:
        """Until a chat request was answered, a model it does not know is asked one request
        at a time: a parameter it refuses is then refused once, not by every request in
        flight. The requests that queued behind the first go all at once when it is
        answered (each passes the lock without holding it: a queue that kept it would ask
        the whole run one request at a time)."""
        if self._answered or not self._one_at_a_time:
            yield
            return
        if self._first is None:
            self._first = asyncio.Lock()
        await self._first.acquire()
        if self._answered:  # answered while this one waited
            self._first.release()
            yield
            return
        try:
            yield
        finally:
            self._first.release()
