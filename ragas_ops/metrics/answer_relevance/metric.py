"""Answer relevance: does the answer address the question, completely and without padding?

The paper's method: the judge generates n questions that the answer would answer; each is
embedded with the original question, and AR = (1/n) * sum_i cos(emb(q), emb(q_i)).
Factual correctness plays no part.

Two ways to get the n questions:
- `list` (default): one request asks for n different questions. One request per row, and it
  works on every OpenAI-compatible endpoint.
- `sample`: the paper's literal procedure, n samples of a one-question prompt through the API's
  `n` parameter; endpoints that ignore `n` are topped up with single requests by the judge.

Embeddings are requested once for all rows being scored together, not per row.

Defined results: a noncommittal answer ("I don't know", a refusal) answers no question, so
AR = 0 with the reason `noncommittal answer`. Questions are written in the answer's language,
so an answer in another language than its question scores lower: to its user it is less
relevant. Cosine similarity lies in [-1, 1]; real embeddings of questions stay in [0, 1].
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from ragas_ops.contract.inputs import ANSWER, QUESTION, Interaction
from ragas_ops.contract.status import Status
from ragas_ops.judge.base import Judge, JudgeOutputError, JudgeRowError, RowTicket, Usage
from ragas_ops.metrics.base import (
    Detail,
    ExpectedCall,
    Metric,
    MetricResult,
    as_text,
    explanation_stand_in,
    row_tickets,
)
from ragas_ops.metrics.registry import register_metric, register_prompts
from ragas_ops.prompts import Demonstration, OutputModel, Prompt

QuestionStrategy = Literal["list", "sample"]


@dataclass(frozen=True)
class AnswerRelevanceOptions:
    """`[metrics.answer_relevance]` in the config file (flags `--questions`,
    `--question-strategy`; before, `[metrics] answer_relevance_questions` and
    `question_strategy`, still read with a deprecation message)."""

    questions: int = field(
        default=3,
        metadata={
            "minimum": 1,
            "flag": "--questions",
            "help": "questions generated for answer relevance",
        },
    )
    """The paper's n: questions generated from each answer."""
    question_strategy: QuestionStrategy = field(
        default="list",
        metadata={
            "flag": "--question-strategy",
            "help": "one request for all questions, or n samples",
        },
    )
    """`list`: one request for the n questions; `sample`: one request with the API's n."""


GENERATED_QUESTION_TOKENS = 10
"""Tokens of one generated question, for the cost estimate (its reply and its embedding):
measured (10.3) on the test judge's replies over 190 WikiEval-sized calibration rows built
from the first half of BEGIN's cmu and tc dev files (the estimate is checked on the second
half); the prompt's example questions are 11 and 14 tokens. A question for an answer asks
about its topic: it does not grow with the answer."""


TOKENS_PER_GENERATED_QUESTION = 48
"""Room for one generated question in a reply (about 10 tokens, see GENERATED_QUESTION_TOKENS:
a question asks about the answer's topic and does not grow with the answer), its JSON, and
the `noncommittal` flag."""


def _questions_budget(data: Mapping[str, Any]) -> int:
    return TOKENS_PER_GENERATED_QUESTION * (1 + int(data["number_of_questions"]))


def _question_budget(data: Mapping[str, Any]) -> int:
    return 2 * TOKENS_PER_GENERATED_QUESTION


class GeneratedQuestions(OutputModel):
    questions: list[str]
    noncommittal: bool


class GeneratedQuestion(OutputModel):
    question: str
    noncommittal: bool


_INSTRUCTIONS = (
    "You reverse-engineer questions from answers. Read the answer and write {what} that this "
    "answer would be a direct and complete answer to. Use only what the answer says; write in "
    "the language of the answer. Also say whether the answer is noncommittal: evasive, vague "
    "or a refusal ('I don't know', 'I cannot answer that', 'it depends' with nothing more)."
)
_DEMO_ANSWER = "The Millau Viaduct opened to traffic in December 2004."


def _some_question(data: Mapping[str, Any], output: GeneratedQuestions) -> str | None:
    """A reply with at least one non-empty question is scored as it came: the paper's formula
    (the mean cosine of the generated questions to the real one) needs no particular number
    of different questions, and a model at low temperature repeats one for a short answer
    (4 of 120 rows were failed, after a paid repair, for asking exactly n different ones)."""
    if not any(question.strip() for question in output.questions):
        return f"give {int(data['number_of_questions'])} non-empty questions"
    return None


QUESTIONS_PROMPT = Prompt(
    name="answer_relevance.questions",
    version=2,
    instructions=_INSTRUCTIONS.format(
        what="as many different questions as `number_of_questions` asks for"
    ),
    output_model=GeneratedQuestions,
    demonstrations=(
        Demonstration(
            {ANSWER: _DEMO_ANSWER, "number_of_questions": 2},
            GeneratedQuestions(
                questions=[
                    "When did the Millau Viaduct open to traffic?",
                    "In which month and year was the Millau Viaduct opened?",
                ],
                noncommittal=False,
            ),
        ),
        Demonstration(
            {
                ANSWER: "I'm sorry, I could not find that in the documents.",
                "number_of_questions": 1,
            },
            GeneratedQuestions(
                questions=["Can you find the information in the documents?"], noncommittal=True
            ),
        ),
    ),
    check=_some_question,
    output_budget=_questions_budget,
)

