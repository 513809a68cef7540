"""The local judge's text rules, one principle per test (no model: these are plain functions)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragas_ops.evaluation.begin import load_begin
from ragas_ops.judge.local.evidence import VETOED_DEGREE, Support, answers_a_part, parts_answered
from ragas_ops.judge.local.generator import (
    expanded,
    generated_questions,
    main_clause,
    question_for,
)
from ragas_ops.judge.local.questions import (
    QUESTION_FORM_WEIGHT,
    asked_parts,
    form_similarity,
    is_question,
    question_form,
    question_parts,
    question_problems,
    question_similarity,
    supplied_kinds,
    with_question_form,
)
from ragas_ops.samples import REFUSAL, TOPICS, sample_interactions

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
        "When did founded on january 30 1960 they play their first game?",  # a participle
        "How many th does regarded as one of the most significant icons?",  # "th" counts nothing
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
    assert question_for("It was written by the poet John Keats.", "") == ("Who was it written by?")
    assert question_for("Its epicentre was near Gaziantep.", "") == "Where was its epicentre?"
    assert question_for("The earthquake had a magnitude of 7.8.", "the earthquake") == (
        "What magnitude did the earthquake have?"
    )
    # a list's last item is not the answer: the list is
    assert question_for("It includes sign-on, audit logs and 1 TB of storage.", "") == (
        "What does it include?"
    )
    # a word in "-ed" after a verb that is no auxiliary starts the object, not a passive
    assert question_for("The plan includes unlimited calls and texts.", "the plan") == (
        "What does the plan include?"
    )
    assert question_for("It has seen increased demand.", "") == "What has it seen?"
    assert question_for("It was first domesticated in Egypt.", "") == (
        "Where was it first domesticated?"
    )
    assert question_for("The river flows through Egypt.", "the river") == (
        "Where does the river flow?"
    )
    # a verbless answer answers an elliptical question, asked by the kind it holds
    assert question_for("Within 30 days.", "") == "How long is it?"
    assert question_for("I think it opened in 2004.", "") == "When did it open?"


def test_contractions_and_linking_words_do_not_reach_the_question() -> None:
    assert question_for("It's located in Paris.", "") == "Where is it located?"
    assert question_for("It's been closed since 2019.", "") == "When has it been closed?"
    assert question_for("She's written seven novels.", "") == "How many novels has she written?"
    assert question_for("They're based in Perth.", "") == "Where are they based?"
    assert question_for("But it opened in 2004.", "") == "When did it open?"
    assert question_for("And it cost 400 million euros.", "") == "How much is it?"
    # the possessive of a noun stays one
    assert expanded("The bridge's deck is 2460 metres long.") == (
        "The bridge's deck is 2460 metres long."
    )


def test_participles_are_read_as_participles() -> None:
    # irregular participles ("paid", "won") make a passive or a perfect as "-ed" ones do
    assert question_for("The refund is paid within 5 business days.", "the refund") == (
        "How long is the refund paid?"
    )
    assert question_for("The team has won three titles.", "") == "How many titles has the team won?"
    assert question_for("It has often been described as a masterpiece.", "") == (
        "What has it often been described as?"
    )
    assert question_for("It is known as the Iron Lady.", "") == "What is it known as?"
    # "-en" alone makes no participle: "open" is an adjective, not "is opened"
    assert question_for("It is open every day.", "") == "What is it?"


def test_a_copula_with_a_measure_or_a_property() -> None:
    assert question_for("The deck is 2460 metres long.", "the deck") == (
        "How many metres is the deck?"
    )
    # a number that could be a year counts the plural noun after it
    assert question_for("The usual dose is 1000 milligrams every hour.", "the usual dose") == (
        "How many milligrams is the usual dose?"
    )
    assert question_for("It opened in 2004.", "") == "When did it open?"
    assert question_for("It is a strong earthquake.", "") == "What is it?"


def test_a_denial_asks_whether_it_holds() -> None:
    # "When does the museum not open?" would ask for what the sentence excludes
    assert question_for("The museum does not open on Mondays.", "") == (
        "Is it true that the museum does not open on Mondays?"
    )
    assert question_for("It doesn't open on Sundays.", "") == (
        "Is it true that it does not open on Sundays?"
    )
    assert question_for("It has never been climbed in winter.", "") == (
        "Is it true that it has never been climbed in winter?"
    )


def test_remarks_about_the_speaker_or_the_conversation_ask_nothing() -> None:
    assert question_for("Have a great day!", "Acme") == ""
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


def test_the_noun_a_what_part_asks_for_names_its_kind() -> None:
    kinds = [
        (q, [p.kind for p in asked_parts(q)])
        for q in (
            "What year did the war end?",
            "Which city hosts the games?",
            "What is its headquarters location?",
            "What is the population of Paris?",
            "What is the main product of Fremantle Octopus?",
            "What is the state of the economy?",
        )
    ]
    assert [k for _, k in kinds] == [
        ["date"],
        ["place"],
        ["place"],
        ["number"],
        ["content"],
        ["content"],
    ], kinds


def test_a_question_form_counts_what_its_parts_ask_for() -> None:
    assert question_form("When was X founded and where is it based?") == {"date": 1, "place": 1}
    # several questions in a row: the parts of each
    assert question_form("When was X founded? What is it?") == {"date": 1, "content": 1}
    assert question_form("Is it based in Perth?") == {"polar": 1}
    # an evasion's question asks whether the information exists: no kind any user asks for
    assert question_form("Is the information available?") == {"absent": 1}
    assert question_form("Is there any information about X? What is X?") == {
        "absent": 1,
        "content": 1,
    }
    assert form_similarity("Is X based in Perth?", "Is there any information about X?") == 0.0
    assert question_form("X was founded in 2014.") == {}


def test_questions_asking_for_other_kinds_are_less_similar_on_one_topic() -> None:
    asked = "When was PharmaCann founded and where is its headquarters?"
    same = "When was PharmaCann founded? Where is its headquarters located?"
    omitted = "When was PharmaCann founded?"
    padded = "When was PharmaCann founded? Where is its headquarters located? What is it?"
    wrong_kind = "What does PharmaCann sell? What is it?"
    evasive = "Is there any information about PharmaCann?"
    form = {text: form_similarity(asked, text) for text in (same, omitted, padded, wrong_kind)}
    assert form[same] == pytest.approx(1.0)
    # padding costs less than an omission, a wrong kind of answer costs most
    assert form[same] > form[padded] > form[omitted] > form[wrong_kind] == 0.0
    assert form_similarity(asked, evasive) == 0.0
    # with one model cosine for all, the combined similarity keeps that order
    combined = [question_similarity(asked, text, 0.8) for text in (same, padded, omitted)]
    assert combined == sorted(combined, reverse=True)
    assert combined[0] == pytest.approx((1 - QUESTION_FORM_WEIGHT) * 0.8 + QUESTION_FORM_WEIGHT)


def test_the_form_extends_the_vector_so_the_cosine_is_the_weighted_sum() -> None:
    import numpy as np

    one, two = "When did X open?", "Where is X?"
    left = np.array([1.0, 0.0], dtype=np.float32)
    right = np.array([0.6, 0.8], dtype=np.float32)
    a, b = with_question_form(one, left), with_question_form(two, right)
    assert float(np.linalg.norm(a)) == pytest.approx(1.0)
    assert float(a @ b) == pytest.approx(question_similarity(one, two, 0.6))
    # a date asked, a place asked: the forms share nothing
    assert float(a @ b) == pytest.approx((1 - QUESTION_FORM_WEIGHT) * 0.6)
    # text that asks nothing keeps the model's vector and its unit length
    plain = with_question_form("X opened in 2004.", left)
    assert float(np.linalg.norm(plain)) == pytest.approx(1.0)
    assert float(plain @ with_question_form("X opened in 2004.", left)) == pytest.approx(1.0)


EVASIVE_ANSWERS = [
    "The launch date has not been provided. The mission is an important space mission.",
    "The taxonomy of Dasypoda radchenkoi is currently unknown.",
    "I'm sorry, I could not find that in the documents.",
    "I don't know.",
]


@pytest.mark.parametrize("answer", EVASIVE_ANSWERS)
def test_an_evasion_asks_whether_not_what(answer: str) -> None:
    questions = generated_questions(answer, 3)
    # the evasive sentence asks whether the information exists, in every scope
    assert all(question_form(q).get("absent") for q in questions), questions
    assert all(is_question(q) for q in questions)


BEGIN_DEV = next(
    (
        folder / "shared/data/begin"
        for folder in Path(__file__).resolve().parents
        if (folder / "shared/data/begin").is_dir()
    ),
    Path("missing"),
)


def test_every_question_generated_from_the_sample_logs_reads_as_one() -> None:
    table = sample_interactions(300, seed=3)
    answers = set(table.column("answer").to_pylist())
    assert len(answers) > 20
    for answer in answers:
        for question in generated_questions(answer, 3):
            assert question_problems(question) == [], (answer, question)


@pytest.mark.skipif(not BEGIN_DEV.is_dir(), reason="../shared/data/begin is not there")
def test_every_question_generated_from_begin_dev_reads_as_one() -> None:
    """Thousands of answers of every shape: BEGIN dev's knowledge sentences (Wikipedia) and the
    dialogue systems' responses (chatty, lower-case, tokenised)."""
    texts = [
        str(row[field])
        for name in ("begin_v2_wow_dev", "begin_v2_cmu_dev", "begin_v2_tc_dev", "begin_v1_2021_dev")
        for row in load_begin(BEGIN_DEV / f"{name}.jsonl")
        for field in ("knowledge", "response")
    ]
    assert len(texts) > 4000
    failed = [
        (text, question)
        for text in dict.fromkeys(texts)
        for question in generated_questions(text, 3)
        if question_problems(question)
    ]
    assert failed == []


