"""The test judge's requests, replies and faults: reading a request, answering it, and the
malformed answers it gives on purpose."""

from __future__ import annotations

import base64
import hmac
import json
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from ragas_ops.prompts import OutputParseError, Prompt, decode_data
from ragas_ops.text import (
    estimate_tokens,
)
from ragas_ops_testing.heuristics import (
    MAX_EMBEDDING_DIM,
    PROMPTS_BY_SYSTEM,
    hashed_embedding,
    heuristic_reply,
)
from ragas_ops_testing.judge_server.config import (
    CHAT_MODEL,
    EMBEDDING_MODEL,
    SERVICE_TIERS,
    JudgeServerConfig,
)
from ragas_ops_testing.judge_server.models import check_request, reasoning_tokens, served_model

MAX_BODY_BYTES = 64 * 1024 * 1024
_MAX_N = 128
MALFORMED_KINDS = ("truncated", "prose", "wrong_shape")
_PROSE = (
    "I have read the input carefully. On the whole it seems reasonable to me, but I would "
    "rather explain my view in plain words than fill in a format."
)


@dataclass
class Reply:
    """An HTTP reply: status, JSON payload (or bytes: a file's content) and extra headers."""

    status: int
    payload: Any
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str = "application/json"
    reset_after_headers: bool = False
    """Send the headers and part of the body, then reset the connection."""

    def body(self) -> bytes:
        if isinstance(self.payload, bytes):
            return self.payload
        return json.dumps(self.payload, ensure_ascii=False).encode("utf-8")


class BadRequest(Exception):
    """A request the double refuses with HTTP 400 (OpenAI's `invalid_request_error`)."""

    def __init__(self, message: str, code: str | None = None) -> None:
        super().__init__(message)
        self.code = code


def error_reply(
    status: int,
    message: str,
    kind: str,
    code: str | None = None,
    headers: Mapping[str, str] | None = None,
    *,
    param: str | None = None,
) -> Reply:
    """An OpenAI-style error reply (`param`: the request's parameter it is about)."""
    body = {"error": {"message": message, "type": kind, "param": param, "code": code}}
    return Reply(status, body, dict(headers or {}))


def retry_headers(seconds: float) -> dict[str, str]:
    """Retry-After in whole seconds (rounded up) and OpenAI's finer `retry-after-ms`."""
    return {
        "retry-after": str(math.ceil(seconds)),
        "retry-after-ms": str(math.ceil(seconds * 1000)),
    }


@dataclass(frozen=True)
class Faults:
    """What goes wrong with one request, decided before it is served."""

    timeout: bool = False
    rate_429: bool = False
    server_error: int | None = None
    malformed: str | None = None
    bad_reply: str | None = None
    """A reply that is no API reply (a value of `BAD_REPLY_RATES`), or None."""


@dataclass
class ChatJob:
    """A validated chat request with its answers already computed (they are cheap)."""

    model: str
    prompt: Prompt[Any]
    contents: list[str]
    prompt_tokens: int
    prefix: str = ""
    """The first message: the part a provider's prompt cache can reuse."""
    schema_tokens: int = 0
    """The `response_format` sent: counted at admission, as OpenAI's limiter does."""
    max_tokens: int | None = None
    """`max_tokens` (or `max_completion_tokens`) per choice; a longer answer is cut there."""
    choices: int = 1
    cut_short: bool = False
    """An answer was longer than `max_tokens`: it stops there (`finish_reason: length`)."""
    service_tier: str | None = None
    """The `service_tier` the request named (None: none)."""
    reasoning: list[int] = field(default_factory=list)
    """The hidden reasoning tokens of each choice (a classic model: none)."""

    @property
    def reserved_completion(self) -> int:
        """Completion tokens counted at admission, whatever the reply then uses."""
        return (self.max_tokens or 0) * self.choices

    def admission_cost(self, admission: str) -> int:
        """What the tokens bucket is charged at admission: the messages and the schema in
        `response_format`, and, as OpenAI counts, `max_tokens` for each choice (kept, not
        given back when the answer is shorter)."""
        reserved = self.reserved_completion if admission == "max_tokens" else 0
        return self.prompt_tokens + self.schema_tokens + reserved


