"""The test judge's application: everything but the sockets (dispatch by endpoint, limits,
faults, the Files and Batch APIs)."""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import random
import threading
import time
from collections.abc import Mapping
from dataclasses import fields, replace
from typing import Any

from ragas_ops.text import (
    estimate_tokens,
)
from ragas_ops_testing.batch_api import BatchApi, api_of
from ragas_ops_testing.judge_server.buckets import rate_buckets, readable_duration
from ragas_ops_testing.judge_server.config import (
    BAD_REPLY_RATES,
    FIXED_SETTINGS,
    FLEX_UNAVAILABLE_MESSAGE,
    JudgeServerConfig,
    validate_config,
)
from ragas_ops_testing.judge_server.models import ModelRefusal
from ragas_ops_testing.judge_server.replies import (
    MALFORMED_KINDS,
    BadRequest,
    ChatJob,
    EmbeddingJob,
    Faults,
    Reply,
    chat_job,
    chat_payload,
    check_auth,
    embedding_job,
    embedding_payload,
    error_reply,
    malform,
    model_payload,
    models_payload,
    retry_headers,
    served_tier,
)
from ragas_ops_testing.judge_server.stats import Stats

_ENDPOINTS = {
    ("POST", "/v1/chat/completions"): "chat",
    ("POST", "/v1/embeddings"): "embeddings",
    ("GET", "/v1/models"): "models",
}
_MODEL_PREFIX = "/v1/models/"  # GET /v1/models/{id}
# The Files and Batch APIs ("files", "batches") have ids in their paths: see `api_of`.


