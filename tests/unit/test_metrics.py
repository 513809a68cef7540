"""The metric formulas, with a scripted in-process judge: no network, no model."""

from __future__ import annotations

import asyncio
import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pytest

from ragas_ops.contract.inputs import SizeBudget, validate_row
from ragas_ops.contract.status import Status
from ragas_ops.judge.base import (
    Completion,
    Embeddings,
    JudgeOutputError,
    JudgeRejectedError,
    JudgeRowError,
    JudgeUnavailableError,
    Usage,
)
from ragas_ops.metrics import DEFAULT_METRICS, MetricResult, build_metrics
from ragas_ops.metrics.answer_relevance import AnswerRelevance
from ragas_ops.metrics.context_relevance import ContextRelevance, match_extracted
from ragas_ops.metrics.faithfulness import Faithfulness
from ragas_ops.metrics.gpt_score import GptScore
from ragas_ops.prompts import OutputParseError, Prompt

Script = Callable[[Mapping[str, Any], int], Any]
"""What the fake judge answers to one prompt: output fields (one dict, or a list of n dicts),
or a JudgeRowError to raise."""


class FakeJudge:
    """Scripted answers per prompt name, chosen embedding vectors, and a record of every call.

    Like a real judge it runs the prompt's own check on what it returns, so a script that
    breaks the output contract gets `judge_output_invalid`, as a real judge would after repair.
    """

    description = "fake:judge"
    embedding_description = "fake:embeddings"

    def __init__(
        self,
        scripts: Mapping[str, Script | dict[str, Any]] | None = None,
        vectors: Mapping[str, Sequence[float]] | Callable[[str], Sequence[float]] | None = None,
    ) -> None:
        self.scripts = dict(scripts or {})
        self.vectors = vectors if vectors is not None else (lambda text: [1.0, 0.0])
        self.calls: list[tuple[str, dict[str, Any], int]] = []
        self.embed_calls: list[list[str]] = []
        self.events: Counter[str] = Counter()
        self.total = Usage()

    async def complete(
        self, prompt: Prompt[Any], data: Mapping[str, Any], *, n: int = 1
    ) -> Completion[Any]:
        self.calls.append((prompt.name, dict(data), n))
        await asyncio.sleep(0)
        script = self.scripts[prompt.name]
        reply = script(data, n) if callable(script) else script
        if isinstance(reply, JudgeRowError):
            raise reply
        fields = reply if isinstance(reply, list) else [reply] * n
        outputs = [prompt.output_model(**item) for item in fields]
        for output in outputs:
            try:
                prompt.parse(data, output.model_dump_json())
            except OutputParseError as error:
                raise JudgeOutputError(f"{prompt.id}: {error}", Usage(requests=2)) from None
        usage = Usage(requests=1, prompt_tokens=100, completion_tokens=20, cost_usd=0.001)
        self.total.add(usage)
        return Completion(outputs, usage)

    async def embed(self, texts: Sequence[str]) -> Embeddings:
        self.embed_calls.append(list(texts))
        lookup = self.vectors if callable(self.vectors) else self.vectors.__getitem__
        vectors = {text: np.asarray(lookup(text), dtype=np.float64) for text in texts}
        usage = Usage(embedding_requests=1, embedding_tokens=10 * len(texts), cost_usd=0.0001)
        self.total.add(usage)
        return Embeddings(vectors, usage)

    def usage_total(self) -> Usage:
        return self.total

    async def aclose(self) -> None:
        pass

    def prompts_called(self) -> list[str]:
        return [name for name, _, _ in self.calls]


def row(
    question: Any = "When did the Millau Viaduct open?",
    contexts: Any = ("The Millau Viaduct opened in December 2004.",),
    answer: Any = "It opened in 2004.",
):
    return validate_row(
        question, list(contexts) if isinstance(contexts, tuple) else contexts, answer, SizeBudget()
    )


def statements(*items: str) -> dict[str, Any]:
    return {"statements": list(items)}


