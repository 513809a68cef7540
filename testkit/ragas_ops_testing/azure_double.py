"""A TEST DOUBLE of Azure OpenAI: a resource with deployments, on 127.0.0.1.

It answers the ragas-ops prompts as the OpenAI-compatible test judge does (its `App` serves
each request after this module has played Azure's part), and plays Azure as it documents
itself, strictly:

- the v1 API, `POST /openai/v1/chat/completions` and `/openai/v1/embeddings`, the deployment
  in the body's `model`; and the deployments API,
  `POST /openai/deployments/{deployment}/chat/completions?api-version=...` (no api-version:
  404, as Azure answers); a deployment it does not have: 404 `DeploymentNotFound`;
- `api-key: <key>`, or `Authorization: Bearer <token>` with a token it issued that has not
  expired (`issue_token`); neither: 401;
- a message holding `content_filter_marker`: 400 `content_filter` (Azure's body, with
  `innererror` `ResponsibleAIPolicyViolation`);
- over the deployment's quota (`rpm`, `tpm`, counted with `max_tokens` at admission, as Azure
  does): 429 with `retry-after` and `retry-after-ms`, Azure's message; every reply has only
  `x-ratelimit-remaining-requests` and `-tokens` (Azure sends no limit or reset headers).
"""

from __future__ import annotations

import json
import re
import secrets
import threading
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from ragas_ops_testing.double_server import DoubleServer
from ragas_ops_testing.judge_server import JudgeServerConfig
from ragas_ops_testing.judge_server.app import App
from ragas_ops_testing.judge_server.replies import Reply

_DEPLOYMENT_PATH = re.compile(r"^/openai/deployments/([^/]+)/(chat/completions|embeddings)$")
_V1_PATH = re.compile(r"^/openai/v1/(chat/completions|embeddings)$")
_AZURE_HEADERS = ("x-ratelimit-remaining-requests", "x-ratelimit-remaining-tokens")
CONTENT_FILTER_MESSAGE = (
    "The response was filtered due to the prompt triggering Azure OpenAI's content management "
    "policy. Please modify your prompt and retry."
)


@dataclass
class AzureDoubleConfig:
    """The resource the double plays."""

    deployments: dict[str, str] = field(
        default_factory=lambda: {
            "judge-chat": "gpt-4o-mini",
            "judge-embed": "text-embedding-3-small",
        }
    )
    """Deployment name -> the model it serves."""
    api_key: str = field(default="azure-test-key", repr=False)
    rpm: int | None = None
    tpm: int | None = None
    burst_seconds: float = 10.0
    """Azure enforces its per-minute quota over 10-second windows (RPM/6 each)."""
    content_filter_marker: str | None = None
    seed: int = 0


