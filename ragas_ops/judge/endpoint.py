"""Which endpoint a judge talks to: part of its identity, in output rows and cache keys.

The same model name served by two endpoints (the provider, a test double, a vLLM box) gives
different answers, so the judge is named `openai:MODEL@ENDPOINT`, the endpoint being the base
URL normalised and without credentials: `api.openai.com`, `127.0.0.1:8787`,
`myco.openai.azure.com/openai/deployments/gpt4`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from urllib.parse import urlsplit

from ragas_ops.judge.spec import check_base_url

OPENAI_BASE_URL = "https://api.openai.com/v1"
_DEFAULT_PORTS = {"http": 80, "https": 443}


def effective_base_url(base_url: str | None, environ: Mapping[str, str] | None = None) -> str:
    """The base URL requests go to: the setting, else `OPENAI_BASE_URL` (as the SDK reads
    it), else OpenAI's own; checked like the setting (no credentials, a valid port)."""
    environ = os.environ if environ is None else environ
    url = base_url or environ.get("OPENAI_BASE_URL") or OPENAI_BASE_URL
    check_base_url(url, "judge.base_url" if base_url else "OPENAI_BASE_URL")
    return url


def endpoint_name(base_url: str) -> str:
    """The endpoint of a (checked) base URL: host, a port other than the scheme's default, and
    a path other than `/v1`; lower-case host, no scheme, no credentials, no query."""
    parts = urlsplit(base_url)
    host = (parts.hostname or "").lower()
    if ":" in host:  # an IPv6 address
        host = f"[{host}]"
    port = parts.port
    name = host if port is None or port == _DEFAULT_PORTS.get(parts.scheme) else f"{host}:{port}"
    path = parts.path.rstrip("/")
    return name if path in ("", "/v1") else name + path


def describe_judge(model: str, endpoint: str, kind: str = "openai") -> str:
    """How output rows name a model of a provider's endpoint: `KIND:MODEL@ENDPOINT`, e.g.
    `openai:gpt-4o-mini@api.openai.com`, `anthropic:claude-haiku-4-5@api.anthropic.com`."""
    return f"{kind}:{model}@{endpoint}"