def verdicts(*answers: str) -> Script:
    """Verdicts for the statements in the request, in order."""

    def script(data: Mapping[str, Any], n: int) -> dict[str, Any]:
        return {
            "verdicts": [
                {"explanation": f"checked {s}", "verdict": v}
                for s, v in zip(data["statements"], answers, strict=True)
            ]
        }

    return script


# -- MetricResult and build_metrics ---------------------------------------------------------------


def test_a_result_has_a_score_exactly_when_its_status_is_ok():
    assert MetricResult(Status.OK, 0.5).score == 0.5
    assert MetricResult(Status.OK, 0.0).score == 0.0
    assert MetricResult(Status.NOT_APPLICABLE, reason="nothing to check").score is None
    with pytest.raises(ValueError, match="exactly when the status is ok"):
        MetricResult(Status.OK)
    for not_a_number in (math.nan, math.inf, -math.inf):
        with pytest.raises(ValueError, match="finite"):
            MetricResult(Status.OK, not_a_number)
    for status in Status:
        if status is not Status.OK:
            with pytest.raises(ValueError, match="exactly when the status is ok"):
                MetricResult(status, 0.5)


def test_build_metrics_builds_the_named_metrics_in_order():
    metrics = build_metrics(["context_relevance", "faithfulness", "gpt_score_faithfulness"])
    assert [m.name for m in metrics] == [
        "context_relevance",
        "faithfulness",
        "gpt_score_faithfulness",
    ]
    assert [m.name for m in build_metrics(DEFAULT_METRICS)] == list(DEFAULT_METRICS)


def test_build_metrics_passes_the_answer_relevance_settings():
    (metric,) = build_metrics(
        ["answer_relevance"], {"answer_relevance": {"questions": 5, "question_strategy": "sample"}}
    )
    assert isinstance(metric, AnswerRelevance)
    assert (metric.questions, metric.strategy) == (5, "sample")
    assert metric.version_label == ("answer_relevance/v1 (answer_relevance.question/v2) n=5 sample")


def test_build_metrics_refuses_an_unknown_name_and_lists_the_known_ones():
    with pytest.raises(ValueError, match=r"unknown metric\(s\) \['faithfulnes'\]") as error:
        build_metrics(["faithfulness", "faithfulnes"])
    assert "'context_relevance'" in str(error.value)


def test_build_metrics_refuses_a_metric_named_twice():
    with pytest.raises(ValueError, match="named twice"):
        build_metrics(["faithfulness", "answer_relevance", "faithfulness"])


def test_answer_relevance_needs_at_least_one_question():
    with pytest.raises(ValueError, match="at least one"):
        AnswerRelevance(questions=0)


def test_gpt_score_refuses_an_unknown_quality():
    with pytest.raises(ValueError, match="unknown quality"):
        GptScore("fluency")


# -- faithfulness ---------------------------------------------------------------------------------


async def test_faithfulness_is_supported_statements_over_all_statements():
    judge = FakeJudge(
        {
            "faithfulness.statements": statements("A.", "B.", "C.", "D."),
            "faithfulness.verdicts": verdicts("yes", "no", "yes", "yes"),
        }
    )
    result = await Faithfulness().score_guarded(row(), judge)
    assert result.status is Status.OK
    assert result.score == pytest.approx(3 / 4)
    assert result.evidence["supported"] == 3
    assert result.evidence["total"] == 4
    assert [s["verdict"] for s in result.evidence["statements"]] == ["yes", "no", "yes", "yes"]
    assert result.usage.requests == 2
    assert result.usage.cost_usd == pytest.approx(0.002)


class ConfidentJudge(FakeJudge):
    """A judge that, like the local judge, says how strongly it holds each verdict."""

    def __init__(self, scripts: Mapping[str, Any], degrees: list[float]) -> None:
        super().__init__(scripts)
        self.degrees = degrees

    async def complete(
        self, prompt: Prompt[Any], data: Mapping[str, Any], *, n: int = 1
    ) -> Completion[Any]:
        completion = await super().complete(prompt, data, n=n)
        if prompt.name == "faithfulness.verdicts":
            completion.confidences = [self.degrees] * n
        return completion