@dataclass
class EmbeddingJob:
    model: str
    vectors: list[npt.NDArray[np.float64]]
    base64: bool
    tokens: int

    def admission_cost(self, admission: str) -> int:
        return self.tokens


def _message_text(message: Mapping[str, Any]) -> str:
    """A message's content: a string, or the text of its parts."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


def chat_job(request: Mapping[str, Any], settings: JudgeServerConfig) -> ChatJob:
    """Validate a chat request (as strictly as the model it names, see `models`), recognise its
    prompt and compute the answers for its choices."""
    model = served_model(
        str(request.get("model") or CHAT_MODEL), settings.model_aliases, settings.shutdown_dates
    )
    effort = check_request(model, request)
    ignore_n = settings.ignore_n
    messages = request.get("messages")
    if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
        raise BadRequest("'messages' must be a list of message objects")
    if request.get("stream"):
        raise BadRequest("this test double does not stream; send stream=false")
    n = request.get("n") or 1
    if not isinstance(n, int) or not 1 <= n <= _MAX_N:
        raise BadRequest(f"'n' must be an integer in [1, {_MAX_N}]")
    # Like a sampling model, a request with a different `seed` gets different samples.
    seed = request.get("seed")
    first = seed if isinstance(seed, int) else 0
    choices = range(first, first + (1 if ignore_n else n))
    try:
        prompt = _recognise(messages)
    except BadRequest:  # not ours: perhaps the reference library's (side-by-side benchmarks)
        foreign = _foreign_chat(messages, choices)
        if foreign is None:
            raise
        prompt, contents = foreign
    else:
        data = _first_user_data(messages)
        contents = [_answer(prompt, data, sample) for sample in choices]
    if model.id.endswith(LENIENT_SUFFIX):
        contents = [lenient(content) for content in contents]
    prompt_tokens = sum(estimate_tokens(_message_text(message)) + 4 for message in messages)
    prefix = _message_text(messages[0]) if messages else ""
    response_format = request.get("response_format")
    schema_tokens = 0 if response_format is None else estimate_tokens(json.dumps(response_format))
    max_tokens = _max_tokens(request)
    service_tier = request.get("service_tier")
    if service_tier is not None and service_tier not in SERVICE_TIERS:
        raise BadRequest(f"'service_tier' must be one of {list(SERVICE_TIERS)}", "invalid_value")
    prompt_text = "".join(_message_text(message) for message in messages)
    reasoning = [reasoning_tokens(effort, prompt_text, sample) for sample in choices]
    if settings.reason_to_limit and model.reasoning and max_tokens is not None:
        reasoning = [max_tokens] * len(choices)  # it thinks until the room is spent
    whole = contents
    if max_tokens is not None:
        # Reasoning comes out of the budget first: what is left is the visible answer's.
        reasoning = [min(spent, max_tokens) for spent in reasoning]
        contents = [
            "" if spent >= max_tokens else _cut_to(content, max_tokens - spent)
            for content, spent in zip(contents, reasoning, strict=True)
        ]
    return ChatJob(
        model.id,
        prompt,
        contents,
        prompt_tokens,
        prefix,
        schema_tokens,
        max_tokens,
        len(contents),
        cut_short=contents != whole,
        service_tier=service_tier,
        reasoning=reasoning,
    )


def _max_tokens(request: Mapping[str, Any]) -> int | None:
    value = request.get("max_completion_tokens", request.get("max_tokens"))
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise BadRequest("'max_tokens' must be a positive integer")
    return value


def _cut_to(content: str, max_tokens: int) -> str:
    """An answer longer than `max_tokens` stops there, as a model's does (and is then not
    valid JSON: the client sees `finish_reason: length` and a cut reply)."""
    if estimate_tokens(content) <= max_tokens:
        return content
    cut = content
    while cut and estimate_tokens(cut) > max_tokens:
        cut = cut[: int(len(cut) * 0.9)]
    return cut


def _recognise(messages: list[dict[str, Any]]) -> Prompt[Any]:
    system = next((m for m in messages if m.get("role") in ("system", "developer")), None)
    prompt = PROMPTS_BY_SYSTEM.get(_message_text(system)) if system is not None else None
    if prompt is None:
        raise BadRequest(
            "This is a deterministic test double of an LLM judge: it only answers ragas-ops "
            "prompts, and the system message matches none of them.",
            "unknown_prompt",
        )
    return prompt


def _foreign_chat(
    messages: list[dict[str, Any]], choices: range
) -> tuple[Prompt[Any], list[str]] | None:
    """The reference library's prompt and its answers, or None (see `foreign_prompts`)."""
    # Imported here: that module reuses this one's heuristics.
    from ragas_ops_testing.foreign_prompts import answer_foreign_prompt

    try:
        return answer_foreign_prompt(messages, choices)
    except ValueError as error:
        raise BadRequest(f"the test double cannot read this ragas prompt: {error}") from None