QUESTION_SAMPLE_PROMPT = Prompt(
    name="answer_relevance.question",
    version=2,
    instructions=_INSTRUCTIONS.format(what="one question"),
    output_model=GeneratedQuestion,
    demonstrations=(
        Demonstration(
            {ANSWER: _DEMO_ANSWER},
            GeneratedQuestion(
                question="When did the Millau Viaduct open to traffic?", noncommittal=False
            ),
        ),
    ),
    temperature=0.7,
    output_budget=_question_budget,
)


@dataclass
class _Generated:
    questions: list[str]
    noncommittal: bool


@dataclass
class _AwaitingEmbeddings:
    """A row whose questions are generated and whose score waits for the shared embeddings."""

    question: str
    generated: list[str]
    usage: Usage

    @property
    def texts(self) -> list[str]:
        return [self.question, *self.generated]


class AnswerRelevance(Metric):
    name = "answer_relevance"
    version = 1
    requires = (QUESTION, ANSWER)
    title = "Answer relevance"
    worst_title = "Least relevant answers"
    written_text_tokens = GENERATED_QUESTION_TOKENS
    estimate_assumption = (
        f"answer relevance: n generated questions of ~{GENERATED_QUESTION_TOKENS} tokens, each "
        "different from every other text; the generated questions and the row's question are "
        "embedded, one embeddings request per batch of batch_rows rows (more past "
        "embedding_batch_size texts); "
        "question_strategy 'sample' is one request with n choices (an endpoint that ignores n "
        "is sent n-1 more)"
    )

    @classmethod
    def explain(cls, evidence: Mapping[str, Any], contexts: Sequence[str]) -> list[Detail]:
        similarities = evidence.get("similarities") or []
        details: list[Detail] = []
        for index, question in enumerate(evidence.get("questions") or []):
            similarity = f" (cosine {similarities[index]:.2f})" if index < len(similarities) else ""
            details.append(("Generated question", f"{as_text(question)}{similarity}", ""))
        return details

    def expected_calls(self, row: Interaction) -> list[ExpectedCall]:
        question = explanation_stand_in(GENERATED_QUESTION_TOKENS)
        if self.strategy == "list":
            return [
                ExpectedCall(
                    QUESTIONS_PROMPT,
                    {ANSWER: row.answer, "number_of_questions": self.questions},
                    GeneratedQuestions(questions=[question] * self.questions, noncommittal=False),
                )
            ]
        return [
            ExpectedCall(
                QUESTION_SAMPLE_PROMPT,
                {ANSWER: row.answer},
                GeneratedQuestion(question=question, noncommittal=False),
                n=self.questions,
            )
        ]

    def expected_embedding_inputs(self, row: Interaction) -> list[str | None]:
        """The row's question, and the generated questions (not known before the judge)."""
        return [row.question or "", *([None] * self.questions)]

    def __init__(self, questions: int = 3, strategy: QuestionStrategy = "list") -> None:
        if questions < 1:
            raise ValueError("answer relevance needs at least one generated question")
        self.questions = questions
        self.strategy = strategy
        self.prompt = QUESTIONS_PROMPT if strategy == "list" else QUESTION_SAMPLE_PROMPT

    @property
    def prompts(self) -> tuple[Prompt[Any], ...]:  # type: ignore[override]
        return (self.prompt,)

    @property
    def version_label(self) -> str:
        return f"{super().version_label} n={self.questions} {self.strategy}"

    async def score_rows(
        self,
        rows: Sequence[Interaction],
        judge: Judge,
        tickets: Sequence[RowTicket] | None = None,
    ) -> list[MetricResult]:
        """Generate questions row by row, then embed all rows' questions in shared batches.

        A row's ticket is done with this metric once its questions are generated: the shared
        embeddings are for no row in particular, and a row waiting to start must not wait for
        the rows of a whole batch."""
        steps = await asyncio.gather(
            *(
                self._generate_for(row, judge, ticket)
                for row, ticket in zip(rows, row_tickets(rows, tickets), strict=True)
            )
        )
        waiting = [step for step in steps if isinstance(step, _AwaitingEmbeddings)]
        if not waiting:
            return [step for step in steps if isinstance(step, MetricResult)]
        texts = [text for step in waiting for text in step.texts]
        try:
            embeddings = await judge.embed(texts)
        except JudgeRowError as error:
            return [
                step if isinstance(step, MetricResult) else _embedding_failed(step, error)
                for step in steps
            ]
        weights = [sum(_weight(text) for text in step.texts) for step in waiting]
        shares = dict(zip(map(id, waiting), _shares(embeddings.usage, weights), strict=True))
        return [
            step
            if isinstance(step, MetricResult)
            else _similarity(step, embeddings.vectors, shares[id(step)])
            for step in steps
        ]

    async def _generate_for(
        self, row: Interaction, judge: Judge, ticket: RowTicket
    ) -> MetricResult | _AwaitingEmbeddings:
        try:
            with ticket.current():
                return await self.run_guarded(row, judge, self._generate_step)
        finally:
            ticket.finish_metric()

    async def score(self, row: Interaction, judge: Judge, usage: Usage) -> MetricResult:
        """One row on its own (its embeddings in a request of their own)."""
        return (await self.score_rows([row], judge))[0]

    async def _generate_step(
        self, row: Interaction, judge: Judge, usage: Usage
    ) -> MetricResult | _AwaitingEmbeddings:
        assert row.question is not None
        generated = await self._generate(row, judge, usage)
        if not generated.questions:
            raise JudgeOutputError(f"{self.prompt.id}: the judge generated no question")
        if generated.noncommittal:
            return MetricResult(
                Status.OK,
                0.0,
                "noncommittal answer",
                {"questions": generated.questions, "noncommittal": True},
            )
        return _AwaitingEmbeddings(row.question, generated.questions, usage)

    async def _generate(self, row: Interaction, judge: Judge, usage: Usage) -> _Generated:
        if self.strategy == "list":
            reply = await judge.complete(
                QUESTIONS_PROMPT, {ANSWER: row.answer, "number_of_questions": self.questions}
            )
            usage.add(reply.usage)
            # The first n different ones: a repeat would weigh twice, a surplus was not asked.
            questions = _distinct(reply.output.questions)[: self.questions]
            return _Generated(questions, reply.output.noncommittal)
        samples = await judge.complete(
            QUESTION_SAMPLE_PROMPT, {ANSWER: row.answer}, n=self.questions
        )
        usage.add(samples.usage)
        return _Generated(
            # n samples, averaged as the paper does, even when two samples agree.
            [sample.question.strip() for sample in samples.outputs if sample.question.strip()],
            # The answer is noncommittal when most samples say so.
            sum(sample.noncommittal for sample in samples.outputs) * 2 > len(samples.outputs),
        )


