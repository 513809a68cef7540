"""The reference library's prompts, answered by the test double (side-by-side benchmarks only).

`benchmarks/bench_vs_ragas.py` runs ragas 0.4.3's `evaluate()` against the same test server as
ragas-ops. ragas sends every prompt as one user message of plain text that starts with the
prompt's fixed instruction; that opening is how a prompt is recognised here. The row's data is
the JSON object after "Now perform the same with the following input" (typed prompts), or the
text between the `### Question:` and `### Context:` markers (the context relevance templates).

The answers use the double's own lexical heuristics (sentence splits, shared content words,
generated questions), so both libraries are judged by the same rules. They are checked against
an output model mirroring the one ragas parses before they are sent. Like the rest of the
double, the scores mean nothing about real answer quality.

ragas' repair prompt (`FixOutputFormat`, sent after an unparsable reply) is not recognised: the
double never sends an unparsable reply unless told to (`rate_malformed`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, RootModel

from ragas_ops.contract.inputs import ANSWER, CONTEXTS

# The metrics' test-double answers, shared on purpose: one rule set judges both libraries.
from ragas_ops.metrics.context_relevance.double import relevant_sentences
from ragas_ops.metrics.faithfulness.double import statements, verdicts
from ragas_ops.metrics.lexical import generated_questions, is_noncommittal
from ragas_ops.prompts import Prompt

__all__ = ["FOREIGN_PROMPTS", "RAGAS_VERSION", "ForeignPrompt", "answer_foreign_prompt"]

RAGAS_VERSION = "0.4.3"

# --------------------------------------------------------------------------------------------
# Output models: the shapes ragas 0.4.3 parses
# --------------------------------------------------------------------------------------------


class StatementGeneratorOutput(BaseModel):
    statements: list[str]


class StatementVerdict(BaseModel):
    statement: str
    reason: str
    verdict: int


class NLIStatementOutput(BaseModel):
    statements: list[StatementVerdict]


class ResponseRelevanceOutput(BaseModel):
    question: str
    noncommittal: int


class RelevanceRating(RootModel[int]):
    """The context relevance templates want a bare rating: 0, 1 or 2."""


# --------------------------------------------------------------------------------------------
# Reading the row's data out of a prompt
# --------------------------------------------------------------------------------------------

_INPUT_MARKER = "\nNow perform the same with the following input\ninput: "
_CONTEXT_RELEVANCE_DATA = re.compile(
    r"### Question: (?P<question>.*?)\n\n### Context: (?P<context>.*)\n\nDo not try to explain\.",
    re.DOTALL,
)


def _input_object(text: str) -> dict[str, Any]:
    """The JSON input of a typed ragas prompt (the last one: the examples come before it)."""
    _, found, rest = text.rpartition(_INPUT_MARKER)
    if not found:
        raise ValueError("no 'Now perform the same with the following input' section")
    data, _ = json.JSONDecoder().raw_decode(rest)
    if not isinstance(data, dict):
        raise ValueError("the prompt's input is not a JSON object")
    return data


def _question_and_context(text: str) -> tuple[str, str]:
    match = _CONTEXT_RELEVANCE_DATA.search(text)
    if match is None:
        raise ValueError("no '### Question:' / '### Context:' sections")
    return match["question"], match["context"]


# --------------------------------------------------------------------------------------------
# The answers
# --------------------------------------------------------------------------------------------


def _generate_statements(text: str, sample: int) -> Any:
    """One statement per sentence of the answer, none for a noncommittal one (as for ours)."""
    return statements({ANSWER: str(_input_object(text)["answer"])}, sample)


def _judge_statements(text: str, sample: int) -> Any:
    """Verdict 1 when most content words and every number of the statement are in the context."""
    data = _input_object(text)
    ours = verdicts({CONTEXTS: [str(data["context"])], "statements": data["statements"]}, sample)
    return {
        "statements": [
            {
                "statement": statement,
                "reason": item["explanation"],
                "verdict": 1 if item["verdict"] == "yes" else 0,
            }
            for statement, item in zip(data["statements"], ours["verdicts"], strict=True)
        ]
    }


def _generate_question(text: str, sample: int) -> Any:
    """A question the response answers (another one per sample, as `n` > 1 asks)."""
    response = str(_input_object(text)["response"])
    return {
        "question": generated_questions(response, 1, start=sample)[0],
        "noncommittal": int(is_noncommittal(response)),
    }


def _rate_context(text: str, sample: int) -> Any:
    """0: no context sentence shares enough words with the question; 2: at least half do;
    1: fewer."""
    question, context = _question_and_context(text)
    relevant, total = relevant_sentences(question, [context])
    if not relevant:
        return 0
    return 2 if 2 * len(relevant) >= total else 1


# --------------------------------------------------------------------------------------------
# The prompts
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ForeignPrompt:
    """A ragas prompt the double answers: its identity, how it opens, how it is answered."""

    prompt: Prompt[Any]
    """Its name (`ragas.<metric>.<step>`, counted in the server's `requests_by_prompt`) and the
    output model that every reply is checked against."""
    opening: str
    """The fixed text every rendering of the prompt starts with (ragas' instruction)."""
    reply: Callable[[str, int], Any]
    """The reply, as a JSON value, to the prompt's text for a sample number."""

    def answer(self, text: str, sample: int) -> str:
        """The reply text, checked with the output model; ValueError on a malformed input."""
        try:
            content = json.dumps(self.reply(text, sample), ensure_ascii=False)
        except (KeyError, TypeError) as error:
            raise ValueError(f"bad input for {self.prompt.id}: {error!r}") from None
        self.prompt.parse({}, content)
        return content


def _foreign(
    name: str, opening: str, output: type[BaseModel], reply: Callable[[str, int], Any]
) -> ForeignPrompt:
    prompt: Prompt[Any] = Prompt(
        name=f"ragas.{name}",
        version=1,
        instructions=f"ragas {RAGAS_VERSION}: {opening}",
        output_model=output,
    )
    return ForeignPrompt(prompt, opening, reply)


FOREIGN_PROMPTS: Sequence[ForeignPrompt] = (
    _foreign(
        "faithfulness.statements",
        "Given a question and an answer, analyze the complexity of each sentence in the answer.",
        StatementGeneratorOutput,
        _generate_statements,
    ),
    _foreign(
        "faithfulness.nli",
        "Your task is to judge the faithfulness of a series of statements based on a given "
        "context.",
        NLIStatementOutput,
        _judge_statements,
    ),
    _foreign(
        "answer_relevancy.question",
        "Generate a question for the given answer and Identify if answer is noncommittal.",
        ResponseRelevanceOutput,
        _generate_question,
    ),
    _foreign(
        "nv_context_relevance.template1",
        "### Instructions\n\nYou are a world class expert designed to evaluate the relevance "
        "score of a Context in order to answer the Question.",
        RelevanceRating,
        _rate_context,
    ),
    _foreign(
        "nv_context_relevance.template2",
        "As a specially designed expert to assess the relevance score of a given Context in "
        "relation to a Question,",
        RelevanceRating,
        _rate_context,
    ),
)


def _prompt_text(messages: Sequence[Mapping[str, Any]]) -> str | None:
    """The text of a conversation that is one plain-text user message, as ragas sends it."""
    if len(messages) != 1 or messages[0].get("role") != "user":
        return None
    content = messages[0].get("content")
    return content if isinstance(content, str) else None


def answer_foreign_prompt(
    messages: Sequence[Mapping[str, Any]], samples: Iterable[int]
) -> tuple[Prompt[Any], list[str]] | None:
    """The ragas prompt these messages carry and the reply for each sample; None when they
    carry none. Raises ValueError for a recognised prompt whose data cannot be read."""
    text = _prompt_text(messages)
    if text is None:
        return None
    foreign = next((item for item in FOREIGN_PROMPTS if text.startswith(item.opening)), None)
    if foreign is None:
        return None
    return foreign.prompt, [foreign.answer(text, sample) for sample in samples]
