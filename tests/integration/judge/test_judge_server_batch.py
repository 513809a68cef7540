"""The judge test double's Files and Batch APIs, spoken to with the official `openai` SDK.

Batches finish at the first look once `batch_seconds` have passed: tests that need a batch to
stay in progress give it an hour, the others poll until it is done (with a generous deadline,
so that no test depends on the machine's speed).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Final, Literal

import openai
import pytest
from openai.types import Batch
from ragas_ops_testing.judge_server import JudgeServer, JudgeServerConfig, parse_config

from ragas_ops.metrics.context_relevance import EXTRACT_PROMPT
from ragas_ops.metrics.faithfulness import STATEMENTS_PROMPT
from ragas_ops.prompts import Prompt
from tests.support import TEST_KEY

CHAT: Final = "/v1/chat/completions"
FINISHED = {"completed", "failed", "expired", "cancelled"}
AN_HOUR = 3600.0
CONTEXTS = [
    "The Millau Viaduct spans the valley of the Tarn near Millau in southern France. It opened "
    "to traffic on 16 December 2004.",
    "Its tallest mast reaches 343 metres above the base of the structure.",
]
ANSWERS = [
    "The Millau Viaduct opened to traffic on 16 December 2004.",
    "It is near Millau. Its tallest mast reaches 343 metres.",
    "The viaduct spans the valley of the Tarn.",
    "I don't know.",
]


def data_for(prompt: Prompt[Any], number: int) -> dict[str, Any]:
    """Row `number`'s input to `prompt`, as the metrics build it."""
    answer = ANSWERS[number % len(ANSWERS)]
    if prompt is EXTRACT_PROMPT:
        return {"question": f"What do you know about this? {answer}", "contexts": CONTEXTS}
    return {"question": "What is the Millau Viaduct?", "answer": answer}


def chat_request(
    prompt: Prompt[Any], data: Mapping[str, Any], model: str = "test-judge", **extra: Any
) -> dict[str, Any]:
    return {"model": model, "messages": prompt.messages(data), **extra}


def request_line(custom_id: str, body: Mapping[str, Any], url: str = CHAT) -> dict[str, Any]:
    return {"custom_id": custom_id, "method": "POST", "url": url, "body": body}


def statement_lines(count: int) -> list[dict[str, Any]]:
    """Request lines "row-0", "row-1", ... asking for the statements of an answer."""
    return [
        request_line(f"row-{i}", chat_request(STATEMENTS_PROMPT, data_for(STATEMENTS_PROMPT, i)))
        for i in range(count)
    ]


def jsonl(lines: list[Any]) -> bytes:
    return "".join(json.dumps(line) + "\n" for line in lines).encode()


@pytest.fixture
def connect() -> Iterator[Callable[..., openai.OpenAI]]:
    """SDK clients for servers, closed after the test."""
    clients: list[openai.OpenAI] = []

    def connect(server: JudgeServer, api_key: str = "test-key") -> openai.OpenAI:
        clients.append(openai.OpenAI(base_url=server.base_url, api_key=api_key, max_retries=0))
        return clients[-1]

    yield connect
    for client in clients:
        client.close()


def submit(
    client: openai.OpenAI,
    content: bytes,
    endpoint: Literal["/v1/chat/completions", "/v1/embeddings"] = CHAT,
    metadata: dict[str, str] | None = None,
) -> Batch:
    """Upload `content` as a batch input file and create a batch from it."""
    uploaded = client.files.create(file=("requests.jsonl", content), purpose="batch")
    return client.batches.create(
        input_file_id=uploaded.id,
        endpoint=endpoint,
        completion_window="24h",
        metadata=metadata,
    )


def wait_until_finished(
    client: openai.OpenAI, batch_id: str, deadline_seconds: float = 60
) -> Batch:
    """Poll the batch until it is finished; fail if it is not within the (generous) deadline."""
    deadline = time.monotonic() + deadline_seconds
    while True:
        batch = client.batches.retrieve(batch_id)
        if batch.status in FINISHED:
            return batch
        assert time.monotonic() < deadline, f"batch still {batch.status} at the deadline"
        time.sleep(0.02)


def read_lines(client: openai.OpenAI, file_id: str | None) -> list[dict[str, Any]]:
    """The JSON lines of a result file (none when there is no file)."""
    if file_id is None:
        return []
    return [json.loads(line) for line in client.files.content(file_id).text.splitlines()]


def ids(lines: list[dict[str, Any]]) -> list[str]:
    return [line["custom_id"] for line in lines]