def test_verb_groups_reported_speech_and_stems_in_generated_questions() -> None:
    # an adverb inside a passive verb group: the date is still the dropped answer
    assert question_for("corn was first domesticated 9,000 years ago in mexico.", "corn") == (
        "When was corn first domesticated?"
    )
    # reported speech frames the claim, as the speaker's own stance does
    assert question_for("Some historians believe that it originated in 1990.", "") == (
        "When did it originate?"
    )
    # "-ated", "-ided", "-uded" after a consonant dropped an "e"; after a vowel they did not
    assert question_for("It included three tracks.", "") == "How many tracks did it include?"
    assert question_for("It treated the wound.", "") == "What did it treat?"


def test_a_claim_the_rules_cannot_ask_is_not_an_evasion() -> None:
    # no rule turns this lower-case chat sentence into its question: it still asks about its
    # subject, never the evasion's "Is the information available?"
    for answer in ("it has beginnings in scandinavia, but more than that in china",):
        questions = generated_questions(answer, 3)
        assert not any(q.startswith("Is the information") for q in questions), questions
    assert question_problems("When may it have been practiced more than?")


def test_a_sentence_the_rules_cannot_ask_keeps_its_content_in_a_yes_no_question() -> None:
    # v14: the question carries what the sentence says, not only its topic ("What is X?" is
    # close to any question about X, so a sentence the rules could not read looked relevant)
    sentence = "The Acme concept car was showcased at an auto show and received good reviews."
    asked = question_for(sentence, "Acme")
    assert asked == (
        "Is it true that the Acme concept car was showcased at an auto show and received good"
        " reviews?"
    )
    assert is_question(asked)
    # its form is a "what" the rules could not word, not a yes/no question: a dialogue's
    # "Do you know ...?" is not matched by every sentence the rules cannot read
    assert question_form(asked) == {"content": 1}
    assert question_form("Do you know it?") == {"polar": 1}
    # joined with other parts, it is a part of its own
    joined = "When did it open, and is it true that it was showcased at a show?"
    assert [part.word for part in asked_parts(joined)] == ["when", "is"]
    assert is_question(joined)
    # a sentence with a question mark inside it has no yes/no question of its own
    assert question_problems("Is it true that what?really?")


