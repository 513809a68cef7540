"""A TEST DOUBLE of Anthropic's Messages API: a local HTTP server that answers the ragas-ops
prompts the way the OpenAI-compatible test judge does (the answers the metrics' packages
registered), but speaks Anthropic's wire, as strictly as Anthropic documents it:

- `POST /v1/messages` only, with `x-api-key` (401 `authentication_error` without the right one)
  and `anthropic-version` (400 without it); `max_tokens` required; `messages` alternating from
  `user`; the system prompt top-level, never a `system` message; unknown parameters (`n`,
  `seed`, `response_format`, `max_completion_tokens`...) refused: "Extra inputs are not
  permitted";
- thinking: `{"type": "enabled", "budget_tokens": N}` with 1024 <= N < `max_tokens` on the models
  that take a budget, `{"type": "adaptive"}` (with `output_config.effort`) on those from 4.6
  on; with thinking on, a `temperature` or a forced `tool_choice` is refused; a thinking reply
  starts with a `thinking` block, and its tokens are in `output_tokens`;
- a forced tool (`tool_choice: {"type": "tool", "name": ...}`) is answered with a `tool_use`
  block whose `input` is the answer, `stop_reason: tool_use`; otherwise a `text` block;
- prompt caching: a system block marked `cache_control: ephemeral` of at least
  `cache_min_tokens` is written to the cache the first time (`cache_creation_input_tokens`)
  and read after (`cache_read_input_tokens`, not counted against the input tokens limit);
  at most 4 breakpoints;
- limits per minute on requests, input tokens and output tokens (output tokens estimated at
  `max_tokens` when admitted, as Anthropic does, and settled with the reply), in token
  buckets refilled continuously; every reply carries `anthropic-ratelimit-*` headers (resets
  as RFC 3339 times); a refusal is a 429 `rate_limit_error` with `retry-after`;
- faults on demand: a share of requests answered 529 `overloaded_error`.

It counts what it served (`stats()`): requests, answered, refused, tokens by kind, by prompt.
Listens on 127.0.0.1 only.

    with AnthropicServer(AnthropicServerConfig(rpm=600)) as server:
        ... base_url=server.url, ANTHROPIC_API_KEY=server.config.api_key
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import threading
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from ragas_ops.text import estimate_tokens
from ragas_ops_testing.judge_server.config import JudgeServerConfig
from ragas_ops_testing.judge_server.replies import BadRequest, chat_job

API_VERSION = "2023-06-01"
ADAPTIVE_ONLY = ("claude-opus-4-7", "claude-opus-5", "claude-sonnet-5", "claude-haiku-5")
BUDGET_ONLY = ("claude-haiku-4-5", "claude-sonnet-4-5", "claude-opus-4-5", "claude-opus-4-1")
MIN_BUDGET = 1024
MAX_CACHE_BREAKPOINTS = 4
_ALLOWED = frozenset(
    {
        "model",
        "max_tokens",
        "messages",
        "system",
        "temperature",
        "top_p",
        "top_k",
        "stop_sequences",
        "stream",
        "metadata",
        "tools",
        "tool_choice",
        "thinking",
        "output_config",
        "service_tier",
    }
)


@dataclass
class AnthropicServerConfig:
    api_key: str = "sk-ant-test-double"
    rpm: int | None = None
    input_tpm: int | None = None
    """Input tokens per minute (cache reads do not count, cache writes do)."""
    output_tpm: int | None = None
    burst_seconds: float = 60.0
    """A bucket holds this many seconds of its limit (Anthropic: a minute's, though it may
    enforce a limit over shorter intervals: a smaller burst plays that)."""
    rate_529: float = 0.0
    """Share of requests answered 529 `overloaded_error`."""
    cache_min_tokens: int = 1024
    thinking_tokens: int = 300
    """The tokens a thinking reply spends thinking (at most its budget)."""
    seed: int = 0


@dataclass
class AnthropicStats:
    requests: int = 0
    answered: int = 0
    refused_429: int = 0
    overloaded_529: int = 0
    rejected_400: int = 0
    input_tokens: int = 0
    """Uncached input tokens billed (`usage.input_tokens`)."""
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    output_tokens: int = 0
    thinking_tokens: int = 0
    by_prompt: Counter[str] = field(default_factory=Counter)

    def as_dict(self) -> dict[str, Any]:
        return {**self.__dict__, "by_prompt": dict(self.by_prompt)}


class _Bucket:
    """A token bucket refilled at `per_minute`, full at the start."""

    def __init__(self, per_minute: int, burst_seconds: float) -> None:
        self.limit = per_minute
        self.capacity = per_minute * burst_seconds / 60.0
        self.level = self.capacity
        self._at = time.monotonic()

    def refill(self) -> None:
        now = time.monotonic()
        self.level = min(self.capacity, self.level + (now - self._at) * self.limit / 60.0)
        self._at = now

    def seconds_until(self, amount: float) -> float:
        missing = amount - self.level
        return 0.0 if missing <= 0 else missing * 60.0 / self.limit

    def reset_at(self) -> datetime:
        return datetime.now(UTC) + timedelta(seconds=self.seconds_until(self.capacity))


class ApiError(Exception):
    def __init__(self, status: int, kind: str, message: str) -> None:
        super().__init__(message)
        self.status, self.kind, self.message = status, kind, message


class AnthropicApp:
    """The double's behaviour, without sockets; one lock guards its state."""

    def __init__(self, config: AnthropicServerConfig) -> None:
        self.config = config
        self._lock = threading.Lock()
        self._stats = AnthropicStats()
        self._rng = random.Random(config.seed)
        self._buckets = {
            name: _Bucket(limit, config.burst_seconds)
            for name, limit in (
                ("requests", config.rpm),
                ("input-tokens", config.input_tpm),
                ("output-tokens", config.output_tpm),
            )
            if limit is not None
        }
        self._cached: set[str] = set()
        self._asked: Counter[str] = Counter()
        self._ids = 0

    def stats(self) -> dict[str, Any]:
        with self._lock:
            return self._stats.as_dict()

    def handle(
        self, method: str, path: str, headers: Mapping[str, str], body: bytes
    ) -> tuple[int, dict[str, str], Any]:
        if method != "POST" or path.split("?", 1)[0].rstrip("/") != "/v1/messages":
            return _error(404, "not_found_error", f"Not found: {method} {path}")
        with self._lock:
            self._stats.requests += 1
        try:
            self._check_headers(headers)
            request = _json_object(body)
            job = self._validate(request)
            return self._serve(request, job)
        except ApiError as error:
            if error.status == 400:
                with self._lock:
                    self._stats.rejected_400 += 1
            return _error(error.status, error.kind, error.message)

    def _check_headers(self, headers: Mapping[str, str]) -> None:
        key = headers.get("x-api-key")
        if not key:
            raise ApiError(401, "authentication_error", "x-api-key header is required")
        if key != self.config.api_key:
            raise ApiError(401, "authentication_error", "invalid x-api-key")
        if not headers.get("anthropic-version"):
            raise ApiError(400, "invalid_request_error", "anthropic-version: header is required")

    def _validate(self, request: dict[str, Any]) -> dict[str, Any]:
        """Anthropic's checks, in its words; what the answer needs."""
        extra = sorted(set(request) - _ALLOWED)
        if extra:
            raise _invalid(f"{extra[0]}: Extra inputs are not permitted")
        model = request.get("model")
        if not isinstance(model, str) or not model:
            raise _invalid("model: Field required")
        max_tokens = request.get("max_tokens")
        if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
            raise _invalid("max_tokens: Field required (an integer >= 1)")
        if request.get("stream"):
            raise _invalid("this test double does not stream")
        turns = request.get("messages")
        if not isinstance(turns, list) or not turns:
            raise _invalid("messages: at least one message is required")
        for index, turn in enumerate(turns):
            role = turn.get("role") if isinstance(turn, dict) else None
            if role == "system":
                raise _invalid(
                    'messages: Unexpected role "system". The Messages API accepts a '
                    'top-level `system` parameter, not "system" as an input message role.'
                )
            if role != ("user" if index % 2 == 0 else "assistant"):
                raise _invalid(f"messages.{index}: roles must alternate, starting with user")
        system, breakpoints = _system_text(request.get("system"))
        if breakpoints > MAX_CACHE_BREAKPOINTS:
            raise _invalid(
                f"A maximum of {MAX_CACHE_BREAKPOINTS} blocks with cache_control may be provided"
            )
        thinking = self._check_thinking(request, model, max_tokens)
        temperature = request.get("temperature")
        if temperature is not None and not (
            isinstance(temperature, int | float) and 0 <= temperature <= 1
        ):
            raise _invalid("temperature: Input should be less than or equal to 1")
        tool = self._check_tools(request, thinking)
        return {
            "model": model,
            "max_tokens": max_tokens,
            "system": system,
            "cache_marked": breakpoints > 0,
            "thinking": thinking,
            "tool": tool,
        }

    def _check_thinking(self, request: dict[str, Any], model: str, max_tokens: int) -> int:
        """The thinking budget asked (0: none)."""
        thinking = request.get("thinking")
        if thinking is None or thinking.get("type") == "disabled":
            return 0
        if request.get("temperature") is not None:
            raise _invalid(
                "`temperature` may only be set to 1 when thinking is enabled. Please consult "
                "our documentation at https://docs.claude.com/en/docs/build-with-claude/"
                "extended-thinking#important-considerations-when-using-extended-thinking"
            )
        choice = request.get("tool_choice") or {}
        if choice.get("type") in ("any", "tool"):
            raise _invalid("Thinking may not be enabled when tool_choice forces tool use.")
        if thinking.get("type") == "enabled":
            if model.startswith(ADAPTIVE_ONLY):
                raise _invalid(
                    f'thinking.type: "enabled" is not supported for {model}; use "adaptive"'
                )
            budget = thinking.get("budget_tokens")
            if not isinstance(budget, int) or budget < MIN_BUDGET:
                raise _invalid(f"thinking.budget_tokens: Input should be >= {MIN_BUDGET}")
            if budget >= max_tokens:
                raise _invalid("`max_tokens` must be greater than `thinking.budget_tokens`.")
            return budget
        if thinking.get("type") == "adaptive":
            if model.startswith(BUDGET_ONLY):
                raise _invalid(f'thinking.type: "adaptive" is not supported for {model}')
            effort = (request.get("output_config") or {}).get("effort", "high")
            if effort not in ("low", "medium", "high", "max"):
                raise _invalid("output_config.effort: Input should be 'low', 'medium' or 'high'")
            return max_tokens - 1
        raise _invalid("thinking.type: Input should be 'enabled', 'adaptive' or 'disabled'")

    def _check_tools(self, request: dict[str, Any], thinking: int) -> str | None:
        """The forced tool's name (None: a text answer)."""
        tools = request.get("tools") or []
        names = []
        for tool in tools:
            if not isinstance(tool, dict) or not tool.get("name"):
                raise _invalid("tools: each tool needs a name")
            if not isinstance(tool.get("input_schema"), dict):
                raise _invalid(f"tools.{tool['name']}.input_schema: Field required")
            if tool["input_schema"].get("type") != "object":
                raise _invalid("tools.input_schema.type: Input should be 'object'")
            names.append(tool["name"])
        choice = request.get("tool_choice")
        if choice is None:
            return None
        if choice.get("type") == "tool":
            if choice.get("name") not in names:
                raise _invalid(f"tool_choice: tool {choice.get('name')!r} is not in tools")
            return str(choice["name"])
        if choice.get("type") == "any" and names:
            return str(names[0])
        return None

    def _serve(
        self, request: dict[str, Any], job: dict[str, Any]
    ) -> tuple[int, dict[str, str], Any]:
        answer = self._answer(request, job)
        cached_read, cache_written = self._cache(job)
        input_tokens = answer["prompt_tokens"] - cached_read - cache_written
        thinking = min(job["thinking"], self.config.thinking_tokens) if job["thinking"] else 0
        text = answer["content"]
        visible_room = job["max_tokens"] - thinking
        text_tokens = estimate_tokens(text)
        cut = text_tokens > visible_room
        if cut:
            text = text[: max(0, visible_room * 4)]
            text_tokens = min(text_tokens, visible_room)
        output_tokens = thinking + text_tokens
        with self._lock:
            if self._rng.random() < self.config.rate_529:
                self._stats.overloaded_529 += 1
                return _error(529, "overloaded_error", "Overloaded")
            refused = self._admit(input_tokens + cache_written, job["max_tokens"])
            if refused is not None:
                return refused
            self._settle_output(job["max_tokens"], output_tokens)
            self._stats.answered += 1
            self._stats.input_tokens += input_tokens
            self._stats.cache_creation_input_tokens += cache_written
            self._stats.cache_read_input_tokens += cached_read
            self._stats.output_tokens += output_tokens
            self._stats.thinking_tokens += thinking
            self._stats.by_prompt[answer["prompt"]] += 1
            self._ids += 1
            number = self._ids
            headers = self._rate_headers()
        content: list[dict[str, Any]] = []
        if thinking:
            content.append({"type": "thinking", "thinking": "...", "signature": "sig"})
        if job["tool"] is not None and not cut:
            content.append(
                {
                    "type": "tool_use",
                    "id": f"toolu_{number:08d}",
                    "name": job["tool"],
                    "input": json.loads(text),
                }
            )
            stop = "tool_use"
        else:
            content.append({"type": "text", "text": text})
            stop = "max_tokens" if cut else "end_turn"
        payload = {
            "id": f"msg_testdouble{number:08d}",
            "type": "message",
            "role": "assistant",
            "model": job["model"],
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {
                "input_tokens": input_tokens,
                "cache_creation_input_tokens": cache_written,
                "cache_read_input_tokens": cached_read,
                "output_tokens": output_tokens,
            },
        }
        headers["request-id"] = f"req_testdouble{number:08d}"
        return 200, headers, payload

    def _answer(self, request: dict[str, Any], job: dict[str, Any]) -> dict[str, Any]:
        """The registered answer, through the OpenAI-compatible double's own reading of the
        prompt (the same rules, the same token counts). A sampling model answers the same
        request differently each time: the k-th identical request gets the k-th sample."""
        messages = [{"role": "system", "content": job["system"]}] if job["system"] else []
        messages += [
            {"role": turn["role"], "content": _turn_text(turn.get("content"))}
            for turn in request["messages"]
        ]
        body = json.dumps(request, sort_keys=True).encode()
        digest = hashlib.sha256(body).hexdigest()
        with self._lock:
            sample = self._asked[digest]
            self._asked[digest] += 1
        try:
            answered = chat_job(
                {"model": job["model"], "messages": messages, "seed": sample},
                JudgeServerConfig(),
            )
        except BadRequest as error:
            raise _invalid(str(error)) from None
        return {
            "content": answered.contents[0],
            "prompt_tokens": answered.prompt_tokens,
            "prompt": answered.prompt.name,
        }

    def _cache(self, job: dict[str, Any]) -> tuple[int, int]:
        """(read, written) prompt tokens of the marked system prompt."""
        if not job["cache_marked"]:
            return 0, 0
        tokens = estimate_tokens(job["system"])
        if tokens < self.config.cache_min_tokens:
            return 0, 0
        key = hashlib.sha256(f"{job['model']}\0{job['system']}".encode()).hexdigest()
        with self._lock:
            seen = key in self._cached
            self._cached.add(key)
        return (tokens, 0) if seen else (0, tokens)

    def _admit(self, input_tokens: int, max_tokens: int) -> tuple[int, dict[str, str], Any] | None:
        """Charge the buckets (output at `max_tokens`), or the 429 of the first that lacks."""
        wants = {"requests": 1, "input-tokens": input_tokens, "output-tokens": max_tokens}
        for bucket in self._buckets.values():
            bucket.refill()
        for name, bucket in self._buckets.items():
            if bucket.level < wants[name]:
                self._stats.refused_429 += 1
                wait = max(1, math.ceil(bucket.seconds_until(wants[name])))
                headers = {**self._rate_headers(), "retry-after": str(wait)}
                message = f"This request would exceed your organization's rate limit of {name}"
                return 429, headers, _error(429, "rate_limit_error", message)[2]
        for name, bucket in self._buckets.items():
            bucket.level -= wants[name]
        return None

    def _settle_output(self, reserved: int, used: int) -> None:
        bucket = self._buckets.get("output-tokens")
        if bucket is not None:
            bucket.level += reserved - used

    def _rate_headers(self) -> dict[str, str]:
        headers: dict[str, str] = {}
        for name, bucket in self._buckets.items():
            prefix = f"anthropic-ratelimit-{name}"
            headers[f"{prefix}-limit"] = str(bucket.limit)
            headers[f"{prefix}-remaining"] = str(max(0, int(bucket.level)))
            headers[f"{prefix}-reset"] = bucket.reset_at().isoformat().replace("+00:00", "Z")
        return headers


