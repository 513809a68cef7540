"""Perturbation checks: labelled pairs built from data that has no WikiEval labels.

A good answer is changed in a way whose effect on a metric is known without asking anyone:

- answer relevance: dropping a sentence that answers a part of the question, putting an
  evasion in its place, or answering another question lowers it; adding an unrelated sentence
  lowers it too, but less than dropping a part does; putting the same sentences in another
  order leaves it (within `STAY_TOLERANCE`); on the right topic, a sentence of the wrong kind
  (no date where "when" is asked, no number for "how many") or the answer to a neighbouring
  question (another clause of the same knowledge) lowers it;
- faithfulness: changing a number, adding a claim the context never makes, or answering from
  another context lowers it;
- context relevance: padding the context with unrelated sentences lowers it, and a context that
  answers its question is never "Insufficient Information" (scores above 0);
- WikiEval's construction of a poor answer, without WikiEval's labels (`incomplete_answers`):
  for a question with two parts, the complete answer against one that supplies one part and
  pads with on-topic background, with a generic remark about the subject, or says the other
  part is not provided (and pads); for a chat question, an evasion padded with on-topic
  background, or the answer padded with a generic remark. The poor side is built by these
  written steps, never chosen by its score.

The pairs come from the project's own sample logs (`ragas_ops.samples`: multi-part questions,
complete answers) and, when given, BEGIN files (dialogue turns that end with a question and a
response labelled attributable to its knowledge snippet). A metric *agrees* with a check when it
moves the expected way (a tie counts half, as in the WikiEval table); the word-overlap baseline
is scored on the same checks. Nothing here is tuned: these are the checks a rule must pass.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragas_ops.contract.inputs import Interaction, SizeBudget, validate_row
from ragas_ops.contract.status import Status
from ragas_ops.evaluation.begin import ATTRIBUTABLE, load_begin
from ragas_ops.evaluation.overlap import (
    overlap_score,
)
from ragas_ops.evaluation.results import RowResults
from ragas_ops.evaluation.stats import agreement
from ragas_ops.judge.base import Judge
from ragas_ops.judge.local.questions import asked_parts, supplied_kinds
from ragas_ops.metrics.answer_relevance import AnswerRelevance
from ragas_ops.metrics.base import Metric
from ragas_ops.metrics.context_relevance import ContextRelevance
from ragas_ops.metrics.faithfulness import Faithfulness
from ragas_ops.samples import PADDING, TOPICS
from ragas_ops.text import content_words, split_sentences

STAY_TOLERANCE = 0.05
"""A rephrased answer "stays" when its score moves by at most this much."""
BEGIN_CASES = 150
"""BEGIN rows used per run (the first that qualify, in file order: reruns build the same pairs)."""
EVASION = "The information asked for has not been provided."
REFUSAL = "I'm not sure, that information is not available."
INVENTED = "It was approved by the Zorvian Council in 1987."
METRICS = ("answer_relevance", "faithfulness", "context_relevance")
_NUMBER = re.compile(r"\b\d+\b")


@dataclass(frozen=True)
class Check:
    """One labelled pair: `base` should score higher than `changed` ("lower"), the same
    ("stays"), or `changed` higher than `other` ("less_than": padding costs less than a drop)."""

    source: str
    metric: str
    kind: str
    expect: str
    base: Interaction
    changed: Interaction


def _row(question: str, contexts: list[str], answer: str) -> Interaction:
    return validate_row(question, contexts, answer, SizeBudget())


_CLAUSE = re.compile(r"\s*(?:;|,\s+(?:and|but|while|although)\s+|\s+but\s+)\s*")


def clauses(text: str) -> list[str]:
    """The text's sentences and the clauses they join (";", ", and", ", but"), each of at least
    four words: the pieces of a knowledge passage that each answer a question of their own."""
    pieces = (c.strip(" ,.") for s in split_sentences(text) for c in _CLAUSE.split(s))
    return [piece for piece in pieces if len(piece.split()) >= 4]


def typed_kinds(question: str) -> set[str]:
    """The kinds of item the question's parts ask for, other than content (a date, a number, a
    name, a place, a duration)."""
    return {part.kind for part in asked_parts(question)} - {"content"}


def wrong_kind(question: str, passage: str, answer: str) -> str | None:
    """A clause of `passage` on the answer's topic that holds none of the kinds `question` asks
    for ("when" answered without a date), when the answer holds one; else None."""
    asked = typed_kinds(question)
    if not asked or not asked & supplied_kinds(answer):
        return None
    words = content_words(answer) | content_words(question)
    for clause in clauses(passage):
        kinds = supplied_kinds(clause) | ({"place"} if "name" in supplied_kinds(clause) else set())
        if not kinds & asked and content_words(clause) & words:
            return clause
    return None


def neighbouring_answer(passage: str, answer: str) -> str | None:
    """The clause of `passage` (the knowledge the answer comes from: the same topic) sharing
    the fewest words with the answer, when it shares less than half of them: it answers a
    neighbouring question."""
    words = content_words(answer)
    pieces = clauses(passage)
    if len(pieces) < 2 or not words:
        return None
    shared = {piece: len(content_words(piece) & words) / len(words) for piece in pieces}
    piece = min(pieces, key=lambda p: shared[p])
    return piece if shared[piece] < 0.5 else None


def padded_with(answer: str, sentence: str) -> str:
    """The answer with one more sentence: a full stop first when the answer has none (chat
    responses often end without one), so the addition is a sentence of its own, not words
    glued to the answer's last sentence."""
    stripped = answer.rstrip()
    end = "" if stripped.endswith((".", "!", "?")) else "."
    return f"{stripped}{end} {sentence}"