def test_a_question_back_to_the_user_supplies_nothing() -> None:
    assert question_for("Do you like their video games ?", "") == ""
    assert question_for("How often do you go to the library?", "") == ""
    # "Did you know (that) X?" states X
    assert question_for("Did you know that it opened in 2004?", "") == "When did it open?"
    # the checker never loops on a question mark inside a word
    assert question_problems("What is it?really") != []


def test_a_participle_with_its_preposition_before_a_later_verb_is_not_the_main_verb() -> None:
    # a reduced relative clause ("X based on Y") modifies the subject: the later verb is the
    # sentence's, so "did ... shows" (v12) becomes "does ... show"
    assert question_for(
        "The distribution of the population based on mean temperature shows two modes.", ""
    ) == ("How many modes does the distribution of the population based on mean temperature show?")
    # a participle joined to a later verb by "and" is one of two verbs: the first stays
    assert question_for("It opened in 2004 and grossed 1 billion dollars.", "") == (
        "When did it open?"
    )
    assert question_for("It opened in 2004.", "") == "When did it open?"
    # "-ed to" is a verb and its infinitive, not a reduced relative
    assert question_for("The car aimed to have low running costs.", "the car") == (
        "What did the car aim to have?"
    )
    assert question_for("PharmaCann was founded in 2014.", "PharmaCann") == (
        "When was PharmaCann founded?"
    )


