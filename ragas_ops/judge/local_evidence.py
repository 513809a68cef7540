"""The text rules of the local judge: lexical evidence, and how it is combined with embeddings.

Everything here is plain Python over strings and precomputed vectors, so it is fast and easy to
test; `local_judge.py` owns the model and the dispatch on prompts. Each rule says why it
generalises: the rules encode what makes a claim checkable (names, numbers, negation) and what
an answer that addresses a question looks like, never facts about one data set.

The thresholds were tuned on the BEGIN dev files only (see `benchmarks/` and the README), and
the answer-relevance and context-relevance rules on the ten WikiEval sample rows.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from ragas_ops.text import STOPWORDS, content_words, normalize, split_sentences, words

Vector = npt.NDArray[np.float32]
Vectors = Mapping[str, Vector]

# -- thresholds (tuned on BEGIN dev; see the README, "The local judge") ----------------------

SUPPORT_THRESHOLD = 0.6
"""A statement is supported when its support score reaches this."""
LEXICAL_WEIGHT = 0.9
"""Support = LEXICAL_WEIGHT * weighted word coverage + (1 - LEXICAL_WEIGHT) * best cosine."""
MIN_CLAUSE_WORDS = 2
"""A clause becomes a statement of its own only with this many content words (a first-person
clause with one: "I agree" is a claim about the speaker)."""
CANDIDATE_SENTENCES = 3
"""Context sentences (most words shared with a claim) compared with it by embedding."""
EXTRACT_MIN_SIMILARITY = 0.35
"""Context relevance: a sentence below this cosine with the question is never needed."""
EXTRACT_MARGIN = 0.15
"""...and one further than this below the best sentence is not needed either."""

_ANSWER_PREFIX = re.compile(r"^\s*(?:answer|question)\s*:\s*", re.IGNORECASE)
_NUMBER = re.compile(r"\d+(?:[.,:]\d+)*")
_NEGATION = frozenset(
    [
        "not",
        "no",
        "never",
        "none",
        "nothing",
        "nobody",
        "neither",
        "nor",
        "cannot",
        "without",
        "n't",
        "isn't",
        "wasn't",
        "aren't",
        "weren't",
        "doesn't",
        "didn't",
        "don't",
        "won't",
        "can't",
        "couldn't",
        "shouldn't",
        "hasn't",
        "haven't",
        "hadn't",
    ]
)
_REFUSAL = re.compile(
    r"\bi (?:do not|don't|dont) know\b"
    r"|\b(?:i|we) (?:cannot|can't|can not|could not|couldn't) (?:answer|find|say|help|tell)\b"
    r"|\b(?:i am|i'm|we are|we're) (?:not able|unable|sorry)\b|^sorry\b"
    r"|\bno information\b|\binsufficient information\b|\bnot (?:sure|certain)\b"
)
# A sentence saying that the information asked for is absent answers nothing.
_ABSENT = re.compile(
    r"\b(?:has|have|had|was|were|is|are) not (?:yet )?(?:been )?"
    r"(?:provided|announced|disclosed|specified|mentioned|given|revealed|made public|"
    r"confirmed|reported|released|available|known|determined|stated)\b"
    r"|\b(?:is|are|remains?) (?:unknown|unclear|not known|not available)\b"
    r"|\bno (?:details|information|data) (?:is|are|was|were|has|have)\b"
    r"|\bthere is no (?:information|mention)\b"
)
# Where one atomic claim ends and the next begins: punctuation inside a sentence, and the words
# that join two clauses (coordinating and subordinating conjunctions, relative pronouns).
_CLAUSE_SPLIT = re.compile(
    r"(\s*[;:,]\s+(?:(?:and|but|or|so|then)\s+)?"
    r"|\s+(?:and|but|or|so|because|which|who|whom|whose|that|while|whereas|when|where|"
    r"although|though|since|unless|if|as well as)\s+)",
    re.IGNORECASE,
)
# Two sentences glued without a space ("...provided.The mission..."), common in generated text.
_GLUED = re.compile(r"(?<=[a-z0-9)][.!?])(?=[A-Z][a-z])")
_FIRST_PERSON = frozenset({"i", "i'm", "im", "my", "me", "we", "our", "i've", "i'd"})
_NUMBER_WORDS = {
    word: str(value)
    for value, word in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve".split()  # noqa: SIM905
    )
}
# "Did you know that X?" asserts X: a rhetorical question is a claim.
_DID_YOU_KNOW = re.compile(r"^(?:.*?\b)?(?:did|do) you know (?:that )?(.+?)\s*\?$", re.IGNORECASE)


# -- words -------------------------------------------------------------------------------------


def stem(word: str) -> str:
    """A light suffix stripper: "launched"/"launch", "countries"/"country", "metres"/"metre"."""
    for suffix, replacement, shortest in (
        ("ies", "y", 3),
        ("ing", "", 4),
        ("ed", "", 4),
        ("es", "", 4),
        ("s", "", 3),
        ("ly", "", 4),
    ):
        if word.endswith(suffix) and len(word) - len(suffix) >= shortest:
            word = word[: -len(suffix)] + replacement
            break
    if len(word) >= 5 and word.endswith("e"):
        word = word[:-1]
    return word


def stems(text: str) -> set[str]:
    return {_NUMBER_WORDS.get(word, stem(word)) for word in content_words(text)}


def numbers(text: str) -> set[str]:
    """Numbers, with thousands separators dropped ("1,000" is "1000") and small numbers
    written as words read as digits ("two" is "2")."""
    normalized = normalize(text)
    found = {match.replace(",", "") for match in _NUMBER.findall(normalized)}
    return found | {_NUMBER_WORDS[w] for w in words(normalized) if w in _NUMBER_WORDS}


def names(text: str) -> set[str]:
    """Stems of capitalised words that do not start a sentence: names of people, places, things.

    Names are what a made-up claim usually changes (another city, another company), so a name
    the context never mentions is strong evidence against a statement.
    """
    found: set[str] = set()
    for sentence in split_sentences(text):
        tokens = re.findall(r"[\w'’-]+", sentence)
        for token in tokens[1:]:
            if token[:1].isupper() and token.casefold() not in STOPWORDS and len(token) > 1:
                found |= stems(token)
    return found


def negated(text: str) -> bool:
    tokens = set(re.findall(r"[a-z']+", normalize(text).replace("’", "'")))
    return bool(tokens & _NEGATION) or any(token.endswith("n't") for token in tokens)


def strip_prefix(text: str) -> str:
    """WikiEval writes "Question: ..." and "Answer: ..."; the prefix is not part of the text."""
    return _ANSWER_PREFIX.sub("", text).strip()


def is_noncommittal(answer: str) -> bool:
    """A refusal or an evasion: no sentence says anything beyond "I don't know" or "that
    information is not available". "I'm not sure, but X" still claims X."""
    sentences = sentences_of(strip_prefix(answer))
    return all(_evasive(sentence) for sentence in sentences)


