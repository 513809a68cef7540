"""The local judge's two ways of running its model: the packaged all-MiniLM-L6-v2 as int8 ONNX
(the default, no PyTorch) and sentence-transformers on PyTorch. Both load offline from packages."""

from __future__ import annotations

import numpy as np
import pytest

from ragas_ops.config import ConfigError
from ragas_ops.judge.local.judge import DEFAULT_LOCAL_MODEL, LocalJudge, embedder_for
from ragas_ops.judge.local.onnx_embedder import ONNX_MODEL_NAME, OnnxEmbedder, onnx_available

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


def test_auto_runs_the_packaged_model_as_onnx_and_other_models_on_torch() -> None:
    assert embedder_for(DEFAULT_LOCAL_MODEL, "auto").name == ONNX_MODEL_NAME
    assert embedder_for(DEFAULT_LOCAL_MODEL, "torch").name == DEFAULT_LOCAL_MODEL
    with pytest.raises(ConfigError, match="onnx runs the packaged"):
        embedder_for("some/other-model", "onnx")


def test_the_backend_is_part_of_the_judges_name_and_so_of_its_cache_keys() -> None:
    assert LocalJudge(backend="onnx").description == f"local:{ONNX_MODEL_NAME}"
    assert LocalJudge(backend="torch").description == f"local:{DEFAULT_LOCAL_MODEL}"


def test_onnx_vectors_agree_with_the_torch_model() -> None:
    pytest.importorskip("sentence_transformers")
    onnx = OnnxEmbedder().encode(SENTENCES)
    torch = embedder_for(DEFAULT_LOCAL_MODEL, "torch").encode(SENTENCES)

    cosines = (onnx * torch).sum(axis=1)

    assert onnx.shape == torch.shape == (len(SENTENCES), 384)
    assert np.allclose(np.linalg.norm(onnx, axis=1), 1.0, atol=1e-5)
    assert cosines.min() > 0.99, cosines


def test_a_sentences_vector_does_not_depend_on_what_is_encoded_with_it() -> None:
    embedder = OnnxEmbedder()
    alone = embedder.encode(SENTENCES[:1])
    together = embedder.encode(SENTENCES)

    assert np.array_equal(alone[0], together[0])