GENERIC_PADDING = "{subject} is an important subject that has received a lot of attention."
"""A generic remark about the subject, the padding of WikiEval's poor answers ("The PSLV-C56
mission is an important space mission for India")."""
_NAME_RUN = re.compile(r"(?:[A-Z][\w-]*[A-Z0-9][\w-]*|[A-Z][a-z][\w-]*)(?:\s+[A-Z][\w-]*)*")


def question_subject(question: str) -> str:
    """The longest run of capitalised words after the question's first word ("the Millau
    Viaduct" -> "Millau Viaduct"), or "It" when the question names nothing."""
    rest = question.split(maxsplit=1)[1] if len(question.split()) > 1 else ""
    runs = _NAME_RUN.findall(rest)
    return max(runs, key=len) if runs else "It"


def on_topic_background(passage: str, answer: str) -> str | None:
    """The passage sentence the answer shares fewest content words with, when it shares less
    than half of them: background about the same subject that answers no part the answer
    gives (the first such sentence, in passage order)."""
    words = content_words(answer)
    used = set(split_sentences(answer))
    candidates = [s for s in split_sentences(passage) if s not in used]
    if not candidates or not words:
        return None
    share = {s: len(content_words(s) & words) / len(words) for s in candidates}
    sentence = min(candidates, key=lambda s: share[s])
    return sentence if share[sentence] < 0.5 else None


def incomplete_answers(question: str, passage: str, answer: str) -> list[tuple[str, str]]:
    """WikiEval's poor answers for a question of two or more parts, by written steps: for each
    answer sentence left out (the part not supplied), the other sentences (a) with on-topic
    background (`on_topic_background`), (b) with a generic remark about the subject
    (`GENERIC_PADDING`), (c) with a sentence saying the rest is not provided and then the
    background. Empty when the question has one part or the answer one sentence."""
    sentences = split_sentences(answer)
    if len(asked_parts(question)) < 2 or len(sentences) < 2:
        return []
    background = on_topic_background(passage, answer)
    generic = GENERIC_PADDING.format(subject=question_subject(question))
    pairs = []
    for index in range(len(sentences)):
        kept = " ".join(s for i, s in enumerate(sentences) if i != index)
        if background is not None:
            pairs.append(("one part, on-topic padding", f"{kept} {background}"))
            pairs.append(("one part, not provided, padding", f"{kept} {EVASION} {background}"))
        pairs.append(("one part, generic padding", f"{kept} {generic}"))
    return pairs


