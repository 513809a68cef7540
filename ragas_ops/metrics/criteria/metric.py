"""A criterion of the team's own, scored as a metric.

The prompt follows what the published work found to make an LLM judge apply a rubric
consistently (docs/criteria.md says which findings and why):
- evaluation steps come first (G-Eval, Liu et al. 2023: the criterion turned into steps before
  the judgement; here the team's own `steps`, or a fixed instruction to reason briefly, step by
  step, since steps written by the judge itself would change with the judge);
- every level is described (G-Eval's and Prometheus' rubrics; ragas' RubricsScore): the judge
  picks a described level, not a bare number;
- the verdict comes after a short reason (chain of thought before the answer, as in G-Eval
  and MT-Bench's judge prompts), in a typed output whose `verdict` is an enum of the levels
  (structured output: a reply is a level or it is invalid, never a stray number);
- pass/fail by default (binary judgements agree better with people than fine scales:
  ragas' AspectCritic, and Zheng et al. 2023 on coarse grades).

A level's score is its place among the levels mapped linearly onto [0, 1] (pass 1, fail 0;
level 4 of 1-5 is 0.75).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import create_model

from ragas_ops.contract.inputs import Interaction
from ragas_ops.contract.status import Status
from ragas_ops.criteria.spec import CriterionSpec
from ragas_ops.judge.base import Judge, JudgeRowError, Usage
from ragas_ops.metrics.base import (
    Detail,
    ExpectedCall,
    Metric,
    MetricResult,
    explanation_stand_in,
)
from ragas_ops.prompts import Demonstration, OutputModel, Prompt

PROMPT_VERSION = 1
"""The prompt's template (the words around the criterion); the criterion's own version is the
hash of its definition, in the prompt's name."""

REASON_TOKENS = 32
"""For the cost estimate: tokens of the judge's reason (at most three sentences are asked
for). Measured on the test judge's replies to the demo's two criteria over 80 sample rows
(40 tokens a reply, its JSON included); a real model's reason may run longer: compare an
estimate with a run's `completion_tokens` (docs/criteria.md)."""

REPLY_TOKENS = 320
"""`max_tokens` of a reply: a reason of at most three sentences and a level, with room."""

DEFAULT_STEPS = (
    "Read the criterion and decide what it asks of the fields given.",
    "Find the words of the input that decide it, briefly, step by step.",
    "Choose the level whose description fits the input best.",
)
"""The evaluation steps of a criterion that gives none: a fixed instruction to reason briefly,
step by step (never steps the judge writes itself: they would change with the judge)."""

VERSION_MARK = "/criterion-"
"""In a criterion's version label (`citations/criterion-3f2a9c1d0b4e (...)`): how the
regression check (`quality.regression.CRITERION_MARK`, the same mark) tells a changed
criterion from a changed metric."""


class UnsupportedCriterionError(JudgeRowError):
    """The judge cannot apply a free-text criterion (the local judge)."""

    status = Status.UNSUPPORTED_CRITERION


def _verdict_model(levels: Sequence[str]) -> type[OutputModel]:
    """The reply: a short reason first, then the verdict, one of the levels (an enum in the
    schema). The names sort in that order too: a schema printed with sorted keys keeps it."""
    level_type: Any = Literal[tuple(levels)]
    model: type[OutputModel] = create_model(
        "CriterionVerdict",
        __base__=OutputModel,
        reason=(str, ...),
        verdict=(level_type, ...),
    )
    return model


def _reply_budget(data: Mapping[str, Any]) -> int:
    return REPLY_TOKENS


def _instructions(spec: CriterionSpec) -> str:
    steps = spec.steps or DEFAULT_STEPS
    levels = "\n".join(f'- "{level}": {description}' for level, description in spec.levels)
    names = ", ".join(f'"{level}"' for level in spec.level_names)
    return (
        "You judge one interaction logged by a retrieval-augmented generation (RAG) "
        "application against a criterion its team wrote.\n\n"
        f"Criterion: {spec.criterion}\n\n"
        f"The input holds these fields of the interaction: {', '.join(spec.reads)}.\n\n"
        "Evaluation steps:\n"
        + "\n".join(f"{number}. {step}" for number, step in enumerate(steps, start=1))
        + f"\n\nLevels, worst first:\n{levels}\n\n"
        "Write `reason` first: at most three sentences that follow the steps and quote the "
        f"words of the input that decide. Then give `verdict`: exactly one of {names}."
    )


def criterion_prompt(spec: CriterionSpec) -> Prompt[Any]:
    """The criterion's prompt; its name holds the criterion's version, so a changed criterion
    is a new prompt (a new cache key, a new test-double answer)."""
    model = _verdict_model(spec.level_names)
    reason = "An example given with the criterion."
    return Prompt(
        name=f"criterion.{spec.name}.{spec.version}",
        version=PROMPT_VERSION,
        instructions=_instructions(spec),
        output_model=model,
        demonstrations=tuple(
            Demonstration(
                dict(example.row),
                model.model_validate(
                    {"reason": example.reason or reason, "verdict": example.level}
                ),
            )
            for example in spec.examples
        ),
        max_output_tokens=1024,
        output_budget=_reply_budget,
    )


class Criterion(Metric):
    """A `[criteria.<name>]` criterion: one judge call per row, a level, a score in [0, 1]."""

    version = 1
    """The formula (level -> score); the criterion's own version is `spec.version`."""
    estimate_assumption = (
        f"criteria: the judge's reason is about {REASON_TOKENS} tokens, then the level"
    )

    def __init__(self, spec: CriterionSpec) -> None:
        self.spec = spec
        self.prompt = criterion_prompt(spec)

    @property
    def name(self) -> str:  # type: ignore[override]
        return self.spec.name

    @property
    def requires(self) -> tuple[str, ...]:  # type: ignore[override]
        return self.spec.reads

    @property
    def prompts(self) -> tuple[Prompt[Any], ...]:  # type: ignore[override]
        return (self.prompt,)

    @property
    def version_label(self) -> str:
        return f"{self.name}{VERSION_MARK}{self.spec.version} ({self.prompt.id})"

    @classmethod
    def explain(cls, evidence: Mapping[str, Any], contexts: Sequence[str]) -> list[Detail]:
        level = str(evidence.get("level", "?"))
        return [("Judge", str(evidence.get("explanation", "")), f"level {level}")]

    def row_data(self, row: Interaction) -> dict[str, Any]:
        return {name: row.field_value(name) for name in self.spec.reads}

    def expected_calls(self, row: Interaction) -> list[ExpectedCall]:
        longest = max(self.spec.level_names, key=len)
        reply = self.prompt.output_model.model_validate(
            {"reason": explanation_stand_in(REASON_TOKENS), "verdict": longest}
        )
        return [ExpectedCall(self.prompt, self.row_data(row), reply)]

    async def score(self, row: Interaction, judge: Judge, usage: Usage) -> MetricResult:
        reply = await judge.complete(self.prompt, self.row_data(row))
        usage.add(reply.usage)
        level = str(reply.output.verdict)
        return MetricResult(
            Status.OK,
            self.spec.score_of(level),
            evidence={
                "level": level,
                "levels": list(self.spec.level_names),
                "explanation": reply.output.reason,
                "criterion_version": self.spec.version,
            },
        )
