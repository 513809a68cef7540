"""`[criteria.<name>]`: a judged criterion of a team's own, read from the config file.

The minimal form is the criterion's text and the fields of the row it reads; it is pass/fail
unless it gives a `scale` of ordinal levels, each described. `steps` (how to evaluate) and
`examples` (a row and the level it should get) are optional. Its version is a hash of all of
that (`CriterionSpec.version`): any change of wording gives a new version, recorded with every
score, so the cache never reuses an old verdict and the regression check never compares a day
judged under one wording with a day judged under another.

A settings module: it imports nothing of ragas_ops but the settings toolkit (the DAG files read
settings while Airflow parses them).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ragas_ops.settings_fields import ConfigError

PASS_FAIL: tuple[tuple[str, str], ...] = (
    ("fail", "The row does not meet the criterion."),
    ("pass", "The row meets the criterion."),
)
"""The levels of a criterion without a `scale`: fail (0) and pass (1)."""

CONTRACT_FIELDS = ("question", "contexts", "answer")
"""The input contract's fields; any other field a criterion reads is a pass-through column."""

VERSION_CHARS = 12
"""Hex digits of the definition's SHA-256 kept as its version (48 bits: no two wordings of
one criterion collide in practice)."""

_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_KEYS = ("criterion", "reads", "scale", "steps", "examples")
_EXAMPLE_RESERVED = ("level", "reason")


@dataclass(frozen=True)
class CriterionExample:
    """A row (the fields the criterion reads) and the level it should get, shown to the judge
    as a worked example."""

    row: Mapping[str, Any]
    level: str
    reason: str = ""


@dataclass(frozen=True)
class CriterionSpec:
    """One criterion as the config file gives it."""

    name: str
    criterion: str
    reads: tuple[str, ...]
    levels: tuple[tuple[str, str], ...] = PASS_FAIL
    """(level, description), worst first; a level's score is its place mapped onto [0, 1]."""
    steps: tuple[str, ...] = ()
    examples: tuple[CriterionExample, ...] = field(default=())

    @property
    def is_pass_fail(self) -> bool:
        return self.levels == PASS_FAIL

    @property
    def level_names(self) -> tuple[str, ...]:
        return tuple(level for level, _ in self.levels)

    @property
    def pass_through(self) -> tuple[str, ...]:
        """The fields read that are not the contract's: columns carried through from the logs."""
        return tuple(name for name in self.reads if name not in CONTRACT_FIELDS)

    def score_of(self, level: str) -> float:
        """A level's score: its place among the levels, worst 0, best 1, evenly spaced."""
        place = self.level_names.index(level)
        return place / (len(self.levels) - 1)

    def definition(self) -> dict[str, Any]:
        """Everything the judge is told about the criterion: what its version hashes."""
        return {
            "criterion": self.criterion,
            "reads": list(self.reads),
            "levels": [list(level) for level in self.levels],
            "steps": list(self.steps),
            "examples": [
                {"row": dict(example.row), "level": example.level, "reason": example.reason}
                for example in self.examples
            ],
        }

    @property
    def version(self) -> str:
        """The definition's hash: a new one for any change of text, reads, scale, steps or
        examples (the name is not part of it: it names the columns, not the judgement)."""
        canonical = json.dumps(self.definition(), sort_keys=True, ensure_ascii=False, default=str)
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:VERSION_CHARS]


def read_criteria(values: Any, source: str) -> dict[str, CriterionSpec]:
    """The `[criteria]` table of a config file: one `[criteria.<name>]` table per criterion."""
    if not isinstance(values, Mapping):
        raise ConfigError(f"{source} [criteria]: expected one table per criterion")
    return {name: read_criterion(name, table, source) for name, table in values.items()}


def read_criterion(name: str, table: Any, source: str) -> CriterionSpec:
    """One `[criteria.<name>]` table, checked: every problem names the file and the table."""
    where = f"{source} [criteria.{name}]"
    if not _NAME.match(name):
        raise ConfigError(
            f"{where}: a criterion's name names its columns ({name}_score...): lower-case "
            "letters, digits and _, starting with a letter"
        )
    if not isinstance(table, Mapping):
        raise ConfigError(f"{where}: expected a table with criterion and reads")
    unknown = sorted(set(table) - set(_KEYS))
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {unknown}; known: {list(_KEYS)}")
    text = table.get("criterion")
    if not isinstance(text, str) or not text.strip():
        raise ConfigError(f"{where}: criterion must be the criterion's text")
    reads = _texts(table.get("reads"), f"{where} reads")
    if not reads:
        raise ConfigError(f'{where}: reads must name the fields the judge reads, e.g. ["answer"]')
    if len(set(reads)) != len(reads):
        raise ConfigError(f"{where}: reads names a field twice: {list(reads)}")
    levels = _levels(table.get("scale"), where) if "scale" in table else PASS_FAIL
    steps = _texts(table.get("steps", []), f"{where} steps")
    spec = CriterionSpec(name, text.strip(), reads, levels, steps)
    examples = tuple(
        _example(example, spec, f"{where} examples[{index}]")
        for index, example in enumerate(_tables(table.get("examples", []), f"{where} examples"))
    )
    return CriterionSpec(name, spec.criterion, reads, levels, steps, examples)


def _texts(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ConfigError(f"{where}: expected a list of texts, got {value!r}")
    return tuple(item.strip() for item in value if item.strip())


def _tables(value: Any, where: str) -> Sequence[Mapping[str, Any]]:
    if not isinstance(value, list) or not all(isinstance(item, Mapping) for item in value):
        raise ConfigError(f"{where}: expected a list of tables ([[criteria.<name>.examples]])")
    return value


def _levels(value: Any, where: str) -> tuple[tuple[str, str], ...]:
    """`scale = { "1" = "...", ..., "5" = "..." }`: levels worst first, each described; numeric
    levels are put in numeric order, others kept in the order written."""
    if not isinstance(value, Mapping) or len(value) < 2:
        raise ConfigError(f"{where} scale: expected a table of at least two levels, each described")
    for level, description in value.items():
        if not isinstance(description, str) or not description.strip():
            raise ConfigError(f"{where} scale: level {level!r} needs a description (text)")
    levels = [(str(level).strip(), str(text).strip()) for level, text in value.items()]
    if all(re.fullmatch(r"-?\d+", level) for level, _ in levels):
        levels.sort(key=lambda item: int(item[0]))
    return tuple(levels)


def _example(table: Mapping[str, Any], spec: CriterionSpec, where: str) -> CriterionExample:
    level = str(table.get("level", "")).strip()
    if level not in spec.level_names:
        raise ConfigError(f"{where}: level must be one of {list(spec.level_names)}, got {level!r}")
    row = {key: value for key, value in table.items() if key not in _EXAMPLE_RESERVED}
    if set(row) != set(spec.reads):
        raise ConfigError(
            f"{where}: an example gives exactly the fields the criterion reads "
            f"{list(spec.reads)}, got {sorted(row)}"
        )
    reason = table.get("reason", "")
    if not isinstance(reason, str):
        raise ConfigError(f"{where}: reason must be text")
    return CriterionExample({name: row[name] for name in spec.reads}, level, reason.strip())