def sample_checks() -> list[Check]:
    """Checks from the sample logs' topics (six multi-part questions with complete answers)."""
    checks: list[Check] = []
    for number, topic in enumerate(TOPICS):
        q, context = topic.question, [topic.passage]
        answer = topic.answer
        sentences = split_sentences(answer)
        unrelated = PADDING[number % len(PADDING)]
        other = TOPICS[(number + 1) % len(TOPICS)].answer

        def add(
            metric: str,
            kind: str,
            expect: str,
            base: str,
            changed: str,
            *,
            q: str = q,
            context: list[str] = context,
        ) -> None:
            checks.append(
                Check("samples", metric, kind, expect, _row(q, context, base),
                      _row(q, context, changed))
            )  # fmt: skip

        for index in range(len(sentences) if len(sentences) > 1 else 0):
            dropped = " ".join(s for i, s in enumerate(sentences) if i != index)
            add("answer_relevance", "drop a part", "lower", answer, dropped)
            evaded = " ".join(EVASION if i == index else s for i, s in enumerate(sentences))
            add("answer_relevance", "evade a part", "lower", answer, evaded)
            add("answer_relevance", "pad costs less than a drop", "less_than",
                f"{answer} {unrelated}", dropped)  # fmt: skip
        add("answer_relevance", "incomplete answer", "lower", answer, topic.incomplete_answer)
        add("answer_relevance", "pad", "lower", answer, f"{answer} {unrelated}")
        add("answer_relevance", "another question's answer", "lower", answer, other)
        add("answer_relevance", "refuse", "lower", answer, REFUSAL)
        for part in asked_parts(q):
            changed_part = wrong_kind(part.text + "?", topic.passage, answer)
            if changed_part is not None:
                asked = typed_kinds(part.text + "?")
                kept = [s for s in sentences if not asked & supplied_kinds(s)]
                add("answer_relevance", "wrong kind, right topic", "lower", answer,
                    " ".join([*kept, changed_part + "."]))  # fmt: skip
        for kind, poor in incomplete_answers(q, topic.passage, answer):
            add("answer_relevance", f"wikieval-like: {kind}", "lower", answer, poor)
        if len(sentences) > 1:
            add("answer_relevance", "reorder", "stays", answer, " ".join(reversed(sentences)))
        add("faithfulness", "invent a claim", "lower", answer, f"{answer} {INVENTED}")
        add("faithfulness", "unfaithful answer", "lower", answer, topic.unfaithful_answer)
        changed = _NUMBER.sub(lambda m: str(int(m.group()) + 7), answer, count=1)
        if changed != answer:
            add("faithfulness", "change a number", "lower", answer, changed)
        padded = [f"{topic.passage} {' '.join(PADDING[:3])}"]
        checks.append(
            Check("samples", "context_relevance", "pad the context", "lower",
                  _row(q, context, answer), _row(q, padded, answer))
        )  # fmt: skip
        checks.append(
            Check("samples", "context_relevance", "a context that answers", "above_zero",
                  _row(q, context, answer), _row(q, context, answer))
        )  # fmt: skip
    return checks