def test_whole_questions_cover_every_point_and_differ_in_phrasing_only() -> None:
    answer = "PharmaCann was founded in 2014. Its headquarters is located in Illinois."
    whole = generated_questions(answer, 3)
    assert len(set(whole)) == 3
    assert all("founded" in q and "located" in q for q in whole), whole
    assert all(is_question(q) for q in whole)
    # a padded answer: the padding is in every question, as an LLM writes it
    padded = generated_questions(f"{answer} Our newsletter is sent every Tuesday.", 3)
    assert all("newsletter" in q for q in padded), padded
    # v12's scopes narrowed to the first point: one question ignored the second one
    narrowed = generated_questions(answer, 3, whole=False)
    assert narrowed[1] == "When was PharmaCann founded?"
    # one point: the same paraphrases either way
    assert generated_questions("It opened in 2004.", 3) == generated_questions(
        "It opened in 2004.", 3, whole=False
    )


def test_every_question_generated_from_the_perturbation_suites_answers_reads_as_one() -> None:
    """The answers the suite builds (drops, evasions, padding, WikiEval-like poor answers,
    other questions' answers) in both scopes of the generator."""
    from ragas_ops.evaluation.perturb import begin_checks, sample_checks

    begin_files = [
        BEGIN_DEV / f"{name}.jsonl"
        for name in ("begin_v1_2021_dev", "begin_v2_wow_dev", "begin_v2_cmu_dev", "begin_v2_tc_dev")
    ]
    checks = sample_checks()
    if BEGIN_DEV.is_dir():
        checks += begin_checks(begin_files)
    answers = {row.answer for check in checks for row in (check.base, check.changed)}
    assert len(answers) > (500 if BEGIN_DEV.is_dir() else 50)
    failed = [
        (answer, question)
        for answer in sorted(answers)
        for whole in (False, True)
        for question in generated_questions(answer, 3, whole=whole)
        if question_problems(question)
    ]
    assert failed == []


