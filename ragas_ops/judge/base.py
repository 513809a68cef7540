"""The one interface metrics use to ask a judge for structured output and embeddings.

Metrics never see HTTP, rate limits, retries, caching or prices: a judge owns all of that and
hands back values with the usage they cost. Row-level failures are exceptions of the
`JudgeRowError` family, which a metric turns into a status; `JudgeFatalError` ends the run.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol

import numpy as np
import numpy.typing as npt

from ragas_ops.contract.status import Status
from ragas_ops.prompts import OutputT, Prompt

MIXED_TIERS = "mixed"
"""The `judge_service_tier` of a row whose requests were answered on more than one tier."""


@dataclass
class Usage:
    """What calls cost: requests sent, tokens billed, and money (None when no price is known)."""

    requests: int = 0
    """Chat requests sent: every attempt (retries, repairs and top-ups included), whatever
    came back; what the endpoint received (an attempt whose connection was never made is
    none)."""
    embedding_requests: int = 0
    """Embeddings requests sent, every attempt included."""
    prompt_tokens: int = 0
    cached_prompt_tokens: int = 0
    completion_tokens: int = 0
    reasoning_tokens: int = 0
    """Of `completion_tokens`: a reasoning model's hidden reasoning, billed as output."""
    embedding_tokens: int = 0
    cost_usd: float | None = 0.0
    cache_hits: int = 0
    requests_by_tier: dict[str, int] = field(default_factory=dict)
    """Answered chat requests by the service tier that answered them (`flex`, `default`...:
    what the reply said, else what was sent); see docs/flex-tier.md."""

    def add(self, other: Usage) -> None:
        self.requests += other.requests
        self.embedding_requests += other.embedding_requests
        self.prompt_tokens += other.prompt_tokens
        self.cached_prompt_tokens += other.cached_prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.reasoning_tokens += other.reasoning_tokens
        self.embedding_tokens += other.embedding_tokens
        self.cache_hits += other.cache_hits
        for tier, count in other.requests_by_tier.items():
            self.requests_by_tier[tier] = self.requests_by_tier.get(tier, 0) + count
        if self.cost_usd is None or other.cost_usd is None:
            self.cost_usd = None
        else:
            self.cost_usd += other.cost_usd

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens + self.embedding_tokens

    @property
    def service_tier(self) -> str | None:
        """The tier that answered these requests, `mixed` when it was more than one; None
        when no chat request was answered (cache hits only, or none sent)."""
        tiers = [tier for tier, count in self.requests_by_tier.items() if count]
        if not tiers:
            return None
        return tiers[0] if len(tiers) == 1 else MIXED_TIERS


@dataclass
class Completion(Generic[OutputT]):
    """Parsed outputs of one prompt (several when `n` > 1), with what they cost."""

    outputs: list[OutputT]
    usage: Usage = field(default_factory=Usage)
    confidences: list[list[float]] | None = None
    """For a prompt answered with a list of yes/no verdicts: for each output, how strongly the
    judge holds each verdict to be "yes", in [0, 1] (0.5 at its yes/no boundary). Given by
    judges that compute their verdicts from a measure (the local judge); None from an LLM,
    which gives the verdicts only."""

    @property
    def output(self) -> OutputT:
        return self.outputs[0]


@dataclass
class Embeddings:
    """One vector per distinct input text, with what the batch cost."""

    vectors: dict[str, npt.NDArray[np.float64]]
    usage: Usage = field(default_factory=Usage)


@dataclass(frozen=True)
class ExpectedRequest:
    """A chat request a row is expected to send: its prompt and data (the judge builds and
    counts the messages as it would send them) and the completion tokens its reply should
    take (`n` replies of that size)."""

    prompt: Prompt[Any]
    data: Mapping[str, Any]
    completion_tokens: int
    n: int = 1


@dataclass(eq=False)
class RowTicket:
    """The row a judge request is for, carried by `CURRENT_ROW` from the scorer through the
    metrics to the judge (metrics ask one request at a time, many rows at once).

    `ordinal` orders the rows of a run (0 first, across all its tables): the judge serves
    lower ordinals first and, under a budget, starts a row only when the budget can pay what
    the row is expected to cost (`expected`, asked for only then) beside the rows under way.
    `metrics` counts the metrics still scoring the row; the row is finished at 0.
    """

    ordinal: int
    expected: Callable[[], Sequence[ExpectedRequest]] | None = None
    metrics: int = 1
    listeners: list[Callable[[RowTicket], None]] = field(default_factory=list, repr=False)
    sequence: RowSequence | None = field(default=None, repr=False)
    """The run's rows, when a scorer hands them out (None: a row on its own)."""

    @property
    def finished(self) -> bool:
        return self.metrics <= 0

    def finish_metric(self) -> None:
        """One metric is done with the row (whatever its outcome)."""
        self.metrics -= 1
        if self.finished:
            for listener in self.listeners:
                listener(self)
            self.listeners.clear()
            if self.sequence is not None:
                self.sequence.close(self)

    @contextmanager
    def current(self) -> Iterator[RowTicket]:
        """Requests made inside are for this row."""
        token = CURRENT_ROW.set(self)
        try:
            yield self
        finally:
            CURRENT_ROW.reset(token)