# --- the happy path ------------------------------------------------------------------------


def test_every_request_of_a_batch_is_answered_once_like_a_synchronous_request(
    start_judge_server: Callable[..., JudgeServer], connect: Callable[..., openai.OpenAI]
) -> None:
    server = start_judge_server()  # the default batch_seconds: polled while in progress
    client = connect(server)
    rows = [
        (prompt, i) for i in range(len(ANSWERS)) for prompt in (STATEMENTS_PROMPT, EXTRACT_PROMPT)
    ]
    bodies = {
        f"{prompt.name}/{i}": chat_request(prompt, data_for(prompt, i), n=2 if i == 0 else 1)
        for prompt, i in rows
    }
    content = jsonl([request_line(custom_id, body) for custom_id, body in bodies.items()])

    created = submit(client, content, metadata={"partition": "2026-11-28"})
    assert created.status == "validating"
    assert created.metadata == {"partition": "2026-11-28"}
    assert client.files.content(created.input_file_id).read() == content
    batch = wait_until_finished(client, created.id)

    assert batch.status == "completed"
    assert batch.request_counts is not None
    assert batch.request_counts.model_dump() == {"total": 8, "completed": 8, "failed": 0}
    assert batch.error_file_id is None
    assert batch.completed_at is not None
    assert batch.in_progress_at is not None
    assert batch.model == "test-judge"
    output = read_lines(client, batch.output_file_id)
    assert sorted(ids(output)) == sorted(bodies)
    for line in output:
        prompt, number = next((p, i) for p, i in rows if line["custom_id"] == f"{p.name}/{i}")
        response = line["response"]
        assert line["error"] is None
        assert line["id"].startswith("batch_req_")
        assert response["status_code"] == 200
        assert response["request_id"]
        completion = response["body"]
        assert len(completion["choices"]) == (2 if number == 0 else 1)  # `n` is honoured
        for choice in completion["choices"]:
            prompt.parse(data_for(prompt, number), choice["message"]["content"])
        assert completion["usage"]["prompt_tokens"] > 0
        assert completion["usage"]["completion_tokens"] > 0
    assert batch.usage is not None
    assert batch.usage.input_tokens == sum(
        line["response"]["body"]["usage"]["prompt_tokens"] for line in output
    )

    stats = server.stats()
    assert stats["requests_by_endpoint"]["chat"] == 0  # batch lines are not chat requests
    assert (
        stats["requests"]
        == stats["requests_by_endpoint"]["files"] + stats["requests_by_endpoint"]["batches"]
    )
    assert stats["requests_by_prompt"] == {STATEMENTS_PROMPT.name: 4, EXTRACT_PROMPT.name: 4}
    assert stats["batches"] == {
        "created": 1,
        "completed": 1,
        "expired": 0,
        "failed": 0,
        "cancelled": 0,
        "requests_answered": 8,
        "requests_failed": 0,
        "requests_expired": 0,
        "files_uploaded": 1,
    }

    # The same body sent synchronously gets the same answer and usage.
    line = next(line for line in output if line["custom_id"] == f"{EXTRACT_PROMPT.name}/1")
    synchronous = client.chat.completions.create(**bodies[line["custom_id"]])
    batched = line["response"]["body"]
    assert synchronous.choices[0].message.content == batched["choices"][0]["message"]["content"]
    assert synchronous.usage is not None
    assert synchronous.usage.model_dump(exclude_none=True) == batched["usage"]


def test_an_embeddings_batch_is_answered_with_vectors(
    start_judge_server: Callable[..., JudgeServer], connect: Callable[..., openai.OpenAI]
) -> None:
    client = connect(start_judge_server(batch_seconds=0))
    body = {"model": "test-embedding", "input": ["the viaduct", "the bridge"], "dimensions": 8}
    content = jsonl([request_line("texts", body, url="/v1/embeddings")])

    batch = wait_until_finished(client, submit(client, content, endpoint="/v1/embeddings").id)

    [line] = read_lines(client, batch.output_file_id)
    vectors = [item["embedding"] for item in line["response"]["body"]["data"]]
    assert [len(vector) for vector in vectors] == [8, 8]


# --- requests that fail, batches that expire or fail -----------------------------------------