class App:
    """The double's behaviour, independent of HTTP plumbing. Thread-safe: one lock guards the
    settings, the buckets, the random generator and the statistics (files and batches have
    their own)."""

    def __init__(self, config: JudgeServerConfig) -> None:
        validate_config(config)
        self._lock = threading.Lock()
        self._config = replace(config)
        self._rng = random.Random(config.seed)
        self._bad_reply_rng = _bad_reply_rng(config.seed)
        self._flex_rng = _flex_rng(config.seed)
        self._buckets = rate_buckets(config, time.monotonic())
        self._stats = Stats()
        self._request_log: list[dict[str, Any]] = []
        self._replies = itertools.count(1)
        self._cached_prefixes: set[str] = set()
        self._batch_api = BatchApi(self._answer_batch_line)
        self.stopping = threading.Event()

    # -- settings and statistics -------------------------------------------------------------

    def settings(self) -> JudgeServerConfig:
        with self._lock:
            return replace(self._config)

    def update(self, changes: Mapping[str, Any]) -> None:
        known = {item.name for item in fields(JudgeServerConfig)}
        unknown = sorted(set(changes) - known)
        if unknown:
            raise TypeError(f"unknown setting(s) {unknown}")
        fixed = sorted(set(changes) & FIXED_SETTINGS)
        if fixed:
            raise ValueError(f"{fixed} cannot change while the server runs")
        with self._lock:
            updated = replace(self._config, **changes)
            validate_config(updated)
            if {"rpm", "tpm", "burst_seconds"} & set(changes):
                self._buckets = rate_buckets(updated, time.monotonic())  # new limits start full
            if "seed" in changes:
                self._rng = random.Random(updated.seed)
                self._bad_reply_rng = _bad_reply_rng(updated.seed)
                self._flex_rng = _flex_rng(updated.seed)
            self._config = updated

    def stats(self) -> dict[str, Any]:
        with self._lock:
            snapshot = self._stats.snapshot()
        snapshot["batches"] = self._batch_api.stats()
        return snapshot

    def request_log(self) -> list[dict[str, Any]]:
        """The requests kept (`request_log`), oldest first."""
        with self._lock:
            return list(self._request_log)

    def reset_stats(self) -> None:
        with self._lock:
            in_flight = self._stats.in_flight  # requests being served still finish and count
            self._stats = Stats(in_flight=in_flight, max_in_flight=in_flight)
            self._request_log = []
        self._batch_api.reset_stats()

    # -- serving -----------------------------------------------------------------------------

    def handle(
        self, method: str, path: str, authorization: str | None, body: bytes, content_type: str = ""
    ) -> Reply | None:
        """Serve one request; None means: close the connection without a reply (stopping)."""
        route = path.split("?", 1)[0].rstrip("/")
        if route == "/stats" and method == "GET":
            return Reply(200, self.stats())
        if route == "/stats/reset" and method == "POST":
            self.reset_stats()
            return Reply(200, {"reset": True})
        if route == "/requests" and method == "GET":
            return Reply(200, {"requests": self.request_log()})
        if method == "GET" and route.startswith(_MODEL_PREFIX):
            return self._look_up_model(route[len(_MODEL_PREFIX) :], authorization)
        endpoint = _ENDPOINTS.get((method, route)) or api_of(route)
        self._begin(endpoint or "other")
        started_at = time.time()
        reply: Reply | None = None
        try:
            if endpoint in ("files", "batches"):
                reply = self._serve_batch_api(method, path, authorization, body, content_type)
            else:
                reply = self._serve(endpoint, f"{method} {route}", authorization, body)
        finally:
            self._end(reply)
            if endpoint in ("chat", "embeddings") and self.settings().request_log:
                self._log_request(endpoint, started_at, reply, body)
        if reply is not None and self.settings().echo_key:
            echo_key(reply, authorization)
        return reply

    def _log_request(
        self, endpoint: str, started_at: float, reply: Reply | None, body: bytes
    ) -> None:
        entry = {
            "endpoint": endpoint,
            "started_at": started_at,
            "ended_at": time.time(),
            "status": None if reply is None else reply.status,  # None: dropped at a stop
            "body": body.decode("utf-8", "replace"),
        }
        with self._lock:
            self._request_log.append(entry)

    def _serve(
        self, endpoint: str | None, what: str, authorization: str | None, body: bytes
    ) -> Reply | None:
        settings = self.settings()
        if settings.latency_ms > 0 and self.stopping.wait(settings.latency_ms / 1000):
            return None
        if endpoint is None:
            return error_reply(
                404, f"Unknown request URL: {what}.", "invalid_request_error", "unknown_url"
            )
        denied = check_auth(settings.api_key, authorization)
        if denied is not None:
            return denied
        if endpoint == "models":
            return Reply(200, models_payload())
        try:
            job = self._job(endpoint, body, settings)
            reply = self._run(job, settings)
        except BadRequest as error:
            reply = error_reply(400, str(error), "invalid_request_error", error.code)
        except ModelRefusal as refusal:
            reply = self._refused(refusal)
        if reply is not None:
            reply.headers.update(self._ratelimit_headers())
        return reply

    def _look_up_model(self, name: str, authorization: str | None) -> Reply:
        """`GET /v1/models/{id}`: a lookup, free and unlimited; counted in `model_lookups`,
        not in `requests` (what the judge is asked)."""
        settings = self.settings()
        with self._lock:
            self._stats.model_lookups[name] += 1
        return check_auth(settings.api_key, authorization) or model_payload(name, settings)

    def _refused(self, refusal: ModelRefusal) -> Reply:
        """What the model refuses, as OpenAI says it (`param` names the parameter)."""
        with self._lock:
            self._stats.refused_by_param[refusal.param or refusal.code] += 1
        kind = "invalid_request_error"
        if self.settings().refusal_param_null:  # a gateway: the message alone names it
            return error_reply(refusal.status, str(refusal), kind, None, param=None)
        return error_reply(refusal.status, str(refusal), kind, refusal.code, param=refusal.param)

    def _serve_batch_api(
        self, method: str, path: str, authorization: str | None, body: bytes, content_type: str
    ) -> Reply:
        """Files and batches: managed at once, with no latency, faults or rate limits."""
        settings = self.settings()
        denied = check_auth(settings.api_key, authorization)
        if denied is not None:
            return denied
        response = self._batch_api.serve(method, path, body, content_type, settings)
        return Reply(response.status, response.payload, content_type=response.content_type)

    def _answer_batch_line(self, url: str, body: Mapping[str, Any]) -> tuple[int, Any]:
        """A batch line, answered as a request to `url` would be (counted in
        `requests_by_prompt`), but with no latency or rate limits and, of the faults, only
        malformed output. Its tokens are not counted: they are the batch's usage."""
        settings = self.settings()
        try:
            job = self._job(_ENDPOINTS[("POST", url)], json.dumps(body).encode(), settings)
        except BadRequest as error:
            return 400, error_reply(400, str(error), "invalid_request_error", error.code).payload
        except ModelRefusal as refusal:
            return refusal.status, self._refused(refusal).payload
        if isinstance(job, EmbeddingJob):
            return 200, embedding_payload(job)
        malformed = self._draw_faults(settings).malformed
        contents = job.contents
        if malformed is not None:
            self._count_fault("malformed", malformed)
            contents = [malform(content, malformed) for content in contents]
        number = next(self._replies)
        cached = self._cached_tokens(job, settings)
        return 200, chat_payload(job, contents, malformed == "truncated", number, cached)

    def _job(
        self, endpoint: str, body: bytes, settings: JudgeServerConfig
    ) -> ChatJob | EmbeddingJob:
        try:
            request = json.loads(body or b"null")
        except ValueError:
            raise BadRequest("the request body is not valid JSON") from None
        if not isinstance(request, dict):
            raise BadRequest("the request body must be a JSON object")
        if endpoint == "embeddings":
            return embedding_job(request, settings.embedding_dim)
        job = chat_job(request, settings)
        with self._lock:
            self._stats.requests_by_prompt[job.prompt.name] += 1
        return job

    def _run(self, job: ChatJob | EmbeddingJob, settings: JudgeServerConfig) -> Reply | None:
        """Apply the faults drawn for this request, the rate limits, then answer."""
        faults = self._draw_faults(settings)
        if isinstance(job, ChatJob) and served_tier(job, settings) == "flex":
            unavailable = self._serve_flex(settings)
            if unavailable is not None or self.stopping.is_set():
                return unavailable
        if faults.timeout:
            self._count_fault("timeout")
            if self.stopping.wait(settings.hang_seconds):
                return None
        injected = self._injected_reply(faults, job, settings)
        if injected is not None:
            return injected
        limited = self._admit(job.admission_cost(settings.admission))
        if limited is not None:
            return limited
        if isinstance(job, EmbeddingJob):
            return self._embeddings_reply(job)
        return self._chat_reply(job, faults.malformed, hung=faults.timeout)

    def _serve_flex(self, settings: JudgeServerConfig) -> Reply | None:
        """A flex request: slower (`flex_latency_ms`), and now and then no capacity for it:
        OpenAI's 429 "resource unavailable", before any rate-limit bucket is charged."""
        with self._lock:
            draw = self._flex_rng.random()
        if settings.flex_latency_ms > 0 and self.stopping.wait(settings.flex_latency_ms / 1000):
            return None
        if draw >= settings.rate_flex_unavailable:
            return None
        self._count_fault("flex_unavailable")
        code = "resource_unavailable"
        headers = retry_headers(settings.retry_after_seconds)
        return error_reply(429, FLEX_UNAVAILABLE_MESSAGE, code, code, headers)

    def _injected_reply(
        self, faults: Faults, job: ChatJob | EmbeddingJob, settings: JudgeServerConfig
    ) -> Reply | None:
        """The reply an injected 429, 5xx or bad reply gives instead of an answer, or None."""
        if faults.rate_429:
            self._count_fault("429")
            message = "Rate limit reached (injected by the test double). Please try again later."
            headers = retry_headers(settings.retry_after_seconds)
            return error_reply(429, message, "requests", "rate_limit_exceeded", headers)
        if faults.server_error is not None:
            self._count_fault("5xx")
            return _server_error(faults.server_error)
        if faults.bad_reply is not None:
            # A gateway's page: the provider never saw the request, nothing is billed.
            self._count_fault(faults.bad_reply)
            return _bad_reply(faults.bad_reply, isinstance(job, ChatJob))
        return None

    def _cached_tokens(self, job: ChatJob, settings: JudgeServerConfig) -> int:
        """The prompt tokens a provider's prompt cache would serve: the first message, in
        steps of 128 tokens, when it is long enough and was seen before (then remembered)."""
        minimum = settings.prompt_cache_min_tokens
        if minimum is None:
            return 0
        tokens = estimate_tokens(job.prefix)
        if tokens < minimum:
            return 0
        key = hashlib.sha256(f"{job.model}\0{job.prefix}".encode()).hexdigest()
        with self._lock:
            seen = key in self._cached_prefixes
            self._cached_prefixes.add(key)
        return tokens // 128 * 128 if seen else 0

    def _chat_reply(self, job: ChatJob, malformed: str | None, hung: bool = False) -> Reply:
        contents = job.contents
        if malformed is not None:
            self._count_fault("malformed", malformed)
            contents = [malform(content, malformed) for content in contents]
        number = next(self._replies)  # itertools.count is atomic under the GIL
        cached = self._cached_tokens(job, self.settings())
        cut = malformed == "truncated" or job.cut_short
        tier = served_tier(job, self.settings())
        payload = chat_payload(job, contents, cut, number, cached, service_tier=tier)
        completion_tokens = payload["usage"]["completion_tokens"]
        # `max_tokens` admission keeps what it reserved; only a completion longer than the
        # reservation (none was asked for) costs more. `usage` admission counts the whole
        # completion now. The level may go negative, as a provider's does.
        reserved = job.reserved_completion if self.settings().admission == "max_tokens" else 0
        beyond_reserved = max(0, completion_tokens - reserved)
        with self._lock:
            for bucket in self._buckets:
                if bucket.kind == "tokens":
                    bucket.charge(beyond_reserved)
            self._stats.limiter_tokens += beyond_reserved
            self._stats.prompt_tokens += job.prompt_tokens
            if hung:
                self._stats.hung_prompt_tokens += job.prompt_tokens
                self._stats.hung_completion_tokens += completion_tokens
            self._stats.completion_tokens += completion_tokens
            self._stats.reasoning_tokens += sum(job.reasoning)
            self._stats.answered_by_endpoint["chat"] += 1
            self._stats.answered_by_tier[tier or "none"] += 1
        return Reply(200, payload, {"x-request-id": payload["id"]})

    def _embeddings_reply(self, job: EmbeddingJob) -> Reply:
        with self._lock:
            self._stats.embedding_tokens += job.tokens
            self._stats.embedding_inputs += len(job.vectors)
            self._stats.answered_by_endpoint["embeddings"] += 1
        return Reply(200, embedding_payload(job))

    def _draw_faults(self, settings: JudgeServerConfig) -> Faults:
        # Always six draws per request, so the fault sequence depends only on the request
        # order and the seed, not on which faults are switched on or on the rate limits.
        with self._lock:
            draws = [self._rng.random() for _ in range(6)]
            bad_reply_draw = self._bad_reply_rng.random()
        return Faults(
            bad_reply=_pick_bad_reply(bad_reply_draw, settings),
            timeout=draws[0] < settings.rate_timeout,
            rate_429=draws[1] < settings.rate_429,
            server_error=(500 if draws[3] < 0.5 else 503) if draws[2] < settings.rate_5xx else None,
            malformed=(
                MALFORMED_KINDS[int(draws[5] * len(MALFORMED_KINDS))]
                if draws[4] < settings.rate_malformed
                else None
            ),
        )

    def _admit(self, tokens: int) -> Reply | None:
        """Debit one request and `tokens` if both buckets hold them; else a 429 reply."""
        with self._lock:
            now = time.monotonic()
            waits: dict[str, float] = {}
            for bucket in self._buckets:
                bucket.refill(now)
                waits[bucket.kind] = bucket.wait_for(1 if bucket.kind == "requests" else tokens)
            blocked = next((b for b in self._buckets if waits[b.kind] > 0), None)
            if blocked is None:
                for bucket in self._buckets:
                    bucket.charge(1 if bucket.kind == "requests" else tokens)
                self._stats.limiter_tokens += tokens
                return None
            self._stats.rate_limited += 1
            self._stats.rate_limited_by[blocked.kind] += 1
            wait = max(waits.values())
            requested = 1 if blocked.kind == "requests" else tokens
            message = (
                f"Rate limit reached for {blocked.kind} per min: Limit {blocked.limit}, "
                f"Remaining {max(0, math.floor(blocked.level))}, Requested {requested}. "
                f"Please try again in {readable_duration(wait)}."
            )
            return error_reply(
                429, message, blocked.kind, "rate_limit_exceeded", retry_headers(wait)
            )

    def _ratelimit_headers(self) -> dict[str, str]:
        with self._lock:
            now = time.monotonic()
            headers: dict[str, str] = {}
            for bucket in self._buckets:
                bucket.refill(now)
                headers.update(bucket.headers())
            headers.update(self._config.header_overrides)  # a gateway that rewrites them
            return headers

    def _begin(self, endpoint: str) -> None:
        with self._lock:
            stats = self._stats
            stats.requests += 1
            stats.requests_by_endpoint[endpoint] += 1
            stats.in_flight += 1
            stats.max_in_flight = max(stats.max_in_flight, stats.in_flight)
            stats.last_request_at = time.time()
            if stats.first_request_at is None:
                stats.first_request_at = stats.last_request_at

    def _end(self, reply: Reply | None) -> None:
        with self._lock:
            stats = self._stats
            stats.in_flight -= 1
            if reply is None:
                stats.dropped += 1
                return
            stats.responses[str(reply.status)] += 1
            if reply.status == 401:
                stats.auth_failures += 1

    def _count_fault(self, kind: str, malformed: str | None = None) -> None:
        with self._lock:
            self._stats.injected[kind] += 1
            if malformed is not None:
                self._stats.malformed_kinds[malformed] += 1