def test_generic_praise_asks_what_kind_of_thing_the_subject_is() -> None:
    # an evaluative complement is padding an LLM still writes into its question, with its noun
    assert question_for(
        "PharmaCann is a leading pharmaceutical company that specializes in cannabis.", "PharmaCann"
    ) == ("What kind of company is PharmaCann?")
    assert question_for("The mission is an important space mission for India.", "the mission") == (
        "What kind of mission is the mission?"
    )
    # a definition still answers "What is X?"
    assert question_for("Theranostics is an emerging field in medicine.", "Theranostics") == (
        "What is Theranostics?"
    )
    assert is_question("What kind of company is PharmaCann?")


def test_the_score_summary_says_the_local_judges_limits() -> None:
    from collections import Counter

    from ragas_ops.config import JudgeSettings
    from ragas_ops.judge.base import Usage
    from ragas_ops.judge.factory import judge_identity
    from ragas_ops.judge.local.limits import LOCAL_JUDGE_LIMITS
    from ragas_ops.scoring.jobs import ScoreOutcome
    from ragas_ops.scoring.scorer import RunSummary

    def lines(settings: JudgeSettings) -> list[str]:
        identity = judge_identity(settings)
        outcome = ScoreOutcome("out", ["answer_relevance"], RunSummary(rows=3),
                               identity.chat_model, Usage(), Counter(), 1.0,
                               caveats=identity.caveats)  # fmt: skip
        return outcome.summary_lines()

    assert LOCAL_JUDGE_LIMITS in lines(JudgeSettings(kind="local"))
    assert "not an LLM" in LOCAL_JUDGE_LIMITS
    assert LOCAL_JUDGE_LIMITS not in lines(JudgeSettings(kind="openai"))


def test_an_object_with_a_name_in_apposition_is_the_answer_as_a_whole() -> None:
    assert question_for(
        "Andrew Lincoln plays the lead character, deputy Rick Grimes.", "Andrew Lincoln"
    ) == ("What does Andrew Lincoln play?")
    assert question_for("Cobain formed the band Nirvana.", "Cobain") == "What did Cobain form?"
    # a preposition that ends the verb group stays with it
    assert question_for(
        "The bee belongs to the genus Andrena, specifically the subgenus Melandrena.", "the bee"
    ) == ("What does the bee belong to?")
    # a name right after the verb is still the answer, a place still asks "Where"
    assert question_for("She founded Plum Organics.", "") == "What did she found?"
    assert question_for("It was launched from the Satish Dhawan Space Centre.", "") == (
        "Where was it launched?"
    )


def test_fronted_adverbs_and_aliases_frame_a_sentence_without_being_what_it_states() -> None:
    assert question_for("Originally, a key feature of the app was its square photos.", "") == (
        "What was a key feature of the app?"
    )
    assert question_for(
        "Guns N' Roses, often abbreviated as GNR, is a hard rock band.", "Guns N' Roses"
    ) == ("What is Guns N' Roses?")


def test_a_fronted_participial_phrase_frames_the_sentence() -> None:
    assert question_for(
        "Born in Aberdeen, Washington, Cobain formed the band Nirvana.", "Cobain"
    ) == ("What did Cobain form?")
    assert question_for("Based on the data, the model predicts rain.", "") == (
        "What does the model predict?"
    )
    assert generated_questions("Born in Ohio, he lived in Paris.", 1) == ["Where did he live?"]


def test_a_vetoed_statement_stays_a_no_and_keeps_its_order() -> None:
    # v14: a veto makes the verdict "no" whatever the words say, but the degree still tells a
    # near miss from a clear miss (before, every vetoed statement tied at 0)
    near = Support(0.95, False, "", vetoes=("a name the contexts do not mention",))
    clear = Support(0.2, False, "", vetoes=("a name the contexts do not mention",))
    assert 0.0 < near.degree < 0.5
    assert near.degree > clear.degree >= 0.0
    assert near.degree == pytest.approx(VETOED_DEGREE * Support(0.95, True, "").degree)