def _evasive(sentence: str) -> bool:
    text = normalize(sentence).replace("’", "'")
    if says_absent(sentence):
        return True
    refusal = _REFUSAL.search(text)
    return bool(refusal) and len(content_words(_REFUSAL.sub(" ", text))) < 3


def says_absent(sentence: str) -> bool:
    return bool(_ABSENT.search(normalize(sentence).replace("’", "'")))


# -- faithfulness --------------------------------------------------------------------------------


def sentences_of(text: str) -> list[str]:
    """The text's sentences, also where generated text glued two without a space."""
    return [part for sentence in split_sentences(text) for part in _GLUED.split(sentence) if part]


def statements(answer: str) -> list[str]:
    """Atomic claims from the answer: its sentences cut into clauses.

    The metric's prompt asks for "one or more statements from each sentence"; an LLM breaks a
    sentence into its atomic facts, and so do we, at punctuation and at the words that join two
    clauses. Finer claims let one made-up clause lower the score without sinking a sentence that
    is otherwise grounded, and make the share of supported claims a finer measure.

    Questions back to the user, refusals and pieces with fewer than two content words claim
    nothing; a first-person clause with one ("I agree", "I love it") claims something about the
    speaker, which a knowledge source cannot attest.
    """
    text = strip_prefix(answer)
    if is_noncommittal(text):
        return []
    claims: list[str] = []
    for original in sentences_of(text):
        if _evasive(original):
            continue
        rhetorical = _DID_YOU_KNOW.match(original)
        sentence = rhetorical.group(1) if rhetorical else original
        if sentence.rstrip().endswith("?"):  # "goldendoodles are designer dogs, do you like them?"
            parts = sentence.split(", ")
            sentence = ", ".join(parts[:-1])
            if not sentence:
                continue
        pieces = (piece.strip(" ,;:!.?\"'") for piece in _clauses(sentence))
        claims.extend(p for p in pieces if p and _claims_something(p))
    return list(dict.fromkeys(claims))


