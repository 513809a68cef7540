"""The test judge's dispatcher and embedding: a prompt is answered with the lexical answer its
metric registered (`metrics/<name>/double.py`, keyed by prompt), and texts are embedded as
hashed bags of words. Deterministic, so tests can predict every score."""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from ragas_ops.metrics.lexical import generated_questions, is_noncommittal, stem
from ragas_ops.metrics.registry import double_answer_for, registered_prompts
from ragas_ops.prompts import Prompt
from ragas_ops.text import content_words, words

__all__ = [
    "MAX_EMBEDDING_DIM",
    "PROMPTS_BY_SYSTEM",
    "generated_questions",
    "hashed_embedding",
    "heuristic_reply",
    "is_noncommittal",
]


class _PromptsBySystem(Mapping[str, Prompt[Any]]):
    """The registered prompts by their exact system message (static per prompt version), read
    afresh when a metric registers more prompts (a plug-in's, a test's)."""

    def __init__(self) -> None:
        self._by_system: dict[str, Prompt[Any]] = {}
        self._known: tuple[Prompt[Any], ...] = ()

    def _current(self) -> dict[str, Prompt[Any]]:
        prompts = registered_prompts()
        if prompts != self._known:  # the map first: a thread seeing the new prompts uses it
            by_system = {
                system: prompt
                for prompt in prompts
                for system in (prompt.system, prompt.system_without_schema)
            }
            self._by_system, self._known = by_system, prompts
        return self._by_system

    def __getitem__(self, system: str) -> Prompt[Any]:
        return self._current()[system]

    def __iter__(self) -> Iterator[str]:
        return iter(self._current())

    def __len__(self) -> int:
        return len(self._current())


PROMPTS_BY_SYSTEM: Mapping[str, Prompt[Any]] = _PromptsBySystem()
"""How the test judge recognises a prompt: by its system message."""


def heuristic_reply(prompt: Prompt[Any], data: Mapping[str, Any], sample: int = 0) -> str:
    """The JSON text the test double answers `prompt` about `data` with: the answer the
    prompt's metric registered (`registry.double_answer`, in `metrics/<name>/double.py`).

    `sample` is the choice index when `n` > 1: generated questions differ between samples,
    the other prompts answer the same every time. Raises KeyError for a prompt it does not know
    and KeyError/TypeError/ValueError for data that lacks the prompt's fields.
    """
    answer = double_answer_for(prompt)
    if answer is None:
        raise KeyError(f"the test double has no heuristic for prompt {prompt.id}")
    return json.dumps(answer(data, sample), ensure_ascii=False)


# --------------------------------------------------------------------------------------------
# Embeddings: hashed bag of words
# --------------------------------------------------------------------------------------------

MAX_EMBEDDING_DIM = 8192
_BIGRAM_WEIGHT = 0.5


def _embedding_features(text: str) -> list[tuple[str, float]]:
    """Stemmed content words and their bigrams; plain words, or the text, when it has none."""
    meaningful = content_words(text)
    tokens = [stem(word) for word in words(text) if word in meaningful] or words(text)
    if not tokens:
        return [(f"text:{text}", 1.0)]
    features = [(f"w:{token}", 1.0) for token in tokens]
    features += [(f"b:{a} {b}", _BIGRAM_WEIGHT) for a, b in itertools.pairwise(tokens)]
    return features


def hashed_embedding(text: str, dim: int = 256) -> npt.NDArray[np.float64]:
    """A deterministic, L2-normalised feature-hashing embedding of `text`.

    Buckets come from BLAKE2b, not `hash()`, so vectors are the same in every process. All
    weights are positive, so cosines lie in [0, 1] like those of real embedding models.
    """
    vector = np.zeros(dim, dtype=np.float64)
    for feature, weight in _embedding_features(text):
        digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
        vector[int.from_bytes(digest, "little") % dim] += weight
    return vector / float(np.linalg.norm(vector))
