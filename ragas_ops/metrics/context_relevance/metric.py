"""Context relevance: is the retrieved context focused on what the question needs?

The paper's method: the judge extracts, verbatim, the sentences of the context needed to answer
the question, or says "Insufficient Information". CR = extracted sentences / sentences in c(q).

How sentences are counted (`ragas_ops.text.split_sentences`): a sentence ends at `.`, `!` or
`?` followed by whitespace, at `。！？｡` (CJK), `؟` and `۔` (Arabic script), `।` and `॥`
(Devanagari), or at a line break; fragments with no letter or digit are not sentences. Thai
marks no sentence end: a Thai context counts one sentence per line. (Version 1 ended no
sentence at the Arabic or Devanagari marks: a Hindi context of three sentences counted one.)
The denominator counts every retrieved context, so a passage retrieved twice
counts twice: duplication is redundancy, which this metric penalises. The numerator counts
distinct context sentences matched by the extraction: an extracted sentence is split by the
same rule, and each piece is matched to a context sentence exactly (case and whitespace aside)
or, failing that, to the closest one at a similarity of at least 0.9. Pieces found nowhere in
the context are listed in the evidence and not counted: the paper asks for verbatim sentences.
"Insufficient Information" scores 0.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Mapping, Sequence
from typing import Any

from ragas_ops.contract.inputs import CONTEXTS, QUESTION, Interaction
from ragas_ops.contract.status import Status
from ragas_ops.judge.base import Judge, Usage
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
from ragas_ops.text import estimate_tokens, normalize, split_sentences

INSUFFICIENT_INFORMATION = "Insufficient Information"
FUZZY_MATCH_CUTOFF = 0.9
EXTRACTED_SHARE = 0.05
"""For the cost estimate: the share of the contexts' text the judge copies out, in tokens of
their sentences (so the reply grows with the contexts). Measured (0.052) on the test judge's
replies over 190 WikiEval-sized calibration rows built from the first half of BEGIN's cmu and
tc dev files (the estimate is checked on the second half), whose questions are people's
dialogue turns. How much of a context a question needs is not in the sizes: a question written
against its context (WikiEval's) needs more of it, so this is the figure to revisit first."""
INSUFFICIENT_SHARE = 0.68
"""For the cost estimate: the share of rows answered "Insufficient Information" (0.68 on the
same calibration rows)."""


EXTRACT_JSON_TOKENS = 64
"""The reply's JSON around the sentences (or the one "Insufficient Information")."""
EXTRACT_BUDGET_SHARE = 0.25
"""The share of the contexts' tokens the first request leaves room to copy. The metric asks
for the sentences the question needs, not the contexts: a reply copying more than a quarter of
them is asked again with room for all (`max_output_tokens`), which costs one more request for
those rows instead of reserving the whole contexts for every row."""


def _extract_budget(data: Mapping[str, Any]) -> int:
    contexts = sum(estimate_tokens(str(context)) for context in data[CONTEXTS])
    return EXTRACT_JSON_TOKENS + math.ceil(EXTRACT_BUDGET_SHARE * contexts)


class ExtractedSentences(OutputModel):
    sentences: list[str]


EXTRACT_PROMPT = Prompt(
    name="context_relevance.extract",
    version=2,
    instructions=(
        "Extract from the given contexts the sentences that could help answer the question. "
        "Copy each sentence exactly as it appears in the contexts, without changing, shortening "
        "or merging anything. Leave out every sentence the question does not need. If no "
        "sentence is relevant, or if you think the question cannot be answered from the "
        f'contexts, return the phrase "{INSUFFICIENT_INFORMATION}" as the only sentence.'
    ),
    output_model=ExtractedSentences,
    demonstrations=(
        Demonstration(
            {
                QUESTION: "When did the Millau Viaduct open?",
                CONTEXTS: [
                    "The Millau Viaduct spans the valley of the Tarn in southern France. It "
                    "opened to traffic on 16 December 2004. It was designed by Michel Virlogeux."
                ],
            },
            ExtractedSentences(sentences=["It opened to traffic on 16 December 2004."]),
        ),
        Demonstration(
            {
                QUESTION: "Who painted the ceiling of the Paris Opera?",
                CONTEXTS: ["The Millau Viaduct spans the valley of the Tarn in southern France."],
            },
            ExtractedSentences(sentences=[INSUFFICIENT_INFORMATION]),
        ),
    ),
    max_output_tokens=2048,
    output_budget=_extract_budget,
)


class ContextRelevance(Metric):
    name = "context_relevance"
    version = 2  # 2: sentences also end at ؟ ۔ । ॥ ｡ (issue 41): a changed denominator
    requires = (QUESTION, CONTEXTS)
    prompts = (EXTRACT_PROMPT,)
    title = "Context relevance"
    worst_title = "Least focused contexts"
    estimate_assumption = (
        f"context relevance: the judge copies out {EXTRACTED_SHARE:.0%} of the contexts' "
        f"sentences (their tokens), and {INSUFFICIENT_SHARE:.0%} of rows answer "
        f'"{INSUFFICIENT_INFORMATION}"'
    )

    @classmethod
    def explain(cls, evidence: Mapping[str, Any], contexts: Sequence[str]) -> list[Detail]:
        extracted = evidence.get("extracted") or []
        total = evidence.get("sentences_in_context", "?")
        insufficient = evidence.get("insufficient_information")
        note = f"the judge answered {INSUFFICIENT_INFORMATION}" if insufficient else ""
        return [
            ("Contexts", " ⏐ ".join(contexts), ""),
            ("Extracted", f"{len(extracted)} of {total} context sentences", note),
            *(("Needed sentence", as_text(sentence), "") for sentence in extracted),
            *(
                ("Not in the contexts", as_text(sentence), "")
                for sentence in evidence.get("not_in_context") or []
            ),
        ]

    def expected_calls(self, row: Interaction) -> list[ExpectedCall]:
        if not any(split_sentences(context) for context in row.retrieved_contexts):
            return []  # invalid_input: no sentence to count, no request
        sentences = [s for context in row.contexts or [] for s in split_sentences(context)]
        copied = EXTRACTED_SHARE * sum(estimate_tokens(sentence) for sentence in sentences)
        copied += INSUFFICIENT_SHARE * estimate_tokens(INSUFFICIENT_INFORMATION)
        return [
            ExpectedCall(
                EXTRACT_PROMPT,
                {QUESTION: row.question, CONTEXTS: row.contexts},
                ExtractedSentences(sentences=[explanation_stand_in(copied)]),
            )
        ]

    async def score(self, row: Interaction, judge: Judge, usage: Usage) -> MetricResult:
        total = sum(len(split_sentences(context)) for context in row.retrieved_contexts)
        if total == 0:
            return MetricResult(
                Status.INVALID_INPUT, reason="the contexts contain no sentence (no letter or digit)"
            )
        reply = await judge.complete(
            EXTRACT_PROMPT, {QUESTION: row.question, CONTEXTS: row.contexts}
        )
        usage.add(reply.usage)
        match = match_extracted(reply.output.sentences, row.contexts or [])
        evidence: dict[str, Any] = {
            "extracted": match.matched,
            "not_in_context": match.unmatched,
            "sentences_in_context": total,
            "duplicate_contexts": row.duplicate_contexts,
        }
        if match.insufficient:
            evidence["insufficient_information"] = True
        return MetricResult(Status.OK, len(match.matched) / total, evidence=evidence)


class ExtractionMatch:
    """Which context sentences an extraction names, and which of its pieces it made up."""

    def __init__(self) -> None:
        self.matched: list[str] = []
        self.unmatched: list[str] = []
        self.insufficient = False


def match_extracted(extracted: list[str], contexts: list[str]) -> ExtractionMatch:
    """Match extracted sentences to the distinct sentences of the contexts (see module doc)."""
    by_key: dict[str, str] = {}
    for context in contexts:
        for sentence in split_sentences(context):
            by_key.setdefault(normalize(sentence), sentence)
    match = ExtractionMatch()
    pieces = [piece for text in extracted for piece in split_sentences(text)]
    if pieces and all(
        normalize(piece).rstrip(".") == normalize(INSUFFICIENT_INFORMATION) for piece in pieces
    ):
        match.insufficient = True
        return match
    found: dict[str, None] = {}
    for piece in pieces:
        key = normalize(piece)
        if key.rstrip(".") == normalize(INSUFFICIENT_INFORMATION):
            continue
        if key not in by_key:
            close = difflib.get_close_matches(key, list(by_key), n=1, cutoff=FUZZY_MATCH_CUTOFF)
            if not close:
                match.unmatched.append(piece)
                continue
            key = close[0]
        found.setdefault(key)
    match.matched = [by_key[key] for key in found]
    return match


register_metric("context_relevance", ContextRelevance)
register_prompts(EXTRACT_PROMPT)
