"""The settings toolkit: what a typed settings spec is written with, wherever it lives.

A part's settings are a dataclass (a spec) declared beside the part, in its room's `spec.py`
(e.g. `judge.cache.spec.CacheSpec`); `config` composes them and reads them from the config
file, the environment and the command line. A spec module imports nothing of ragas_ops but this
module, so any floor may import it (tests/unit/test_architecture.py keeps it so).

A setting's range is declared on its field (dataclass metadata, also used by `contract`'s
SizeBudget) and checked whenever a value comes from a file, the environment or the command
line. Keys: `minimum` (inclusive), `exclusive_minimum`, `maximum` (inclusive), `check` (a
function of the value and where it came from that raises `ConfigError`), and `key`: the name
the config file, the environment variable and the flag use, when it is not the field's own
(`CacheSpec.path` is `[judge] cache_path`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import field
from typing import Any


class ConfigError(ValueError):
    """A setting is unknown or has a value of the wrong kind."""


def setting(default: Any, *, key: str | None = None, **metadata: Any) -> Any:
    """A field with a default, its config key if it differs from its name, and its range."""
    if key is not None:
        metadata["key"] = key
    return field(default=default, metadata=metadata)


def at_least_one(default: Any, *, key: str | None = None) -> Any:
    """A count that must be at least 1 (when set at all)."""
    return setting(default, key=key, minimum=1)


def positive(default: Any, *, key: str | None = None) -> Any:
    """A number that must be above 0 (when set at all)."""
    return setting(default, key=key, exclusive_minimum=0)


def fraction(default: Any, *, key: str | None = None) -> Any:
    """A share in (0, 1]."""
    return setting(default, key=key, exclusive_minimum=0, maximum=1)


def setting_key(declared: dataclasses.Field[Any]) -> str:
    """The name a setting has in the config file (and so in its variable and flag)."""
    key: str = declared.metadata.get("key", declared.name)
    return key
