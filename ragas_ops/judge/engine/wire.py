"""The seam between the engine and a provider: what the engine asks of a provider's wire, and
the values that cross it.

The engine (`engine.judge.EngineJudge`) owns a request's life: the cache and single flight, the
admission at the account's pace, the budget, retries and their classes, repairs, replies cut
short asked again with more room, accounting and the graceful stop. A provider owns its wire,
the few things only it knows, behind two small protocols:

- `ChatWire`: sends one chat request (messages and the canonical parameters of
  `engine.chat_request.chat_params`, fitted to its API by the wire) and returns the raw reply
  (`RawReply`) or raises its own error; reads a status-200 body into a `ChatReply` (or raises
  `BadReplyError`); says what a raised error means (`failure_of` -> `Failure`); reads its
  rate-limit signals from a reply's headers (`rate_limits` -> `RateLimitHeaders`); and carries
  the request shape it fits requests with (`Fitting`).
- `EmbeddingWire`: the same for embeddings (`send_embeddings`, `read_embeddings`). Chat and
  embeddings are separate roles: a provider without an embeddings API supplies none, and the
  judge's embeddings come from another provider or the local embedder.

A wire does no retries, no pacing, no caching and no accounting: one call is one attempt. What
the engine needs of the run reaches the wire through the provider's factory, never `Settings`
copies: the credentials and the endpoint are one `JudgeRuntime`.

The provider's package (e.g. `judge/openai/`) registers a `providers.Provider` through the
`ragas_ops.judge_providers` entry point group; its `build` makes the wire and hands it to
`EngineJudge`. This module imports no provider, and no provider imports another.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import numpy as np
import numpy.typing as npt

from ragas_ops.judge.limits.provider import RateLimitHeaders
from ragas_ops.secrets import Secret

ROOM_CEILING_FACTOR = 4
"""The most room a request may get (`Fitting.room_ceiling`): this many times what a request
of its prompt starts with at the typical reasoning (its prompt's output room and the
reasoning a reply typically takes), and never past the model's output limit."""


@dataclass(frozen=True)
class RawReply:
    """A status-200 reply as it came: its headers and its body, not yet read."""

    headers: Mapping[str, str]
    content_type: str
    body: bytes


class BadReplyError(Exception):
    """A status-200 reply that is not a well-formed API reply, retried like a dropped
    connection. `kind` names what was wrong (`not_json`, `truncated`, `html`, `text`,
    `missing_field`, `wrong_type`, `wrong_shape`)."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(detail)
        self.kind = kind


@dataclass(frozen=True)
class ReportedUsage:
    """The token counts a reply reports (0 for what it leaves out)."""

    prompt_tokens: int = 0
    """Every input token billed, cached ones included (a provider that reports them apart,
    as Anthropic does, adds them here)."""
    completion_tokens: int = 0
    cached_prompt_tokens: int = 0
    """Of `prompt_tokens`: read from the provider's prompt cache (billed less)."""
    reasoning_tokens: int = 0
    """Of `completion_tokens`: a reasoning model's hidden reasoning (billed as output)."""
    cache_write_tokens: int = 0
    """Of `prompt_tokens`: written to the provider's prompt cache (billed more, at Anthropic)."""


@dataclass(frozen=True)
class ChatChoice:
    content: str
    finish_reason: str | None
    """`stop`, `length` (cut at the output limit: asked again with more room),
    `content_filter` (the row's rejection), or the provider's own word mapped to these."""


@dataclass(frozen=True)
class ChatReply:
    choices: list[ChatChoice]
    usage: ReportedUsage
    service_tier: str | None = None
    """The tier that served the request, as the reply says; None when it says nothing."""


@dataclass(frozen=True)
class EmbeddingReply:
    vectors: dict[int, npt.NDArray[np.float64]]
    """By the index of the input text."""
    usage: ReportedUsage


FailureKind = Literal[
    "rate_limited",
    "capacity",
    "quota_exhausted",
    "credentials",
    "unknown_model",
    "refused",
    "server",
    "timeout",
    "connection",
    "bad_reply",
]
"""What a failed attempt means, whatever the provider:

- `rate_limited`: the account's pace (a 429): asked again after `retry_after`, using no attempt;
- `capacity`: a tier with no room for it (OpenAI's flex "resource unavailable"): this request
  waits and may fall back to the standard tier;
- `quota_exhausted`, `credentials` (401/403), `unknown_model` (404): no request can succeed, the
  run stops;
- `refused` (a 4xx): this request is rejected, unless the request shape adapts to the parameter
  it names (`param`, `code`); the same refusal before any answer stops the run;
- `server` (5xx, 408, an overloaded provider), `timeout`, `connection`, `bad_reply`: asked again
  with backoff, up to `judge.max_attempts`."""


