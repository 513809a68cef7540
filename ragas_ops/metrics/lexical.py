"""The test judge's toolkit: the lexical measures that each metric's test-double answer
(`<metric>/double.py`) is computed with. Deterministic, so tests can predict every score; no
model, no network. The test judge (`ragas_ops_testing.judge_server`) dispatches a recognised
prompt to the answer its metric registered (`registry.double_answer`)."""

from __future__ import annotations

import itertools
import re
import string
from collections.abc import Iterator
from typing import Any, NamedTuple

from ragas_ops.text import STOPWORDS, content_words, normalize, split_sentences

NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
ANSWER_PREFIX = re.compile(r"^\s*answer\s*:\s*", re.IGNORECASE)
# Refusals and evasions, matched on normalised text. First-person forms only where the words
# are common in factual answers too ("patients unable to swallow" is not a refusal).
REFUSAL = re.compile(
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


class Measure(NamedTuple):
    """A lexical ratio in [0, 1] and the sentence that explains it."""

    ratio: float
    explanation: str


def is_noncommittal(answer: str) -> bool:
    """Whether an answer is a refusal or an evasion ("I don't know", "I'm sorry", ...)."""
    return bool(REFUSAL.search(normalize(answer).replace("\u2019", "'")))


def stem(word: str) -> str:
    """A crude suffix stripper, so that "masts" matches "mast" and "opened" matches "open"."""
    for suffix, shortest in (("ing", 4), ("ed", 4), ("es", 4), ("s", 3)):
        if word.endswith(suffix) and len(word) - len(suffix) >= shortest:
            word = word[: -len(suffix)]
            break
    if len(word) >= 5 and word.endswith("e"):  # "metre" and "metres" both become "metr"
        word = word[:-1]
    return word


def stems(text: str) -> set[str]:
    return {stem(word) for word in content_words(text)}


def numbers(text: str) -> set[str]:
    """Numbers in the text, thousands separators dropped ("1,000" is "1000")."""
    return {match.replace(",", "") for match in NUMBER.findall(normalize(text))}


def field_text(value: Any) -> str:
    """A data field as one text (None is empty; a list of texts is joined by lines)."""
    if value is None:
        return ""
    if isinstance(value, list):
        return "\n".join(field_strings(value))
    return str(value)


def field_strings(value: Any) -> list[str]:
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
    sentences = split_sentences(ANSWER_PREFIX.sub("", answer)) or [answer]
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
