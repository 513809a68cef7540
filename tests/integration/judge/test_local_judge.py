"""The local judge answers every prompt of the metrics with output that validates, for free."""

from __future__ import annotations

import numpy as np
import pytest

from ragas_ops.config import Settings
from ragas_ops.contract.inputs import SizeBudget, validate_row
from ragas_ops.contract.status import Status
from ragas_ops.judge.factory import build_judge
from ragas_ops.judge.local.evidence import VETOED_DEGREE
from ragas_ops.judge.local.generator import generated_questions
from ragas_ops.judge.local.questions import question_parts, tokens
from ragas_ops.judge.local.rules import LocalTools
from ragas_ops.metrics import ALL_PROMPTS, build_metrics
from ragas_ops.metrics.answer_relevance.local import measure as answer_relevance_measure

pytest.importorskip("sentence_transformers")

CONTEXT = (
    "The Millau Viaduct is a cable-stayed bridge in southern France. It opened to traffic on "
    "16 December 2004. Its tallest mast reaches 343 metres."
)


def _judge():  # type: ignore[no-untyped-def]
    settings = Settings()
    settings.judge.kind = "local"
    settings.judge.cache.path = None
    return build_judge(settings)


async def test_every_metric_scores_through_the_local_judge_for_free() -> None:
    judge = _judge()
    names = [
        "faithfulness", "answer_relevance", "context_relevance", "gpt_score_faithfulness",
        "gpt_score_answer_relevance", "gpt_score_context_relevance",
    ]  # fmt: skip
    row = validate_row(
        "When did the Millau Viaduct open?",
        [CONTEXT],
        "The Millau Viaduct opened to traffic on 16 December 2004.",
        SizeBudget(),
    )
    for metric in build_metrics(names):
        [result] = await metric.score_rows([row], judge)
        assert result.status is Status.OK, (metric.name, result.reason)
        assert result.score is not None
        assert 0.0 <= result.score <= 1.0
    assert judge.description == "local:all-MiniLM-L6-v2-onnx-fused-int8"
    total = judge.usage_total()
    assert total.requests == 0
    assert total.cost_usd == 0.0
    assert {prompt.name.split(".")[0] for prompt in ALL_PROMPTS} <= {
        "faithfulness", "answer_relevance", "context_relevance", "gpt_score", "gpt_ranking"
    }  # fmt: skip


async def test_made_up_numbers_and_names_are_not_supported() -> None:
    judge = _judge()
    [metric] = build_metrics(["faithfulness"])
    grounded, invented = await metric.score_rows(
        [
            validate_row("q?", [CONTEXT], "Its tallest mast reaches 343 metres.", SizeBudget()),
            validate_row(
                "q?", [CONTEXT], "Its tallest mast reaches 512 metres, says Gustave Eiffel.",
                SizeBudget(),
            ),
        ],
        judge,
    )  # fmt: skip
    assert grounded.score == 1.0
    # vetoed: a "no", its degree a small share of what its words give (VETOED_DEGREE, v14)
    assert invented.evidence["statements"][0]["verdict"] == "no"
    assert invented.score is not None
    assert invented.score <= VETOED_DEGREE
    assert "512" in invented.evidence["statements"][0]["explanation"]


async def test_faithfulness_keeps_a_near_miss_apart_from_a_clear_miss() -> None:
    judge = _judge()
    [metric] = build_metrics(["faithfulness"])
    rows = [
        "The Millau Viaduct is a cable-stayed bridge in southern France.",
        "The Millau Viaduct is a famous cable-stayed bridge in southern France.",
        "The Millau Viaduct is a famous suspension bridge admired by tourists.",
    ]
    verbatim, padded, invented = await metric.score_rows(
        [validate_row("q?", [CONTEXT], answer, SizeBudget()) for answer in rows], judge
    )
    assert verbatim.score == 1.0
    assert invented.score is not None
    assert padded.score is not None
    assert 0.5 <= padded.score < verbatim.score
    assert invented.score < 0.5
    assert [s["verdict"] for s in padded.evidence["statements"]] == ["yes"]
    assert padded.evidence["statements"][0]["support"] == pytest.approx(padded.score, abs=1e-4)


