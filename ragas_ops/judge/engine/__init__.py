"""The judge's engine: a request's life, the same for every remote provider.

`judge.EngineJudge` answers the metrics (`complete`, `embed`) around a provider's wire; the
parts it composes are provider-neutral: `chat_request` (the canonical request built from a
prompt), `request` (one request and how an attempt ended), `retry` (what a failure means, and
whether to ask again), `tiers` (flex-like tiers and their fall-back), `admission` (the account's
pace), `accounting` (the budget and the ledger), `stopping` (the graceful stop) and `spec`.

Adding a provider (see `wire`): a package of its own under `ragas_ops/judge/<kind>/` (or outside
the repository) that
1. implements `wire.ChatWire` (and `wire.EmbeddingWire` if its API embeds): `send_chat` turns
   the canonical messages and parameters (`chat_request.chat_params`: `model`, `temperature`,
   `max_tokens`, `n`, `seed`, `reasoning_effort`, `response_format`) into its API's request and
   returns the `RawReply`; `read_chat` reads a reply into a `ChatReply` (choices with
   `finish_reason` `stop`/`length`/`content_filter`, `ReportedUsage`), or raises `BadReplyError`;
   `failure_of` maps its errors to a `Failure` kind; `rate_limits` reads its rate-limit headers
   into a `limits.provider.RateLimitHeaders`; `shape` is its `Fitting`;
2. builds `EngineJudge(settings, wire, runtime, prices, ...)` in its `providers.Provider.build`,
   with the credentials and endpoint in one `wire.JudgeRuntime`;
3. declares the `Provider` (its `Capabilities`) in the `ragas_ops.judge_providers` entry point
   group of its pyproject.toml.
The engine imports no provider; a provider imports the engine and no other provider
(tests/unit/test_architecture.py).
"""
