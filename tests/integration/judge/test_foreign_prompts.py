"""The test double answers the reference library's prompts (ragas 0.4.3) in the shapes it parses.

The request bodies under tests/data/ragas_prompts/ are what ragas 0.4.3 `evaluate()` sent to
the test server for one WikiEval row; ragas itself is not needed (nor installed) to run this.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from ragas_ops_testing.judge_server import JudgeServer

PROMPTS = Path(__file__).resolve().parents[2] / "data" / "ragas_prompts"
ANSWER_SENTENCES = [
    "PharmaCann was founded in 2014 by Theodore Scott.",
    "Its headquarters is located in the state of Illinois.",
]


@pytest.fixture
def server(start_judge_server: Callable[..., JudgeServer]) -> JudgeServer:
    return start_judge_server()


def captured(name: str) -> dict[str, Any]:
    body: dict[str, Any] = json.loads((PROMPTS / f"{name}.json").read_text(encoding="utf-8"))
    return body


def prompt_text(body: dict[str, Any]) -> str:
    text: str = body["messages"][0]["content"]
    return text


def with_text(body: dict[str, Any], text: str) -> dict[str, Any]:
    return {**body, "messages": [{"role": "user", "content": text}]}


def post(server: JudgeServer, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(
        f"{server.base_url}/chat/completions",
        data=json.dumps(body).encode("utf-8"),
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as reply:
            return reply.status, json.load(reply)
    except urllib.error.HTTPError as error:
        return error.code, json.load(error)


def replies(server: JudgeServer, body: dict[str, Any]) -> list[str]:
    status, payload = post(server, body)
    assert status == 200, payload
    return [choice["message"]["content"] for choice in payload["choices"]]


def test_statement_generation_gets_one_statement_per_sentence(server: JudgeServer) -> None:
    (content,) = replies(server, captured("faithfulness_statements"))

    assert json.loads(content) == {"statements": ANSWER_SENTENCES}


def test_statement_verdicts_follow_the_statements_with_a_reason_and_0_or_1(
    server: JudgeServer,
) -> None:
    (content,) = replies(server, captured("faithfulness_nli"))

    verdicts = json.loads(content)["statements"]
    assert [item["statement"] for item in verdicts] == ANSWER_SENTENCES
    assert all(set(item) == {"statement", "reason", "verdict"} for item in verdicts)
    assert all(isinstance(item["reason"], str) and item["reason"] for item in verdicts)
    assert [item["verdict"] for item in verdicts] == [1, 1]  # both are in the context


def test_a_statement_with_a_number_not_in_the_context_gets_verdict_0(server: JudgeServer) -> None:
    body = captured("faithfulness_nli")
    altered = prompt_text(body).replace("founded in 2014 by", "founded in 1999 by")

    (content,) = replies(server, with_text(body, altered))

    assert [item["verdict"] for item in json.loads(content)["statements"]] == [0, 1]


def test_question_generation_gives_a_question_and_a_noncommittal_flag(
    server: JudgeServer,
) -> None:
    (content,) = replies(server, captured("answer_relevancy_question"))

    reply = json.loads(content)
    assert set(reply) == {"question", "noncommittal"}
    assert reply["question"].endswith("?")
    assert "PharmaCann" in reply["question"]
    assert reply["noncommittal"] == 0


def test_question_generation_gives_distinct_questions_for_n_samples(server: JudgeServer) -> None:
    contents = replies(server, {**captured("answer_relevancy_question"), "n": 3})

    questions = [json.loads(content)["question"] for content in contents]
    assert len(set(questions)) == 3


def test_a_refusal_is_flagged_noncommittal(server: JudgeServer) -> None:
    body = captured("answer_relevancy_question")
    text = prompt_text(body)
    refusal = text.replace(json.dumps(" ".join(ANSWER_SENTENCES)), json.dumps("I don't know."))
    assert refusal != text

    (content,) = replies(server, with_text(body, refusal))

    assert json.loads(content)["noncommittal"] == 1


@pytest.mark.parametrize(
    "name", ["nv_context_relevance_template1", "nv_context_relevance_template2"]
)
def test_context_relevance_templates_get_a_bare_rating(server: JudgeServer, name: str) -> None:
    body = captured(name)
    (relevant,) = replies(server, body)
    context = prompt_text(body).split("### Context: ", 1)[1].split("\n\nDo not try", 1)[0]
    off_topic = prompt_text(body).replace(context, "Bananas grow best in warm tropical climates.")
    (irrelevant,) = replies(server, with_text(body, off_topic))

    assert relevant == "2"
    assert irrelevant == "0"


def test_requests_are_counted_under_the_ragas_prompt_names(server: JudgeServer) -> None:
    for name in ("faithfulness_statements", "faithfulness_nli", "nv_context_relevance_template1"):
        replies(server, captured(name))

    counted = server.stats()["requests_by_prompt"]
    assert server.stats()["answered_by_endpoint"] == {"chat": 3, "embeddings": 0}
    assert counted == {
        "ragas.faithfulness.statements": 1,
        "ragas.faithfulness.nli": 1,
        "ragas.nv_context_relevance.template1": 1,
    }


def test_a_recognised_prompt_without_its_input_is_refused(server: JudgeServer) -> None:
    body = captured("faithfulness_statements")
    cut = prompt_text(body).split("\nNow perform the same", 1)[0]

    status, payload = post(server, with_text(body, cut))

    assert status == 400
    assert "cannot read this ragas prompt" in payload["error"]["message"]


def test_other_plain_text_prompts_are_still_refused(server: JudgeServer) -> None:
    status, payload = post(server, with_text(captured("faithfulness_nli"), "Write a poem."))

    assert status == 400
    assert payload["error"]["code"] == "unknown_prompt"
