"""Answer focus, a toy metric with a prompt: the judge lists the sentences of the answer that do
not help answer the question; the score is the share of the answer's sentences that do, with
`tolerated` off-topic sentences forgiven (its one option)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ragas_ops.contract.inputs import ANSWER, QUESTION, Interaction
from ragas_ops.contract.status import Status
from ragas_ops.judge.base import Judge, Usage
from ragas_ops.metrics.base import Detail, ExpectedCall, Metric, MetricResult, as_text
from ragas_ops.prompts import Demonstration, OutputModel, Prompt
from ragas_ops.text import normalize, split_sentences

NAME = "answer_focus"


class OffTopic(OutputModel):
    sentences: list[str]


OFF_TOPIC_PROMPT = Prompt(
    name=f"{NAME}.off_topic",
    version=1,
    instructions=(
        "List the sentences of the answer that do not help answer the question, each copied "
        "exactly as written. Return an empty list if every sentence helps."
    ),
    output_model=OffTopic,
    demonstrations=(
        Demonstration(
            {QUESTION: "When did it open?", ANSWER: "It opened in 2004. I like bridges."},
            OffTopic(sentences=["I like bridges."]),
        ),
    ),
)


@dataclass(frozen=True)
class AnswerFocusOptions:
    """`[metrics.answer_focus]`; its flag is derived: `--answer-focus-tolerated`."""

    tolerated: int = field(default=0, metadata={"minimum": 0})
    """Off-topic sentences forgiven before the score drops."""


class AnswerFocus(Metric):
    name = NAME
    version = 1
    requires = (QUESTION, ANSWER)
    prompts = (OFF_TOPIC_PROMPT,)
    title = "Answer focus"
    worst_title = "Most digressive answers"
    estimate_assumption = "answer focus: one request a row, the judge lists no sentence"

    def __init__(self, tolerated: int = 0) -> None:
        self.tolerated = tolerated

    @classmethod
    def explain(cls, evidence: Mapping[str, Any], contexts: Sequence[str]) -> list[Detail]:
        off_topic = evidence.get("off_topic") or []
        counted = f"{len(off_topic)} of {evidence.get('sentences', '?')} sentences"
        return [("Off the question", counted, "")] + [
            ("Digression", as_text(sentence), "") for sentence in off_topic
        ]

    def expected_calls(self, row: Interaction) -> list[ExpectedCall]:
        data = {QUESTION: row.question, ANSWER: row.answer}
        return [ExpectedCall(OFF_TOPIC_PROMPT, data, OffTopic(sentences=[]))]

    async def score(self, row: Interaction, judge: Judge, usage: Usage) -> MetricResult:
        sentences = split_sentences(row.answer or "")
        if not sentences:
            return MetricResult(Status.NOT_APPLICABLE, reason="the answer has no sentence")
        reply = await judge.complete(OFF_TOPIC_PROMPT, {QUESTION: row.question, ANSWER: row.answer})
        usage.add(reply.usage)
        mine = {normalize(sentence) for sentence in sentences}
        off_topic = [s for s in reply.output.sentences if normalize(s) in mine]
        counted = max(0, len(off_topic) - self.tolerated)
        return MetricResult(
            Status.OK,
            1 - counted / len(sentences),
            evidence={"off_topic": off_topic, "sentences": len(sentences)},
        )


def build(options: AnswerFocusOptions) -> AnswerFocus:
    return AnswerFocus(options.tolerated)