def _claims_something(piece: str) -> bool:
    count = len(content_words(piece))
    return count >= MIN_CLAUSE_WORDS or (count >= 1 and bool(set(words(piece)) & _FIRST_PERSON))


def _clauses(sentence: str) -> list[str]:
    """Cut at clause boundaries, but never leave a piece too short to be a claim of its own
    (a list's last item, "and other goods", stays with its list)."""
    parts = _CLAUSE_SPLIT.split(sentence)  # text, delimiter, text, delimiter, ...
    pieces: list[str] = []
    for index in range(0, len(parts), 2):
        piece, join = parts[index], parts[index - 1] if index else ""
        if not piece.strip():
            continue
        if pieces and not (_claims_something(pieces[-1]) and _claims_something(piece)):
            pieces[-1] = f"{pieces[-1]}{join}{piece}"
        else:
            pieces.append(piece)
    return pieces


@dataclass
class ContextIndex:
    """What the verifier needs to know about the contexts, computed once per call."""

    sentences: list[str]
    sentence_stems: list[set[str]]
    stems: set[str] = field(default_factory=set)
    numbers: set[str] = field(default_factory=set)

    @classmethod
    def build(cls, contexts: Sequence[str]) -> ContextIndex:
        sentences = list(dict.fromkeys(s for context in contexts for s in split_sentences(context)))
        joined = "\n".join(contexts)
        return cls(sentences, [stems(s) for s in sentences], stems(joined), numbers(joined))

    def candidates(self, claim: str, limit: int = CANDIDATE_SENTENCES) -> list[str]:
        """The passages worth embedding for a claim: the sentences sharing most words with it,
        and the best one joined with its neighbours (a claim may span a sentence boundary).

        Embedding only these keeps the judge fast on long contexts; a sentence sharing no
        word with a claim is very unlikely to be the one that supports it.
        """
        claim_stems = stems(claim)
        shared = [len(claim_stems & sentence) for sentence in self.sentence_stems]
        ranked = sorted(range(len(shared)), key=lambda i: (-shared[i], i))[:limit]
        ranked = [i for i in ranked if shared[i] > 0] or ranked[:1]
        passages = [self.sentences[i] for i in ranked]
        if ranked:
            best = ranked[0]
            if best > 0:
                passages.append(f"{self.sentences[best - 1]} {self.sentences[best]}")
            if best + 1 < len(self.sentences):
                passages.append(f"{self.sentences[best]} {self.sentences[best + 1]}")
        return passages


@dataclass
class Support:
    score: float
    verdict: bool
    explanation: str
    coverage: float = 0.0
    cosine: float = 0.0
    vetoes: tuple[str, ...] = ()


