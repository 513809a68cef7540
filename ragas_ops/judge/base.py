"""The one interface metrics use to ask a judge for structured output and embeddings.

Metrics never see HTTP, rate limits, retries, caching or prices: a judge owns all of that and
hands back values with the usage they cost. Row-level failures are exceptions of the
`JudgeRowError` family, which a metric turns into a status; `JudgeFatalError` ends the run.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
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
    came back; what the endpoint received."""
    embedding_requests: int = 0
    """Embeddings requests sent, every attempt included."""
    prompt_tokens: int = 0
    cached_prompt_tokens: int = 0
    completion_tokens: int = 0
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


class JudgeOutputError(JudgeRowError):
    """The reply did not parse into the prompt's output model, even after one repair attempt."""

    status = Status.JUDGE_OUTPUT_INVALID


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
