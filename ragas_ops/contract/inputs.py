"""The input contract: which columns a log must have, and how each row is validated.

A log must have a question (string), contexts (list of strings) and an answer (string), under
whatever names the column mapping gives; an `id` column, when present, holds strings or
integers, and a `timestamp` column timestamps. Everything else (segment columns...) is carried
through unchanged. A row that breaks the contract is never dropped: each metric that needs the
broken field reports `invalid_input` with the reason, the others still score it.

A file is judged on its own merits (`check_schema`): its columns and their types against the
contract, never against the other files of its day, so the order of the files never changes
which rows survive. `unify_inputs` gives the schema a set of files is read with: the
contract's types, then the union of the other columns, widened where that loses nothing.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from ragas_ops.text import normalize

if TYPE_CHECKING:  # pyarrow stays out of imports that DAG parsing makes
    import pyarrow as pa

QUESTION, CONTEXTS, ANSWER = "question", "contexts", "answer"
REQUIRED_FIELDS = (QUESTION, CONTEXTS, ANSWER)
ID, TIMESTAMP = "id", "timestamp"
OPTIONAL_FIELDS = (ID, TIMESTAMP)
"""Read when the log has them: the scored table calls them `id` and `timestamp` whatever the
log's names (`ColumnMapping.id`, `ColumnMapping.timestamp`)."""
EpochUnit = Literal["s", "ms", "us", "ns"]
REPLACEMENT_CHARACTER = "\ufffd"
"""What an undecodable byte of a text cell is read as (see `repair_utf8`)."""


class ContractError(ValueError):
    """A whole input cannot be read under the contract (e.g. a required column is missing)."""


@dataclass(frozen=True)
class ColumnMapping:
    """Names of the contract's columns in the user's logs, e.g. `question="query"`."""

    question: str = QUESTION
    contexts: str = CONTEXTS
    answer: str = ANSWER
    context_text: str = "text"
    """In a JSON Lines or CSV log whose contexts are objects (`{"text": ..., "score": ...}`):
    the field holding a context's text (`contract.logs`)."""
    epoch_unit: EpochUnit = "s"
    """In a JSON Lines or CSV log whose `timestamp` is a number: its unit since the epoch."""
    id: str = ID
    """The column holding the row id (strings or integers), a nested one by its dotted path
    (`request.id`): read as the scored table's `id` (see `with_contract_names`)."""
    timestamp: str = TIMESTAMP
    """The column holding the row's time, a nested one by its dotted path (`meta.ts`): read as
    the scored table's `timestamp`."""

    def __post_init__(self) -> None:
        fields_by_column: dict[str, list[str]] = {}
        for name in (*REQUIRED_FIELDS, *OPTIONAL_FIELDS):
            fields_by_column.setdefault(self.source(name), []).append(name)
        shared = {column: names for column, names in fields_by_column.items() if len(names) > 1}
        if shared:
            told = "; ".join(
                f"{' and '.join(names)} -> {column!r}" for column, names in shared.items()
            )
            raise ContractError(
                f"the column mapping reads two contract fields from one column ({told}): "
                "each of question, contexts, answer, id and timestamp needs a column of its own"
            )

    @classmethod
    def from_mapping(cls, names: Mapping[str, str]) -> ColumnMapping:
        known = (*REQUIRED_FIELDS, *OPTIONAL_FIELDS)
        unknown = set(names) - set(known)
        if unknown:
            raise ContractError(
                f"unknown contract field(s) in the column mapping: {sorted(unknown)}; "
                f"the fields are {list(known)}"
            )
        fields: dict[str, Any] = dict(names)  # only the contract's names: checked above
        return cls(**fields)

    def source(self, contract_field: str) -> str:
        return str(getattr(self, contract_field))

    def renamed(self) -> dict[str, str]:
        """The optional fields read from a column of another name: source -> contract name."""
        return {self.source(name): name for name in OPTIONAL_FIELDS if self.source(name) != name}


