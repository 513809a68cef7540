"""A TEST DOUBLE of Amazon Bedrock's runtime API on 127.0.0.1, which boto3 reaches through its
`endpoint_url`.

It answers the ragas-ops prompts as the OpenAI-compatible test judge does (its `App` serves
each request after this module has played Bedrock's part), and plays Bedrock as it documents
itself, strictly:

- `POST /model/{modelId}/converse` (the Converse API, REST-JSON): `system`, `messages` of text
  blocks, `inferenceConfig` (`maxTokens`, `temperature`), and a `toolConfig` whose forced tool
  (`toolChoice.tool.name`) must be one of its tools, answered with a `toolUse` block
  (`stopReason: tool_use`); without one, a text block (`end_turn`); cut at `maxTokens`:
  `max_tokens`. `usage` holds `inputTokens`, `outputTokens`, `totalTokens`;
- `POST /model/{modelId}/invoke` with Titan Text Embeddings v2's body (`inputText`,
  `dimensions` 256/512/1024, `normalize`): `embedding` and `inputTextTokenCount`;
- every request must be signed (`Authorization: AWS4-HMAC-SHA256 Credential=<key id>/...`, the
  key id it knows; the signature itself is not checked) else 403 `UnrecognizedClientException`;
  a model it does not serve: 404 `ResourceNotFoundException`; a body Converse refuses: 400
  `ValidationException`;
- errors as botocore reads them: the status, the `x-amzn-ErrorType` header and `{"message"}`;
- over its stated quota (`rpm`, `tpm`): 429 `ThrottlingException`, with no retry-after and no
  rate-limit header of any kind (Bedrock sends none, on errors or on answers).
"""

from __future__ import annotations

import json
import re
import threading
import uuid
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlsplit

from ragas_ops_testing.double_server import DoubleServer
from ragas_ops_testing.judge_server import JudgeServerConfig
from ragas_ops_testing.judge_server.app import App
from ragas_ops_testing.judge_server.replies import Reply

_MODEL_PATH = re.compile(r"^/model/([^/]+)/(converse|invoke)$")
_CREDENTIAL = re.compile(r"^AWS4-HMAC-SHA256 Credential=([^/]+)/")
TITAN_DIMENSIONS = (256, 512, 1024)
_ERROR_NAMESPACE = ":http://internal.amazon.com/coral/com.amazon.bedrock/"


@dataclass
class BedrockDoubleConfig:
    """The account the double plays."""

    chat_models: tuple[str, ...] = ("anthropic.claude-3-5-haiku-20241022-v1:0",)
    embedding_models: tuple[str, ...] = ("amazon.titan-embed-text-v2:0",)
    access_key_id: str = field(default="AKIATESTBEDROCK", repr=False)
    rpm: int | None = None
    """The account's stated quota for the model (requests per minute); None: unlimited."""
    tpm: int | None = None
    burst_seconds: float = 1.0
    seed: int = 0