def test_a_bad_request_line_goes_to_the_error_file_with_its_400(
    start_judge_server: Callable[..., JudgeServer], connect: Callable[..., openai.OpenAI]
) -> None:
    client = connect(start_judge_server(batch_seconds=0))
    foreign = {"model": "test-judge", "messages": [{"role": "system", "content": "Be nice."}]}
    lines = [*statement_lines(2), request_line("foreign", foreign)]

    batch = wait_until_finished(client, submit(client, jsonl(lines)).id)

    assert batch.status == "completed"
    assert batch.request_counts is not None
    assert batch.request_counts.model_dump() == {"total": 3, "completed": 2, "failed": 1}
    assert ids(read_lines(client, batch.output_file_id)) == ["row-0", "row-1"]
    [error] = read_lines(client, batch.error_file_id)
    assert error["custom_id"] == "foreign"
    assert error["error"] is None
    assert error["response"]["status_code"] == 400
    assert error["response"]["body"]["error"]["code"] == "unknown_prompt"
    assert error["response"]["body"]["error"]["type"] == "invalid_request_error"


def failed_and_answered(client: openai.OpenAI) -> tuple[list[str], list[str]]:
    """The custom_ids of a 40-line batch in its error file and in its output file."""
    batch = wait_until_finished(client, submit(client, jsonl(statement_lines(40))).id)
    output = read_lines(client, batch.output_file_id)
    errors = read_lines(client, batch.error_file_id)
    assert batch.status == "completed"
    assert batch.request_counts is not None
    assert (batch.request_counts.completed, batch.request_counts.failed) == (
        len(output),
        len(errors),
    )
    for line in errors:
        assert line["response"]["status_code"] == 500
        assert line["response"]["body"]["error"]["type"] == "server_error"
    return ids(errors), ids(output)


def test_partial_failure_splits_the_lines_between_output_and_error_files(
    start_judge_server: Callable[..., JudgeServer], connect: Callable[..., openai.OpenAI]
) -> None:
    settings = {"batch_seconds": 0, "batch_failure_rate": 0.3, "seed": 11}
    server = start_judge_server(**settings)
    failed, answered = failed_and_answered(connect(server))

    assert failed
    assert answered
    assert not set(failed) & set(answered)
    assert sorted(failed + answered) == sorted(f"row-{i}" for i in range(40))
    assert server.stats()["batches"]["requests_failed"] == len(failed)
    assert server.stats()["batches"]["requests_answered"] == len(answered)
    again = start_judge_server(**settings)
    assert failed_and_answered(connect(again))[0] == failed  # the seed decides


def test_an_expiring_batch_answers_the_first_lines_and_reports_the_rest_expired(
    start_judge_server: Callable[..., JudgeServer], connect: Callable[..., openai.OpenAI]
) -> None:
    server = start_judge_server(batch_seconds=0, batch_expire_after=0.5)
    client = connect(server)

    batch = wait_until_finished(client, submit(client, jsonl(statement_lines(5))).id)

    assert batch.status == "expired"
    assert batch.expired_at is not None
    assert batch.request_counts is not None
    assert batch.request_counts.model_dump() == {"total": 5, "completed": 2, "failed": 3}
    assert ids(read_lines(client, batch.output_file_id)) == ["row-0", "row-1"]
    expired = read_lines(client, batch.error_file_id)
    assert ids(expired) == ["row-2", "row-3", "row-4"]
    for line in expired:
        assert line["response"] is None
        assert line["error"] == {
            "code": "batch_expired",
            "message": "This request could not be executed before the completion window expired.",
        }
    assert server.stats()["batches"]["expired"] == 1
    assert server.stats()["batches"]["requests_expired"] == 3


def test_an_injected_batch_failure_fails_the_whole_batch(
    start_judge_server: Callable[..., JudgeServer], connect: Callable[..., openai.OpenAI]
) -> None:
    server = start_judge_server(batch_seconds=0)
    server.update(batch_fail=True)
    client = connect(server)

    batch = wait_until_finished(client, submit(client, jsonl(statement_lines(3))).id)

    assert batch.status == "failed"
    assert batch.failed_at is not None
    assert batch.errors is not None
    assert batch.errors.data is not None
    assert [error.code for error in batch.errors.data] == ["batch_failed"]
    assert batch.output_file_id is None
    assert batch.error_file_id is None
    assert server.stats()["batches"]["failed"] == 1


def invalid_json(lines: list[dict[str, Any]]) -> bytes:
    return jsonl(lines[:1]) + b"{not json\n" + jsonl(lines[1:])


def duplicate_ids(lines: list[dict[str, Any]]) -> bytes:
    return jsonl([*lines, lines[0]])


