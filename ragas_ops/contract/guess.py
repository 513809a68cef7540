"""Guessing a log's `[columns]` and segments from a sample file (`ragas-ops init`).

The sample is read as the pipeline reads it (a JSON object's nested fields as dotted columns),
and each contract field is given the column whose name and type fit it best: the question
and answer a text column named like one (`query`, `response.text`...), the contexts a list of
strings or of objects with a text field, the id a text or integer column named like an id,
the time a column named like one. Segments are the other text columns with few distinct
values. A guess is only shown and written when the user confirms it: it is never used
silently.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ragas_ops.contract.inputs import ContractError

if TYPE_CHECKING:
    import pyarrow as pa

# Name fragments, most telling first: the first column whose last path part matches wins.
NAMES: dict[str, tuple[str, ...]] = {
    "question": ("question", "query", "prompt", "user_input", "input", "user_message", "q"),
    "contexts": (
        "contexts",
        "context",
        "retrieved_contexts",
        "documents",
        "docs",
        "passages",
        "chunks",
        "sources",
        "retrieved",
    ),
    "answer": ("answer", "response", "output", "completion", "reply", "generation", "a"),
    "id": ("id", "request_id", "trace_id", "interaction_id", "uuid", "message_id"),
    "timestamp": ("timestamp", "ts", "time", "created_at", "logged_at", "datetime", "date"),
}
TEXT_FIELDS = ("text", "content", "page_content", "chunk", "body")
"""The field of a context object that holds its text, most likely first."""
MAX_SEGMENT_VALUES = 20


@dataclass
class Guess:
    """The columns guessed for each field (None: none found), the segments, and an example
    value of each chosen column (what `init` shows)."""

    columns: dict[str, str | None]
    context_text: str | None = None
    segments: list[str] = field(default_factory=list)
    examples: dict[str, str] = field(default_factory=dict)

    def missing(self) -> list[str]:
        """The required fields no column was found for."""
        return [name for name in ("question", "contexts", "answer") if not self.columns[name]]

    def toml(self) -> str:
        """The config file's text: `[columns]` (the defaults left out) and the segments."""
        lines = ["[columns]"]
        for name, column in self.columns.items():
            if column and column != name:
                lines.append(f"{name} = {_quoted(column)}")
        if self.context_text and self.context_text != "text":
            lines.append(f"context_text = {_quoted(self.context_text)}")
        lines += ["", "[pipeline]", f"segments = [{', '.join(map(_quoted, self.segments))}]"]
        return "\n".join(lines) + "\n"


def _quoted(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def flattened(table: pa.Table) -> pa.Table:
    """Nested objects as dotted columns, as `contract.logs` reads a JSON log."""
    import pyarrow as pa

    while any(pa.types.is_struct(column.type) for column in table.columns):
        table = table.flatten()
    return table


def guess_columns(table: pa.Table) -> Guess:
    """The guess for a sample `table` (already `flattened`)."""
    import pyarrow as pa

    types = {column: table.schema.field(column).type for column in table.column_names}
    taken: set[str] = set()

    def pick(name: str, fits: Any) -> str | None:
        # A column named so (its last path part) first, then one inside an object named so
        # (`response.text` for the answer).
        for anywhere in (False, True):
            for wanted in NAMES[name]:
                for column, value_type in types.items():
                    parts = column.lower().split(".")
                    named = wanted in parts if anywhere else parts[-1] == wanted
                    if column not in taken and named and fits(value_type):
                        taken.add(column)
                        return str(column)
        return None

    def is_text(value_type: pa.DataType) -> bool:
        return bool(pa.types.is_string(value_type) or pa.types.is_large_string(value_type))

    def is_contexts(value_type: pa.DataType) -> bool:
        if not (pa.types.is_list(value_type) or pa.types.is_large_list(value_type)):
            return is_text(value_type)  # a CSV cell holding a JSON array
        item = value_type.value_type
        return is_text(item) or (
            pa.types.is_struct(item) and any(item.get_field_index(f) >= 0 for f in TEXT_FIELDS)
        )

    columns: dict[str, str | None] = {}
    columns["contexts"] = pick("contexts", is_contexts)
    columns["question"] = pick("question", is_text)
    columns["answer"] = pick("answer", is_text)
    columns["id"] = pick("id", lambda t: is_text(t) or pa.types.is_integer(t))
    columns["timestamp"] = pick(
        "timestamp",
        lambda t: (
            is_text(t)
            or pa.types.is_timestamp(t)
            or pa.types.is_integer(t)
            or pa.types.is_floating(t)
        ),
    )
    guess = Guess(columns=columns, context_text=_context_text(types.get(columns["contexts"] or "")))
    guess.segments = [
        column
        for column, value_type in types.items()
        if column not in taken
        and is_text(value_type)
        and _few_values(table.column(column), table.num_rows)
    ]
    guess.examples = {
        name: _example(table.column(column))
        for name, column in [*columns.items(), *((s, s) for s in guess.segments)]
        if column
    }
    return guess


def _context_text(value_type: pa.DataType | None) -> str | None:
    import pyarrow as pa

    if value_type is None or not (
        pa.types.is_list(value_type) or pa.types.is_large_list(value_type)
    ):
        return None
    item = value_type.value_type
    if not pa.types.is_struct(item):
        return None
    return next((name for name in TEXT_FIELDS if item.get_field_index(name) >= 0), None)


def _few_values(column: pa.ChunkedArray, rows: int) -> bool:
    """A segment-like column: repeated values, 2 to `MAX_SEGMENT_VALUES` of them (one value
    breaks nothing down)."""
    distinct = len(column.unique())
    return 2 <= distinct <= MAX_SEGMENT_VALUES and distinct < rows


def _example(column: pa.ChunkedArray) -> str:
    values = [value for value in column.to_pylist()[:20] if value is not None]
    text = repr(values[0]) if values else "(all null)"
    return text if len(text) <= 70 else text[:67] + "..."


def check_guess(guess: Guess) -> None:
    """Refuse a guess that lacks a required field, naming the flag that gives it."""
    missing = guess.missing()
    if missing:
        raise ContractError(
            f"no column found for {', '.join(missing)}: name it with --column FIELD=COLUMN "
            f"(e.g. --column {missing[0]}=my.{missing[0]})"
        )