async def test_faithfulness_is_the_expected_share_when_the_judge_gives_its_degrees():
    scripts = {
        "faithfulness.statements": statements("A.", "B.", "C."),
        "faithfulness.verdicts": verdicts("yes", "no", "yes"),
    }
    result = await Faithfulness().score_guarded(row(), ConfidentJudge(scripts, [1.0, 0.25, 0.6]))
    assert result.score == pytest.approx((1.0 + 0.25 + 0.6) / 3)
    assert result.evidence["supported"] == 2
    assert result.evidence["expected_supported"] == pytest.approx(1.85)
    assert [s["support"] for s in result.evidence["statements"]] == [1.0, 0.25, 0.6]


@pytest.mark.parametrize("degrees", [[1.0, 0.5], [1.0, 0.5, 1.2], [1.0, -0.1, 0.5]])
async def test_degrees_that_do_not_fit_the_statements_are_judge_output_invalid(degrees):
    scripts = {
        "faithfulness.statements": statements("A.", "B.", "C."),
        "faithfulness.verdicts": verdicts("yes", "no", "yes"),
    }
    result = await Faithfulness().score_guarded(row(), ConfidentJudge(scripts, degrees))
    assert result.status is Status.JUDGE_OUTPUT_INVALID
    assert result.score is None


async def test_faithfulness_sends_the_question_and_answer_then_the_contexts_and_statements():
    judge = FakeJudge(
        {
            "faithfulness.statements": statements("A."),
            "faithfulness.verdicts": verdicts("yes"),
        }
    )
    interaction = row(contexts=("First context.", "Second context.", "first  CONTEXT."))
    await Faithfulness().score_guarded(interaction, judge)
    (_, first, _), (_, second, _) = judge.calls
    assert first == {"question": interaction.question, "answer": interaction.answer}
    assert second == {"contexts": ["First context.", "Second context."], "statements": ["A."]}


async def test_faithfulness_counts_each_distinct_statement_once():
    judge = FakeJudge(
        {
            "faithfulness.statements": statements("A.", " A. ", "", "B.", "A.", "   "),
            "faithfulness.verdicts": verdicts("yes", "no"),
        }
    )
    result = await Faithfulness().score_guarded(row(), judge)
    assert judge.calls[1][1]["statements"] == ["A.", "B."]
    assert result.score == pytest.approx(1 / 2)
    assert result.evidence["total"] == 2


@pytest.mark.parametrize("extracted", [[], ["", "  "]])
async def test_an_answer_with_no_statement_is_not_applicable_with_a_reason_and_no_score(extracted):
    judge = FakeJudge({"faithfulness.statements": statements(*extracted)})
    result = await Faithfulness().score_guarded(row(answer="I don't know."), judge)
    assert result.status is Status.NOT_APPLICABLE
    assert result.score is None
    assert "no factual statement" in result.reason
    assert result.evidence == {"statements": []}
    assert judge.prompts_called() == ["faithfulness.statements"]  # nothing to verify
    assert result.usage.requests == 1


async def test_a_judge_row_error_becomes_its_status_and_keeps_the_usage_of_earlier_calls():
    rejection = JudgeRejectedError("faithfulness.verdicts/v3: content filter", Usage(requests=1))
    judge = FakeJudge(
        {
            "faithfulness.statements": statements("A.", "B."),
            "faithfulness.verdicts": lambda data, n: rejection,
        }
    )
    result = await Faithfulness().score_guarded(row(), judge)
    assert result.status is Status.JUDGE_REJECTED
    assert result.score is None
    assert result.reason == "faithfulness.verdicts/v3: content filter"
    assert result.usage.requests == 2  # the statements call and the rejected one
    assert result.usage.prompt_tokens == 100  # only the successful call reported tokens