def _invalid(message: str) -> ApiError:
    return ApiError(400, "invalid_request_error", message)


def _error(status: int, kind: str, message: str) -> tuple[int, dict[str, str], Any]:
    payload = {"type": "error", "error": {"type": kind, "message": message}}
    return status, {}, payload


def _json_object(body: bytes) -> dict[str, Any]:
    try:
        request = json.loads(body or b"null")
    except ValueError:
        raise _invalid("The request body is not valid JSON.") from None
    if not isinstance(request, dict):
        raise _invalid("The request body must be a JSON object.")
    return request


def _system_text(system: Any) -> tuple[str, int]:
    """The system prompt's text and how many blocks carry `cache_control`."""
    if system is None:
        return "", 0
    if isinstance(system, str):
        return system, 0
    if not isinstance(system, list):
        raise _invalid("system: Input should be a string or a list of text blocks")
    texts, marked = [], 0
    for block in system:
        if not isinstance(block, dict) or block.get("type") != "text":
            raise _invalid("system: each block must be a text block")
        control = block.get("cache_control")
        if control is not None:
            if control.get("type") != "ephemeral":
                raise _invalid("cache_control.type: Input should be 'ephemeral'")
            marked += 1
        texts.append(str(block.get("text", "")))
    return "\n\n".join(texts), marked


def _turn_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(block.get("text", "")) for block in content if isinstance(block, dict))
    raise _invalid("messages.content: Input should be a string or a list of blocks")


class _Handler(BaseHTTPRequestHandler):
    app: AnthropicApp

    def do_POST(self) -> None:
        self._reply("POST")

    def do_GET(self) -> None:
        self._reply("GET")

    def _reply(self, method: str) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        headers = {name.lower(): value for name, value in self.headers.items()}
        status, extra, payload = self.app.handle(method, self.path, headers, body)
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        for name, value in extra.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


class AnthropicServer:
    """The double on a free port of 127.0.0.1, in a thread; a context manager."""

    def __init__(self, config: AnthropicServerConfig | None = None) -> None:
        self.config = config or AnthropicServerConfig()
        self.app = AnthropicApp(self.config)
        handler = type("Handler", (_Handler,), {"app": self.app})
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        """The base URL as the Anthropic SDK takes it (requests go to `{url}/v1/messages`)."""
        port = self._server.server_address[1]
        return f"http://127.0.0.1:{port}"

    def stats(self) -> dict[str, Any]:
        return self.app.stats()

    def __enter__(self) -> AnthropicServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
