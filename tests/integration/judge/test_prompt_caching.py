"""Prompt caching over HTTP: the static part of every prompt comes first and is the same for
every row, so a provider that caches prefixes serves it from cache; the cached tokens it
reports are recorded per row and priced at the cached rate."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from ragas_ops_testing.judge_server import JudgeServer

from ragas_ops.cli.main import main
from ragas_ops.metrics import ALL_PROMPTS
from ragas_ops.pricing import Price
from tests.integration.e2e.test_score_e2e import score_args, write_sample
from tests.support import TEST_KEY

PRICE = Price(input_per_million=1.0, output_per_million=4.0, cached_input_per_million=0.25)


def test_every_row_sends_the_same_static_prefix() -> None:
    rows = [{"question": f"q{i}", "answer": f"a{i}", "contexts": [f"c{i}"]} for i in range(3)]
    for prompt in ALL_PROMPTS:
        systems = {prompt.messages({**row, "statements": ["s"]})[0]["content"] for row in rows}
        assert len(systems) == 1, prompt.id


def test_cached_prompt_tokens_are_recorded_and_priced_at_the_cached_rate(
    start_judge_server: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Our static parts are 240-590 tokens: below OpenAI's 1,024, so the double caches from 128.
    server: JudgeServer = start_judge_server(prompt_cache_min_tokens=128)
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    config = tmp_path / "prices.toml"
    config.write_text(
        '[prices."test-judge"]\n'
        "input_per_million = 1.0\noutput_per_million = 4.0\ncached_input_per_million = 0.25\n"
        '[prices."test-embedding"]\ninput_per_million = 1.0\n'
    )
    source, target = tmp_path / "logs.parquet", tmp_path / "scored.parquet"
    write_sample(source, 30)

    main([*score_args(server, source, target, tmp_path / "cache.sqlite"), "--config", str(config)])

    scored = pq.read_table(target).to_pylist()
    cached = sum(row["cached_prompt_tokens"] for row in scored)
    prompt = sum(row["prompt_tokens"] for row in scored)
    assert 0.3 * prompt < cached < prompt, "most of each prompt is its static part"
    for row in scored:
        expected = PRICE.cost(
            row["prompt_tokens"], row["completion_tokens"], row["cached_prompt_tokens"]
        ) + Price(1.0).cost(row["embedding_tokens"], 0)
        # (a row's share of an embeddings request is pro rata, its tokens rounded: hence rel)
        assert row["cost_usd"] == pytest.approx(expected, rel=1e-3, abs=1e-12)
    uncached = sum(PRICE.cost(row["prompt_tokens"], row["completion_tokens"]) for row in scored)
    assert sum(row["cost_usd"] for row in scored) < 0.8 * uncached