def begin_checks(paths: Sequence[Path], limit: int = BEGIN_CASES) -> list[Check]:
    """Checks from BEGIN: turns that end with a question, answered by an attributable response."""
    rows = [
        row
        for path in paths
        for row in load_begin(path)
        if row["label"] == ATTRIBUTABLE
        and str(row["message"] or "").rstrip().endswith("?")
        and len(str(row["response"] or "").split()) >= 5
    ][:limit]
    checks: list[Check] = []
    for number, row in enumerate(rows):
        q, knowledge, answer = str(row["message"]), str(row["knowledge"]), str(row["response"])
        other = rows[(number + len(rows) // 2) % len(rows)] if len(rows) > 1 else row
        unrelated = split_sentences(str(other["knowledge"]))[:1] or [PADDING[0]]
        pairs = [
            ("answer_relevance", "pad", padded_with(answer, unrelated[0]), [knowledge]),
            ("answer_relevance", "another question's answer", str(other["response"]), [knowledge]),
            ("answer_relevance", "refuse", REFUSAL, [knowledge]),
            # WikiEval's padding: a generic remark about the subject after the answer
            (
                "answer_relevance",
                "wikieval-like: generic padding",
                padded_with(answer, GENERIC_PADDING.format(subject=question_subject(q))),
                [knowledge],
            ),
            ("faithfulness", "another context's answer", str(other["response"]), [knowledge]),
            ("faithfulness", "invent a claim", f"{answer} {INVENTED}", [knowledge]),
        ]
        neighbour = neighbouring_answer(knowledge, answer)
        if neighbour is not None:
            pairs.append(("answer_relevance", "a neighbouring answer", neighbour, [knowledge]))
            # WikiEval's poor answer to a one-part question: says it is not provided, then
            # pads with background on the same subject
            evaded = f"{EVASION} {neighbour[:1].upper()}{neighbour[1:]}."
            pairs.append(("answer_relevance", "wikieval-like: not provided, padding", evaded,
                          [knowledge]))  # fmt: skip
        mistyped = wrong_kind(q, knowledge, answer)
        if mistyped is not None:
            pairs.append(("answer_relevance", "wrong kind, right topic", mistyped, [knowledge]))
        for metric, kind, changed, contexts in pairs:
            if other is row and "another" in kind:
                continue
            checks.append(
                Check("begin", metric, kind, "lower", _row(q, [knowledge], answer),
                      _row(q, contexts, changed))
            )  # fmt: skip
        padded = [knowledge, *split_sentences(" ".join(str(r["knowledge"]) for r in rows[:3]))]
        if other is not row:
            checks.append(
                Check("begin", "context_relevance", "pad the context", "lower",
                      _row(q, [knowledge], answer), _row(q, padded, answer))
            )  # fmt: skip
    return checks


def _key(row: Interaction) -> tuple[Any, ...]:
    return (row.question, tuple(row.retrieved_contexts), row.answer)


def _verdict(expect: str, base: float | None, changed: float | None) -> float | None:
    """1 agrees, 0 disagrees, 0.5 a tie where a change was expected; None: a side unscored."""
    if expect == "above_zero":
        return None if changed is None else float(changed > 0)
    if base is None or changed is None:
        return None
    if expect == "stays":
        return float(abs(base - changed) <= STAY_TOLERANCE)
    return agreement(base, changed)  # "lower" and "less_than": base should be higher


async def run_perturb(
    checks: Sequence[Check],
    judge: Judge,
    results: RowResults,
    progress: Callable[[int], Any] | None = None,
) -> list[dict[str, Any]]:
    """Score both sides of every check with the judge's metric and with word overlap."""
    metrics: dict[str, Metric] = {
        "answer_relevance": AnswerRelevance(),
        "faithfulness": Faithfulness(),
        "context_relevance": ContextRelevance(),
    }
    scores: dict[str, dict[tuple[Any, ...], float | None]] = {}
    for name, metric in metrics.items():
        rows = {_key(r): r for c in checks if c.metric == name for r in (c.base, c.changed)}
        scored = await metric.score_rows(list(rows.values()), judge) if rows else []
        scores[name] = {
            key: (result.score if result.status is Status.OK else None)
            for key, result in zip(rows, scored, strict=True)
        }
    records = []
    for check in checks:
        base = scores[check.metric][_key(check.base)]
        changed = scores[check.metric][_key(check.changed)]
        records.append(
            {
                "source": check.source,
                "metric": check.metric,
                "kind": check.kind,
                "expect": check.expect,
                "judge_agrees": _verdict(check.expect, base, changed),
                "overlap_agrees": _verdict(
                    check.expect, overlap_score(check.metric, check.base),
                    overlap_score(check.metric, check.changed),
                ),
                "base_score": base,
                "changed_score": changed,
                "answer": check.changed.answer,
            }
        )  # fmt: skip
    if progress:
        progress(len(checks))
    results.append(records)
    return records


def _group_order(group: tuple[tuple[str, str], Any]) -> tuple[str, bool, str]:
    (metric, kind), _ = group
    return metric, kind != "all", kind


def summary(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Agreement per metric and kind of change (and overall per metric), judge and overlap."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for record in records:
        groups[(record["metric"], f"{record['source']}: {record['kind']}")].append(record)
        groups[(record["metric"], "all")].append(record)

    def rate(items: list[dict[str, Any]], field: str) -> dict[str, Any]:
        values = [item[field] for item in items if item[field] is not None]
        return {
            "agreement": sum(values) / len(values) if values else None,
            "checks": len(values),
            "unscored": len(items) - len(values),
        }

    return {
        "checks": len(records),
        "groups": [
            {"metric": metric, "kind": kind, "judge": rate(items, "judge_agrees"),
             "overlap": rate(items, "overlap_agrees")}
            for (metric, kind), items in sorted(groups.items(), key=_group_order)
        ],
    }  # fmt: skip


def summary_lines(result: dict[str, Any], judge: str) -> list[str]:
    def fmt(cell: dict[str, Any]) -> str:
        value = cell["agreement"]
        text = "-" if value is None else f"{value:.2f}"
        return f"{text} ({cell['checks']}" + (
            f", {cell['unscored']} unscored)" if cell["unscored"] else ")"
        )

    lines = [
        f"Perturbation checks, {result['checks']} pairs, judge {judge}",
        "(share of pairs where the score moves the expected way; a tie counts half)",
        f"{'metric':<19}{'change':<44}{'judge':>16}{'word overlap':>18}",
    ]
    for group in result["groups"]:
        lines.append(
            f"{group['metric']:<19}{group['kind']:<44}{fmt(group['judge']):>16}"
            f"{fmt(group['overlap']):>18}"
        )
    return lines