def with_contract_names(table: pa.Table, mapping: ColumnMapping) -> pa.Table:
    """`table` with its id and time under the contract's names, `id` and `timestamp`, when the
    mapping reads them from other columns: the column `request.id` renamed (a JSON log's
    nested field, flattened), or the field `id` of a Parquet struct column `request` copied
    out (the struct is carried through as it is). A log lacking the mapped column is left as
    it is (`check_mapped_columns` refuses a day none of whose files has it); one that has
    both the mapped column and a column of the contract's name is a ContractError."""
    for source, name in mapping.renamed().items():
        if source in table.column_names:
            if name in table.column_names:
                raise ContractError(
                    f"the log has a column {name!r} and the column {source!r} that "
                    f"columns.{name} names: the scored table calls the latter {name!r}; "
                    f"rename or drop the log's {name!r}, or map {name} to it"
                )
            names = [name if column == source else column for column in table.column_names]
            table = table.rename_columns(names)
            continue
        nested = _struct_field(table, source)
        if nested is not None:
            if name in table.column_names:
                raise ContractError(
                    f"the log has a column {name!r} and the nested field {source!r} that "
                    f"columns.{name} names: rename or drop the log's {name!r}"
                )
            table = table.append_column(name, nested)
    return table


def schema_with_contract_names(schema: pa.Schema, mapping: ColumnMapping) -> pa.Schema:
    """The schema `with_contract_names` gives a table of `schema`."""
    if not mapping.renamed():
        return schema
    return with_contract_names(schema.empty_table(), mapping).schema


def _struct_field(table: pa.Table, dotted: str) -> pa.ChunkedArray | None:
    """The field a dotted path names inside a struct column (`request.id`: the field `id` of
    the column `request`), or None when there is none."""
    import pyarrow as pa
    import pyarrow.compute as pc

    parts = dotted.split(".")
    for split in range(len(parts) - 1, 0, -1):  # the longest column name that is a struct
        column = ".".join(parts[:split])
        if column not in table.column_names:
            continue
        value: pa.ChunkedArray = table.column(column)
        for part in parts[split:]:
            if not pa.types.is_struct(value.type) or value.type.get_field_index(part) < 0:
                return None
            value = pc.struct_field(value, [value.type.get_field_index(part)])
        return value
    return None


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
    """Contract field (or pass-through column) -> why it cannot be used."""
    passed: dict[str, Any] = field(default_factory=dict)
    """Pass-through columns a metric reads besides the contract's fields (a criterion's
    `policy`...), as JSON-ready values; a missing or null one is in `problems` instead."""

    def field_value(self, name: str) -> Any:
        """A contract field's value, or a pass-through column's."""
        if name in (QUESTION, CONTEXTS, ANSWER):
            return getattr(self, name)
        return self.passed.get(name)

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


def contract_schema(mapping: ColumnMapping) -> pa.Schema:
    """The contract's columns with the types every input is read with."""
    import pyarrow as pa

    return pa.schema(
        [
            (mapping.question, pa.string()),
            (mapping.contexts, pa.list_(pa.string())),
            (mapping.answer, pa.string()),
        ]
    )


PARTITION_COLUMN = "dt"
"""The day folders' key (`dt=YYYY-MM-DD`): a hive-partitioned read (DuckDB, pyarrow datasets,
Athena, Spark) puts the folder's date in this column, over a data column of that name."""


def output_name_clashes(names: Iterable[str], output_names: Iterable[str]) -> list[str]:
    """The `names` that are one of `output_names` in any case: SQL engines fold case."""
    taken = {name.casefold() for name in output_names}
    return [name for name in names if name.casefold() in taken]


def check_names(names: Sequence[str], output_names: Iterable[str] = ()) -> None:
    """Fail, naming them, on column names that readers of the scored table would change or
    mix up: a name twice, two names that differ only in case (DuckDB renames the second
    `Question_1` and SQL on "Question" reads `question`; Athena and Spark see one column),
    the partition key `dt`, or a column of the scored table (`output_names`) in any case."""
    repeated = sorted(name for name, count in Counter(names).items() if count > 1)
    if repeated:  # Parquet allows it; no reader can tell which one is meant
        raise ContractError(
            f"the file has more than one column named {', '.join(map(repr, repeated))}: "
            "rename or drop the copies"
        )
    spellings: dict[str, list[str]] = {}
    for name in names:
        spellings.setdefault(name.casefold(), []).append(name)
    folded = [group for group in spellings.values() if len(group) > 1]
    if folded:
        shown = "; ".join(" and ".join(map(repr, group)) for group in folded)
        raise ContractError(
            f"the file has columns whose names differ only in case ({shown}): SQL engines "
            "read them as one column; rename or drop one of each"
        )
    partition = [name for name in names if name.casefold() == PARTITION_COLUMN]
    if partition:
        raise ContractError(
            f"the file has a column {partition[0]!r}: the day folders' key, which a "
            "hive-partitioned read of the scored table puts over it; rename it"
        )
    clashes = output_name_clashes(names, output_names)
    if clashes:
        raise ContractError(
            f"the file already has output column(s) {clashes} (compared in any case): score "
            "the raw log, not a scored table, or rename those columns"
        )


