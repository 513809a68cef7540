"""What every metric is: a name, versions, the fields it needs, its prompts and its formula; and
what the rest of the house needs to know of it, declared beside the formula: the calls a row
would take (for the cost estimate) and how the report titles and explains its evidence."""

from __future__ import annotations

import asyncio
import math
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

from pydantic import BaseModel

from ragas_ops.contract.inputs import Interaction
from ragas_ops.contract.status import Status
from ragas_ops.judge.base import ExpectedRequest, Judge, JudgeRowError, RowTicket, Usage
from ragas_ops.prompts import Prompt
from ragas_ops.text import estimate_tokens

StepT = TypeVar("StepT")

ESTIMATED_EXPLANATION_TOKENS = 20
"""Tokens the cost estimate assumes for each explanation a judge writes (a verdict's, a score's)."""

Detail = tuple[str, str, str]
"""A line of the report's evidence: (label, untrusted text, untrusted note, e.g. the judge's
explanation)."""


def as_text(value: Any) -> str:
    """An evidence value as text ("" for a missing one): evidence is data, never trusted."""
    return "" if value is None else str(value)


def explanation_stand_in(tokens: float = ESTIMATED_EXPLANATION_TOKENS) -> str:
    """A stand-in for text the judge writes (an explanation, a question), `tokens` long as
    the judge counts text (~4 characters a token)."""
    return "x" * max(0, round(tokens * 4))


@dataclass(frozen=True)
class ExpectedCall:
    """One chat request a metric would send for a row: its prompt, its data, and a stand-in
    for the reply (an instance of the prompt's output model, sized as the estimate assumes)."""

    prompt: Prompt[Any]
    data: Mapping[str, Any]
    reply: BaseModel
    n: int = 1

    @property
    def completion_tokens(self) -> int:
        """Tokens of one reply: the stand-in's JSON, counted as the judge counts text."""
        return estimate_tokens(self.reply.model_dump_json())

    def request(self) -> ExpectedRequest:
        return ExpectedRequest(self.prompt, self.data, self.completion_tokens, self.n)


def row_tickets(
    rows: Sequence[Interaction], tickets: Sequence[RowTicket] | None
) -> Sequence[RowTicket]:
    """The tickets given (one per row), or tickets numbering the rows from 0."""
    if tickets is None:
        return [RowTicket(ordinal) for ordinal in range(len(rows))]
    if len(tickets) != len(rows):
        raise ValueError(f"{len(tickets)} row tickets for {len(rows)} rows")
    return tickets


@dataclass
class MetricResult:
    """One metric on one row. `score` is set exactly when `status` is OK."""

    status: Status
    score: float | None = None
    reason: str = ""
    evidence: dict[str, Any] = field(default_factory=dict)
    usage: Usage = field(default_factory=Usage)

    def __post_init__(self) -> None:
        if (self.score is not None) != (self.status is Status.OK):
            raise ValueError(f"a score must be given exactly when the status is ok: {self}")
        if self.score is not None and not math.isfinite(self.score):
            raise ValueError(f"a score must be a finite number: {self}")


