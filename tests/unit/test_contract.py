"""The input contract: per-field validation of rows, column mapping and reading tables."""

from __future__ import annotations

import pyarrow as pa
import pytest

from ragas_ops.contract.inputs import (
    ColumnMapping,
    ContractError,
    SizeBudget,
    check_columns,
    interactions_from_table,
    validate_row,
)

BUDGET = SizeBudget()
GOOD_CONTEXTS = ["The Millau Viaduct opened in 2004."]


def _row(question="When did it open?", contexts=GOOD_CONTEXTS, answer="In 2004.", budget=BUDGET):
    return validate_row(question, contexts, answer, budget)


def test_a_valid_row_has_no_problems_and_stripped_fields():
    row = validate_row("  When did it open?  ", ["  A context.  "], "\nIn 2004.\n", BUDGET)
    assert row.problems == {}
    assert row.question == "When did it open?"
    assert row.answer == "In 2004."
    assert row.contexts == ["A context."]
    assert row.retrieved_contexts == ["A context."]
    assert row.duplicate_contexts == 0


# -- question and answer --------------------------------------------------------------------------


@pytest.mark.parametrize("field", ["question", "answer"])
@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (None, "is missing (null)"),
        (42, "is not a string (got int)"),
        (["a list"], "is not a string (got list)"),
        ("", "is empty"),
        ("   \n\t ", "is empty"),
    ],
)
def test_a_broken_text_field_is_recorded_as_a_problem_not_raised(field, value, reason):
    row = _row(**{field: value})
    assert row.problems == {field: f"{field} {reason}"}
    assert getattr(row, field) is None


def test_question_over_budget_is_a_problem_and_exactly_at_budget_is_fine():
    budget = SizeBudget(question_chars=10, answer_chars=10)
    assert _row(question="q" * 10, answer="a", budget=budget).problems == {}
    # Surrounding whitespace does not count against the budget.
    assert _row(question="  " + "q" * 10 + "  ", answer="a", budget=budget).problems == {}
    row = _row(question="q" * 11, answer="a", budget=budget)
    assert row.problems == {"question": "question is over the size budget (11 > 10 chars)"}


def test_answer_over_budget_is_a_problem():
    row = _row(answer="a" * 12_345, budget=SizeBudget(answer_chars=12_000))
    assert row.problems == {"answer": "answer is over the size budget (12,345 > 12,000 chars)"}
    assert row.answer is None


# -- contexts -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("contexts", "reason"),
    [
        (None, "contexts are missing (null)"),
        ("a single string", "contexts are not a list of strings (got str)"),
        (17, "contexts are not a list of strings (got int)"),
        (["ok", 3, None], "contexts are not a list of strings (2 item(s) of type NoneType, int)"),
        ([], "no contexts (the list is empty or holds only blank strings)"),
        (["", "  ", "\n"], "no contexts (the list is empty or holds only blank strings)"),
    ],
)
def test_broken_contexts_are_recorded_as_a_problem(contexts, reason):
    row = _row(contexts=contexts)
    assert row.problems == {"contexts": reason}
    assert row.contexts is None
    assert row.retrieved_contexts == []
    assert row.duplicate_contexts == 0


def test_contexts_over_budget_count_all_contexts_together():
    budget = SizeBudget(contexts_chars=10)
    assert _row(contexts=["abcde", "fghij"], budget=budget).problems == {}
    row = _row(contexts=["abcde", "fghijk"], budget=budget)
    assert row.problems == {"contexts": "contexts are over the size budget (11 > 10 chars)"}


def test_blank_contexts_are_dropped_and_a_tuple_is_a_list():
    row = _row(contexts=("first", "  ", "second"))
    assert row.contexts == ["first", "second"]
    assert row.problems == {}


def test_duplicates_are_removed_from_contexts_but_kept_in_retrieved_contexts():
    retrieved = ["Alpha passage.", "Beta passage.", "alpha   PASSAGE.", " Alpha passage. "]
    row = _row(contexts=retrieved)
    # What the judge reads: distinct (case and whitespace aside), first spelling, retrieval order.
    assert row.contexts == ["Alpha passage.", "Beta passage."]
    # What context relevance counts: everything retrieved.
    assert row.retrieved_contexts == [
        "Alpha passage.",
        "Beta passage.",
        "alpha   PASSAGE.",
        "Alpha passage.",
    ]
    assert row.duplicate_contexts == 2


def test_each_broken_field_gets_its_own_problem():
    row = validate_row(None, "not a list", 3, BUDGET)
    assert set(row.problems) == {"question", "contexts", "answer"}


# -- problem_with ---------------------------------------------------------------------------------


def test_problem_with_joins_the_reasons_of_the_fields_asked_about_only():
    row = validate_row(None, GOOD_CONTEXTS, "", BUDGET)
    assert row.problem_with(["contexts"]) is None
    assert row.problem_with(["question"]) == "question is missing (null)"
    assert (
        row.problem_with(["question", "contexts", "answer"])
        == "question is missing (null); answer is empty"
    )
    assert row.problem_with([]) is None


