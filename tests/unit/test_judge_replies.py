"""Reading a status-200 body: anything that is not a well-formed API reply is a BadReplyError
that says what was wrong; a well-formed one gives its choices, vectors and usage."""

from __future__ import annotations

import json

import pytest

from ragas_ops.judge.engine.wire import BadReplyError
from ragas_ops.judge.openai.replies import read_chat_reply, read_embedding_reply

JSON = "application/json"
GOOD_CHAT = {
    "choices": [{"message": {"content": '{"x": 1}'}, "finish_reason": "stop"}],
    "usage": {
        "prompt_tokens": 12,
        "completion_tokens": 3,
        "prompt_tokens_details": {"cached_tokens": 4},
    },
}


def test_a_well_formed_chat_reply_gives_its_choices_and_usage():
    reply = read_chat_reply(JSON, json.dumps(GOOD_CHAT).encode())
    assert [choice.content for choice in reply.choices] == ['{"x": 1}']
    assert reply.choices[0].finish_reason == "stop"
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (12, 3)
    assert reply.usage.cached_prompt_tokens == 4


@pytest.mark.parametrize(
    ("content_type", "body", "kind"),
    [
        ("text/html", b"<html><body>502 Bad Gateway</body></html>", "html"),
        (JSON, b"<!DOCTYPE html><html>", "html"),
        ("text/plain", b"upstream connect error", "text"),
        (JSON, json.dumps(GOOD_CHAT).encode()[:40], "truncated"),
        (JSON, b"", "not_json"),
        (JSON, b"[1, 2]", "wrong_type"),
        (JSON, b'{"object": "chat.completion"}', "missing_field"),
        (JSON, b'{"choices": []}', "wrong_type"),
        (JSON, b'{"choices": "none"}', "wrong_type"),
        (JSON, b'{"choices": [{"message": "hi"}]}', "wrong_type"),
        (JSON, b'{"choices": [{"message": {"content": 5}}]}', "wrong_type"),
        (JSON, b'{"choices": [{"message": {"content": "a"}}], "usage": "x"}', "wrong_type"),
        (
            JSON,
            b'{"choices": [{"message": {"content": "a"}}], "usage": {"prompt_tokens": "many"}}',
            "wrong_type",
        ),
    ],
)
def test_a_chat_body_that_is_no_api_reply_says_what_is_wrong(
    content_type: str, body: bytes, kind: str
) -> None:
    with pytest.raises(BadReplyError) as raised:
        read_chat_reply(content_type, body)
    assert raised.value.kind == kind
    assert str(raised.value)


def test_an_embeddings_reply_is_checked_the_same_way():
    good = {"data": [{"index": 1, "embedding": [0.5, 1]}, {"index": 0, "embedding": [1.0, 0]}]}
    reply = read_embedding_reply(JSON, json.dumps(good).encode())
    assert sorted(reply.vectors) == [0, 1]
    assert reply.vectors[1].tolist() == [0.5, 1.0]
    for bad, kind in (
        (b'{"object": "list"}', "missing_field"),
        (b'{"data": {"embedding": "none"}}', "wrong_type"),
        (b'{"data": [{"index": 0, "embedding": ["a"]}]}', "wrong_type"),
        (b'{"data": [{"embedding": [1.0]}]}', "wrong_type"),
    ):
        with pytest.raises(BadReplyError) as raised:
            read_embedding_reply(JSON, bad)
        assert raised.value.kind == kind