async def test_a_refusal_is_not_applicable_and_noncommittal() -> None:
    judge = _judge()
    faithfulness, relevance = build_metrics(["faithfulness", "answer_relevance"])
    row = validate_row("When?", [CONTEXT], "I'm sorry, I don't know.", SizeBudget())
    [result] = await faithfulness.score_rows([row], judge)
    assert result.status is Status.NOT_APPLICABLE
    [result] = await relevance.score_rows([row], judge)
    assert result.score == 0.0
    assert result.reason == "noncommittal answer"


def test_importing_the_package_does_not_import_torch() -> None:
    import subprocess
    import sys

    code = "import ragas_ops.cli.main, ragas_ops.judge.factory, sys; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_statements_are_atomic_clauses_and_first_person_claims_count() -> None:
    from ragas_ops.judge.local.evidence import statements

    assert statements(
        "I love the NFL! Their tracking chips in shoulder pads track how far players move."
    ) == [
        "I love the NFL",
        "Their tracking chips in shoulder pads track how far players move",
    ]
    # clauses joined by a comma, a conjunction or a relative pronoun are separate claims
    assert statements("The bridge opened in 2004, and its mast reaches 343 metres.") == [
        "The bridge opened in 2004",
        "its mast reaches 343 metres",
    ]
    # a list's short last item stays with its list; a question back claims nothing
    assert statements("They eat meat and wine. Do you like it?") == ["They eat meat and wine"]
    # two sentences glued without a space are two sentences (and one evasion is not all)
    assert statements("The date has not been provided.The mission studies weather patterns.") == [
        "The mission studies weather patterns"
    ]


def test_words_decide_most_verdicts_without_embedding() -> None:
    from ragas_ops.judge.local.evidence import ContextIndex, evidence

    index = ContextIndex.build([CONTEXT])
    assert evidence("The Millau Viaduct opened to traffic", index).decided  # every word found
    assert evidence("Its mast reaches 512 metres", index).vetoes  # a number the context lacks
    assert evidence("Parisians adore sunny picnics", index).decided  # nothing found


def test_a_reaction_in_the_first_person_is_a_claim_about_the_speaker() -> None:
    from ragas_ops.judge.local.evidence import statements

    assert statements("I would too! Dogs can be trained.") == ["I would too", "Dogs can be trained"]


def test_a_short_sentence_about_a_subject_is_a_claim_and_a_reaction_is_not() -> None:
    from ragas_ops.judge.local.evidence import statements

    assert statements("He was a mathematician.") == ["He was a mathematician"]
    assert statements("It is a comedy.") == ["It is a comedy"]
    assert statements("That's interesting! Wow.") == []


def test_asking_whether_the_user_knows_something_claims_nothing() -> None:
    from ragas_ops.judge.local.evidence import statements

    assert statements("Did you know that the NFL has 32 teams?") == ["the NFL has 32 teams"]
    assert statements("Wow. Do you know how soldiers made radios back in WWII?") == []
    assert statements("What do you know about English loanwords?") == []
    assert statements("The patriots. Their back never fumbled.") == ["Their back never fumbled"]


def test_a_leading_no_answers_the_user_and_does_not_negate_the_claim() -> None:
    from ragas_ops.judge.local.evidence import ContextIndex, evidence

    index = ContextIndex.build(
        ["It has a 92% rating on Rotten Tomatoes. The league has no written rule against it."]
    )
    assert not evidence("no but it has a 92% rating on Rotten Tomatoes", index).vetoes
    assert evidence("it has no 92% rating on Rotten Tomatoes", index).vetoes
    # the negated passage is among those sharing most words, even if not the first of them
    assert not evidence("there is no rule against it", index).vetoes


def test_tens_written_as_words_are_numbers() -> None:
    from ragas_ops.judge.local.evidence import ContextIndex, evidence, numbers

    assert numbers("they spent fifty years and a hundred days") == {"50", "100"}
    index = ContextIndex.build(["They spent fifty years in a dream."])
    assert not evidence("They spent 50 years in a dream", index).vetoes