@dataclass(frozen=True)
class Failure:
    """An attempt's error as the provider's wire reads it (`ChatWire.failure_of`)."""

    kind: FailureKind
    status: int | None = None
    detail: str = ""
    """The provider's own message (the engine redacts the key before it shows it)."""
    code: str | None = None
    """The error's code (`context_length_exceeded`, `unsupported_parameter`...), or the
    `BadReplyError` kind."""
    param: str | None = None
    """The request parameter an error names (a refusal the request shape may adapt to)."""
    retry_after: float | None = None
    """Seconds the provider asked to wait (`retry-after`), None: it did not say."""
    headers: Mapping[str, str] = field(default_factory=dict)
    """The error reply's headers (its rate-limit signals); empty without a reply."""
    sent: bool = True
    """False when the request never left this machine (connection refused, no connection in
    time): the endpoint never saw it, so it is no request and costs nothing."""


class Fitting(Protocol):
    """How a provider fits the canonical request to its model, and what it learns from the
    endpoint's refusals (OpenAI's is `chat_completions.shape.RequestShape`)."""

    @property
    def effort(self) -> str | None:
        """The reasoning effort sent (part of the cache key), None: none."""

    @property
    def answered(self) -> bool:
        """Whether a chat request of the run was answered (the shape fits)."""

    def reasoning_allowance(self) -> int:
        """Output tokens a reply may spend reasoning before its visible answer."""

    def saw_reasoning(self, tokens_per_reply: int) -> None:
        """A complete reply spent this many reasoning tokens: later budgets hold room for
        them."""

    def room_ceiling(self, visible: int) -> int:
        """The most output tokens one request of a prompt whose answer needs at most
        `visible` may get (the model's output limit at most)."""

    def learn(self, param: str | None, code: str | None, message: str) -> bool:
        """Whether a refusal of `param` is one the shape adapts to: then ask again."""

    def confirm(self) -> None:
        """A chat request was answered."""

    def first_answer(self) -> AbstractAsyncContextManager[None]:
        """Held around a chat request until the first answer (one at a time, or not)."""


class ChatWire(Protocol):
    """A provider's chat API, one attempt at a time."""

    @property
    def kind(self) -> str:
        """The judge kind (`openai`, `anthropic`): the prefix of the judge's name."""

    @property
    def endpoint(self) -> str:
        """Where the requests go, without credentials: part of the judge's name and of every
        cache key (another endpoint's answers are never reused)."""

    @property
    def shape(self) -> Fitting:
        """How requests are fitted to the model, shared by the run's requests."""

    async def send_chat(
        self,
        messages: Sequence[Mapping[str, str]],
        params: Mapping[str, Any],
        options: Mapping[str, Any],
    ) -> RawReply:
        """Send one chat request: `params` in the canonical form (fitted here), `options`
        this attempt's `service_tier` and `timeout`. Raises the wire's own errors."""

    def read_chat(self, content_type: str, body: bytes) -> ChatReply:
        """A status-200 body's choices and usage, or `BadReplyError`."""

    def failure_of(self, error: BaseException) -> Failure | None:
        """What an error `send_chat`/`send_embeddings` raised means; None: not one of the
        wire's (a cancellation, a bug): the engine lets it through."""

    def rate_limits(self, headers: Mapping[str, str]) -> RateLimitHeaders:
        """The rate-limit signals of a reply's headers (all None: it sends none)."""

    async def aclose(self) -> None: ...


class EmbeddingWire(Protocol):
    """A provider's embeddings API, one attempt at a time."""

    @property
    def endpoint(self) -> str: ...

    async def send_embeddings(self, model: str, texts: Sequence[str]) -> RawReply: ...

    def read_embeddings(self, content_type: str, body: bytes) -> EmbeddingReply:
        """A status-200 body's vectors by input index, and its usage, or `BadReplyError`."""

    def failure_of(self, error: BaseException) -> Failure | None: ...

    def rate_limits(self, headers: Mapping[str, str]) -> RateLimitHeaders: ...

    async def aclose(self) -> None: ...


@dataclass(frozen=True)
class JudgeRuntime:
    """The facts of this run a provider's wire needs beside its settings: the credentials and
    the endpoint as this process has them (the environment, or in Airflow the task's
    connection). One small value, read once by the factory, never copied into `Settings`."""

    api_key: Secret = field(default_factory=lambda: Secret(""))
    base_url: str | None = None
    """The endpoint (None: the provider's default, or its own environment variable)."""
    key_source: str = ""
    """Where the key came from, for messages (`$OPENAI_API_KEY`, `connection ragas_ops_judge`)."""