@dataclass
class Evidence:
    """What the words alone say about a statement, before any embedding."""

    coverage: float
    missing: list[str]
    vetoes: list[str]

    @property
    def decided(self) -> bool:
        """True when the cosine could not change the verdict: a veto, coverage high enough on
        its own, or too low for even a perfect cosine. Only the rest is embedded."""
        lexical = LEXICAL_WEIGHT * self.coverage
        return (
            bool(self.vetoes)
            or lexical >= SUPPORT_THRESHOLD
            or lexical + (1.0 - LEXICAL_WEIGHT) < SUPPORT_THRESHOLD
        )


def evidence(statement: str, index: ContextIndex) -> Evidence:
    """Word coverage (names and numbers counting double, as they carry the checkable facts)
    and the vetoes; the closest passage for the negation veto is the one sharing most words."""
    claim_stems = stems(statement)
    if not claim_stems:
        return Evidence(0.0, [], ["the statement has no content word to check"])
    key = names(statement)
    weights = {word: (2.0 if word in key else 1.0) for word in claim_stems}
    missing = sorted(word for word in claim_stems if word not in index.stems)
    coverage = 1.0 - sum(weights[word] for word in missing) / sum(weights.values())
    closest = index.candidates(statement, 1)
    return Evidence(
        coverage, missing, _vetoes(statement, index, closest[0] if closest else "", missing, key)
    )


def support(
    statement: str, index: ContextIndex, passages: Sequence[str], vectors: Vectors
) -> Support:
    """How well the contexts support one statement, with the reasons.

    - word coverage: the share of the statement's content words (stemmed) the contexts contain,
      names and numbers counting double, because they carry the checkable facts;
    - meaning: the best cosine between the statement and a context sentence or pair of
      sentences (paraphrases share few words), looked at only when the words leave the verdict
      open (`Evidence.decided`); `vectors` may then lack the statement;
    - vetoes: a number or a name the contexts never mention, a first-person claim (the
      speaker's own experience cannot be in a knowledge source), or a negation that the
      closest context sentence does not share (or the reverse).
    """
    found = evidence(statement, index)
    best_cosine, _ = _best_match(statement, passages, vectors)
    score = LEXICAL_WEIGHT * found.coverage + (1.0 - LEXICAL_WEIGHT) * best_cosine
    verdict = score >= SUPPORT_THRESHOLD and not found.vetoes
    reasons = [f"{round(found.coverage * 100)}% of its content words are in the contexts"]
    if statement in vectors:
        reasons.append(f"closest passage similarity {best_cosine:.2f}")
    if found.missing:
        reasons.append("not found: " + ", ".join(found.missing[:6]))
    reasons.extend(found.vetoes)
    return Support(
        score, verdict, "; ".join(reasons) + ".", found.coverage, best_cosine, tuple(found.vetoes)
    )


def _vetoes(
    statement: str, index: ContextIndex, best_passage: str, missing: list[str], key: set[str]
) -> list[str]:
    vetoes = []
    unknown_numbers = sorted(numbers(statement) - index.numbers)
    if unknown_numbers:
        vetoes.append("numbers the contexts do not contain: " + ", ".join(unknown_numbers))
    unknown_names = sorted(word for word in missing if word in key)
    if unknown_names:
        vetoes.append("names the contexts do not mention: " + ", ".join(unknown_names))
    tokens = set(words(statement))
    if tokens & _FIRST_PERSON and missing:
        vetoes.append("a first-person claim the contexts cannot attest")
    if best_passage and negated(statement) and not negated(best_passage):
        vetoes.append("it denies what the closest passage states")
    return vetoes


def _best_match(text: str, candidates: Sequence[str], vectors: Vectors) -> tuple[float, str]:
    if not candidates or text not in vectors:
        return 0.0, ""
    matrix = np.stack([vectors[candidate] for candidate in candidates])
    similarities = matrix @ vectors[text]
    best = int(np.argmax(similarities))
    return max(0.0, float(similarities[best])), candidates[best]


# -- context relevance --------------------------------------------------------------------------


