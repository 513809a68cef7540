"""The Converse API's request and reply, from and to the engine's canonical form.

A request: the system messages go in `system`, the others in `messages` (text blocks), the
output limit and the temperature in `inferenceConfig`. Structured output (`judge.structured_output
= json_schema`, the default) is a tool the model must use (`toolConfig` with the prompt's schema
as its `inputSchema`, `toolChoice` naming it): its `input` is the answer. Models that take no
forced tool (Llama, Titan) are asked with `structured_output = none`: the schema goes in the
prompt's text and the answer is the reply's text. Converse has no `n`, `seed` or OpenAI
reasoning effort: the engine asks for samples one by one, and the rest is not sent.

A reply: `output.message.content` (a `toolUse` block's `input`, else the text blocks),
`stopReason` (`max_tokens` -> `length`; a guardrail or content filter -> `content_filter`) and
`usage` (`inputTokens`, `outputTokens`, `cacheReadInputTokens`, `cacheWriteInputTokens`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from ragas_ops.judge.engine.wire import BadReplyError, ChatChoice, ChatReply, ReportedUsage

FINISH_REASONS = {
    "end_turn": "stop",
    "tool_use": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "guardrail_intervened": "content_filter",
    "content_filtered": "content_filter",
}
_TOOL_NAME = re.compile(r"[^a-zA-Z0-9_-]")


def tool_name(schema_name: str) -> str:
    """A tool's name as Converse takes it (`[a-zA-Z0-9_-]+`, at most 64 characters)."""
    return (_TOOL_NAME.sub("_", schema_name) or "answer")[:64]


def converse_request(
    model: str, messages: Sequence[Mapping[str, str]], params: Mapping[str, Any]
) -> dict[str, Any]:
    """The keyword arguments of `converse` for one canonical chat request."""
    system = [{"text": m["content"]} for m in messages if m["role"] == "system"]
    turns = [
        {"role": m["role"], "content": [{"text": m["content"]}]}
        for m in messages
        if m["role"] != "system"
    ]
    config: dict[str, Any] = {"maxTokens": int(params["max_tokens"])}
    if params.get("temperature") is not None:
        config["temperature"] = float(params["temperature"])
    request: dict[str, Any] = {"modelId": model, "messages": turns, "inferenceConfig": config}
    if system:
        request["system"] = system
    response_format = params.get("response_format") or {}
    if response_format.get("type") == "json_schema":
        schema = response_format["json_schema"]
        name = tool_name(schema["name"])
        request["toolConfig"] = {
            "tools": [
                {
                    "toolSpec": {
                        "name": name,
                        "description": "Give the answer, following the schema.",
                        "inputSchema": {"json": schema["schema"]},
                    }
                }
            ],
            "toolChoice": {"tool": {"name": name}},
        }
    return request


def read_converse_reply(body: bytes) -> ChatReply:
    """A Converse reply's answer, stop reason and usage, or `BadReplyError`."""
    try:
        payload = json.loads(body)
    except ValueError:
        raise BadReplyError("not_json", "the reply is not JSON") from None
    if not isinstance(payload, dict):
        raise BadReplyError("wrong_type", "the reply is not a JSON object")
    content = ((payload.get("output") or {}).get("message") or {}).get("content")
    if not isinstance(content, list):
        raise BadReplyError("missing_field", "the reply has no `output.message.content`")
    text = _answer(content)
    reason = FINISH_REASONS.get(str(payload.get("stopReason")), "stop")
    return ChatReply([ChatChoice(text, reason)], _usage(payload.get("usage")))


def _answer(content: list[Any]) -> str:
    for block in content:
        if isinstance(block, dict) and isinstance(block.get("toolUse"), dict):
            return json.dumps(block["toolUse"].get("input"), ensure_ascii=False)
    texts = [b["text"] for b in content if isinstance(b, dict) and isinstance(b.get("text"), str)]
    return "".join(texts)


def _usage(usage: Any) -> ReportedUsage:
    if not isinstance(usage, dict):
        raise BadReplyError("missing_field", "the reply has no `usage`")

    def count(name: str) -> int:
        value = usage.get(name, 0)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise BadReplyError("wrong_type", f"`usage.{name}` is not a count")
        return value

    cached, written = count("cacheReadInputTokens"), count("cacheWriteInputTokens")
    # Converse reports the cached input apart from `inputTokens`: the engine's prompt tokens
    # are every input token billed.
    return ReportedUsage(
        prompt_tokens=count("inputTokens") + cached + written,
        completion_tokens=count("outputTokens"),
        cached_prompt_tokens=cached,
        cache_write_tokens=written,
    )
