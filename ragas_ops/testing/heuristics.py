"""The test judge's answers: a lexical heuristic for each of the project's prompts, and a
hashed bag-of-words embedding. Deterministic, so tests can predict every score."""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import re
import string
from collections.abc import Callable, Iterator, Mapping
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from ragas_ops.contract.inputs import ANSWER, CONTEXTS, QUESTION
from ragas_ops.metrics import ALL_PROMPTS
from ragas_ops.metrics.context_relevance import INSUFFICIENT_INFORMATION
from ragas_ops.metrics.gpt_score import DEFINITIONS
from ragas_ops.prompts import Prompt
from ragas_ops.text import (
    STOPWORDS,
    content_words,
    normalize,
    split_sentences,
    words,
)

_MAX_QUESTIONS = 100
_SUPPORT_THRESHOLD = 0.7  # share of a statement's content words the contexts must contain
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_ANSWER_PREFIX = re.compile(r"^\s*answer\s*:\s*", re.IGNORECASE)
# Refusals and evasions, matched on normalised text. First-person forms only where the words
# are common in factual answers too ("patients unable to swallow" is not a refusal).
_REFUSAL = re.compile(
    r"\bi (?:do not|don't|dont) know\b"
    r"|\b(?:i|we) (?:cannot|can't|can not|could not|couldn't)\b"
    r"|\b(?:i am|i'm|we are|we're) (?:not able|unable)\b"
    r"|\b(?:i am|i'm|we are|we're) sorry\b|^sorry\b"
    r"|\bno information\b|\binsufficient information\b"
)
_PUNCTUATION = string.punctuation + "“”‘’«»„"
_QUESTION_TEMPLATES = (
    "What can you tell me about {topic}?",
    "Is it true that {clause}?",
    "What is known about {keywords}?",
    "Could you explain {topic}?",
    "Which facts are given about {keywords}?",
    "How would you summarise what is said about {topic}?",
)

Heuristic = Callable[[Mapping[str, Any], int], dict[str, Any]]


class _Measure(NamedTuple):
    """A lexical ratio in [0, 1] and the sentence that explains it."""

    ratio: float
    explanation: str


def is_noncommittal(answer: str) -> bool:
    """Whether an answer is a refusal or an evasion ("I don't know", "I'm sorry", ...)."""
    return bool(_REFUSAL.search(normalize(answer).replace("\u2019", "'")))


def _stem(word: str) -> str:
    """A crude suffix stripper, so that "masts" matches "mast" and "opened" matches "open"."""
    for suffix, shortest in (("ing", 4), ("ed", 4), ("es", 4), ("s", 3)):
        if word.endswith(suffix) and len(word) - len(suffix) >= shortest:
            word = word[: -len(suffix)]
            break
    if len(word) >= 5 and word.endswith("e"):  # "metre" and "metres" both become "metr"
        word = word[:-1]
    return word


def _stems(text: str) -> set[str]:
    return {_stem(word) for word in content_words(text)}


def _numbers(text: str) -> set[str]:
    """Numbers in the text, thousands separators dropped ("1,000" is "1000")."""
    return {match.replace(",", "") for match in _NUMBER.findall(normalize(text))}


def _text(value: Any) -> str:
    """A data field as one text (None is empty; a list of texts is joined by lines)."""
    if value is None:
        return ""
    if isinstance(value, list):
        return "\n".join(_strings(value))
    return str(value)


def _strings(value: Any) -> list[str]:
    """A data field as a list of texts (a lone string is a list of one)."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [str(item) for item in value if item is not None]
    raise TypeError(f"expected a string or a list of strings, not {type(value).__name__}")


_NO_KEYWORDS = "the subject of the answer"


def _keyword_list(sentence: str) -> list[str]:
    """The sentence's content words, in their original spelling and order, each once."""
    seen: dict[str, str] = {}
    for token in sentence.split():
        word = token.strip(_PUNCTUATION)
        if word and content_words(word) and normalize(word) not in seen:
            seen[normalize(word)] = word
    return list(seen.values())


def _keywords(sentence: str, limit: int) -> str:
    return " ".join(_keyword_list(sentence)[:limit]) or _NO_KEYWORDS


def _topic(sentence: str) -> str:
    """What the sentence is about: its first capitalised name ("Millau Viaduct") if it has
    one, else its first two content words."""
    keywords = _keyword_list(sentence)
    name: list[str] = []
    for word in keywords:
        if word[:1].isupper():
            name.append(word)
        elif name:
            break
    return " ".join(name[:4] or keywords[:2]) or _NO_KEYWORDS


def _clause(sentence: str) -> str:
    """The sentence as a clause after "Is it true that": no end mark, no capital on "The"."""
    clause = sentence.strip().rstrip(".!?。！？").strip() or "the answer holds"
    first = clause.split(maxsplit=1)[0]
    if first.casefold() in STOPWORDS:
        clause = clause[0].lower() + clause[1:]
    return clause


