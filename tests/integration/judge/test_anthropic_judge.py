"""The Anthropic judge over HTTP against the Messages API double: the engine's request life
(retries, pacing, accounting) around Anthropic's wire. 529 `overloaded_error` is retried with
backoff, a 429 waits its `retry-after`, thinking spends output tokens, answer relevance's
samples are asked one by one (Anthropic has no `n`), and what the rows paid is what the double
counted."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from ragas_ops_testing.anthropic_server import AnthropicServer, AnthropicServerConfig

from ragas_ops.config import Settings
from ragas_ops.judge.base import Judge, Usage
from ragas_ops.judge.factory import build_judge
from ragas_ops.metrics.answer_relevance import QUESTION_SAMPLE_PROMPT
from ragas_ops.metrics.faithfulness import STATEMENTS_PROMPT

ROWS = 12


@pytest.fixture
def start_anthropic() -> Iterator[Any]:
    servers: list[AnthropicServer] = []

    def start(**config: Any) -> AnthropicServer:
        server = AnthropicServer(AnthropicServerConfig(**config)).__enter__()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.__exit__(None, None, None)


def judge_for(
    server: AnthropicServer, tmp_path: Path, model: str = "claude-haiku-5-5", **judge: Any
) -> Judge:
    settings = Settings()
    settings.judge.kind = "anthropic"
    settings.judge.endpoint.model = model
    settings.judge.endpoint.base_url = server.url
    settings.judge.endpoint.embedding_kind = "local"
    settings.judge.cache.path = str(tmp_path / "cache.sqlite")
    settings.judge.limits.rpm = None
    settings.judge.limits.tpm = None
    for name, value in judge.items():
        spec = settings.judge.anthropic if name.startswith("thinking") else settings.judge.endpoint
        setattr(spec, name.removeprefix("thinking_") if name != "thinking" else name, value)
    environ: Mapping[str, str] = {"ANTHROPIC_API_KEY": server.config.api_key}
    built = build_judge(settings, environ)
    return built.chat if hasattr(built, "chat") else built  # the chat role: no embedder


def rows() -> list[dict[str, str]]:
    return [
        {"question": f"When did bridge {index} open?", "answer": f"It opened in {1900 + index}."}
        for index in range(ROWS)
    ]


def score(judge: Judge, n: int = 1) -> Usage:
    prompt = QUESTION_SAMPLE_PROMPT if n > 1 else STATEMENTS_PROMPT

    async def run() -> Usage:
        total = Usage()
        try:
            for completion in await asyncio.gather(
                *(judge.complete(prompt, row, n=n) for row in rows())  # type: ignore[arg-type]
            ):
                assert len(completion.outputs) == n
                total.add(completion.usage)
        finally:
            await judge.aclose()
        return total

    return asyncio.run(run())


def test_overloaded_529s_are_retried_and_every_row_is_answered(
    start_anthropic: Any, tmp_path: Path
) -> None:
    server = start_anthropic(rate_529=0.3, seed=3)
    judge = judge_for(server, tmp_path, max_attempts=8)

    usage = score(judge)

    stats = server.stats()
    assert stats["answered"] == ROWS
    assert stats["overloaded_529"] > 0
    assert judge.events["retry_529"] == stats["overloaded_529"]
    assert usage.requests == stats["answered"] + stats["overloaded_529"]
    assert usage.completion_tokens == stats["output_tokens"]
    assert usage.prompt_tokens == (
        stats["input_tokens"]
        + stats["cache_creation_input_tokens"]
        + stats["cache_read_input_tokens"]
    )


def test_a_429_waits_its_retry_after_and_loses_no_row(start_anthropic: Any, tmp_path: Path) -> None:
    # Input tokens per minute enforced over a second: about two requests at once.
    server = start_anthropic(input_tpm=40_000, burst_seconds=1.0)
    judge = judge_for(server, tmp_path)

    score(judge)

    stats = server.stats()
    assert stats["answered"] == ROWS
    assert stats["refused_429"] > 0
    assert judge.events["retry_429"] == stats["refused_429"]


def test_samples_are_asked_one_by_one_and_thinking_spends_output_tokens(
    start_anthropic: Any, tmp_path: Path
) -> None:
    server = start_anthropic(thinking_tokens=200)
    judge = judge_for(
        server,
        tmp_path,
        model="claude-sonnet-4-5",
        structured_output="json_object",
        thinking="budget",
        thinking_budget_tokens=1024,
    )

    usage = score(judge, n=3)

    stats = server.stats()
    assert stats["rejected_400"] == 0  # no n, no seed, no temperature, no forced tool
    assert stats["answered"] == 3 * ROWS
    assert stats["thinking_tokens"] == 200 * 3 * ROWS
    assert usage.completion_tokens == stats["output_tokens"]