def _bad_reply_rng(seed: int) -> random.Random:
    """The generator of bad replies, apart from the other faults' so that switching them on
    leaves the sequence of the others unchanged."""
    return random.Random(f"bad-reply:{seed}")


def _flex_rng(seed: int) -> random.Random:
    """The generator of flex capacity 429s, apart from the others' (as `_bad_reply_rng`)."""
    return random.Random(f"flex:{seed}")


def _pick_bad_reply(draw: float, settings: JudgeServerConfig) -> str | None:
    threshold = 0.0
    for name, kind in BAD_REPLY_RATES.items():
        threshold += getattr(settings, name)
        if draw < threshold:
            return kind
    return None


_GATEWAY_PAGE = (
    "<html><head><title>502 Bad Gateway</title></head><body><center><h1>502 Bad Gateway"
    "</h1></center><hr><center>nginx (injected by the test double)</center></body></html>\n"
)


_GATEWAY_LINE = b"upstream connect error or disconnect/reset before headers (injected)\n"


def _bad_reply(kind: str, chat: bool) -> Reply:
    """A status-200 reply that is not a well-formed API reply, of the given kind."""
    usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    wrong_types = (
        {"choices": "none", "usage": {**usage, "prompt_tokens": "many"}}
        if chat
        else {"object": "list", "data": {"embedding": "none"}, "usage": usage}
    )
    fixed = {
        "html": Reply(200, _GATEWAY_PAGE.encode(), content_type="text/html; charset=utf-8"),
        "text_plain": Reply(200, _GATEWAY_LINE, content_type="text/plain"),
        "no_choices": Reply(200, {"id": "chatcmpl-testdouble-empty", "object": "list"}),
        "wrong_types": Reply(200, wrong_types),
    }
    if kind in fixed:
        return fixed[kind]
    whole: dict[str, Any] = {
        "object": "chat.completion" if chat else "list",
        "choices" if chat else "data": [],
        "usage": usage,
        "padding": "x" * 200,
    }
    body = json.dumps(whole).encode()
    if kind == "truncated_body":
        return Reply(200, body[: len(body) // 2])
    return Reply(200, body, reset_after_headers=True)  # "reset"


def echo_key(reply: Reply, authorization: str | None) -> None:
    """`reply` reflecting the caller's credential, as a leaky gateway does (`echo_key`)."""
    if not authorization:
        return
    key = authorization.removeprefix("Bearer ").strip()
    reply.headers["x-echo-authorization"] = authorization
    reply.headers["x-echo-key"] = key
    if isinstance(reply.payload, dict):
        reply.payload["gateway_echo"] = {"authorization": authorization, "key": key}
        error = reply.payload.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            error["message"] += f" (gateway: the request's key was {key})"


def _server_error(status: int) -> Reply:
    if status == 503:
        message = "The engine is currently overloaded (injected by the test double)."
    else:
        message = (
            "The server had an error while processing your request (injected by the test double)."
        )
    return error_reply(status, message, "server_error")
