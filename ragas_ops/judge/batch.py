"""Batch mode, as the pipeline sees it: what batches answered (or did not), and the judge's
batch capability (`BatchMode`), which the pipeline asks for with `judge.factory.batch_mode`.

The pipeline keeps the record of a chunk's rounds in the warehouse (see
`pipeline.batch_chunk`); the judge plans, sends and reads the batches and the sync retries, and
answers each scoring pass from what came back. Nothing here knows the provider.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from ragas_ops.judge.base import Judge, JudgeError, Usage
from ragas_ops.judge.limits.budget import Spend
from ragas_ops.prompts import Prompt

TERMINAL_STATUSES = frozenset({"completed", "failed", "expired", "cancelled"})
"""The states a batch ends in."""


class BatchPollError(JudgeError):
    """The endpoint did not answer a question about batches this time (a server error, a
    dropped connection): ask again later. Errors no retry can fix are `JudgeFatalError`."""


CHAT_URL = "/v1/chat/completions"


@dataclass
class BatchAnswer:
    """The reply texts to one batch request and what it cost."""

    texts: list[str]
    usage: Usage

    def to_dict(self) -> dict[str, Any]:
        return {"texts": self.texts, "usage": asdict(self.usage)}

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> BatchAnswer:
        return cls(list(values["texts"]), Usage(**values["usage"]))


@dataclass
class Unanswered:
    """A request no batch answered, and why; `over_budget` ones were never sent;
    `sync_tried` ones were not answered in sync mode either."""

    reason: str
    over_budget: bool = False
    sync_tried: bool = False


@dataclass
class AnswerBook:
    """Everything the batches of a chunk have answered, or failed to answer, by custom_id."""

    answers: dict[str, BatchAnswer] = field(default_factory=dict)
    unanswered: dict[str, Unanswered] = field(default_factory=dict)

    def spent(self) -> Spend:
        usage = Usage()
        for answer in self.answers.values():
            usage.add(answer.usage)
        return Spend.of(usage)


@dataclass
class BatchRequest:
    """One line of a batch input file, with what it is expected to cost."""

    custom_id: str
    body: dict[str, Any]
    expected: Spend

    def line(self) -> dict[str, Any]:
        return {"custom_id": self.custom_id, "method": "POST", "url": CHAT_URL, "body": self.body}


@dataclass
class SyncRetry:
    """A request a batch did not answer, to send again in sync mode before the next pass."""

    prompt: Prompt[Any]
    messages: list[dict[str, str]]
    params: dict[str, Any]


@dataclass
class PlannedRound:
    """A round's requests as batch input files, and the requests it does not send, and why."""

    files: list[tuple[bytes, list[str]]] = field(default_factory=list)
    """Each file's content and the custom_ids of its lines."""
    not_sent: dict[str, Unanswered] = field(default_factory=dict)


class BatchPass(Judge, Protocol):
    """The judge of one scoring pass: answers from the batches, notes what is still missing."""

    pending: dict[str, BatchRequest]
    """Requests no batch was asked yet: for the next round."""
    sync_retries: dict[str, SyncRetry]
    """Requests a batch did not answer: to send in sync mode before the next pass."""

    @property
    def waiting(self) -> bool: ...

    def sync_events(self) -> Counter[str]: ...


class BatchMode(Protocol):
    """The judge's batch capability. `aclose()` it after use."""

    def pass_judge(self, book: AnswerBook) -> BatchPass:
        """The judge of a scoring pass over what `book` holds."""
        ...

    def plan(self, requests: Sequence[BatchRequest], book: AnswerBook) -> PlannedRound:
        """The next round: what the budget left after `book` can pay for, cut into files."""
        ...

    async def submit(self, content: bytes, part_key: str) -> str:
        """The id of the batch of this file, created under `part_key` (or found again)."""
        ...

    async def statuses(self, batch_ids: Sequence[str]) -> dict[str, str]: ...

    async def results(self, batch_id: str, custom_ids: Sequence[str]) -> AnswerBook:
        """What a finished batch said about each of its requests."""
        ...

    async def send_in_sync(self, retries: Mapping[str, SyncRetry], book: AnswerBook) -> AnswerBook:
        """Send what the batches did not answer through the sync judge, within the budget."""
        ...

    async def aclose(self) -> None: ...
