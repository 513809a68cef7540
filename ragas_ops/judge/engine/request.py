"""One request on its way to the endpoint, and how one attempt of it ended: what the
transport, the retry policy, the admission and the accounting pass between them."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ragas_ops.judge.base import RowTicket
from ragas_ops.judge.engine.wire import RawReply
from ragas_ops.judge.limits.budget import Spend
from ragas_ops.judge.limits.priority import priority_of


@dataclass(frozen=True)
class Request:
    """One request to send, however many attempts it takes."""

    what: str
    """The prompt's id (or "embeddings"): in logs, errors and the token counting it learns."""
    send: Callable[[Mapping[str, Any]], Awaitable[RawReply]]
    """Sends it once with this attempt's options (`options`)."""
    read: Callable[[str, bytes], Any]
    """Reads a status-200 body (content type, bytes), or raises `BadReplyError`."""
    tokens: int
    """What the rate limiter is charged at admission."""
    counted_besides_usage: int
    """What the provider counts besides the reported usage (the schema sent)."""
    max_completion: int
    """`max_tokens` x `n`: the most completion tokens its reply may use (0: no completion)."""
    expected: Spend
    """What the budget holds for it while it is in flight: at most what it can cost."""
    chat: bool
    row: RowTicket | None
    """The row it is for (None: no row in particular)."""
    tier: str | None = None
    """The `service_tier` this attempt is sent with (None: none); set per attempt."""
    options: Mapping[str, Any] = field(default_factory=dict)
    """This attempt's options: its service tier and timeout (see `tiers.TierPolicy.options`)."""

    @property
    def priority(self) -> int:
        """Lower goes first when requests wait for a slot: the rows started first finish first."""
        return priority_of(self.row)

    @property
    def ordinal(self) -> int | None:
        return None if self.row is None else self.row.ordinal


@dataclass(frozen=True)
class Refusal:
    """An error reply refusing the request (4xx): what it names, the API's message."""

    status: int
    code: str | None
    param: str | None
    detail: str

    def describe(self) -> str:
        pairs = (("code", self.code), ("param", self.param))
        named = ", ".join(f"{name} {value}" for name, value in pairs if value)
        return f"HTTP {self.status}{f' ({named})' if named else ''}: {self.detail}"


@dataclass(frozen=True)
class Attempt:
    """How one attempt ended: a read reply, or the problem (and whether it was a 429)."""

    reply: Any = None
    problem: str = ""
    rate_limited: bool = False
    capacity: bool = False
    """A flex capacity 429: the tier had no room, the account's rate is not in question."""
    retry_after: float | None = None
    """Seconds this request alone waits before its next attempt (None: no wait of its own)."""
    adapted: str | None = None
    """The parameter a refusal named that the request shape now fits: ask again at once."""
    refusal: Refusal | None = None