@pytest.mark.parametrize(
    ("error", "status"),
    [
        (JudgeUnavailableError("gave up after 8 attempts"), Status.JUDGE_UNAVAILABLE),
        (JudgeOutputError("not JSON after repair"), Status.JUDGE_OUTPUT_INVALID),
        (JudgeRowError("something else"), Status.JUDGE_UNAVAILABLE),
    ],
)
async def test_every_kind_of_judge_row_error_gives_its_own_status(error, status):
    judge = FakeJudge({"faithfulness.statements": lambda data, n: error})
    result = await Faithfulness().score_guarded(row(), judge)
    assert result.status is status
    assert result.reason == str(error)


async def test_a_judge_that_breaks_the_verdict_count_gives_judge_output_invalid():
    judge = FakeJudge(
        {
            "faithfulness.statements": statements("A.", "B."),
            "faithfulness.verdicts": {"verdicts": [{"explanation": "x", "verdict": "yes"}]},
        }
    )
    result = await Faithfulness().score_guarded(row(), judge)
    assert result.status is Status.JUDGE_OUTPUT_INVALID
    assert "2 statements but 1 verdicts" in result.reason


@pytest.mark.parametrize(
    "broken",
    [
        {"answer": None},
        {"answer": "   "},
        {"question": 7},
        {"contexts": None},
        {"contexts": "one string"},
        {"contexts": ["", " "]},
    ],
)
async def test_invalid_input_rows_never_call_the_judge(broken):
    judge = FakeJudge()  # no scripts: any call would fail the test with a KeyError
    result = await Faithfulness().score_guarded(row(**broken), judge)
    assert result.status is Status.INVALID_INPUT
    assert result.reason
    assert judge.calls == []
    assert result.usage == Usage()


async def test_each_metric_only_minds_the_fields_it_reads():
    interaction = row(contexts=None)
    judge = FakeJudge(
        {"answer_relevance.questions": {"questions": ["A?", "B?", "C?"], "noncommittal": False}}
    )
    assert (await Faithfulness().score_guarded(interaction, judge)).status is Status.INVALID_INPUT
    assert (await ContextRelevance().score_guarded(interaction, judge)).status is (
        Status.INVALID_INPUT
    )
    (relevance,) = await AnswerRelevance().score_rows([interaction], judge)
    assert relevance.status is Status.OK


async def test_score_rows_returns_results_in_row_order_whatever_finishes_first():
    async def slow_for_early_rows(data, n):
        await asyncio.sleep(0.001 * (10 - int(data["answer"].split()[-1])))
        return statements(data["answer"])

    class Sleepy(FakeJudge):
        async def complete(self, prompt, data, *, n=1):
            if prompt.name == "faithfulness.statements":
                await slow_for_early_rows(data, n)
            return await super().complete(prompt, data, n=n)

    judge = Sleepy(
        {
            "faithfulness.statements": lambda data, n: statements(data["answer"]),
            "faithfulness.verdicts": lambda data, n: verdicts(
                "yes" if data["statements"][0].endswith(("0", "2", "4", "6", "8")) else "no"
            )(data, n),
        }
    )
    rows = [row(answer=f"Answer number {i}") for i in range(10)]
    results = await Faithfulness().score_rows(rows, judge)
    assert [r.evidence["statements"][0]["statement"] for r in results] == [
        f"Answer number {i}" for i in range(10)
    ]
    assert [r.score for r in results] == [1.0, 0.0] * 5


# -- answer relevance -----------------------------------------------------------------------------

QUESTION = "When did the Millau Viaduct open?"


def generated(*questions: str, noncommittal: bool = False) -> dict[str, Any]:
    return {"questions": list(questions), "noncommittal": noncommittal}