def test_the_parts_of_a_question_are_the_same_in_every_phrasing() -> None:
    # v15: the local judge's vector of a question of several parts is its parts' mean
    parts = ["When was PharmaCann founded", "Where is its headquarters located"]
    founded, located = (f"{part}?" for part in parts)
    assert question_parts(f"{founded} {located}") == parts
    assert question_parts(f"{parts[0]}, and {located[0].lower()}{located[1:]}") == parts
    assert question_parts(f"{located} {founded}") == parts[::-1]
    assert question_parts("When was PharmaCann founded and where is it?") == [
        "When was PharmaCann founded",
        "Where is it",
    ]
    # one part: the text itself, its question mark kept
    assert question_parts("When was PharmaCann founded?") == ["When was PharmaCann founded?"]


def test_a_citation_asks_nothing() -> None:
    # v16: "(Source: KB-12.)" says where the answer comes from, not what it says of the topic
    answer = "The Millau Viaduct opened to traffic in 2004. (Source: KB-6-00000.)"
    assert generated_questions(answer, 3)[0] == "When did the Millau Viaduct open to traffic?"
    assert question_for("Sources: [1] the handbook.", "") == ""
    assert question_for("The source of the Nile is Lake Victoria.", "") != ""


def test_an_infinitive_after_a_verb_is_asked_for_with_do() -> None:
    # v18: the action after "aims to" is the answer; English asks for it with the pro-verb "do"
    # (v17 dropped the bare "to": "What does it aim?")
    assert question_for("It aims to launch a satellite into orbit.", "") == (
        "What does it aim to do?"
    )
    assert question_for("They want to build a bridge.", "") == "What do they want to do?"
    assert question_for("It is expected to enhance trade.", "") == ("What is it expected to do?")
    assert question_for("They decided to leave.", "") == "What did they decide to do?"
    # after a copula the infinitive is the complement, asked as "What is X?" as before
    assert question_for("The goal is to build a bridge.", "") == "What is the goal?"
    # a verb whose infinitive keeps an item still asks for the item
    assert question_for("The company plans to open three stores in 2025.", "") == (
        "How many stores does the company plan to open?"
    )
    for sentence in ("It aims to launch a satellite.", "It is expected to enhance trade."):
        assert is_question(question_for(sentence, ""))


def test_the_main_clause_asks_without_what_elaborates_on_it() -> None:
    # v18: a colon introduces an elaboration or a list of what the clause before it says
    assert question_for("Six teams took part in the series: Fiji, Samoa and Tonga.", "") == (
        "How many teams took part in the series?"
    )
    # a description between commas after the subject describes the subject
    assert question_for(
        "The lead role of Ines, a biologist who returns to her farm, is played by Ana Nunes.",
        "the film",
    ) == ("Who is the lead role of Ines played by?")
    # a participial clause after a comma at the end adds a circumstance
    assert question_for("It became the highest-grossing film, selling 3 million tickets.", "") == (
        "What did it become?"
    )
    assert main_clause("It opened in 2004, during the spring.") == (
        "It opened in 2004, during the spring."
    )
    # a cut that would leave less than a clause keeps the sentence
    assert main_clause("Note: it opened in 2004.") == "Note: it opened in 2004."


def test_a_new_subject_is_the_answer_but_a_passive_subject_is_not() -> None:
    # v18: a passive's subject is what the sentence is about, even when it is a name
    assert question_for("Paper Lanterns was released in Indonesian cinemas.", "") == (
        "Where was Paper Lanterns released?"
    )
    # an active verb's new name answers "Who", "of" inside the name included
    assert question_for("Vasteras SK of Sweden won the cup for the third time.", "the cup") == (
        "Who won the cup for the third time?"
    )
    # a count that starts the subject answers "How many"
    assert question_for("Three people were injured in the fire.", "") == (
        "How many people were injured in the fire?"
    )