def _first_user_data(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The row data, from the first user message (later ones are repair requests)."""
    user = next((m for m in messages if m.get("role") == "user"), None)
    if user is None:
        raise BadRequest("the conversation has no user message with the prompt's input")
    try:
        return decode_data(_message_text(user))
    except ValueError as error:
        raise BadRequest(f"the first user message is not 'Input: <JSON object>': {error}") from None


LENIENT_SUFFIX = "-lenient"
"""A chat model whose name ends so (`test-judge-lenient`) is a judge biased on purpose: it
finds every statement supported (faithfulness' verdicts all `yes`), as a lenient model would;
its other answers are the test judge's. A change of judge whose raw series jumps, for the
corrected means' tests."""


def lenient(content: str) -> str:
    """A reply with every verdict turned to `yes` (other replies unchanged)."""
    try:
        reply = json.loads(content)
    except ValueError:
        return content
    if not isinstance(reply, dict) or not isinstance(reply.get("verdicts"), list):
        return content
    for verdict in reply["verdicts"]:
        if isinstance(verdict, dict) and "verdict" in verdict:
            verdict["verdict"] = "yes"
    return json.dumps(reply)


def _answer(prompt: Prompt[Any], data: Mapping[str, Any], sample: int) -> str:
    """The heuristic's reply, checked with the prompt's own parser before it is sent."""
    try:
        content = heuristic_reply(prompt, data, sample)
        prompt.parse(data, content)
    except (KeyError, TypeError, ValueError) as error:  # OutputParseError is a ValueError
        reason = "cannot answer" if isinstance(error, OutputParseError) else "bad input for"
        raise BadRequest(f"the test double {reason} prompt {prompt.id}: {error}") from None
    return content


def embedding_job(request: Mapping[str, Any], default_dim: int) -> EmbeddingJob:
    raw = request.get("input")
    texts = [raw] if isinstance(raw, str) else raw
    if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
        raise BadRequest("'input' must be a non-empty string or list of strings")
    if not all(texts):
        raise BadRequest("'$.input' is invalid: an input is an empty string")
    dim = request.get("dimensions") or default_dim
    if not isinstance(dim, int) or not 1 <= dim <= MAX_EMBEDDING_DIM:
        raise BadRequest(f"'dimensions' must be an integer in [1, {MAX_EMBEDDING_DIM}]")
    encoding = request.get("encoding_format") or "float"
    if encoding not in ("float", "base64"):
        raise BadRequest("'encoding_format' must be 'float' or 'base64'")
    return EmbeddingJob(
        str(request.get("model") or EMBEDDING_MODEL),
        [hashed_embedding(text, dim) for text in texts],
        encoding == "base64",
        sum(estimate_tokens(text) for text in texts),
    )


def malform(content: str, kind: str) -> str:
    """Broken output of the given kind, as weak models and cut-off replies produce."""
    if kind == "truncated":
        return content[: len(content) // 2]
    if kind == "prose":
        return _PROSE
    return json.dumps({"result": json.loads(content)})  # valid JSON, wrong shape


def served_tier(job: ChatJob, settings: JudgeServerConfig) -> str | None:
    """The tier that serves a request: the one it named, `auto` as the project's; None when
    it named none (the reply then says nothing, as many compatible servers do)."""
    if job.service_tier == "auto":
        return settings.auto_tier
    return job.service_tier


def chat_payload(
    job: ChatJob,
    contents: list[str],
    truncated: bool,
    number: int,
    cached_tokens: int = 0,
    *,
    service_tier: str | None = None,
) -> Any:
    reasoning = sum(job.reasoning)
    completion_tokens = sum(estimate_tokens(content) for content in contents) + reasoning
    choices = [
        {
            "index": index,
            "message": {"role": "assistant", "content": content, "refusal": None},
            "logprobs": None,
            "finish_reason": "length" if truncated else "stop",
        }
        for index, content in enumerate(contents)
    ]
    payload = {
        "id": f"chatcmpl-testdouble{number:08d}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": job.model,
        "system_fingerprint": "fp_ragas_ops_test_double",
        "choices": choices,
        "usage": {
            "prompt_tokens": job.prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": job.prompt_tokens + completion_tokens,
            "prompt_tokens_details": {"cached_tokens": cached_tokens},
            "completion_tokens_details": {"reasoning_tokens": reasoning},
        },
    }
    if service_tier is not None:
        payload["service_tier"] = service_tier
    return payload


def embedding_payload(job: EmbeddingJob) -> Any:
    def encode(vector: npt.NDArray[np.float64]) -> Any:
        if job.base64:
            return base64.b64encode(vector.astype("<f4").tobytes()).decode("ascii")
        return [float(value) for value in vector]

    return {
        "object": "list",
        "data": [
            {"object": "embedding", "index": index, "embedding": encode(vector)}
            for index, vector in enumerate(job.vectors)
        ],
        "model": job.model,
        "usage": {"prompt_tokens": job.tokens, "total_tokens": job.tokens},
    }


def model_payload(name: str, settings: JudgeServerConfig) -> Reply:
    """`GET /v1/models/{id}`: the model, with its `shutdown_date` when it has one; a retired
    model is 404 `model_not_found`, as every request naming it."""
    model = served_model(name, settings.model_aliases, settings.shutdown_dates)
    if model.retired:
        message = f"The model `{name}` does not exist or you do not have access to it."
        return error_reply(404, message, "invalid_request_error", "model_not_found")
    return Reply(200, model.description())


def models_payload() -> Any:
    return {
        "object": "list",
        "data": [
            {"id": model, "object": "model", "created": 0, "owned_by": "ragas-ops-test-double"}
            for model in (CHAT_MODEL, EMBEDDING_MODEL)
        ],
    }


def _mask(key: str) -> str:
    """OpenAI's way of echoing a wrong key: first 3 and last 4 characters, stars between."""
    if len(key) <= 7:
        return "*" * len(key)
    return key[:3] + "*" * (len(key) - 7) + key[-4:]


def check_auth(expected: str | None, authorization: str | None) -> Reply | None:
    if expected is None:
        return None
    scheme, _, provided = (authorization or "").partition(" ")
    provided = provided.strip() if scheme.lower() == "bearer" else ""
    if hmac.compare_digest(provided.encode(), expected.encode()):
        return None
    if not provided:
        message = (
            "You didn't provide an API key. You need to provide your API key in an "
            "Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY)."
        )
        return error_reply(401, message, "invalid_request_error")
    message = (
        f"Incorrect API key provided: {_mask(provided)}. This is a test double; use the key "
        "it was started with."
    )
    return error_reply(401, message, "invalid_request_error", "invalid_api_key")