def needed_sentences(question: str, contexts: Sequence[str], vectors: Vectors) -> list[str]:
    """The context sentences a question needs: sharing enough of the question's words (a third
    of them, at least one, at most two required), close in meaning to the question, and close
    to the best sentence.

    A relative cut (near the best sentence) keeps background that only mentions the topic out:
    that padding is what separates a focused context from a diluted one.
    """
    sentences = list(dict.fromkeys(s for c in contexts for s in split_sentences(c)))
    query = strip_prefix(question)
    if not sentences or query not in vectors:
        return []
    similarities = [float(vectors[query] @ vectors[s]) if s in vectors else 0.0 for s in sentences]
    best = max(similarities)
    asked = stems(query)
    must_share = min(2, max(1, math.ceil(len(asked) / 3)))
    needed = []
    for sentence, similarity in zip(sentences, similarities, strict=True):
        shared = len(stems(sentence) & asked)
        if similarity < EXTRACT_MIN_SIMILARITY or shared < must_share:
            continue
        if similarity >= best - EXTRACT_MARGIN:
            needed.append(sentence)
    return needed


# -- answer relevance ---------------------------------------------------------------------------

_WH_BY_KIND = {"date": "When", "number": "How many", "place": "Where", "other": "What"}
_MONTHS = frozenset(
    "january february march april may june july august september october november december".split()  # noqa: SIM905
)


def _kind(sentence: str) -> str:
    """What kind of fact the sentence gives: it decides the question word."""
    tokens = words(sentence)
    if any(token in _MONTHS for token in tokens) or re.search(r"\b(1[89]|20)\d\d\b", sentence):
        return "date"
    if re.search(r"\b(?:in|at|from|near)\s+[A-Z]", sentence):
        return "place"
    if _NUMBER.search(sentence):
        return "number"
    return "other"


def question_for(sentence: str, topic: str) -> str:
    """A question the sentence answers: the question word of its fact, then what it is about.

    The words of the fact itself (numbers, dates) are left out, as a question leaves out its
    answer. A sentence saying the information is absent asks whether it is known, which is
    not what the user asked.
    """
    sentence = sentence.strip().rstrip(".!?")
    if says_absent(sentence):
        return f"Is there any information about {topic}?"
    body = " ".join(
        token
        for token in re.findall(r"[\w'’-]+", sentence)
        if not _NUMBER.fullmatch(token) and token.casefold() not in _MONTHS
    )
    if words(body)[:1] and words(body)[0] in {"it", "this", "they", "he", "she"}:
        body = f"{topic} {body.split(maxsplit=1)[1] if ' ' in body else ''}".strip()
    return f"{_WH_BY_KIND[_kind(sentence)]} about {body}?"


def topic_of(text: str) -> str:
    """The first capitalised name of the text, or its first two content words."""
    tokens = re.findall(r"[\w'’-]+", text)
    name: list[str] = []
    for token in tokens:
        if token[:1].isupper() and token.casefold() not in STOPWORDS:
            name.append(token)
        elif name:
            break
    if name:
        return " ".join(name[:5])
    keywords = [token for token in tokens if content_words(token)]
    return " ".join(keywords[:2]) or "the subject"


def generated_questions(answer: str, count: int) -> list[str]:
    """`count` distinct questions the answer answers, one per sentence, most important first.

    Sentences are taken in order (an answer puts its point first); when the answer has fewer
    sentences than questions asked, whole-answer questions fill in.
    """
    text = strip_prefix(answer)
    sentences = split_sentences(text) or [text]
    topic = topic_of(text)
    candidates = [question_for(sentence, topic) for sentence in sentences]
    candidates.append(f"What about {' '.join(list(_ordered_content(text))[:12])}?")
    candidates.append(f"What can you tell me about {topic}?")
    distinct = list(dict.fromkeys(c for c in candidates if c.strip()))
    number = 2
    while len(distinct) < count:
        distinct.append(f"What else about {topic} (point {number})?")
        number += 1
    return distinct[:count]


def _ordered_content(text: str) -> Iterable[str]:
    seen: dict[str, None] = {}
    for word in words(text):
        if word in content_words(word) and word not in seen:
            seen[word] = None
    return seen
