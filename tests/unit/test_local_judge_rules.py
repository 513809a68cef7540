"""The local judge's text rules, one principle per test (no model: these are plain functions)."""

from __future__ import annotations

import pytest

from ragas_ops.judge.local.evidence import (
    answers_a_part,
    generated_questions,
    parts_answered,
    question_for,
)
from ragas_ops.judge.local.questions import (
    asked_parts,
    is_question,
    question_problems,
    supplied_kinds,
)
from ragas_ops.samples import REFUSAL, TOPICS

# Answers of many shapes, written for these tests: lists, passives, fragments, dialogue turns,
# first-person remarks, refusals, numbers with and without units, tokenised contractions.
ANSWERS = [
    "The Millau Viaduct opened to traffic on 16 December 2004. Its highest mast reaches 343 m.",
    "It opened in 2004.",
    "Within 30 days.",
    "Between 300 and 600 milligrams.",
    "It costs 24 euros.",
    "Hamlet was written by William Shakespeare.",
    "The earthquake had a magnitude of 7.8 and its epicentre was near Gaziantep.",
    "It includes single sign-on, audit logs and 1 TB of storage per user.",
    "I'm sorry, I could not find that information in the documents I have.",
    "I'm sorry I don't know.",
    "Wow, that sounds cool. You must be good at it!",
    "Yes that will be interesting . It 's a great show and was developed by Frank Darabont",
    "He lives in North Carolina . His books have been translated into 42 languages .",
    "the terms accounting and financial reporting are often used as synonyms.",
    "i believe that skiing began in china 100 centuries ago",
    "The launch date has not been provided. The mission studies weather patterns.",
    "Gigi Lee Chang founded Plum Organics, was the CEO of Healthy Child, and advised B Lab.",
    "Theranostics, also known as theragnostics, is an emerging field in precision medicine.",
    "Refunds are paid within 5 business days to the original payment method.",
    "The bridge is 2,460 metres long and cost 394 million euros.",
    "what do you know about English loans ?",
    "Yeah . That s right . I 'm not a fan of her work . You ?",
    "The population grew from 1.2 million in 1990 to 2 million in 2020.",
    "",
    "Yes.",
]


@pytest.mark.parametrize("answer", ANSWERS)
def test_every_generated_question_reads_as_a_question(answer: str) -> None:
    questions = generated_questions(answer, 3)
    assert len(set(questions)) == 3
    for question in questions:
        assert question_problems(question) == [], (answer, question)


def test_generated_questions_of_the_sample_logs_read_as_questions() -> None:
    answers = [REFUSAL]
    for topic in TOPICS:
        answers += [topic.answer, topic.incomplete_answer, topic.unfaithful_answer]
    for answer in answers:
        for question in generated_questions(answer, 5):
            assert is_question(question), (answer, question)


def test_the_question_form_checker_rejects_fragments() -> None:
    rejected = [
        "What could I'm sorry I?",  # a first-person fragment
        "Who was Hamlet written?",  # a passive without its "by"
        "When the Millau Viaduct opened to traffic?",  # no auxiliary after "when"
        "How many does its highest mast reach?",  # "how many" counts nothing
        "What does within 30 day?",  # no main verb after its subject
        "What must you?",
        "When opened 2004 opened?",  # a repeated word
        "The bridge opened in 2004.",  # no question mark
        "What is buck and?",  # ends in the middle of a phrase
        "What will yes that?",  # a filler of the answer
        "What about Acme?",  # no verb
        "Who does is closely related to Acme?",  # "does" before another auxiliary
    ]
    for text in rejected:
        assert question_problems(text), text
    accepted = [
        "When did the Millau Viaduct open to traffic?",
        "How many metres does its highest mast reach?",
        "Who was Hamlet written by?",
        "What magnitude did the earthquake have, and where was its epicentre?",
        "Who directed the film Oppenheimer?",
        "Is there any information about it?",
        "When was PharmaCann founded? Where is its headquarters located?",
    ]
    for text in accepted:
        assert is_question(text), (text, question_problems(text))