def _distinct(questions: Iterable[str]) -> list[str]:
    """Non-empty questions, each once: a blank one cannot be embedded, a repeat weighs twice."""
    return list(dict.fromkeys(q.strip() for q in questions if q.strip()))


def cosine(left: np.ndarray[Any, Any], right: np.ndarray[Any, Any]) -> float:
    """Cosine similarity; a zero or non-finite vector is refused, never scored 0 or NaN."""
    norms = float(np.linalg.norm(left) * np.linalg.norm(right))
    if not math.isfinite(norms):
        raise ValueError("an embedding holds a NaN or an infinite value")
    if norms == 0.0:
        raise ValueError("cannot take the cosine of a zero vector")
    return float(np.dot(left, right) / norms)


def _similarity(
    step: _AwaitingEmbeddings, vectors: Mapping[str, np.ndarray[Any, Any]], share: Usage
) -> MetricResult:
    step.usage.add(share)  # the request was sent and paid, whatever its vectors are worth
    evidence: dict[str, Any] = {"questions": step.generated}
    try:
        similarities = [cosine(vectors[step.question], vectors[q]) for q in step.generated]
    except ValueError as error:
        return MetricResult(
            Status.JUDGE_OUTPUT_INVALID,
            reason=f"embeddings: {error}",
            evidence=evidence,
            usage=step.usage,
        )
    evidence["similarities"] = [round(value, 6) for value in similarities]
    return MetricResult(
        Status.OK, float(np.mean(similarities)), evidence=evidence, usage=step.usage
    )


def _embedding_failed(step: _AwaitingEmbeddings, error: JudgeRowError) -> MetricResult:
    return MetricResult(
        error.status,
        reason=f"embeddings: {error}",
        evidence={"questions": step.generated},
        usage=step.usage,
    )


def _weight(text: str) -> int:
    return len(text) + 1


def _shares(usage: Usage, weights: Sequence[int]) -> list[Usage]:
    """Each row's share of a batched embeddings request, pro rata by the length of its texts:
    its cost, and its tokens in whole numbers that add up to the request's (the largest
    remainders get the tokens left by rounding down), so the rows sum to the run's totals.

    The request itself is counted once, in the run's totals, not in any row.
    """
    total = sum(weights)
    if not total:
        return [Usage() for _ in weights]
    exact = [usage.embedding_tokens * weight / total for weight in weights]
    tokens = [math.floor(value) for value in exact]
    left = usage.embedding_tokens - sum(tokens)
    by_remainder = sorted(range(len(weights)), key=lambda i: (tokens[i] - exact[i], i))
    for index in by_remainder[:left]:
        tokens[index] += 1
    return [
        Usage(
            embedding_tokens=count,
            cost_usd=None if usage.cost_usd is None else usage.cost_usd * weight / total,
        )
        for count, weight in zip(tokens, weights, strict=True)
    ]


def _build(options: AnswerRelevanceOptions) -> AnswerRelevance:
    return AnswerRelevance(options.questions, options.question_strategy)


register_metric("answer_relevance", AnswerRelevance, _build, AnswerRelevanceOptions)
register_prompts(QUESTIONS_PROMPT, QUESTION_SAMPLE_PROMPT)