class RowSequence:
    """The rows a scorer hands out, in order, while they are not finished: so that a judge
    starts rows strictly in order, and a row whose first request comes late (one whose only
    request is its last metric's) is not overtaken by the rows after it."""

    def __init__(self) -> None:
        self.open: dict[int, RowTicket] = {}
        """Tickets not finished, in the order they were issued (ascending ordinals)."""
        self.listeners: list[Callable[[RowTicket], None]] = []
        """Called whenever a row of the sequence is finished."""
        self._next = 0

    def issue(
        self, expected: Callable[[], Sequence[ExpectedRequest]] | None, metrics: int
    ) -> RowTicket:
        """The next row's ticket."""
        ticket = RowTicket(self._next, expected, metrics, sequence=self)
        self.open[ticket.ordinal] = ticket
        self._next += 1
        return ticket

    def close(self, ticket: RowTicket) -> None:
        self.open.pop(ticket.ordinal, None)
        for listener in list(self.listeners):
            listener(ticket)


CURRENT_ROW: ContextVar[RowTicket | None] = ContextVar("ragas_ops_current_row", default=None)
"""The row the running task's judge requests are for (None: no row, e.g. a shared batch of
embeddings for rows already under way)."""


@dataclass(frozen=True)
class JudgeIdentity:
    """Who a judge is, as its results record it, and what a reader of its scores must know."""

    kind: str
    """`openai` or `local` (`judge.kind`)."""
    chat_model: str
    embedding_model: str
    rules_version: str | None = None
    """The version of a rule-based judge's rules: part of what a stored result depends on."""
    caveats: tuple[str, ...] = ()
    """Said where its scores are read (the `score` summary)."""


class JudgeError(Exception):
    """Base of the judge's errors. Messages never contain credentials."""


class JudgeFatalError(JudgeError):
    """Nothing more can succeed in this run (bad credentials, unknown model, no quota)."""


class JudgeUnreachableError(JudgeFatalError):
    """The endpoint never answered: every attempt so far failed (refused, DNS, TLS, timeouts,
    server errors, replies that are no API reply), `judge.unreachable_after` of them."""


class JudgeRowError(JudgeError):
    """One call failed for good; the row it was for gets `status` and this message as reason."""

    status: Status = Status.JUDGE_UNAVAILABLE

    def __init__(self, message: str, usage: Usage | None = None) -> None:
        super().__init__(message)
        self.usage = usage or Usage()


class JudgeRejectedError(JudgeRowError):
    """The provider refused this request (HTTP 400/422, content filter): retrying will not help."""

    status = Status.JUDGE_REJECTED


class JudgeUnavailableError(JudgeRowError):
    """Retries ran out on 429s, 5xx errors, timeouts or connection failures."""

    status = Status.JUDGE_UNAVAILABLE


class UnsupportedLanguageError(JudgeRowError):
    """The judge cannot read the row's language or script (the local judge: non-Latin text)."""

    status = Status.UNSUPPORTED_LANGUAGE


class JudgeOutputError(JudgeRowError):
    """The reply did not parse into the prompt's output model, even after one repair attempt."""

    status = Status.JUDGE_OUTPUT_INVALID


class JudgeOutputCutError(JudgeRowError):
    """Every reply was cut at its output limit, even with the most room its prompt may get."""

    status = Status.JUDGE_OUTPUT_CUT


class Judge(Protocol):
    """What every judge (OpenAI-compatible, local) offers to metrics."""

    @property
    def description(self) -> str:
        """Which judge produced a score, e.g. `openai:gpt-4o-mini`; written in every output row."""
        ...

    @property
    def embedding_description(self) -> str:
        """Which model produced the embeddings, written in every output row."""
        ...

    async def complete(
        self, prompt: Prompt[OutputT], data: Mapping[str, Any], *, n: int = 1
    ) -> Completion[OutputT]:
        """Ask `prompt` about `data`; `n` > 1 asks for that many independent samples."""
        ...

    async def embed(self, texts: Sequence[str]) -> Embeddings:
        """Embed texts, batching them into as few requests as the provider allows."""
        ...

    def usage_total(self) -> Usage:
        """Everything this judge has spent so far."""
        ...

    @property
    def events(self) -> Counter[str]:
        """Counts of what happened besides answers: retries by cause, repairs, cache hits."""
        ...

    async def aclose(self) -> None: ...