# -- column mapping and tables --------------------------------------------------------------------


def test_column_mapping_from_a_partial_mapping_keeps_the_default_names():
    mapping = ColumnMapping.from_mapping({"question": "query"})
    assert mapping == ColumnMapping(question="query", contexts="contexts", answer="answer")
    assert mapping.source("question") == "query"


def test_column_mapping_refuses_unknown_fields_and_names_the_known_ones():
    with pytest.raises(ContractError) as error:
        ColumnMapping.from_mapping({"question": "query", "reply": "response"})
    message = str(error.value)
    assert "['reply']" in message
    assert "['question', 'contexts', 'answer', 'id', 'timestamp']" in message


def test_check_columns_lists_the_missing_fields_and_the_available_columns():
    schema = pa.schema(
        [("query", pa.string()), ("docs", pa.list_(pa.string())), ("id", pa.int64())]
    )
    with pytest.raises(ContractError) as error:
        check_columns(schema, ColumnMapping(question="query"))
    message = str(error.value)
    assert "contexts (column 'contexts')" in message
    assert "answer (column 'answer')" in message
    assert "question" not in message.split("Its columns", maxsplit=1)[0]
    assert "['query', 'docs', 'id']" in message


def test_check_columns_accepts_a_schema_with_the_mapped_names():
    schema = pa.schema([("q", pa.string()), ("c", pa.list_(pa.string())), ("a", pa.string())])
    check_columns(schema, ColumnMapping(question="q", contexts="c", answer="a"))


def test_interactions_from_table_reads_mapped_columns_in_row_order():
    table = pa.table(
        {
            "id": [1, 2, 3, 4],
            "query": ["First?", "Second?", None, "Fourth?"],
            "retrieved_docs": pa.array(
                [["doc one", "doc one", "doc two"], ["only doc"], ["x"], ["ok", None]],
                pa.list_(pa.string()),
            ),
            "response": ["One.", "Two.", "Three.", "Four."],
        }
    )
    mapping = ColumnMapping(question="query", contexts="retrieved_docs", answer="response")
    rows = interactions_from_table(table, mapping, BUDGET)

    assert [row.answer for row in rows] == ["One.", "Two.", "Three.", "Four."]
    assert rows[0].question == "First?"
    assert rows[0].contexts == ["doc one", "doc two"]
    assert rows[0].duplicate_contexts == 1
    assert rows[1].problems == {}
    assert rows[2].problems == {"question": "question is missing (null)"}
    assert rows[3].problems == {
        "contexts": "contexts are not a list of strings (1 item(s) of type NoneType)"
    }


def test_interactions_from_table_fails_early_on_a_missing_column():
    table = pa.table({"question": ["q"], "answer": ["a"]})
    with pytest.raises(ContractError, match="contexts"):
        interactions_from_table(table, ColumnMapping(), BUDGET)


# -- the contract's types, file by file (issue 13 point 1, issue 15 point 7) ---------------------

from itertools import permutations  # noqa: E402

from ragas_ops.contract.inputs import (  # noqa: E402
    FileSchema,
    check_schema,
    repair_utf8,
    unify_inputs,
    widen,
)

MAPPING = ColumnMapping()


def _schema(**extra: pa.DataType) -> pa.Schema:
    return pa.schema(
        [
            ("id", pa.string()),
            ("question", pa.string()),
            ("contexts", pa.list_(pa.string())),
            ("answer", pa.string()),
            *extra.items(),
        ]
    )


def test_a_file_whose_answer_is_not_text_is_rejected_naming_the_column_and_type():
    bad = _schema().set(3, pa.field("answer", pa.int64()))
    with pytest.raises(ContractError, match=r"answer \(column 'answer'\) is int64.*needs string"):
        check_schema(bad, MAPPING)
    check_schema(_schema().set(3, pa.field("answer", pa.large_string())), MAPPING)
    with pytest.raises(ContractError, match=r"contexts.*list<string>"):
        check_schema(_schema().set(2, pa.field("contexts", pa.string())), MAPPING)
    with pytest.raises(ContractError, match="'timestamp' is string, not a timestamp"):
        check_schema(_schema(timestamp=pa.string()), MAPPING)


def test_file_order_never_changes_which_files_are_accepted_nor_the_schema():
    files = [
        FileSchema("good-1", _schema(tenant=pa.int32()), 20),
        FileSchema("good-2", _schema(tenant=pa.int64(), app=pa.string()), 20),
        FileSchema("int-answer", _schema().set(3, pa.field("answer", pa.int64())), 5),
        FileSchema("text-tenant", _schema(tenant=pa.string()), 5),
    ]
    outcomes = set()
    for order in permutations(files):
        unified = unify_inputs(order, MAPPING)
        assert unified.schema is not None
        outcomes.add(
            (
                tuple(sorted(unified.rejected)),
                tuple(sorted((f.name, str(f.type)) for f in unified.schema)),
            )
        )
    ((rejected, fields),) = outcomes  # one outcome whatever the order
    assert rejected == ("int-answer", "text-tenant")
    assert dict(fields) == {
        "id": "string",
        "question": "string",
        "contexts": "list<item: string>",
        "answer": "string",
        "tenant": "int64",  # int32 and int64 widened
        "app": "string",  # a column of one file only: kept, null elsewhere
    }
    reasons = unify_inputs(files, MAPPING).rejected
    assert "answer (column 'answer') is int64" in reasons["int-answer"]
    assert "column 'tenant' is string here but int64" in reasons["text-tenant"]