class AzureDouble:
    """The double's behaviour (`handle`) and its counts; `with AzureDouble(...) as double:`
    serves it, `double.endpoint` is the resource's URL."""

    def __init__(self, config: AzureDoubleConfig | None = None) -> None:
        self.config = config or AzureDoubleConfig()
        self._app = App(
            JudgeServerConfig(
                rpm=self.config.rpm,
                tpm=self.config.tpm,
                burst_seconds=self.config.burst_seconds,
                seed=self.config.seed,
            )
        )
        self._tokens: dict[str, float] = {}
        self._lock = threading.Lock()
        self.counts: Counter[str] = Counter()
        """`requests`, `rate_limited`, `content_filtered`, `unauthorized`, `by_key`, `by_bearer`."""
        self.bearers_seen: list[str] = []
        self._server = DoubleServer(self.handle)

    def __enter__(self) -> AzureDouble:
        self._server.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.stop()

    @property
    def endpoint(self) -> str:
        return self._server.url

    def stats(self) -> dict[str, Any]:
        """The inner judge's counts (requests, tokens billed, 429s) as `GET /stats` gives."""
        return self._app.stats()

    def issue_token(self, lifetime_seconds: float) -> tuple[str, float]:
        """An Entra ID token this resource accepts until it expires: (token, expires_on)."""
        token = "eyJ0eXAi." + secrets.token_urlsafe(16)
        expires_on = time.time() + lifetime_seconds
        with self._lock:
            self._tokens[token] = expires_on
        return token, expires_on

    def handle(self, method: str, path: str, headers: Mapping[str, str], body: bytes) -> Reply:
        parts = urlsplit(path)
        route = _route(parts.path, parse_qs(parts.query))
        if route is None or method != "POST":
            return _error(404, "404", "Resource not found")
        deployment, operation = route
        denied = self._check_auth(headers)
        if denied is not None:
            return denied
        try:
            request = json.loads(body or b"{}")
        except ValueError:
            return _error(400, "BadRequest", "the body is not JSON")
        deployment = deployment or str(request.get("model") or "")
        model = self.config.deployments.get(deployment)
        if model is None:
            return _error(
                404,
                "DeploymentNotFound",
                f"The API deployment for this resource does not exist: {deployment!r}.",
            )
        if self._filtered(request):
            with self._lock:
                self.counts["content_filtered"] += 1
            return _content_filter_reply()
        request["model"] = model
        inner = self._app.handle(
            "POST", f"/v1/{operation}", None, json.dumps(request).encode(), "application/json"
        )
        assert inner is not None  # the inner judge drops replies only when stopping
        return self._as_azure(inner)

    def _check_auth(self, headers: Mapping[str, str]) -> Reply | None:
        key = headers.get("api-key")
        bearer = headers.get("authorization", "")
        with self._lock:
            self.counts["requests"] += 1
            if key is not None and key == self.config.api_key:
                self.counts["by_key"] += 1
                return None
            if bearer.startswith("Bearer "):
                token = bearer[len("Bearer ") :]
                expires_on = self._tokens.get(token)
                if expires_on is not None and time.time() < expires_on:
                    self.counts["by_bearer"] += 1
                    self.bearers_seen.append(token)
                    return None
            self.counts["unauthorized"] += 1
        return _error(
            401,
            "401",
            "Access denied due to invalid subscription key or wrong API endpoint. Make sure "
            "to provide a valid key for an active subscription and use a correct regional API "
            "endpoint for your resource.",
        )

    def _filtered(self, request: Mapping[str, Any]) -> bool:
        marker = self.config.content_filter_marker
        if not marker:
            return False
        return any(
            marker in str(message.get("content", "")) for message in request.get("messages", [])
        )

    def _as_azure(self, inner: Reply) -> Reply:
        headers = {name: value for name, value in inner.headers.items() if name in _AZURE_HEADERS}
        if inner.status == 429:
            with self._lock:
                self.counts["rate_limited"] += 1
            seconds = float(inner.headers.get("retry-after-ms", "1000")) / 1000
            headers["retry-after"] = inner.headers.get("retry-after", "1")
            headers["retry-after-ms"] = inner.headers.get("retry-after-ms", "1000")
            return Reply(
                429,
                {
                    "error": {
                        "code": "429",
                        "message": "Requests to the ChatCompletions_Create Operation under Azure "
                        "OpenAI API have exceeded the rate limit of your current deployment. "
                        f"Please retry after {max(1, round(seconds))} seconds.",
                    }
                },
                headers,
            )
        return Reply(inner.status, inner.payload, headers, inner.content_type)


def _route(path: str, query: Mapping[str, list[str]]) -> tuple[str | None, str] | None:
    """(the deployment in the URL, or None: the body's; the operation), or None: no route."""
    found = _V1_PATH.match(path)
    if found:
        return None, found.group(1)
    found = _DEPLOYMENT_PATH.match(path)
    if found and query.get("api-version"):
        return unquote(found.group(1)), found.group(2)
    return None


def _error(status: int, code: str, message: str) -> Reply:
    return Reply(status, {"error": {"code": code, "message": message}})


def _content_filter_reply() -> Reply:
    return Reply(
        400,
        {
            "error": {
                "message": CONTENT_FILTER_MESSAGE,
                "type": None,
                "param": "prompt",
                "code": "content_filter",
                "status": 400,
                "innererror": {
                    "code": "ResponsibleAIPolicyViolation",
                    "content_filter_result": {
                        "hate": {"filtered": True, "severity": "high"},
                        "self_harm": {"filtered": False, "severity": "safe"},
                        "sexual": {"filtered": False, "severity": "safe"},
                        "violence": {"filtered": False, "severity": "safe"},
                    },
                },
            }
        },
    )