def _question_candidates(answer: str) -> Iterator[str]:
    """An endless stream of questions the answer would answer, most natural first.

    Sentences vary fastest, then templates; past those, numbered follow-up questions keep the
    stream distinct however many questions are asked for.
    """
    sentences = split_sentences(_ANSWER_PREFIX.sub("", answer)) or [answer]
    for template in _QUESTION_TEMPLATES:
        for sentence in sentences:
            yield template.format(
                topic=_topic(sentence),
                keywords=_keywords(sentence, 6),
                clause=_clause(sentence),
            )
    for number in itertools.count(2):
        for sentence in sentences:
            yield f"What else does the answer say about {_topic(sentence)} (point {number})?"


def generated_questions(answer: str, count: int, start: int = 0) -> list[str]:
    """`count` distinct questions for `answer`, skipping the first `start` (another sample)."""
    distinct: dict[str, None] = {}
    for question in _question_candidates(answer):
        distinct.setdefault(question.strip())
        if len(distinct) >= start + count:
            break
    return list(distinct)[start : start + count]


def relevant_sentences(question: str, contexts: list[str]) -> tuple[list[str], int]:
    """Context sentences sharing enough content words with the question, and how many there are.

    Enough is two shared words, or a third of the question's words (rounded up) when that is
    fewer: one word for a question with at most three content words.
    """
    asked = _stems(question)
    needed = min(2, max(1, math.ceil(len(asked) / 3)))
    relevant: list[str] = []
    total = 0
    for context in contexts:
        for sentence in split_sentences(context):
            total += 1
            if asked and len(_stems(sentence) & asked) >= needed:
                relevant.append(sentence)
    return relevant, total


def _faithfulness_measure(question: str, answer: str, contexts: list[str]) -> _Measure:
    stems = _stems(answer)
    found = stems & _stems("\n".join(contexts))
    ratio = len(found) / len(stems) if stems else 0.0
    return _Measure(
        ratio, f"{len(found)} of {len(stems)} content words of the answer occur in the contexts."
    )


def _answer_relevance_measure(question: str, answer: str, contexts: list[str]) -> _Measure:
    if is_noncommittal(answer):
        return _Measure(0.0, "The answer is noncommittal.")
    asked = _stems(question)
    covered = asked & _stems(answer)
    ratio = len(covered) / len(asked) if asked else 0.0
    return _Measure(
        ratio, f"The answer uses {len(covered)} of the {len(asked)} content words of the question."
    )


def _context_relevance_measure(question: str, answer: str, contexts: list[str]) -> _Measure:
    relevant, total = relevant_sentences(question, contexts)
    ratio = len(relevant) / total if total else 0.0
    return _Measure(
        ratio, f"{len(relevant)} of {total} context sentences share enough words with the question."
    )


_MEASURES: dict[str, Callable[[str, str, list[str]], _Measure]] = {
    "faithfulness": _faithfulness_measure,
    "answer_relevance": _answer_relevance_measure,
    "context_relevance": _context_relevance_measure,
}


def statements(data: Mapping[str, Any], sample: int) -> dict[str, Any]:
    """One statement per sentence of the answer; none for a noncommittal answer."""
    answer = _ANSWER_PREFIX.sub("", _text(data[ANSWER]))
    return {"statements": [] if is_noncommittal(answer) else split_sentences(answer)}


def verdicts(data: Mapping[str, Any], sample: int) -> dict[str, Any]:
    """Supported when most content words, and every number, of a statement are in the contexts."""
    contexts = "\n".join(_strings(data[CONTEXTS]))
    context_stems, context_numbers = _stems(contexts), _numbers(contexts)
    verdicts = []
    for statement in _strings(data["statements"]):
        stems = _stems(statement)
        found = stems & context_stems
        unknown_numbers = sorted(_numbers(statement) - context_numbers)
        supported = bool(stems) and len(found) >= _SUPPORT_THRESHOLD * len(stems)
        explanation = f"{len(found)} of {len(stems)} content words found in the contexts"
        if unknown_numbers:
            explanation += f"; not in the contexts: {', '.join(unknown_numbers)}"
        else:
            missing = sorted(w for w in content_words(statement) if _stem(w) not in context_stems)
            explanation += f" (missing: {', '.join(missing[:5])})" if missing else ""
        verdict = "yes" if supported and not unknown_numbers else "no"
        verdicts.append({"explanation": explanation + ".", "verdict": verdict})
    return {"verdicts": verdicts}


def _questions(data: Mapping[str, Any], sample: int) -> dict[str, Any]:
    answer = _text(data[ANSWER])
    count = int(data["number_of_questions"])
    if not 0 <= count <= _MAX_QUESTIONS:
        raise ValueError(f"number_of_questions must be in [0, {_MAX_QUESTIONS}]")
    return {
        "questions": generated_questions(answer, count, start=sample),
        "noncommittal": is_noncommittal(answer),
    }