def test_widening_never_changes_a_value():
    assert widen(pa.int32(), pa.int64()) == pa.int64()
    assert widen(pa.int64(), pa.float64()) == pa.float64()
    assert widen(pa.null(), pa.string()) == pa.string()
    assert widen(pa.uint64(), pa.int64()) is None
    assert widen(pa.int64(), pa.string()) is None
    assert widen(pa.bool_(), pa.int64()) is None


def _invalid_utf8(values: list[bytes | None]) -> pa.Array:
    raw = pa.array(values, pa.binary())
    return pa.Array.from_buffers(pa.string(), len(raw), raw.buffers())


def test_invalid_utf8_makes_that_row_invalid_input_naming_the_field_and_no_other():
    table = pa.table(
        {
            "question": ["q1", "q2", "q3"],
            "contexts": [["c"], ["c"], ["c"]],
            "answer": _invalid_utf8([b"fine", b"bro\xffken", None]),
        }
    )
    with pytest.raises(pa.ArrowInvalid):
        table.validate(full=True)

    repaired = repair_utf8(table)

    repaired.validate(full=True)  # every reader can read it now
    rows = interactions_from_table(repaired, MAPPING, BUDGET)
    assert rows[0].problems == {}
    assert rows[1].problems == {
        "answer": "answer is not valid UTF-8 text (an undecodable byte, read as U+FFFD)"
    }
    assert rows[2].problems == {"answer": "answer is missing (null)"}
    assert repair_utf8(repaired) is repaired, "a valid table is left as it is"


def test_invalid_utf8_in_one_context_makes_the_contexts_invalid():
    contexts = pa.ListArray.from_arrays(pa.array([0, 2]), _invalid_utf8([b"ok", b"\xfe"]))
    table = pa.table({"question": ["q"], "contexts": contexts, "answer": ["a"]})

    (row,) = interactions_from_table(repair_utf8(table), MAPPING, BUDGET)

    assert "contexts are not valid UTF-8" in row.problems["contexts"]


# -- inputs a new user's tools write (the messy-inputs review) -----------------------------------


def test_a_mapping_that_reads_two_contract_fields_from_one_column_is_refused():
    with pytest.raises(ContractError, match=r"question and answer -> 'answer'"):
        ColumnMapping.from_mapping({"question": "answer"})
    with pytest.raises(ContractError, match="two contract fields from one column"):
        ColumnMapping(question="text", contexts="docs", answer="text")
    ColumnMapping.from_mapping({"question": "query", "answer": "question"})  # a swap is fine


def test_a_file_with_a_column_twice_is_rejected_naming_it():
    schema = _schema(app=pa.string()).append(pa.field("app", pa.int64()))
    with pytest.raises(ContractError, match="more than one column named 'app'"):
        check_schema(schema, MAPPING)
    twice = _schema().append(pa.field("answer", pa.string()))
    unified = unify_inputs([FileSchema("twice", twice, 3), FileSchema("ok", _schema(), 3)], MAPPING)
    assert "more than one column named 'answer'" in unified.rejected["twice"]
    assert unified.schema is not None


def test_a_dictionary_encoded_column_is_its_values_type():
    categorical = pa.dictionary(pa.int8(), pa.string())
    check_schema(_schema().set(1, pa.field("question", categorical)), MAPPING)
    assert widen(categorical, pa.string()) == pa.string()
    assert widen(pa.string(), pa.dictionary(pa.int32(), pa.string())) == pa.string()
    assert widen(pa.dictionary(pa.int8(), pa.int64()), pa.string()) is None
    files = [
        FileSchema("encoded", _schema(app=categorical), 10),
        FileSchema("plain", _schema(app=pa.string()), 1),
    ]
    unified = unify_inputs(files, MAPPING)
    assert unified.rejected == {}
    assert unified.schema is not None
    assert unified.schema.field("app").type == pa.string()


def test_two_time_zones_join_as_utc_and_a_naive_timestamp_joins_none():
    paris, utc = pa.timestamp("ms", tz="Europe/Paris"), pa.timestamp("us", tz="UTC")
    assert widen(paris, utc) == pa.timestamp("us", tz="UTC")
    assert widen(pa.timestamp("us"), utc) is None
    instant = pa.array([1_700_000_000_000], paris)
    assert instant.cast(widen(paris, utc)).cast(pa.int64()).to_pylist() == [1_700_000_000_000_000]