class Metric(ABC):
    """A metric scores rows through a judge; subclasses implement `score` for one row."""

    name: ClassVar[str]
    version: ClassVar[int]
    """Version of the formula and its evidence; prompts carry their own versions."""
    requires: ClassVar[tuple[str, ...]]
    """Contract fields the metric reads (question, contexts, answer)."""
    prompts: ClassVar[tuple[Prompt[Any], ...]]
    title: ClassVar[str] = ""
    """How the report names the metric (default: from its name)."""
    worst_title: ClassVar[str] = ""
    """The report's heading over the lowest-scored rows (default: "Lowest <title>")."""
    estimate_assumption: ClassVar[str] = ""
    """What `expected_calls` assumes of the judge's replies, said with every cost estimate."""
    written_text_tokens: ClassVar[int] = 0
    """For the cost estimate: tokens of each text the judge writes that the metric then embeds
    (a None of `expected_embedding_inputs`, e.g. a generated question)."""

    @classmethod
    def display_title(cls, name: str) -> str:
        return cls.title or name.replace("_", " ").capitalize()

    @classmethod
    def display_worst_title(cls, name: str) -> str:
        return cls.worst_title or f"Lowest {cls.display_title(name).lower()}"

    @classmethod
    def explain(cls, evidence: Mapping[str, Any], contexts: Sequence[str]) -> list[Detail]:
        """The lines that explain a low score from its evidence, for people to read."""
        if "explanation" in evidence:
            return [("Judge", str(evidence["explanation"]), "")]
        return []

    def expected_calls(self, row: Interaction) -> list[ExpectedCall]:
        """The chat requests scoring `row` would send, with stand-ins for the replies (the
        cost estimate's unit). A metric that does not declare them cannot be estimated."""
        raise NotImplementedError(f"metric {self.name} declares no expected calls")

    def expected_embedding_inputs(self, row: Interaction) -> list[str | None]:
        """The texts scoring `row` would embed: known ones as text, ones the judge writes
        first (generated questions) as None, each `written_text_tokens` long."""
        return []

    @property
    def version_label(self) -> str:
        """The versions written beside every score, e.g. `faithfulness/v1 (prompt/v1, ...)`."""
        prompt_ids = ", ".join(prompt.id for prompt in self.prompts)
        return f"{self.name}/v{self.version} ({prompt_ids})"

    def expected_requests(self, row: Interaction) -> list[ExpectedRequest]:
        """The chat requests scoring `row` is expected to send (none for a row whose fields
        this metric cannot use): what the judge holds a budget for when the row starts. A
        metric that declares no `expected_calls` is expected to ask nothing: the budget then
        still holds back one request's worst case when a row starts."""
        if row.problem_with(self.requires) or type(self).expected_calls is Metric.expected_calls:
            return []
        return [call.request() for call in self.expected_calls(row)]

    async def score_rows(
        self,
        rows: Sequence[Interaction],
        judge: Judge,
        tickets: Sequence[RowTicket] | None = None,
    ) -> list[MetricResult]:
        """Score rows concurrently; results come back in the order of `rows`. Each row's
        requests carry its ticket (`RowTicket`: its place in the run); without tickets the
        rows are numbered from 0."""
        return list(
            await asyncio.gather(
                *(
                    self.score_for(row, judge, ticket)
                    for row, ticket in zip(rows, row_tickets(rows, tickets), strict=True)
                )
            )
        )

    async def score_for(self, row: Interaction, judge: Judge, ticket: RowTicket) -> MetricResult:
        """Score one row for its ticket; the metric is done with the row when this returns."""
        try:
            with ticket.current():
                return await self.score_guarded(row, judge)
        finally:
            ticket.finish_metric()

    async def score_guarded(self, row: Interaction, judge: Judge) -> MetricResult:
        """Score one row, turning an unusable input or a row-level judge failure into a status."""
        return await self.run_guarded(row, judge, self.score)

    async def run_guarded(
        self,
        row: Interaction,
        judge: Judge,
        step: Callable[[Interaction, Judge, Usage], Awaitable[StepT]],
    ) -> StepT | MetricResult:
        """Run `step` on a row whose fields this metric can use; failures become a status."""
        problem = row.problem_with(self.requires)
        if problem:
            return MetricResult(Status.INVALID_INPUT, reason=problem)
        usage = Usage()
        try:
            outcome = await step(row, judge, usage)
        except JudgeRowError as error:
            usage.add(error.usage)
            return MetricResult(error.status, reason=str(error), usage=usage)
        if isinstance(outcome, MetricResult):
            outcome.usage = usage
        return outcome

    @abstractmethod
    async def score(self, row: Interaction, judge: Judge, usage: Usage) -> MetricResult:
        """Score a row whose required fields are valid, adding every call's cost to `usage`."""