def test_a_question_asks_for_the_kind_of_what_it_drops() -> None:
    assert question_for("It opened in 2004.", "") == "When did it open?"
    assert (
        question_for("Its mast reaches 343 metres.", "") == "How many metres does its mast reach?"
    )
    assert question_for("It costs 24 euros.", "") == "How much does it cost?"
    assert question_for("Hamlet was written by William Shakespeare.", "Hamlet") == (
        "Who was Hamlet written by?"
    )
    assert question_for("Its epicentre was near Gaziantep.", "") == "Where was its epicentre?"
    assert question_for("The earthquake had a magnitude of 7.8.", "the earthquake") == (
        "What magnitude did the earthquake have?"
    )
    # a list's last item is not the answer: the list is
    assert question_for("It includes sign-on, audit logs and 1 TB of storage.", "") == (
        "What does it include?"
    )
    # a verbless answer answers an elliptical question, asked by the kind it holds
    assert question_for("Within 30 days.", "") == "How long is it?"
    assert question_for("I think it opened in 2004.", "") == "When did it open?"


def test_remarks_about_the_speaker_or_the_conversation_ask_nothing() -> None:
    assert question_for("I'm sorry, I could not find it in the documents.", "Acme") == ""
    assert question_for("Wow, that sounds cool.", "Acme") == ""
    assert question_for("You must be good at it.", "Acme") == ""
    assert generated_questions(REFUSAL, 1) == ["Is the information available?"]


def test_question_parts_and_their_expected_kinds() -> None:
    parts = asked_parts(
        "When is the launch, and where will it be launched from and how many satellites fly?"
    )
    assert [(part.word, part.kind) for part in parts] == [
        ("when", "date"),
        ("where", "place"),
        ("how many", "number"),
    ]
    assert [p.kind for p in asked_parts("Who directed Oppenheimer?")] == ["name"]
    assert [p.kind for p in asked_parts("How long do I have to return it?")] == ["duration"]
    assert [p.kind for p in asked_parts("What is theranostics?")] == ["content"]


def test_what_an_answer_sentence_supplies() -> None:
    assert {"date"} <= supplied_kinds("It opened on 16 December 2004.")
    assert {"duration", "number"} <= supplied_kinds("Refunds are paid within 5 business days.")
    assert {"name", "place"} <= supplied_kinds("It is based in Fremantle.")
    assert "date" not in supplied_kinds("It reaches 343 metres.")
    assert "name" in supplied_kinds("Christopher Nolan directed the film.")


def test_a_sentence_holding_the_asked_kind_answers_even_in_other_words() -> None:
    question = "How long do I have to return an item, and when will I get my money back?"
    assert answers_a_part(question, "Refunds are paid within 5 business days.")
    assert not answers_a_part(question, "Shipping costs are not refunded.")


def test_parts_answered_counts_omissions_evasions_and_padding() -> None:
    question = "When was PharmaCann founded and where is its headquarters?"
    complete = parts_answered(
        question, "PharmaCann was founded in 2014. Its headquarters is in Illinois."
    )
    assert complete.coverage == 1.0
    assert complete.off_topic == 0
    partial = parts_answered(
        question, "PharmaCann was founded in 2014. Cannabis is a plant grown worldwide."
    )
    assert partial.coverage == 0.5
    assert partial.off_topic == 1
    assert "not answered: 'where'" in partial.explain()
    evasive = parts_answered(
        question, "The founding date has not been disclosed. Its headquarters is in Illinois."
    )
    assert evasive.evasive == 1
    assert evasive.coverage == 0.5
    # an unrelated sentence costs less than an omitted part
    padded = parts_answered(
        question,
        "PharmaCann was founded in 2014. Its headquarters is in Illinois. Rain fell in Spain.",
    )
    assert padded.coverage * padded.focus > partial.coverage * partial.focus


def test_a_sentence_close_in_meaning_is_on_topic_without_shared_words() -> None:
    import numpy as np

    question = "When will I get my money back?"
    answer = "The refund is paid within 5 business days."
    assert parts_answered(question, answer).off_topic == 1  # by words alone
    close = {
        question: np.array([1.0, 0.0], dtype=np.float32),
        answer.rstrip("."): np.array([0.8, 0.6], dtype=np.float32),
        answer: np.array([0.8, 0.6], dtype=np.float32),
    }
    found = parts_answered(question, answer, close)
    assert found.off_topic == 0
    assert found.coverage == 1.0  # "within 5 business days" answers "when"
