"""`ragas-ops benchmark perturb`: labelled pairs built by changing good answers, scored with the
local judge end to end (the real model), and the bookkeeping of agreement."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragas_ops.cli.main import main
from ragas_ops.evaluation.perturb import (
    EVASION,
    begin_checks,
    clauses,
    incomplete_answers,
    neighbouring_answer,
    on_topic_background,
    padded_with,
    question_subject,
    sample_checks,
    summary,
    wrong_kind,
)

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "benchmarks"


def test_the_sample_checks_cover_every_metric_and_kind_of_change() -> None:
    checks = sample_checks()
    kinds = {(check.metric, check.kind) for check in checks}
    assert ("answer_relevance", "drop a part") in kinds
    assert ("answer_relevance", "pad costs less than a drop") in kinds
    assert ("answer_relevance", "reorder") in kinds
    assert ("answer_relevance", "wrong kind, right topic") in kinds
    assert ("faithfulness", "change a number") in kinds
    assert ("context_relevance", "a context that answers") in kinds
    # a changed side really differs from its base, except where "above zero" checks one row
    for check in checks:
        if check.expect != "above_zero":
            assert (check.base.answer, check.base.contexts) != (
                check.changed.answer,
                check.changed.contexts,
            ), check.kind


def test_begin_checks_use_question_turns_with_attributable_responses() -> None:
    checks = begin_checks([FIXTURES / "begin_tiny_dev.jsonl"])
    assert checks
    assert all(check.base.question and check.base.question.endswith("?") for check in checks)


def test_agreement_counts_ties_as_half_and_unscored_apart() -> None:
    records = [
        {"metric": "m", "source": "s", "kind": "k", "judge_agrees": 1.0, "overlap_agrees": 0.5},
        {"metric": "m", "source": "s", "kind": "k", "judge_agrees": 0.0, "overlap_agrees": 0.5},
        {"metric": "m", "source": "s", "kind": "k", "judge_agrees": None, "overlap_agrees": 1.0},
    ]
    [overall, group] = summary(records)["groups"]
    assert overall["kind"] == "all"
    assert group["judge"] == {"agreement": 0.5, "checks": 2, "unscored": 1}
    assert group["overlap"]["agreement"] == pytest.approx(2 / 3)


def test_perturb_with_the_local_judge(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("sentence_transformers")
    out = tmp_path / "perturb.json"
    args = ["benchmark", "perturb", "--judge", "local", "--cache", "none", "--no-progress"]
    code = main([*args, "--results", str(tmp_path / "rows.jsonl"), "--json", str(out)])
    assert code == 0
    payload = json.loads(out.read_text())
    groups = {(g["metric"], g["kind"]): g for g in payload["groups"]}
    # a dropped part, an evaded part and a refusal lower answer relevance on every sample topic
    for kind in ("drop a part", "evade a part", "refuse"):
        assert groups[("answer_relevance", f"samples: {kind}")]["judge"]["agreement"] == 1.0
    # the refund context and the others that answer their question are never "Insufficient"
    assert (
        groups[("context_relevance", "samples: a context that answers")]["judge"]["agreement"]
        == 1.0
    )
    assert "Perturbation checks" in capsys.readouterr().out
    rows = [json.loads(line) for line in (tmp_path / "rows.jsonl").read_text().splitlines()]
    assert len(rows) == payload["checks"]


KNOWLEDGE = (
    "The Millau Viaduct is a cable-stayed bridge near Millau in southern France; it opened to "
    "traffic on 16 December 2004, and its tallest mast reaches 343 metres."
)


def test_a_passage_splits_into_clauses_that_answer_questions_of_their_own() -> None:
    assert clauses(KNOWLEDGE) == [
        "The Millau Viaduct is a cable-stayed bridge near Millau in southern France",
        "it opened to traffic on 16 December 2004",
        "its tallest mast reaches 343 metres",
    ]


def test_a_wrong_kind_of_answer_holds_none_of_the_asked_kinds_on_the_topic() -> None:
    answer = "The Millau Viaduct opened to traffic on 16 December 2004."
    changed = wrong_kind("When did the Millau Viaduct open?", KNOWLEDGE, answer)
    # the first clause has a name and a place but no date: on the topic, the wrong kind
    assert changed == "The Millau Viaduct is a cable-stayed bridge near Millau in southern France"
    # a content question has no typed kind to get wrong; an answer without the kind has no pair
    assert wrong_kind("What is the Millau Viaduct?", KNOWLEDGE, answer) is None
    assert wrong_kind("When did it open?", KNOWLEDGE, "It is a bridge in France.") is None


def test_a_neighbouring_answer_is_the_knowledge_clause_the_answer_did_not_use() -> None:
    answer = "Its tallest mast reaches 343 metres."
    # the first of the clauses sharing fewest words with the answer (here none)
    assert neighbouring_answer(KNOWLEDGE, answer) == clauses(KNOWLEDGE)[0]
    assert neighbouring_answer(KNOWLEDGE, "The Millau Viaduct is a bridge near Millau.") == (
        "it opened to traffic on 16 December 2004"
    )
    assert neighbouring_answer("One clause only, about masts.", answer) is None


def test_padding_adds_a_sentence_of_its_own() -> None:
    assert padded_with("it opened in 2004", "Paris is big.") == "it opened in 2004. Paris is big."
    assert padded_with("It opened in 2004!", "Paris is big.") == "It opened in 2004! Paris is big."


PASSAGE = (
    "The Millau Viaduct is a cable-stayed bridge near Millau in southern France. It opened to "
    "traffic on 16 December 2004. Its tallest mast reaches 343 metres."
)
COMPLETE = (
    "The Millau Viaduct opened to traffic on 16 December 2004. Its tallest mast reaches 343 m."
)


def test_wikieval_like_poor_answers_supply_one_part_and_pad_or_evade() -> None:
    question = "When did the Millau Viaduct open and how tall is its tallest mast?"
    assert question_subject(question) == "Millau Viaduct"
    assert question_subject("How long do I have to return an item?") == "It"
    # the passage sentence the answer does not use: background on the same subject
    background = on_topic_background(PASSAGE, COMPLETE)
    assert (
        background == "The Millau Viaduct is a cable-stayed bridge near Millau in southern France."
    )
    pairs = incomplete_answers(question, PASSAGE, COMPLETE)
    kinds = [kind for kind, _ in pairs]
    # each of the two sentences left out in turn, three poor answers each
    assert len(pairs) == 6
    assert set(kinds) == {
        "one part, on-topic padding",
        "one part, not provided, padding",
        "one part, generic padding",
    }
    for kind, poor in pairs:
        assert poor != COMPLETE
        assert ("2004" in poor) != ("343" in poor), poor  # exactly one part supplied
        if "not provided" in kind:
            assert EVASION in poor
            assert background in poor
        if "generic" in kind:
            assert "Millau Viaduct is an important subject" in poor
    # a one-part question or a one-sentence answer has no such pairs
    assert incomplete_answers("When did it open?", PASSAGE, COMPLETE) == []
    assert incomplete_answers(question, PASSAGE, "It opened in 2004.") == []


def test_the_suite_holds_the_wikieval_like_family() -> None:
    kinds = {check.kind for check in sample_checks()}
    assert {
        "wikieval-like: one part, on-topic padding",
        "wikieval-like: one part, generic padding",
    } <= kinds
    assert "wikieval-like: one part, not provided, padding" in kinds
    checks = begin_checks([FIXTURES / "begin_tiny_dev.jsonl"])
    generic = [check for check in checks if check.kind == "wikieval-like: generic padding"]
    assert generic
    for check in generic:
        assert check.changed.answer.startswith(check.base.answer.rstrip(".!? "))
        assert check.changed.answer.endswith("is an important subject that has received a lot "
                                             "of attention.")  # fmt: skip
    for check in checks:
        if check.kind == "wikieval-like: not provided, padding":
            assert check.changed.answer.startswith(EVASION)