def _question(data: Mapping[str, Any], sample: int) -> dict[str, Any]:
    answer = _text(data[ANSWER])
    return {
        "question": generated_questions(answer, 1, start=sample)[0],
        "noncommittal": is_noncommittal(answer),
    }


def _extract(data: Mapping[str, Any], sample: int) -> dict[str, Any]:
    relevant, _ = relevant_sentences(_text(data[QUESTION]), _strings(data[CONTEXTS]))
    return {"sentences": list(dict.fromkeys(relevant)) or [INSUFFICIENT_INFORMATION]}


def _score(dimension: str) -> Heuristic:
    def answer(data: Mapping[str, Any], sample: int) -> dict[str, Any]:
        measure = _MEASURES[dimension](
            _text(data.get(QUESTION)), _text(data.get(ANSWER)), _strings(data.get(CONTEXTS))
        )
        return {"explanation": measure.explanation, "score": math.floor(measure.ratio * 10 + 0.5)}

    return answer


def _rank(dimension: str) -> Heuristic:
    def answer(data: Mapping[str, Any], sample: int) -> dict[str, Any]:
        question, contexts = _text(data[QUESTION]), _strings(data.get(CONTEXTS))
        first, second = (
            _candidate_measure(dimension, question, data[f"candidate_{number}"], contexts)
            for number in (1, 2)
        )
        better = 1 if first.ratio >= second.ratio else 2  # a tie goes to the first
        return {
            "explanation": f"Candidate 1: {first.explanation} Candidate 2: "
            f"{second.explanation} Candidate {better} is better.",
            "better": better,
        }

    return answer


def _candidate_measure(
    dimension: str, question: str, candidate: Any, contexts: list[str]
) -> _Measure:
    """Context-relevance candidates are sets of contexts; the others are answers."""
    if dimension == "context_relevance":
        return _MEASURES[dimension](question, "", _strings(candidate))
    return _MEASURES[dimension](question, _text(candidate), contexts)


_HEURISTICS: dict[str, Heuristic] = {
    "faithfulness.statements": statements,
    "faithfulness.verdicts": verdicts,
    "answer_relevance.questions": _questions,
    "answer_relevance.question": _question,
    "context_relevance.extract": _extract,
    **{f"gpt_score.{dimension}": _score(dimension) for dimension in DEFINITIONS},
    **{f"gpt_ranking.{dimension}": _rank(dimension) for dimension in DEFINITIONS},
}
# The prompts are recognised by their exact system message, which is static per prompt version.
PROMPTS_BY_SYSTEM: dict[str, Prompt[Any]] = {
    system: prompt
    for prompt in ALL_PROMPTS
    for system in (prompt.system, prompt.system_without_schema)
}


def heuristic_reply(prompt: Prompt[Any], data: Mapping[str, Any], sample: int = 0) -> str:
    """The JSON text the test double answers `prompt` about `data` with.

    `sample` is the choice index when `n` > 1: generated questions differ between samples,
    the other prompts answer the same every time. Raises KeyError for a prompt it does not know
    and KeyError/TypeError/ValueError for data that lacks the prompt's fields.
    """
    heuristic = _HEURISTICS.get(prompt.name)
    if heuristic is None:
        raise KeyError(f"the test double has no heuristic for prompt {prompt.id}")
    return json.dumps(heuristic(data, sample), ensure_ascii=False)


# --------------------------------------------------------------------------------------------
# Embeddings: hashed bag of words
# --------------------------------------------------------------------------------------------

MAX_EMBEDDING_DIM = 8192
_BIGRAM_WEIGHT = 0.5


def _embedding_features(text: str) -> list[tuple[str, float]]:
    """Stemmed content words and their bigrams; plain words, or the text, when it has none."""
    meaningful = content_words(text)
    tokens = [_stem(word) for word in words(text) if word in meaningful] or words(text)
    if not tokens:
        return [(f"text:{text}", 1.0)]
    features = [(f"w:{token}", 1.0) for token in tokens]
    features += [(f"b:{a} {b}", _BIGRAM_WEIGHT) for a, b in itertools.pairwise(tokens)]
    return features


def hashed_embedding(text: str, dim: int = 256) -> npt.NDArray[np.float64]:
    """A deterministic, L2-normalised feature-hashing embedding of `text`.

    Buckets come from BLAKE2b, not `hash()`, so vectors are the same in every process. All
    weights are positive, so cosines lie in [0, 1] like those of real embedding models.
    """
    vector = np.zeros(dim, dtype=np.float64)
    for feature, weight in _embedding_features(text):
        digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
        vector[int.from_bytes(digest, "little") % dim] += weight
    return vector / float(np.linalg.norm(vector))
