"""Faithfulness: is the answer grounded in the retrieved contexts?

The paper's method: the judge splits the answer into standalone statements S, then verifies
all of them against the contexts in one call, explaining each before its verdict.
F = |V| / |S|, with V the statements judged supported.

A judge that computes its verdicts from a measure (the local judge) also says how strongly it
holds each one (`Completion.confidences`, in [0, 1]); F is then the expected share of supported
statements, the sum of those degrees over |S|. It is the paper's formula with each yes/no
verdict replaced by the judge's degree of belief in "yes": it equals |V| / |S| when every degree
is 0 or 1, and it keeps apart what yes/no verdicts would tie (a near miss from a clear miss, a
verbatim statement from a loose paraphrase). The row's evidence lists both. An LLM judge gives
verdicts only, and F is |V| / |S|.

An answer with no statement to check (a refusal, "I don't know", a greeting) is
`not_applicable`: it claims nothing, so it can be neither faithful nor unfaithful.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from ragas_ops.contract.inputs import ANSWER, CONTEXTS, QUESTION, Interaction
from ragas_ops.contract.status import Status
from ragas_ops.judge.base import Judge, JudgeOutputError, Usage
from ragas_ops.metrics.base import (
    Detail,
    ExpectedCall,
    Metric,
    MetricResult,
    as_text,
    explanation_stand_in,
)
from ragas_ops.metrics.registry import register_metric, register_prompts
from ragas_ops.prompts import Demonstration, OutputModel, Prompt
from ragas_ops.text import estimate_tokens, split_sentences

VERDICT_EXPLANATION_TOKENS = 14
"""Tokens of one verdict's explanation, for the cost estimate: measured (13.6 a verdict, no
trend with the statement's length) on the test judge's replies over 190 WikiEval-sized
calibration rows built from the first half of BEGIN's cmu and tc dev files (the estimate is
checked on the second half); the prompt's own example explains in 12-22 tokens (15.5 on
average), which a real LLM imitates."""


class Statements(OutputModel):
    statements: list[str]


class Verdict(OutputModel):
    """One statement's verdict, in the order of the statements: its reasoning first, then the
    verdict (the paper's order). The statement is not copied back: the order and count checks
    tie each verdict to its statement, and copying would be paid as completion tokens."""

    explanation: str
    verdict: Literal["yes", "no"]


class Verdicts(OutputModel):
    verdicts: list[Verdict]


_DEMO_QUESTION = "When did the Millau Viaduct open, and how tall is it?"
_DEMO_ANSWER = (
    "The Millau Viaduct in southern France opened to traffic in December 2004. Its highest "
    "mast reaches 343 metres, which makes it taller than the Eiffel Tower."
)
_DEMO_STATEMENTS = [
    "The Millau Viaduct is in southern France.",
    "The Millau Viaduct opened to traffic in December 2004.",
    "The highest mast of the Millau Viaduct reaches 343 metres.",
    "The Millau Viaduct is taller than the Eiffel Tower.",
]

STATEMENT_JSON_TOKENS = 64
"""The reply's JSON around the statements, with room to spare."""
TOKENS_PER_VERDICT = 64
"""A verdict's brief explanation (14 tokens on average, see VERDICT_EXPLANATION_TOKENS; a
real LLM writes up to two or three times that), its `yes`/`no` and its JSON."""


def _statements_budget(data: Mapping[str, Any]) -> int:
    """Statements restate the answer's sentences, pronouns replaced by what they refer to: about
    the answer's length; twice it leaves room for a sentence split into several statements."""
    return STATEMENT_JSON_TOKENS + 2 * estimate_tokens(str(data[ANSWER]))


def _verdicts_budget(data: Mapping[str, Any]) -> int:
    """A verdict per statement; the statements are not copied back (see `Verdict`), so the
    reply does not grow with the contexts."""
    return STATEMENT_JSON_TOKENS + TOKENS_PER_VERDICT * len(data["statements"])


STATEMENTS_PROMPT = Prompt(
    name="faithfulness.statements",
    version=2,
    instructions=(
        "You break an answer into short, standalone statements so that each can be "
        "fact-checked on its own. Given a question and an answer, create one or more statements "
        "from each sentence of the answer. Each statement must make sense without the others: "
        "replace pronouns with what they refer to, and keep names, numbers and dates exactly as "
        "written. Do not add anything the answer does not say, and do not judge whether it is "
        "true. Write the statements in the language of the answer. If the answer makes no "
        "factual claim (a refusal, 'I don't know', a greeting, a question back), return an "
        "empty list."
    ),
    output_model=Statements,
    demonstrations=(
        Demonstration(
            {QUESTION: _DEMO_QUESTION, ANSWER: _DEMO_ANSWER},
            Statements(statements=_DEMO_STATEMENTS),
        ),
    ),
    output_budget=_statements_budget,
)


def _one_verdict_per_statement(data: Mapping[str, Any], output: Verdicts) -> str | None:
    expected = len(data["statements"])
    if len(output.verdicts) != expected:
        return (
            f"there are {expected} statements but {len(output.verdicts)} verdicts; give exactly "
            "one verdict per statement, in the order given"
        )
    return None


VERDICTS_PROMPT = Prompt(
    name="faithfulness.verdicts",
    version=3,
    instructions=(
        "Consider the given contexts and the following statements, then decide for each "
        "statement whether it is supported by the information present in the contexts. A "
        "statement is supported only if the contexts state it or it follows directly from "
        "them; a statement the contexts do not mention, or contradict, is not supported. For "
        "each statement, in the order given, give a brief explanation, and then the verdict: "
        "'yes' if it is supported, 'no' if it is not. Give exactly one verdict per statement."
    ),
    output_model=Verdicts,
    demonstrations=(
        Demonstration(
            {
                CONTEXTS: [
                    "The Millau Viaduct is a cable-stayed bridge that spans the valley of the "
                    "Tarn near Millau in southern France. It was formally dedicated on 14 "
                    "December 2004 and opened to traffic two days later. One of its masts "
                    "reaches a summit of 343 metres above the base of the structure."
                ],
                "statements": _DEMO_STATEMENTS,
            },
            Verdicts(
                verdicts=[
                    Verdict(
                        explanation="The context places the bridge near Millau in southern France.",
                        verdict="yes",
                    ),
                    Verdict(
                        explanation="Dedicated on 14 December 2004 and opened two days later, "
                        "so it opened in December 2004.",
                        verdict="yes",
                    ),
                    Verdict(
                        explanation="The context says one mast reaches 343 metres.",
                        verdict="yes",
                    ),
                    Verdict(
                        explanation="The context does not mention the Eiffel Tower.",
                        verdict="no",
                    ),
                ]
            ),
        ),
    ),
    check=_one_verdict_per_statement,
    max_output_tokens=2048,
    output_budget=_verdicts_budget,
)


class Faithfulness(Metric):
    name = "faithfulness"
    version = 2
    requires = (QUESTION, CONTEXTS, ANSWER)
    prompts = (STATEMENTS_PROMPT, VERDICTS_PROMPT)
    title = "Faithfulness"
    worst_title = "Least faithful answers"
    estimate_assumption = (
        "faithfulness: one statement per sentence of the answer (the row's sentences stand in "
        "for the statements, so the statements and the verdicts grow with the answer); a "
        f"verdict per statement with a ~{VERDICT_EXPLANATION_TOKENS}-token explanation; every "
        "answer with a sentence gets a verdicts request (a refusal, which has no statement, "
        "skips it in reality)"
    )

    @classmethod
    def explain(cls, evidence: Mapping[str, Any], contexts: Sequence[str]) -> list[Detail]:
        statements = evidence.get("statements") or []
        supported = f"{evidence.get('supported', '?')} of {evidence.get('total', '?')} statements"
        return [("Supported", supported, "")] + [
            ("Unsupported", as_text(item.get("statement")), as_text(item.get("explanation")))
            for item in statements
            if isinstance(item, dict) and item.get("verdict") != "yes"
        ]

    def expected_calls(self, row: Interaction) -> list[ExpectedCall]:
        statements = list(dict.fromkeys(split_sentences(row.answer or "")))
        calls = [
            ExpectedCall(
                STATEMENTS_PROMPT,
                {QUESTION: row.question, ANSWER: row.answer},
                Statements(statements=statements),
            )
        ]
        if statements:
            verdicts = [
                Verdict(explanation=explanation_stand_in(VERDICT_EXPLANATION_TOKENS), verdict="yes")
                for _ in statements
            ]
            calls.append(
                ExpectedCall(
                    VERDICTS_PROMPT,
                    {CONTEXTS: row.contexts, "statements": statements},
                    Verdicts(verdicts=verdicts),
                )
            )
        return calls

    async def score(self, row: Interaction, judge: Judge, usage: Usage) -> MetricResult:
        extracted = await judge.complete(
            STATEMENTS_PROMPT, {QUESTION: row.question, ANSWER: row.answer}
        )
        usage.add(extracted.usage)
        statements = _distinct_statements(extracted.output.statements)
        if not statements:
            return MetricResult(
                Status.NOT_APPLICABLE,
                reason="the answer makes no factual statement (e.g. a refusal or a greeting)",
                evidence={"statements": []},
            )
        verified = await judge.complete(
            VERDICTS_PROMPT, {CONTEXTS: row.contexts, "statements": statements}
        )
        usage.add(verified.usage)
        verdicts = verified.output.verdicts
        if len(verdicts) != len(statements):  # the prompt's check, for judges that skip it
            raise JudgeOutputError(
                f"{VERDICTS_PROMPT.id}: {len(verdicts)} verdicts for {len(statements)} statements"
            )
        supported = sum(verdict.verdict == "yes" for verdict in verdicts)
        degrees = _degrees(verified.confidences, len(statements))
        listed: list[dict[str, Any]] = [
            {"statement": statement, "verdict": verdict.verdict, "explanation": verdict.explanation}
            for statement, verdict in zip(statements, verdicts, strict=True)
        ]
        if degrees is None:
            return MetricResult(
                Status.OK,
                score=supported / len(statements),
                evidence={"statements": listed, "supported": supported, "total": len(statements)},
            )
        for item, degree in zip(listed, degrees, strict=True):
            item["support"] = round(degree, 4)
        return MetricResult(
            Status.OK,
            score=sum(degrees) / len(statements),
            evidence={
                "statements": listed,
                "supported": supported,
                "expected_supported": round(sum(degrees), 4),
                "total": len(statements),
            },
        )


def _degrees(confidences: list[list[float]] | None, count: int) -> list[float] | None:
    """The judge's degrees for the first output, checked: one per statement, each in [0, 1]."""
    if confidences is None:
        return None
    degrees = confidences[0] if confidences else []
    if len(degrees) != count or not all(0.0 <= degree <= 1.0 for degree in degrees):
        raise JudgeOutputError(
            f"{VERDICTS_PROMPT.id}: the judge's support degrees {degrees!r} do not fit "
            f"{count} statements in [0, 1]"
        )
    return [float(degree) for degree in degrees]


def _distinct_statements(statements: list[str]) -> list[str]:
    """Blank and repeated statements would weigh the ratio without adding a claim."""
    return list(dict.fromkeys(text.strip() for text in statements if text.strip()))


register_metric("faithfulness", Faithfulness)
register_prompts(STATEMENTS_PROMPT, VERDICTS_PROMPT)
