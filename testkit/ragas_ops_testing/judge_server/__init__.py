"""A deterministic TEST DOUBLE of an LLM judge: a local, OpenAI-compatible HTTP server.

It is not a language model. It answers the ragas-ops prompts, and only those, with a lexical
heuristic (shared content words, numbers, sentence splits), so that the judge client, its
retries and rate limiting, the caches and the metrics can be tested end to end, offline, with
reproducible results. Its scores mean nothing about real answer quality.

It can also misbehave on purpose, like a real provider on a bad day: added latency, request and
token rate limits (with OpenAI's `x-ratelimit-*` and `retry-after` headers), injected 429s,
500/503 errors, hanging requests and malformed output, all drawn from a seeded random generator.
It plays OpenAI's flex tier too: requests sent with `service_tier: "flex"` are answered more
slowly and a share of them get a 429 "resource unavailable"; replies echo the `service_tier`.

Endpoints: `POST /v1/chat/completions`, `POST /v1/embeddings`, `GET /v1/models`; OpenAI's
Files API (`POST /v1/files`, `GET /v1/files/{id}`, `GET /v1/files/{id}/content`,
`DELETE /v1/files/{id}`) and Batch API (`POST /v1/batches`, `GET /v1/batches`,
`GET /v1/batches/{id}`, `POST /v1/batches/{id}/cancel`), see `batch_api`; and for tests
`GET /stats` and `POST /stats/reset`, and with `request_log` `GET /requests` (every chat and
embeddings request: when it came and ended, its status and body). It listens on the loopback
interface only.

    with JudgeServer(JudgeServerConfig(rpm=600, rate_5xx=0.1)) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="test")

It plays today's models (`models`): any name it does not know as a classic model, OpenAI's
reasoning models as strictly as OpenAI (`max_tokens` and a temperature other than 1 refused,
efforts by model, hidden reasoning tokens out of `max_completion_tokens`, flex only for them)
and a retired one (404 `model_not_found`); `GET /v1/models/{id}` gives a `shutdown_date`.

Its parts, one module each: `config` (the settings and their checks), `models` (the models
it plays), `buckets` (the rate limits), `replies` (reading a request, answering it, the
faults), `stats` (what GET /stats counts), `app` (the dispatch: everything but the
sockets), `server` (the HTTP plumbing and `JudgeServer`) and `cli` (`ragas-ops test-judge`).
"""

from __future__ import annotations

from ragas_ops_testing.judge_server.cli import build_parser, main, parse_config
from ragas_ops_testing.judge_server.config import CHAT_MODEL, EMBEDDING_MODEL, JudgeServerConfig
from ragas_ops_testing.judge_server.server import JudgeServer

__all__ = [
    "CHAT_MODEL",
    "EMBEDDING_MODEL",
    "JudgeServer",
    "JudgeServerConfig",
    "build_parser",
    "main",
    "parse_config",
]
