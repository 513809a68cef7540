"""Chat and embeddings as separate roles: a judge whose embeddings come from another provider
(`judge.embedding_kind`), e.g. Claude's answers with OpenAI's or the local embedder's vectors
(Anthropic has no embeddings API)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from ragas_ops.judge.base import Completion, Embeddings, Judge, Usage
from ragas_ops.prompts import OutputT, Prompt


class RoleJudge:
    """Asks `chat` every prompt and `embedder` every embedding; counts both."""

    def __init__(self, chat: Judge, embedder: Judge) -> None:
        self.chat = chat
        self.embedder = embedder

    @property
    def description(self) -> str:
        return self.chat.description

    @property
    def embedding_description(self) -> str:
        return self.embedder.embedding_description

    async def complete(
        self, prompt: Prompt[OutputT], data: Mapping[str, Any], *, n: int = 1
    ) -> Completion[OutputT]:
        return await self.chat.complete(prompt, data, n=n)

    async def embed(self, texts: Sequence[str]) -> Embeddings:
        return await self.embedder.embed(texts)

    def usage_total(self) -> Usage:
        total = Usage()
        total.add(self.chat.usage_total())
        total.add(self.embedder.usage_total())
        return total

    @property
    def events(self) -> Counter[str]:
        return self.chat.events + self.embedder.events

    @property
    def rate_limit_wait_seconds(self) -> float:
        return float(getattr(self.chat, "rate_limit_wait_seconds", 0.0))

    async def aclose(self) -> None:
        try:
            await self.chat.aclose()
        finally:
            await self.embedder.aclose()