async def test_answer_relevance_is_the_mean_cosine_of_generated_questions_to_the_question():
    judge = FakeJudge(
        {"answer_relevance.questions": generated("Same?", "Orthogonal?", "Diagonal?")},
        vectors={
            QUESTION: [1.0, 0.0],
            "Same?": [3.0, 0.0],  # same direction, other length: cosine 1
            "Orthogonal?": [0.0, 2.0],  # cosine 0
            "Diagonal?": [1.0, 1.0],  # cosine 1/sqrt(2)
        },
    )
    (result,) = await AnswerRelevance(questions=3).score_rows([row(question=QUESTION)], judge)
    assert result.status is Status.OK
    assert result.score == pytest.approx((1 + 0 + 1 / math.sqrt(2)) / 3)
    assert result.evidence["questions"] == ["Same?", "Orthogonal?", "Diagonal?"]
    assert result.evidence["similarities"] == pytest.approx([1.0, 0.0, 0.707107])
    assert judge.calls == [
        (
            "answer_relevance.questions",
            {"answer": "It opened in 2004.", "number_of_questions": 3},
            1,
        )
    ]


async def test_answer_relevance_can_be_negative_for_opposite_vectors():
    judge = FakeJudge(
        {"answer_relevance.questions": generated("Opposite?")},
        vectors={QUESTION: [1.0, 2.0], "Opposite?": [-1.0, -2.0]},
    )
    (result,) = await AnswerRelevance(questions=1).score_rows([row(question=QUESTION)], judge)
    assert result.score == pytest.approx(-1.0)


async def test_a_noncommittal_answer_scores_zero_with_a_reason_and_is_not_embedded():
    judge = FakeJudge(
        {"answer_relevance.questions": generated("A?", "B?", "C?", noncommittal=True)}
    )
    (result,) = await AnswerRelevance().score_rows([row(answer="I don't know.")], judge)
    assert result.status is Status.OK
    assert result.score == 0.0
    assert result.reason == "noncommittal answer"
    assert result.evidence["noncommittal"] is True
    assert judge.embed_calls == []
    assert result.usage.requests == 1


async def test_the_sample_strategy_asks_for_n_samples_of_the_one_question_prompt():
    judge = FakeJudge(
        {
            "answer_relevance.question": lambda data, n: [
                {"question": f"Sample {i}?", "noncommittal": False} for i in range(n)
            ]
        },
        vectors=lambda text: [1.0, 0.0] if text == QUESTION else [1.0, 1.0],
    )
    metric = AnswerRelevance(questions=4, strategy="sample")
    (result,) = await metric.score_rows([row(question=QUESTION)], judge)
    assert judge.calls == [("answer_relevance.question", {"answer": "It opened in 2004."}, 4)]
    assert result.evidence["questions"] == [f"Sample {i}?" for i in range(4)]
    assert result.score == pytest.approx(1 / math.sqrt(2))


@pytest.mark.parametrize(("noncommittal_samples", "noncommittal"), [(1, False), (2, True)])
async def test_in_the_sample_strategy_the_majority_decides_noncommittal(
    noncommittal_samples, noncommittal
):
    judge = FakeJudge(
        {
            "answer_relevance.question": lambda data, n: [
                {"question": f"Q{i}?", "noncommittal": i < noncommittal_samples} for i in range(n)
            ]
        }
    )
    metric = AnswerRelevance(questions=3, strategy="sample")
    (result,) = await metric.score_rows([row()], judge)
    assert (result.reason == "noncommittal answer") is noncommittal
    assert result.status is Status.OK


async def test_embeddings_are_requested_once_for_all_rows_scored_together():
    judge = FakeJudge(
        {
            "answer_relevance.questions": lambda data, n: generated(
                *(f"{data['answer']} / q{i}?" for i in range(3))
            )
        }
    )
    rows = [row(question=f"Question {i}?", answer=f"Answer {i}.") for i in range(50)]
    results = await AnswerRelevance(questions=3).score_rows(rows, judge)

    assert len(judge.embed_calls) == 1
    (texts,) = judge.embed_calls
    assert len(texts) == 50 * 4  # each row's question and its three generated questions
    assert {f"Question {i}?" for i in range(50)} <= set(texts)
    assert [r.status for r in results] == [Status.OK] * 50
    assert [r.evidence["questions"][0] for r in results] == [
        f"Answer {i}. / q0?" for i in range(50)
    ]
    # Each row carries its share of the one embeddings request.
    shares = [r.usage.embedding_tokens for r in results]
    assert sum(shares) == pytest.approx(10 * 200, abs=50)
    assert all(r.usage.embedding_requests == 0 for r in results)