def test_a_question_drops_the_answer_and_asks_for_its_kind() -> None:
    from ragas_ops.judge.local.generator import question_for

    assert question_for("PharmaCann was founded in 2014.", "PharmaCann") == (
        "When was PharmaCann founded?"
    )
    # a date and an agent: both are new (v18)
    assert question_for("PharmaCann was founded in 2014 by Theodore Scott.", "PharmaCann") == (
        "When and by whom was PharmaCann founded?"
    )
    assert question_for("Its headquarters is located in the state of Illinois.", "PharmaCann") == (
        "Where is PharmaCann's headquarters located?"
    )
    # a new name before the verb is the answer to "Who"
    assert question_for("Christopher Nolan directed the film Oppenheimer.", "Oppenheimer") == (
        "Who directed the film Oppenheimer?"
    )
    # "X is Y": Y answers "What is X?" (or "Who", when Y is a person's name)
    assert question_for("The main product of Acme is rope.", "Acme") == (
        "What is the main product of Acme?"
    )
    assert question_for("The director of Acme is Jane Roe.", "Acme") == (
        "Who is the director of Acme?"
    )
    assert question_for("It is estimated by counting the people.", "the niche") == (
        "How is the niche estimated?"
    )
    assert question_for("The launch date has not been provided.", "PSLV") == (
        "Is there any information about PSLV?"
    )
    assert question_for("The taxonomy of the bee is currently unknown.", "bee") == (
        "Is there any information about bee?"
    )
    # "X refers to Y" asks "What is X?"; a verb without an auxiliary takes "does"
    assert question_for("The niche refers to the range of climates.", "the niche") == (
        "What is the niche?"
    )
    assert question_for("It involves the use of tests.", "Acme") == "What does Acme involve?"
    # the answer is the whole name, even when its first word is the topic's
    assert question_for("It is closely related to Acme Rope.", "Acme") == (
        "What is Acme closely related to?"
    )


def test_follow_up_parts_refer_to_the_topic_by_its_pronoun() -> None:
    from ragas_ops.judge.local.generator import generated_questions, question_for

    assert question_for("Its headquarters is located in Illinois.", "PharmaCann", "it") == (
        "Where is its headquarters located?"
    )
    # naming the answer of the first part would put the answer into the question
    assert question_for("Jane Roe founded Plum.", "Jane Roe", "she") == "What did she found?"
    questions = generated_questions(
        "The director of Acme is Jane Roe. She founded Plum. Jane Roe advised B Lab.", 3
    )
    assert questions[0] == "Who is the director of Acme? What did she found? What did she advise?"


def test_generated_questions_join_the_answers_points_and_are_distinct() -> None:
    from ragas_ops.judge.local.generator import generated_questions

    two_points = generated_questions(
        "PharmaCann was founded in 2014. Its headquarters is located in Illinois.", 3
    )
    assert len(set(two_points)) == 3
    # every question covers both points: they differ in phrasing, never in coverage (v13)
    assert two_points == [
        "When was PharmaCann founded? Where is its headquarters located?",
        "When was PharmaCann founded, and where is its headquarters located?",
        "Where is its headquarters located? When was PharmaCann founded?",
    ]
    assert all("founded" in q and "located" in q for q in two_points)
    one_point = generated_questions("The main product of Acme is rope.", 3)
    assert len(set(one_point)) == 3
    assert all(q.startswith("What is the main product of Acme") for q in one_point)


async def test_an_answer_covering_every_part_of_the_question_is_more_relevant() -> None:
    judge = _judge()
    question = "When was PharmaCann founded and where is its headquarters?"
    complete = "PharmaCann was founded in 2014. Its headquarters is located in Illinois."
    partial = (
        "PharmaCann was founded in 2014. PharmaCann is a leading pharmaceutical company that "
        "specializes in medical cannabis products."
    )
    assert await relevance(judge, question, complete) > await relevance(judge, question, partial)


async def test_extra_detail_costs_less_than_an_omitted_part() -> None:
    judge = _judge()
    question = "Who is the director of Acme and what has she done?"
    detailed = (
        "The director of Acme is Jane Roe. She founded Plum Organics. She advised B Lab on "
        "sustainable sourcing."
    )
    omitting = "The director of Acme is Jane Roe."
    assert await relevance(judge, question, detailed) > await relevance(judge, question, omitting)


async def test_a_context_that_answers_its_question_is_not_insufficient_information() -> None:
    judge = _judge()
    [metric] = build_metrics(["context_relevance"])
    context = (
        "Refunds are accepted within 30 days of delivery for unused items in their original "
        "packaging. Refunds are paid to the original payment method within 5 business days. "
        "Shipping costs are not refunded."
    )
    row = validate_row(
        "How long do I have to return an item, and when will I get my money back?",
        [context],
        "Within 30 days; the refund takes 5 business days.",
        SizeBudget(),
    )
    [result] = await metric.score_rows([row], judge)
    # the two sentences that carry the answers share almost no word with the question
    assert result.evidence["extracted"] == [
        "Refunds are accepted within 30 days of delivery for unused items in their original "
        "packaging.",
        "Refunds are paid to the original payment method within 5 business days.",
    ]
    assert result.score == pytest.approx(2 / 3)