def wrong_url(lines: list[dict[str, Any]]) -> bytes:
    return jsonl([*lines, {**lines[0], "custom_id": "elsewhere", "url": "/v1/embeddings"}])


def two_models(lines: list[dict[str, Any]]) -> bytes:
    other = {**lines[0], "custom_id": "other", "body": {**lines[0]["body"], "model": "other"}}
    return jsonl([*lines, other])


@pytest.mark.parametrize(
    ("make_file", "settings", "code", "line"),
    [
        (invalid_json, {}, "invalid_json_line", 2),
        (duplicate_ids, {}, "duplicate_custom_id", 4),
        (wrong_url, {}, "invalid_url", 4),
        (two_models, {}, "mismatched_model", 4),
        (jsonl, {"batch_max_requests": 2}, "too_many_requests", None),
        (jsonl, {"batch_max_bytes": 100}, "file_too_large", None),
    ],
    ids=["invalid-json", "duplicate-custom-id", "wrong-url", "two-models", "too-many", "too-big"],
)
def test_an_invalid_input_file_fails_the_batch_with_errors(
    start_judge_server: Callable[..., JudgeServer],
    connect: Callable[..., openai.OpenAI],
    make_file: Callable[[list[dict[str, Any]]], bytes],
    settings: dict[str, Any],
    code: str,
    line: int | None,
) -> None:
    server = start_judge_server(batch_seconds=0, **settings)
    client = connect(server)

    batch = wait_until_finished(client, submit(client, make_file(statement_lines(3))).id)

    assert batch.status == "failed"
    assert batch.errors is not None
    assert batch.errors.object == "list"
    assert batch.errors.data is not None
    assert [(error.code, error.line) for error in batch.errors.data] == [(code, line)]
    assert batch.output_file_id is None
    assert batch.error_file_id is None
    assert batch.request_counts is not None
    assert batch.request_counts.total == 0
    assert server.stats()["batches"]["requests_answered"] == 0


# --- cancelling and listing ------------------------------------------------------------------


def test_a_cancelled_batch_reports_every_request_cancelled(
    start_judge_server: Callable[..., JudgeServer], connect: Callable[..., openai.OpenAI]
) -> None:
    server = start_judge_server(batch_seconds=AN_HOUR)
    client = connect(server)
    created = submit(client, jsonl(statement_lines(3)))
    assert client.batches.retrieve(created.id).status == "in_progress"

    cancelling = client.batches.cancel(created.id)
    batch = client.batches.retrieve(created.id)

    assert cancelling.status == "cancelling"
    assert cancelling.cancelling_at is not None
    assert batch.status == "cancelled"
    assert batch.cancelled_at is not None
    assert batch.output_file_id is None
    assert batch.request_counts is not None
    assert batch.request_counts.model_dump() == {"total": 3, "completed": 0, "failed": 3}
    cancelled = read_lines(client, batch.error_file_id)
    assert ids(cancelled) == ["row-0", "row-1", "row-2"]
    assert {line["error"]["code"] for line in cancelled} == {"batch_cancelled"}
    assert server.stats()["batches"]["cancelled"] == 1
    with pytest.raises(openai.ConflictError, match="Cannot cancel a batch with status 'cancelled'"):
        client.batches.cancel(created.id)


def test_batches_are_listed_newest_first_page_by_page_with_their_metadata(
    start_judge_server: Callable[..., JudgeServer], connect: Callable[..., openai.OpenAI]
) -> None:
    client = connect(start_judge_server(batch_seconds=AN_HOUR))
    content = jsonl(statement_lines(1))
    created = [submit(client, content, metadata={"day": str(day)}).id for day in range(1, 4)]

    first_page = client.batches.list(limit=2)
    everything = list(client.batches.list(limit=2))  # the SDK follows `after` to the end
    after_the_newest = client.batches.list(limit=5, after=created[2])

    assert [batch.id for batch in first_page.data] == [created[2], created[1]]
    assert first_page.has_more
    assert [batch.id for batch in everything] == created[::-1]
    assert [batch.metadata for batch in everything] == [{"day": "3"}, {"day": "2"}, {"day": "1"}]
    assert {batch.status for batch in everything} == {"in_progress"}
    assert [batch.id for batch in after_the_newest.data] == [created[1], created[0]]
    assert not after_the_newest.has_more


# --- authentication, unknown ids, bad requests -----------------------------------------------


