"""What every metric is: a name, versions, the fields it needs, its prompts and its formula."""

from __future__ import annotations

import asyncio
import math
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

from ragas_ops.contract.inputs import Interaction
from ragas_ops.contract.status import Status
from ragas_ops.judge.base import Judge, JudgeRowError, Usage
from ragas_ops.prompts import Prompt

StepT = TypeVar("StepT")


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

    @property
    def version_label(self) -> str:
        """The versions written beside every score, e.g. `faithfulness/v1 (prompt/v1, ...)`."""
        prompt_ids = ", ".join(prompt.id for prompt in self.prompts)
        return f"{self.name}/v{self.version} ({prompt_ids})"

    async def score_rows(self, rows: Sequence[Interaction], judge: Judge) -> list[MetricResult]:
        """Score rows concurrently; results come back in the order of `rows`."""
        return list(await asyncio.gather(*(self.score_guarded(row, judge) for row in rows)))

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