async def test_rows_that_fail_before_embedding_are_left_out_of_the_embeddings_batch():
    judge = FakeJudge(
        {
            "answer_relevance.questions": lambda data, n: (
                JudgeUnavailableError("gave up")
                if data["answer"] == "Broken."
                else generated("A?", "B?", "C?")
            )
        }
    )
    rows = [row(), row(answer=None), row(answer="Broken."), row()]
    results = await AnswerRelevance().score_rows(rows, judge)
    assert [r.status for r in results] == [
        Status.OK,
        Status.INVALID_INPUT,
        Status.JUDGE_UNAVAILABLE,
        Status.OK,
    ]
    assert len(judge.embed_calls) == 1
    assert len(judge.embed_calls[0]) == 2 * 4


async def test_no_embeddings_request_when_no_row_needs_one():
    judge = FakeJudge()
    results = await AnswerRelevance().score_rows([row(question=None)], judge)
    assert [r.status for r in results] == [Status.INVALID_INPUT]
    assert judge.embed_calls == []
    assert await AnswerRelevance().score_rows([], judge) == []


async def test_an_embeddings_failure_gives_every_waiting_row_its_status():
    class NoEmbeddings(FakeJudge):
        async def embed(self, texts):
            raise JudgeUnavailableError("embeddings: gave up after 8 attempts")

    judge = NoEmbeddings({"answer_relevance.questions": generated("A?", "B?", "C?")})
    results = await AnswerRelevance().score_rows([row(), row(question=None)], judge)
    assert [r.status for r in results] == [Status.JUDGE_UNAVAILABLE, Status.INVALID_INPUT]
    assert results[0].reason == "embeddings: embeddings: gave up after 8 attempts"
    assert results[0].usage.requests == 1  # the question generation it already paid for


async def test_a_zero_vector_is_an_explicit_status_not_a_silent_nan():
    judge = FakeJudge(
        {"answer_relevance.questions": generated("A?", "B?", "C?")},
        vectors=lambda text: [0.0, 0.0] if text == "B?" else [1.0, 0.0],
    )
    (result,) = await AnswerRelevance().score_rows([row()], judge)
    assert result.status is Status.JUDGE_OUTPUT_INVALID
    assert result.score is None
    assert "zero vector" in result.reason
    assert result.evidence["questions"] == ["A?", "B?", "C?"]


async def test_a_non_finite_embedding_is_an_explicit_status_not_a_silent_nan():
    # Regression: only a zero norm was refused, and `nan == 0.0` is False.
    judge = FakeJudge(
        {"answer_relevance.questions": generated("A?", "B?", "C?")},
        vectors=lambda text: [math.nan, 0.0] if text == "B?" else [1.0, 0.0],
    )
    (result,) = await AnswerRelevance().score_rows([row()], judge)
    assert result.status is Status.JUDGE_OUTPUT_INVALID
    assert result.score is None
    assert "NaN or an infinite value" in result.reason


async def test_an_empty_generated_question_is_neither_embedded_nor_averaged():
    # The check counts non-empty questions, so this reply passes it; the blank one used to be
    # embedded (OpenAI refuses an empty input, failing the whole shared batch) and averaged.
    judge = FakeJudge({"answer_relevance.questions": generated("A?", "B?", "C?", "")})
    (result,) = await AnswerRelevance(questions=3).score_rows([row()], judge)
    assert result.evidence["questions"] == ["A?", "B?", "C?"]
    assert "" not in judge.embed_calls[0]