def check_schema(
    schema: pa.Schema, mapping: ColumnMapping, output_names: Iterable[str] = ()
) -> None:
    """Fail, naming every offending column and its type, when `schema` breaks the contract
    (its names: see `check_names`)."""
    import pyarrow as pa

    check_names(schema.names, output_names)
    check_columns(schema, mapping)
    problems = []
    for name in REQUIRED_FIELDS:
        column = mapping.source(name)
        found = schema.field(column).type
        fits, expected = (
            (_is_text_list(found), "list<string>")
            if name == CONTEXTS
            else (_is_text(found), "string")
        )
        if not fits:
            problems.append(f"{name} (column {column!r}) is {found}, the contract needs {expected}")
    if ID in schema.names:
        found = schema.field(ID).type
        if not (pa.types.is_integer(found) or _is_text(found)):
            problems.append(f"column {ID!r} is {found}, not a string or an integer")
    if TIMESTAMP in schema.names:
        found = schema.field(TIMESTAMP).type
        if not (pa.types.is_timestamp(found) or pa.types.is_null(found)):
            problems.append(f"column {TIMESTAMP!r} is {found}, not a timestamp")
    if problems:
        raise ContractError("; ".join(problems))


def _is_text(value_type: pa.DataType) -> bool:
    import pyarrow as pa

    value_type = _decoded_type(value_type)
    return bool(
        pa.types.is_string(value_type)
        or pa.types.is_large_string(value_type)
        or pa.types.is_null(value_type)  # a column of nulls only: every row says so
    )


def _decoded_type(value_type: pa.DataType) -> pa.DataType:
    """The type of the values a dictionary-encoded column holds (pandas' categoricals, Spark's
    and Arrow's dictionary pages): an encoding, not a different kind of value."""
    import pyarrow as pa

    return value_type.value_type if pa.types.is_dictionary(value_type) else value_type


def _is_text_list(value_type: pa.DataType) -> bool:
    import pyarrow as pa

    if pa.types.is_null(value_type):
        return True
    if pa.types.is_list(value_type) or pa.types.is_large_list(value_type):
        return _is_text(value_type.value_type)
    return False


@dataclass(frozen=True)
class FileSchema:
    """One input file as its footer describes it."""

    path: str
    schema: pa.Schema
    rows: int


@dataclass
class UnifiedInputs:
    """What `unify_inputs` decided: the schema to read with, and the files it cannot hold."""

    schema: pa.Schema | None
    rejected: dict[str, str] = field(default_factory=dict)
    """Path -> why the file is left out."""


def unify_inputs(
    files: Sequence[FileSchema], mapping: ColumnMapping, output_names: Iterable[str] = ()
) -> UnifiedInputs:
    """The schema a set of input files is read with, and the files rejected with the reason.

    Each file is checked on its own against the contract (`check_schema`, with the columns
    the scored table adds, `output_names`). The other columns
    are the union over the accepted files, in the order the files show them. A column whose
    types differ is widened the way SQL engines do (int32 and int64 -> int64, an integer and
    a double -> double, null -> anything), never between text and numbers, booleans and
    numbers, or uint64 and signed integers; when its types cannot be joined, the type that
    most rows have wins (ties: the type's name) and the files with the other type are
    rejected, naming the column. So with a column spelled in two cases in two files (`App`,
    `app`): the spelling most rows have wins. The result does not depend on the files' order.
    """
    rejected: dict[str, str] = {}
    output_names = list(output_names)
    for file in files:
        try:
            check_schema(file.schema, mapping, output_names)
        except ContractError as error:
            rejected[file.path] = str(error)
    contract = contract_schema(mapping)
    while True:  # a file rejected over one column no longer votes on the others
        accepted = [file for file in files if file.path not in rejected]
        extras, conflicts = _widened_extras(accepted, set(contract.names))
        conflicts.update(_spelling_conflicts(accepted))
        if not conflicts:
            break
        rejected.update(conflicts)
    if not accepted:
        return UnifiedInputs(None, rejected)
    import pyarrow as pa

    # Columns in the order the files show them (the first file's order, then new ones).
    types = {column.name: column for column in [*contract, *extras]}
    order = dict.fromkeys(name for file in accepted for name in file.schema.names)
    return UnifiedInputs(pa.schema([types[name] for name in order]), rejected)