class BedrockDouble:
    """The double's behaviour (`handle`) and its counts; `with BedrockDouble(...) as double:`
    serves it, `double.endpoint` is the `endpoint_url` to give boto3."""

    def __init__(self, config: BedrockDoubleConfig | None = None) -> None:
        self.config = config or BedrockDoubleConfig()
        self._app = App(
            JudgeServerConfig(
                rpm=self.config.rpm,
                tpm=self.config.tpm,
                burst_seconds=self.config.burst_seconds,
                seed=self.config.seed,
            )
        )
        self._lock = threading.Lock()
        self.counts: Counter[str] = Counter()
        """`requests`, `throttled`, `converse`, `invoke`, `input_tokens`, `output_tokens`,
        `embedding_tokens`, `refused`."""
        self._server = DoubleServer(self.handle)

    def __enter__(self) -> BedrockDouble:
        self._server.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.stop()

    @property
    def endpoint(self) -> str:
        return self._server.url

    def handle(self, method: str, path: str, headers: Mapping[str, str], body: bytes) -> Reply:
        self._count("requests")
        found = _MODEL_PATH.match(urlsplit(path).path)
        if method != "POST" or found is None:
            return _error(404, "UnknownOperationException", "Unknown operation")
        signed = _CREDENTIAL.match(headers.get("authorization", ""))
        if signed is None or signed.group(1) != self.config.access_key_id:
            return _error(
                403,
                "UnrecognizedClientException",
                "The security token included in the request is invalid.",
            )
        model, operation = unquote(found.group(1)), found.group(2)
        try:
            request = json.loads(body or b"{}")
        except ValueError:
            return _error(400, "ValidationException", "the body is not JSON")
        if operation == "converse":
            return self._converse(model, request)
        return self._invoke(model, request)

    # -- Converse ----------------------------------------------------------------------------

    def _converse(self, model: str, request: Mapping[str, Any]) -> Reply:
        if model not in self.config.chat_models:
            return _error(404, "ResourceNotFoundException", f"Could not resolve the model {model}.")
        try:
            inner, tool = _as_chat_completion(model, request)
        except ValueError as problem:
            self._count("refused")
            return _error(400, "ValidationException", str(problem))
        reply = self._serve("/v1/chat/completions", inner)
        if reply.status != 200:
            return reply
        choice = reply.payload["choices"][0]
        usage = reply.payload["usage"]
        content = choice["message"]["content"]
        cut = choice.get("finish_reason") == "length"
        if tool is not None and not cut:
            block: dict[str, Any] = {
                "toolUse": {
                    "toolUseId": "tooluse_" + uuid.uuid4().hex[:22],
                    "name": tool,
                    "input": json.loads(content),
                }
            }
            stop = "tool_use"
        else:
            block, stop = {"text": content}, "max_tokens" if cut else "end_turn"
        with self._lock:
            self.counts["converse"] += 1
            self.counts["input_tokens"] += usage["prompt_tokens"]
            self.counts["output_tokens"] += usage["completion_tokens"]
        return Reply(
            200,
            {
                "output": {"message": {"role": "assistant", "content": [block]}},
                "stopReason": stop,
                "usage": {
                    "inputTokens": usage["prompt_tokens"],
                    "outputTokens": usage["completion_tokens"],
                    "totalTokens": usage["prompt_tokens"] + usage["completion_tokens"],
                },
                "metrics": {"latencyMs": 1},
            },
        )

    # -- InvokeModel (Titan Text Embeddings v2) ------------------------------------------------

    def _invoke(self, model: str, request: Mapping[str, Any]) -> Reply:
        if model not in self.config.embedding_models:
            return _error(404, "ResourceNotFoundException", f"Could not resolve the model {model}.")
        text = request.get("inputText")
        dimensions = request.get("dimensions", 1024)
        if not isinstance(text, str) or not text or dimensions not in TITAN_DIMENSIONS:
            self._count("refused")
            return _error(
                400,
                "ValidationException",
                "Malformed input request: inputText must be a non-empty string, dimensions one "
                "of 256, 512, 1024",
            )
        inner = {"model": model, "input": [text], "dimensions": dimensions}
        reply = self._serve("/v1/embeddings", inner)
        if reply.status != 200:
            return reply
        tokens = reply.payload["usage"]["prompt_tokens"]
        with self._lock:
            self.counts["invoke"] += 1
            self.counts["embedding_tokens"] += tokens
        return Reply(
            200,
            {"embedding": reply.payload["data"][0]["embedding"], "inputTextTokenCount": tokens},
        )

    def _serve(self, route: str, request: Mapping[str, Any]) -> Reply:
        inner = self._app.handle(
            "POST", route, None, json.dumps(request).encode(), "application/json"
        )
        assert inner is not None  # the inner judge drops replies only when stopping
        if inner.status == 429:
            self._count("throttled")
            return _error(
                429, "ThrottlingException", "Too many requests, please wait before trying again."
            )
        if inner.status != 200:
            message = str(inner.payload.get("error", {}).get("message", ""))
            return _error(
                400 if inner.status < 500 else 500,
                "ValidationException" if inner.status < 500 else "InternalServerException",
                message,
            )
        return inner

    def _count(self, name: str) -> None:
        with self._lock:
            self.counts[name] += 1


def _as_chat_completion(
    model: str, request: Mapping[str, Any]
) -> tuple[dict[str, Any], str | None]:
    """The Converse request as the inner test judge's chat request, and the forced tool's name
    (None: none); a ValueError where Converse refuses it."""
    messages: list[dict[str, str]] = []
    for block in request.get("system", []):
        messages.append({"role": "system", "content": _text_of(block)})
    turns = request.get("messages")
    if not isinstance(turns, list) or not turns:
        raise ValueError("messages: at least one message is required")
    for turn in turns:
        if turn.get("role") not in ("user", "assistant"):
            raise ValueError(f"messages.role: {turn.get('role')!r} is not user or assistant")
        text = "".join(_text_of(block) for block in turn.get("content", []))
        messages.append({"role": turn["role"], "content": text})
    if turns[0]["role"] != "user":
        raise ValueError("A conversation must start with a user message.")
    config = request.get("inferenceConfig", {})
    inner: dict[str, Any] = {"model": model, "messages": messages}
    if "maxTokens" in config:
        inner["max_tokens"] = config["maxTokens"]
    if "temperature" in config:
        inner["temperature"] = config["temperature"]
    tool = _forced_tool(request.get("toolConfig"))
    if tool is not None:
        name, schema = tool
        inner["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": name, "strict": True, "schema": schema},
        }
        return inner, name
    return inner, None


def _forced_tool(config: Any) -> tuple[str, Any] | None:
    if config is None:
        return None
    tools = {
        tool["toolSpec"]["name"]: tool["toolSpec"]["inputSchema"]["json"]
        for tool in config.get("tools", [])
        if "toolSpec" in tool
    }
    choice = config.get("toolChoice", {}).get("tool")
    if choice is None:
        return None
    if choice.get("name") not in tools:
        raise ValueError(f"toolChoice names a tool that is not in tools: {choice.get('name')!r}")
    return choice["name"], tools[choice["name"]]


def _text_of(block: Any) -> str:
    if not isinstance(block, dict) or not isinstance(block.get("text"), str):
        raise ValueError("only text content blocks are played by this double")
    return str(block["text"])


def _error(status: int, kind: str, message: str) -> Reply:
    """An error as Bedrock sends it: botocore reads the code from `x-amzn-ErrorType`."""
    return Reply(status, {"message": message}, {"x-amzn-ErrorType": kind + _ERROR_NAMESPACE})