def test_agents_prepositions_and_days_of_the_month() -> None:
    # v18: a passive's cause that is no name is asked with a stranded "by"
    assert question_for("The blackout was caused by a fire at the substation.", "") == (
        "What was the blackout caused by?"
    )
    assert question_for("It was written by the poet John Keats.", "") == "Who was it written by?"
    # a preposition right after an intransitive verb stays at the end of the question
    assert question_for("It runs on Windows, macOS and Linux.", "Pellucid") == (
        "What does Pellucid run on?"
    )
    assert question_for("Lamar embarked on his career in music.", "Lamar") == (
        "What did Lamar embark on?"
    )
    # numbers counted in months are days of the month, a date
    assert question_for("The cup was held from 5 to 12 February 2023.", "") == (
        "When was the cup held?"
    )
    # verbs of estimating and reporting frame the claim, as "believe" and "say" do
    assert question_for("Planners estimate that it will carry 3 million passengers.", "") == (
        "How many passengers will it carry?"
    )
    # a fronted phrase under/despite/following frames the sentence
    assert question_for("Under the plan, the city opened 4 stations.", "") == (
        "How many stations did the city open?"
    )
    for question in (
        "Who won the cup?",
        "How many teams took part in the series?",
        "What does it run on?",
        "What was the blackout caused by?",
    ):
        assert is_question(question), question


def test_question_words_joined_before_one_clause_each_ask_it() -> None:
    # v18: "When and where was it held?" asks two parts, in the user's question and in ours
    assert question_parts("When and where was the cup held?") == [
        "When was the cup held",
        "Where was the cup held",
    ]
    assert [part.kind for part in asked_parts("When and by whom was it founded?")] == [
        "date",
        "name",
    ]
    assert [part.kind for part in asked_parts("What is it, and where and when was it held?")] == [
        "content",
        "place",
        "date",
    ]
    assert is_question("When and by whom was it founded?")
    assert question_form("When and where was it held?") == {"date": 1, "place": 1}


def test_a_sentence_supplying_several_circumstances_asks_for_each() -> None:
    # v18: a date, a place and an agent after the verb are all new information
    assert question_for("The cup was held on 5 May 2023 at the Lapland Arena.", "") == (
        "When and where was the cup held?"
    )
    assert question_for("PharmaCann was founded in 2014 by Theodore Scott.", "PharmaCann") == (
        "When and by whom was PharmaCann founded?"
    )
    # one circumstance asks as before
    assert question_for("It opened in 2004.", "") == "When did it open?"


def test_scene_setting_and_closing_descriptions_are_not_the_statement() -> None:
    # v18: a time phrase before the subject sets the scene; a closing "a/an ..." describes
    # the last noun, but a list's items are no description
    assert question_for(
        "In 2023 she won the Hjorthagen Prize, a prize for timber buildings.", ""
    ) == ("What did she win?")
    assert main_clause("It includes three rooms, a kitchen and a garden.") == (
        "It includes three rooms, a kitchen and a garden."
    )
    # only verbs that take a to-infinitive ask "to do": "opened to traffic" is no infinitive
    assert question_for("It was designed to carry 4 people.", "") == (
        "How many people was it designed to carry?"
    )
    assert "to do" not in question_for("The bridge opened to traffic.", "")


def test_the_local_judge_names_the_scripts_it_cannot_read():
    from ragas_ops.judge.local.scripts import strings_in, unreadable_scripts

    assert unreadable_scripts(["北京是中国的首都。"]) == ["Han (Chinese characters)"]
    assert unreadable_scripts(["東京は日本の首都です。"]) == [
        "Han (Chinese characters)",
        "Japanese kana",
    ]
    assert unreadable_scripts(["ما هي عاصمة مصر؟"]) == ["Arabic"]
    assert unreadable_scripts(["भारत की राजधानी"]) == ["Devanagari"]
    assert unreadable_scripts(["Zürich and Cairo (القاهرة) are cities of note"]) == []
    assert unreadable_scripts(["", "1234"]) == []
    data = {"question": "q", "contexts": ["a", ["b"]], "n": 3}
    assert list(strings_in(data)) == ["q", "a", "b"]