def _samples(*questions: str) -> Script:
    return lambda data, n: [{"question": q, "noncommittal": False} for q in questions]


async def test_blank_samples_are_dropped_in_the_sample_strategy():
    judge = FakeJudge({"answer_relevance.question": _samples("A?", "  ", "B?")})
    (result,) = await AnswerRelevance(3, "sample").score_rows([row()], judge)
    assert result.status is Status.OK
    assert result.evidence["questions"] == ["A?", "B?"]
    assert judge.embed_calls == [[row().question, "A?", "B?"]]


async def test_no_usable_question_at_all_is_judge_output_invalid():
    judge = FakeJudge({"answer_relevance.question": _samples("", " ", "\n")})
    (result,) = await AnswerRelevance(3, "sample").score_rows([row()], judge)
    assert result.status is Status.JUDGE_OUTPUT_INVALID
    assert result.reason == "answer_relevance.question/v2: the judge generated no question"
    assert judge.embed_calls == []


async def test_a_row_without_usable_questions_reports_the_usage_of_its_one_call_once():
    judge = FakeJudge({"answer_relevance.question": _samples("", " ", "\n")})
    (result,) = await AnswerRelevance(3, "sample").score_rows([row()], judge)
    assert result.usage.requests == 1
    assert result.usage.prompt_tokens == 100
    assert result.usage.cost_usd == pytest.approx(0.001)


# -- context relevance ----------------------------------------------------------------------------

CONTEXT_A = "The viaduct opened in 2004. It spans the Tarn. It was designed by Virlogeux."
CONTEXT_B = "Millau is a town in France.\nIt has a glove industry!"


def extracted(*sentences: str) -> dict[str, Any]:
    return {"sentences": list(sentences)}


async def _context_relevance(contexts, *sentences: str):
    judge = FakeJudge({"context_relevance.extract": extracted(*sentences)})
    result = await ContextRelevance().score_guarded(row(contexts=contexts), judge)
    return result, judge


async def test_context_relevance_is_matched_sentences_over_all_sentences():
    result, judge = await _context_relevance(
        (CONTEXT_A, CONTEXT_B), "The viaduct opened in 2004.", "Millau is a town in France."
    )
    assert result.status is Status.OK
    assert result.score == pytest.approx(2 / 5)
    assert result.evidence["extracted"] == [
        "The viaduct opened in 2004.",
        "Millau is a town in France.",
    ]
    assert result.evidence["sentences_in_context"] == 5
    assert result.evidence["not_in_context"] == []
    assert judge.calls[0][1] == {"question": row().question, "contexts": [CONTEXT_A, CONTEXT_B]}


async def test_a_duplicated_context_counts_twice_in_the_denominator_but_is_read_once():
    result, judge = await _context_relevance(
        (CONTEXT_A, CONTEXT_B, CONTEXT_A.upper()), "The viaduct opened in 2004."
    )
    assert result.evidence["sentences_in_context"] == 3 + 2 + 3
    assert result.score == pytest.approx(1 / 8)
    assert result.evidence["duplicate_contexts"] == 1
    assert judge.calls[0][1]["contexts"] == [CONTEXT_A, CONTEXT_B]


async def test_a_sentence_extracted_twice_or_from_a_merged_extraction_counts_once_each():
    result, _ = await _context_relevance(
        (CONTEXT_A,),
        "The viaduct opened in 2004.",
        "the viaduct  opened in 2004.",
        "It spans the Tarn. It was designed by Virlogeux.",  # two sentences in one item
    )
    assert result.score == pytest.approx(3 / 3)
    assert len(result.evidence["extracted"]) == 3


@pytest.mark.parametrize(
    "answer",
    [
        ["Insufficient Information"],
        ["insufficient information."],
        ["Insufficient Information", "  "],
    ],
)
async def test_insufficient_information_scores_zero_and_says_so(answer):
    result, _ = await _context_relevance((CONTEXT_A,), *answer)
    assert result.status is Status.OK
    assert result.score == 0.0
    assert result.evidence["insufficient_information"] is True
    assert result.evidence["extracted"] == []
    assert result.evidence["not_in_context"] == []


