"""The input contract: which columns a log must have, and how each row is validated.

A log must have a question (string), contexts (list of strings) and an answer (string), under
whatever names the column mapping gives. Everything else (id, timestamp, segment columns) is
carried through unchanged. A row that breaks the contract is never dropped: each metric that
needs the broken field reports `invalid_input` with the reason, the others still score it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ragas_ops.text import normalize

if TYPE_CHECKING:  # pyarrow stays out of imports that DAG parsing makes
    import pyarrow as pa

QUESTION, CONTEXTS, ANSWER = "question", "contexts", "answer"
REQUIRED_FIELDS = (QUESTION, CONTEXTS, ANSWER)


class ContractError(ValueError):
    """A whole input cannot be read under the contract (e.g. a required column is missing)."""


@dataclass(frozen=True)
class ColumnMapping:
    """Names of the contract's columns in the user's logs, e.g. `question="query"`."""

    question: str = QUESTION
    contexts: str = CONTEXTS
    answer: str = ANSWER

    @classmethod
    def from_mapping(cls, names: Mapping[str, str]) -> ColumnMapping:
        unknown = set(names) - set(REQUIRED_FIELDS)
        if unknown:
            raise ContractError(
                f"unknown contract field(s) in the column mapping: {sorted(unknown)}; "
                f"the fields are {list(REQUIRED_FIELDS)}"
            )
        return cls(**names)

    def source(self, contract_field: str) -> str:
        return str(getattr(self, contract_field))


@dataclass(frozen=True)
class SizeBudget:
    """Largest texts sent to the judge, in characters; a larger field is an `invalid_input`."""

    question_chars: int = field(default=4_000, metadata={"minimum": 1})
    answer_chars: int = field(default=16_000, metadata={"minimum": 1})
    contexts_chars: int = field(default=120_000, metadata={"minimum": 1})


@dataclass
class Interaction:
    """One logged RAG interaction, validated field by field."""

    question: str | None
    contexts: list[str] | None
    """Distinct non-blank contexts, in retrieval order: what the judge reads."""
    answer: str | None
    retrieved_contexts: list[str] = field(default_factory=list)
    """All non-blank contexts as retrieved, duplicates included: what context relevance counts."""
    problems: dict[str, str] = field(default_factory=dict)
    """Contract field -> why it cannot be used."""

    @property
    def duplicate_contexts(self) -> int:
        return len(self.retrieved_contexts) - len(self.contexts or [])

    def problem_with(self, fields: Iterable[str]) -> str | None:
        """The reasons why the given fields cannot be used, or None if they all can."""
        reasons = [self.problems[name] for name in fields if name in self.problems]
        return "; ".join(reasons) if reasons else None


def check_columns(schema: pa.Schema, mapping: ColumnMapping) -> None:
    """Fail early, with the available names, when a mapped column is missing."""
    missing = [
        f"{name} (column {mapping.source(name)!r})"
        for name in REQUIRED_FIELDS
        if mapping.source(name) not in schema.names
    ]
    if missing:
        raise ContractError(
            f"the input has no column for: {', '.join(missing)}. Its columns are "
            f"{schema.names}. Map your names with --column question=COLUMN (or [columns] "
            "in the config file)."
        )


def interactions_from_table(
    table: pa.Table, mapping: ColumnMapping, budget: SizeBudget
) -> list[Interaction]:
    """Validate every row of `table` into an Interaction, in row order."""
    check_columns(table.schema, mapping)
    questions = table.column(mapping.question).to_pylist()
    contexts = table.column(mapping.contexts).to_pylist()
    answers = table.column(mapping.answer).to_pylist()
    return [
        validate_row(question, row_contexts, answer, budget)
        for question, row_contexts, answer in zip(questions, contexts, answers, strict=True)
    ]


def validate_row(question: Any, contexts: Any, answer: Any, budget: SizeBudget) -> Interaction:
    """Validate one row's values; problems are recorded per field, never raised."""
    problems: dict[str, str] = {}
    clean_question = _text_field(QUESTION, question, budget.question_chars, problems)
    clean_answer = _text_field(ANSWER, answer, budget.answer_chars, problems)
    retrieved = _contexts_field(contexts, budget.contexts_chars, problems)
    distinct = _distinct(retrieved) if retrieved is not None else None
    return Interaction(
        question=clean_question,
        contexts=distinct,
        answer=clean_answer,
        retrieved_contexts=retrieved or [],
        problems=problems,
    )


def _text_field(name: str, value: Any, max_chars: int, problems: dict[str, str]) -> str | None:
    if value is None:
        problems[name] = f"{name} is missing (null)"
        return None
    if not isinstance(value, str):
        problems[name] = f"{name} is not a string (got {type(value).__name__})"
        return None
    text = value.strip()
    if not text:
        problems[name] = f"{name} is empty"
        return None
    if len(text) > max_chars:
        problems[name] = f"{name} is over the size budget ({len(text):,} > {max_chars:,} chars)"
        return None
    return text


def _contexts_field(value: Any, max_chars: int, problems: dict[str, str]) -> list[str] | None:
    if value is None:
        problems[CONTEXTS] = "contexts are missing (null)"
        return None
    if isinstance(value, str) or not isinstance(value, Sequence):
        problems[CONTEXTS] = f"contexts are not a list of strings (got {type(value).__name__})"
        return None
    not_text = [type(item).__name__ for item in value if not isinstance(item, str)]
    if not_text:
        problems[CONTEXTS] = (
            f"contexts are not a list of strings ({len(not_text)} item(s) of type "
            f"{', '.join(sorted(set(not_text)))})"
        )
        return None
    texts = [item.strip() for item in value if item.strip()]
    if not texts:
        problems[CONTEXTS] = "no contexts (the list is empty or holds only blank strings)"
        return None
    total = sum(len(text) for text in texts)
    if total > max_chars:
        problems[CONTEXTS] = f"contexts are over the size budget ({total:,} > {max_chars:,} chars)"
        return None
    return texts


def _distinct(texts: list[str]) -> list[str]:
    seen: set[str] = set()
    distinct = []
    for text in texts:
        key = normalize(text)
        if key not in seen:
            seen.add(key)
            distinct.append(text)
    return distinct