def _widened_extras(
    files: Sequence[FileSchema], contract_names: set[str]
) -> tuple[list[pa.Field], dict[str, str]]:
    import pyarrow as pa

    votes: dict[str, dict[str, tuple[pa.DataType, int, list[str]]]] = {}
    for file in files:
        for column in file.schema:
            if column.name in contract_names:
                continue
            by_type = votes.setdefault(column.name, {})
            value_type, rows, paths = by_type.get(str(column.type), (column.type, 0, []))
            by_type[str(column.type)] = (value_type, rows + file.rows, [*paths, file.path])
    extras, conflicts = [], {}
    for name, by_type in votes.items():
        ranked = sorted(by_type.items(), key=lambda item: (-item[1][1], item[0]))
        widened = ranked[0][1][0]
        for type_name, (value_type, _rows, paths) in ranked[1:]:
            joined = widen(widened, value_type)
            if joined is None:
                for path in paths:
                    conflicts[path] = (
                        f"column {name!r} is {type_name} here but {widened} in the other "
                        "files, and the two cannot be joined without changing values"
                    )
            else:
                widened = joined
        extras.append(pa.field(name, widened))
    return extras, conflicts


def _spelling_conflicts(files: Sequence[FileSchema]) -> dict[str, str]:
    """Files whose column is another file's column in another case (`App` and `app`): the
    union would hold both, which SQL engines read as one. The spelling most rows have wins
    (ties: the name), as with types; the files with another are rejected, naming it."""
    spellings: dict[str, dict[str, tuple[int, list[str]]]] = {}
    for file in files:
        for name in dict.fromkeys(file.schema.names):
            by_name = spellings.setdefault(name.casefold(), {})
            rows, paths = by_name.get(name, (0, []))
            by_name[name] = (rows + file.rows, [*paths, file.path])
    conflicts = {}
    for by_name in spellings.values():
        ranked = sorted(by_name.items(), key=lambda item: (-item[1][0], item[0]))
        for name, (_rows, paths) in ranked[1:]:
            for path in paths:
                conflicts[path] = (
                    f"column {name!r} is spelled {ranked[0][0]!r} in the other files: SQL "
                    "engines read the two as one column; rename it"
                )
    return conflicts


_TIME_UNITS = ("s", "ms", "us", "ns")


def widen(first: pa.DataType, second: pa.DataType) -> pa.DataType | None:
    """The type that holds every value of both, or None when there is none. A dictionary
    encoding counts as its values' type; two time zones, as UTC (the same instants)."""
    import pyarrow as pa

    if first == second:
        return first
    first, second = _decoded_type(first), _decoded_type(second)
    if first == second:
        return first
    if (
        pa.types.is_timestamp(first)
        and pa.types.is_timestamp(second)
        and first.tz is not None
        and second.tz is not None
    ):
        finer = max((first, second), key=lambda value_type: _TIME_UNITS.index(value_type.unit))
        return pa.timestamp(finer.unit, tz="UTC")
    unsigned_64 = (pa.types.is_uint64(first) and pa.types.is_signed_integer(second)) or (
        pa.types.is_uint64(second) and pa.types.is_signed_integer(first)
    )
    if unsigned_64:  # pyarrow would take int64, which cannot hold the large uint64 values
        return None
    try:
        unified = pa.unify_schemas(
            [pa.schema([("x", first)]), pa.schema([("x", second)])], promote_options="permissive"
        )
    except (pa.ArrowInvalid, pa.ArrowTypeError, NotImplementedError):
        return None
    return unified.field("x").type