async def test_a_close_copy_of_a_context_sentence_is_counted():
    # One typo and a missing final stop: similarity well above 0.9.
    result, _ = await _context_relevance((CONTEXT_A,), "It was desgned by Virlogeux")
    assert result.score == pytest.approx(1 / 3)
    assert result.evidence["extracted"] == ["It was designed by Virlogeux."]
    assert result.evidence["not_in_context"] == []


async def test_made_up_sentences_are_listed_and_not_counted():
    result, _ = await _context_relevance(
        (CONTEXT_A,),
        "The viaduct opened in 2004.",
        "The viaduct is the tallest bridge in the world.",
        "It spans the Seine.",  # close-ish, but not a copy
    )
    assert result.score == pytest.approx(1 / 3)
    assert result.evidence["not_in_context"] == [
        "The viaduct is the tallest bridge in the world.",
        "It spans the Seine.",
    ]
    assert "insufficient_information" not in result.evidence


def test_fuzzy_matching_needs_a_similarity_of_at_least_ninety_percent():
    sentence = "abcdefghij"
    assert match_extracted(["abcdefghiX"], [sentence]).matched == [sentence]  # 0.9
    assert match_extracted(["abcdefghXX"], [sentence]).unmatched == ["abcdefghXX"]  # 0.8


async def test_cjk_contexts_are_counted_by_the_same_rule():
    result, _ = await _context_relevance(
        ("東京は首都です。大阪は大きい！本当？",), "東京は首都です。"
    )
    assert result.score == pytest.approx(1 / 3)


async def test_contexts_with_no_sentence_are_invalid_input_and_the_judge_is_not_called():
    judge = FakeJudge()
    result = await ContextRelevance().score_guarded(
        row(contexts=["...", "--- !!!", "* * *"]), judge
    )
    assert result.status is Status.INVALID_INPUT
    assert result.reason == "the contexts contain no sentence (no letter or digit)"
    assert judge.calls == []


async def test_context_relevance_does_not_need_an_answer():
    result, _ = await _context_relevance((CONTEXT_A,), "It spans the Tarn.")
    interaction = row(answer=None, contexts=[CONTEXT_A])
    judge = FakeJudge({"context_relevance.extract": extracted("It spans the Tarn.")})
    without_answer = await ContextRelevance().score_guarded(interaction, judge)
    assert without_answer.score == result.score == pytest.approx(1 / 3)


# -- gpt score baseline ---------------------------------------------------------------------------


async def test_gpt_score_is_the_zero_to_ten_rating_over_ten():
    judge = FakeJudge({"gpt_score.context_relevance": {"explanation": "focused", "score": 7}})
    result = await GptScore("context_relevance").score_guarded(row(answer=None), judge)
    assert result.status is Status.OK
    assert result.score == pytest.approx(0.7)
    assert result.evidence == {"score_0_10": 7, "explanation": "focused"}
    assert set(judge.calls[0][1]) == {"question", "contexts"}


def test_a_batched_embeddings_requests_tokens_are_shared_in_whole_numbers_that_add_up() -> None:
    from ragas_ops.judge.base import Usage
    from ragas_ops.metrics.answer_relevance.metric import _shares

    shares = _shares(Usage(embedding_tokens=625, cost_usd=0.0125), [7, 7, 7, 3, 11])
    assert sum(share.embedding_tokens for share in shares) == 625
    assert [share.embedding_tokens for share in shares] == [125, 125, 125, 54, 196]
    assert sum(share.cost_usd or 0 for share in shares) == pytest.approx(0.0125)
    assert _shares(Usage(embedding_tokens=5, cost_usd=None), [1, 1])[0].cost_usd is None
    assert _shares(Usage(embedding_tokens=0), [0]) == [Usage()]