async def _metric_scores(question: str, answers: list[str]) -> list[float]:
    """The paper's answer relevance (the metric, its prompt carrying the answer only) for each
    answer to `question`, through the local judge's questions and embeddings."""
    judge = _judge()
    metric = build_metrics(["answer_relevance"])[0]
    rows = [validate_row(question, [CONTEXT], answer, SizeBudget()) for answer in answers]
    results = await metric.score_rows(rows, judge)
    assert all(result.status is Status.OK for result in results), results
    return [float(result.score or 0.0) for result in results]


async def test_the_metric_sees_a_wrong_kind_of_answer_on_the_right_topic() -> None:
    question = "When did the Millau Viaduct open to traffic?"
    direct, wrong_kind = await _metric_scores(
        question,
        [
            "The Millau Viaduct opened to traffic on 16 December 2004.",
            "The Millau Viaduct is a cable-stayed bridge in southern France.",
        ],
    )
    assert direct > wrong_kind


async def test_the_metric_scores_evasion_and_padding_below_a_direct_answer() -> None:
    question = "When did the Millau Viaduct open and how tall is its tallest mast?"
    direct = (
        "The Millau Viaduct opened to traffic on 16 December 2004. Its tallest mast reaches "
        "343 metres."
    )
    scores = await _metric_scores(
        question,
        [
            direct,
            # evades one part, keeps the other
            "The opening date has not been provided. Its tallest mast reaches 343 metres.",
            # evades and pads on the topic, as an incomplete answer does
            "The opening date of the Millau Viaduct is unknown. The Millau Viaduct is an "
            "important bridge in France.",
            # pads with an unrelated sentence
            f"{direct} Paris is the capital of France.",
            "I'm sorry, I cannot answer that.",
        ],
    )
    assert scores[0] == max(scores)
    assert scores[0] > scores[1] > scores[4] == 0.0
    assert scores[0] > scores[2]
    assert scores[0] > scores[3] > scores[2]  # padding costs less than evading a part


async def test_the_metric_scores_one_part_with_generic_praise_below_the_complete_answer() -> None:
    # WikiEval's poor answer: one part supplied, the other replaced by praise of the subject
    question = "When was PharmaCann founded and where is its headquarters located?"
    complete, praised = await _metric_scores(
        question,
        [
            "PharmaCann was founded in 2014. Its headquarters is located in Illinois.",
            "PharmaCann was founded in 2014. PharmaCann is a leading pharmaceutical company that "
            "specializes in medical cannabis products.",
        ],
    )
    assert complete > praised


async def test_a_question_of_several_parts_is_the_mean_of_its_parts() -> None:
    # v15: each part encoded alone, the question's vector their mean weighted by their words;
    # the n generated questions (the same parts in other orders) encode each part once
    judge = _judge()
    answer = "The Millau Viaduct opened to traffic in 2004. Its tallest mast reaches 343 metres."
    questions = generated_questions(answer, 3)
    assert len(set(questions)) == 3
    before = judge.encoding.encoded
    vectors = await judge.question_vectors(questions)
    parts = question_parts(questions[0])
    assert len(parts) == 2
    assert judge.encoding.encoded - before == len(parts)  # not 3 questions x their tokens
    for question in questions:
        assert sorted(question_parts(question)) == sorted(parts)
        assert float(vectors[question] @ vectors[questions[0]]) == pytest.approx(1.0, abs=1e-6)
    alone = await judge.vectors(parts)
    weights = [len(tokens(part)) + 1 for part in parts]
    mean = sum(w * alone[p] for w, p in zip(weights, parts, strict=True)) / sum(weights)
    expected = mean / np.linalg.norm(mean)
    assert float(vectors[questions[0]] @ expected) == pytest.approx(1.0, abs=1e-5)
    # a question of one part is the model's own vector
    [single] = (await judge.question_vectors(["When did it open?"])).values()
    [model] = (await judge.vectors(["When did it open?"])).values()
    assert float(single @ model) == pytest.approx(1.0, abs=1e-6)


async def relevance(judge: LocalTools, question: str, answer: str) -> float:
    """Answer relevance as the local judge measures it when the question is known."""
    return (await answer_relevance_measure(judge, question, answer, []))[0]