def test_files_and_batches_need_the_api_key(
    start_judge_server: Callable[..., JudgeServer], connect: Callable[..., openai.OpenAI]
) -> None:
    server = start_judge_server(api_key=TEST_KEY, batch_seconds=0)
    stranger = connect(server, api_key="sk-" + "wrong-0123456789abcdef")

    with pytest.raises(openai.AuthenticationError):
        stranger.files.create(file=("requests.jsonl", jsonl(statement_lines(1))), purpose="batch")
    with pytest.raises(openai.AuthenticationError):
        stranger.batches.list()

    assert server.stats()["auth_failures"] == 2
    assert server.stats()["batches"]["files_uploaded"] == 0
    owner = connect(server, api_key=TEST_KEY)
    assert (
        wait_until_finished(owner, submit(owner, jsonl(statement_lines(1))).id).status
        == "completed"
    )


def test_unknown_files_and_batches_are_404s_in_openai_shape(
    start_judge_server: Callable[..., JudgeServer], connect: Callable[..., openai.OpenAI]
) -> None:
    client = connect(start_judge_server())
    uploaded = client.files.create(file=("requests.jsonl", b"{}\n"), purpose="batch")
    assert client.files.retrieve(uploaded.id).bytes == 3
    assert client.files.delete(uploaded.id).deleted

    with pytest.raises(openai.NotFoundError) as missing:
        client.files.retrieve(uploaded.id)
    assert missing.value.body == {
        "message": f"No such File object: {uploaded.id}",
        "type": "invalid_request_error",
        "param": "id",
        "code": None,
    }
    for call in (
        lambda: client.files.content("file-nothing"),
        lambda: client.files.delete("file-nothing"),
        lambda: client.batches.retrieve("batch_nothing"),
        lambda: client.batches.cancel("batch_nothing"),
        lambda: client.batches.create(
            input_file_id=uploaded.id, endpoint=CHAT, completion_window="24h"
        ),
    ):
        with pytest.raises(openai.NotFoundError):
            call()


def test_bad_uploads_and_batch_requests_are_refused(
    start_judge_server: Callable[..., JudgeServer], connect: Callable[..., openai.OpenAI]
) -> None:
    client = connect(start_judge_server())
    uploaded = client.files.create(
        file=("requests.jsonl", jsonl(statement_lines(1))), purpose="batch"
    )

    with pytest.raises(openai.BadRequestError, match="purpose"):
        client.files.create(file=("data.jsonl", b"{}\n"), purpose="fine-tune")
    with pytest.raises(openai.BadRequestError, match="endpoint"):
        client.batches.create(
            input_file_id=uploaded.id, endpoint="/v1/responses", completion_window="24h"
        )
    with pytest.raises(openai.BadRequestError, match="metadata"):
        client.batches.create(
            input_file_id=uploaded.id,
            endpoint=CHAT,
            completion_window="24h",
            metadata={"k": "v" * 513},
        )


# --- settings --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "setting",
    [
        {"batch_seconds": -1.0},
        {"batch_failure_rate": 1.5},
        {"batch_expire_after": -0.1},
        {"batch_max_requests": 0},
        {"batch_max_bytes": 0},
    ],
)
def test_batch_settings_are_validated(
    setting: dict[str, Any], start_judge_server: Callable[..., JudgeServer]
) -> None:
    with pytest.raises(ValueError, match=next(iter(setting))):
        JudgeServer(JudgeServerConfig(**setting))
    with pytest.raises(ValueError, match=next(iter(setting))):
        start_judge_server().update(**setting)


def test_batch_command_line_arguments_become_settings() -> None:
    config = parse_config(
        [
            "--batch-seconds", "1.5", "--batch-failure-rate", "0.2", "--batch-expire-after", "0.5",
            "--batch-fail", "--batch-max-requests", "10", "--batch-max-bytes", "2048",
        ]
    )  # fmt: skip

    assert (
        config.batch_seconds,
        config.batch_failure_rate,
        config.batch_expire_after,
        config.batch_fail,
        config.batch_max_requests,
        config.batch_max_bytes,
    ) == (1.5, 0.2, 0.5, True, 10, 2048)
    assert parse_config([]).batch_expire_after is None


def test_resetting_the_stats_resets_the_batch_counts(
    start_judge_server: Callable[..., JudgeServer], connect: Callable[..., openai.OpenAI]
) -> None:
    server = start_judge_server(batch_seconds=0)
    client = connect(server)
    wait_until_finished(client, submit(client, jsonl(statement_lines(2))).id)
    assert server.stats()["batches"]["requests_answered"] == 2

    server.reset_stats()

    assert set(server.stats()["batches"].values()) == {0}