def repair_utf8(table: pa.Table) -> pa.Table:
    """`table` with every undecodable byte sequence of its text columns read as U+FFFD.

    Parquet does not guarantee that a string column holds valid UTF-8. Such a cell would make
    every later reader fail (pyarrow, DuckDB, the report); repaired, it stays readable and
    `validate_row` makes its row `invalid_input` naming the field. A valid table is returned
    as it is, after one validation pass.
    """
    import pyarrow as pa

    columns = list(table.columns)
    changed = False
    for index, column in enumerate(columns):
        if pa.types.is_dictionary(column.type):
            continue  # an extra column kept encoded: carried through, never read as text
        if not (_is_text(column.type) or _is_text_list(column.type)):
            continue
        try:
            column.validate(full=True)
        except pa.ArrowInvalid:
            columns[index] = _decoded(column)
            changed = True
    return pa.Table.from_arrays(columns, schema=table.schema) if changed else table


def _decoded(column: pa.ChunkedArray) -> pa.ChunkedArray:
    import pyarrow as pa

    def text(value: bytes | None) -> str | None:
        return None if value is None else value.decode("utf-8", errors="replace")

    if _is_text(column.type):
        large = pa.types.is_large_string(column.type)
        raw = column.cast(pa.large_binary() if large else pa.binary())
        return pa.chunked_array([pa.array([text(v) for v in raw.to_pylist()], column.type)])
    value_type = column.type.value_type
    binary_list = (pa.large_list if pa.types.is_large_list(column.type) else pa.list_)(
        pa.large_binary() if pa.types.is_large_string(value_type) else pa.binary()
    )
    rows = column.cast(binary_list).to_pylist()
    repaired = [None if row is None else [text(item) for item in row] for row in rows]
    return pa.chunked_array([pa.array(repaired, column.type)])


def interactions_from_table(
    table: pa.Table,
    mapping: ColumnMapping,
    budget: SizeBudget,
    pass_through: Sequence[str] = (),
) -> list[Interaction]:
    """Validate every row of `table` into an Interaction, in row order, with the
    `pass_through` columns (ones a metric reads besides the contract's) in `passed`."""
    check_columns(table.schema, mapping)
    questions = table.column(mapping.question).to_pylist()
    contexts = table.column(mapping.contexts).to_pylist()
    answers = table.column(mapping.answer).to_pylist()
    rows = [
        validate_row(question, row_contexts, answer, budget)
        for question, row_contexts, answer in zip(questions, contexts, answers, strict=True)
    ]
    for name in pass_through:
        values = table.column(name).to_pylist() if name in table.column_names else None
        for index, row in enumerate(rows):
            add_pass_through(row, name, values[index] if values is not None else ABSENT)
    return rows


ABSENT = object()
"""A pass-through column the input does not have."""


def add_pass_through(row: Interaction, name: str, value: Any) -> None:
    """Put a pass-through column's value on `row`, or why it cannot be read in its problems."""
    if value is ABSENT:
        row.problems[name] = f"the input has no column {name!r}"
    elif value is None or (isinstance(value, str) and not value.strip()):
        row.problems[name] = f"{name} is missing (null or empty)"
    else:
        row.passed[name] = _json_ready(value)


def _json_ready(value: Any) -> Any:
    """A cell as JSON can carry it into a prompt: texts, numbers, lists and maps as they are,
    anything else (a timestamp, a decimal) as its text."""
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    if isinstance(value, list | tuple):
        return [_json_ready(item) for item in value]
    if isinstance(value, Mapping):
        return {str(key): _json_ready(item) for key, item in value.items()}
    return str(value)


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
    if REPLACEMENT_CHARACTER in text:
        problems[name] = f"{name} is not valid UTF-8 text (an undecodable byte, read as U+FFFD)"
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
    problem = _contexts_problem(value, texts)
    if problem:
        problems[CONTEXTS] = problem
        return None
    total = sum(len(text) for text in texts)
    if total > max_chars:
        problems[CONTEXTS] = f"contexts are over the size budget ({total:,} > {max_chars:,} chars)"
        return None
    return texts


def _contexts_problem(items: Sequence[str], texts: list[str]) -> str | None:
    if any(REPLACEMENT_CHARACTER in item for item in items):
        return "contexts are not valid UTF-8 text (an undecodable byte, read as U+FFFD)"
    if not texts:
        return "no contexts (the list is empty or holds only blank strings)"
    return None


def _distinct(texts: list[str]) -> list[str]:
    seen: set[str] = set()
    distinct = []
    for text in texts:
        key = normalize(text)
        if key not in seen:
            seen.add(key)
            distinct.append(text)
    return distinct
