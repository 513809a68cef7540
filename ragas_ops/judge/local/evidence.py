"""The text rules of the local judge: lexical evidence, and how it is combined with embeddings.

Everything here is plain Python over strings and precomputed vectors, so it is fast and easy to
test; `judge.py` owns the model and the dispatch on prompts, `generator.py` writes the
questions an answer answers from the words kept here. Each rule says why it
generalises: the rules encode what makes a claim checkable (names, numbers, negation) and what
an answer that addresses a question looks like, never facts about one data set.

The faithfulness thresholds were chosen on the BEGIN dev files only. The answer-relevance and
context-relevance rules implement rules of English (`questions.py`: what a question's parts ask
for, what a sentence supplies, what a question looks like) and are checked by unit tests and by
`ragas-ops benchmark perturb` (pairs built from data without WikiEval labels); the WikiEval
sample rows are for reporting, and `benchmarks/bench_local_judge_loo.py` shows how much their
few choices depend on those rows (docs/local-judge.md).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
import numpy.typing as npt

from ragas_ops.judge.local.questions import (
    Part,
    asked_parts,
    supplied_kinds,
)
from ragas_ops.text import (
    MEMO_CHARS,
    STOPWORDS,
    content_words,
    normalize,
    split_sentences,
    words,
)

Vector = npt.NDArray[np.float32]
Vectors = Mapping[str, Vector]

# -- thresholds (tuned on BEGIN dev; see docs/evaluation.md, "The local judge") -------------

SUPPORT_THRESHOLD = 0.6
"""A statement is supported when its support score reaches this."""
LEXICAL_WEIGHT = 0.9
"""Support = LEXICAL_WEIGHT * weighted word coverage + (1 - LEXICAL_WEIGHT) * best cosine."""
MIN_CLAUSE_WORDS = 2
"""A clause becomes a statement of its own only with this many content words (a first-person
clause with fewer, "I agree", "I would too", is a claim about the speaker)."""
CANDIDATE_SENTENCES = 3
"""Context sentences (most words shared with a claim) compared with it by embedding."""
EXTRACT_MIN_SIMILARITY = 0.35
"""Context relevance: a sentence below this cosine with the question is never needed."""
EXTRACT_MARGIN = 0.15
"""...and one further than this below the best sentence is not needed either."""
PART_MIN_SIMILARITY = 0.2
"""A sentence answering one part of a question is needed when at least this close to the
part (a sentence continuing about the subject, "It opened in 2004", is far from the whole
question: its subject is a pronoun)."""

_ANSWER_PREFIX = re.compile(r"^\s*(?:answer|question)\s*:\s*", re.IGNORECASE)
NUMBER_TOKEN = re.compile(r"\d+(?:[.,:]\d+)*")
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
    r"|\b(?:is|are|remains?) (?:currently |still |as yet |presently )?"
    r"(?:unknown|unclear|not known|not available)\b"
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
FIRST_PERSON_TOKENS = frozenset({"i", "i'm", "im", "my", "me", "we", "our", "i've", "i'd"})
NUMBER_WORD_VALUES = {
    word: str(value)
    for value, word in [
        *enumerate(
            "zero one two three four five six seven eight nine ten eleven twelve".split()  # noqa: SIM905
        ),
        *zip(
            range(20, 100, 10),
            "twenty thirty forty fifty sixty seventy eighty ninety".split(),  # noqa: SIM905
            strict=True,
        ),
        (100, "hundred"),
    ]
}
# "Did you know that X?" asserts X: a rhetorical question is a claim. "Do you know how X?",
# "...what X?", "...about X?" ask something back: no claim.
_DID_YOU_KNOW = re.compile(r"^(?:.*?\b)?(?:did|do) you know (?:that )?(.+?)\s*\?$", re.IGNORECASE)
_ASKS_BACK = re.compile(
    r"(?:who|whom|whose|what|which|when|where|why|how|if|whether|about|anything|much|any)\b",
    re.IGNORECASE,
)


# -- words -------------------------------------------------------------------------------------


@lru_cache(maxsize=1 << 16)
def stem(word: str) -> str:
    """A light suffix stripper: "launched"/"launch", "countries"/"country", "metres"/"metre".
    Kept for the words seen last: a run stems the same few thousand words over and over."""
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
    """The stems of the text's content words (a number word as its digits); kept for the
    sentences seen last, like `text.content_words`."""
    return set(_stems_kept(text) if len(text) <= MEMO_CHARS else _stems(text))


def _stems(text: str) -> frozenset[str]:
    return frozenset(NUMBER_WORD_VALUES.get(word, stem(word)) for word in content_words(text))


_stems_kept = lru_cache(maxsize=1 << 15)(_stems)


def numbers(text: str) -> set[str]:
    """Numbers, with thousands separators dropped ("1,000" is "1000") and small numbers
    written as words read as digits ("two" is "2")."""
    normalized = normalize(text)
    found = {match.replace(",", "") for match in NUMBER_TOKEN.findall(normalized)}
    return found | {NUMBER_WORD_VALUES[w] for w in words(normalized) if w in NUMBER_WORD_VALUES}


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
    return all(is_evasive(sentence) for sentence in sentences)


def is_evasive(sentence: str) -> bool:
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
    nothing; a first-person clause with fewer ("I agree", "I would too") claims something about the
    speaker, which a knowledge source cannot attest.
    """
    text = strip_prefix(answer)
    if is_noncommittal(text):
        return []
    claims: list[str] = []
    for original in sentences_of(text):
        if is_evasive(original):
            continue
        rhetorical = _DID_YOU_KNOW.match(original)
        if rhetorical and _ASKS_BACK.match(rhetorical.group(1)):  # "do you know how X?" asks
            rhetorical = None
        sentence = rhetorical.group(1) if rhetorical else original
        if sentence.rstrip().endswith("?"):  # "goldendoodles are designer dogs, do you like them?"
            parts = sentence.split(", ")
            sentence = ", ".join(parts[:-1])
            if not sentence:
                continue
        pieces = [piece.strip(" ,;:!.?\"'") for piece in _clauses(sentence)]
        kept = [p for p in pieces if p and _claims_something(p)]
        if not kept and _short_claim(sentence):  # "he was a mathematician"
            kept = [sentence.strip(" ,;:!.?\"'")]
        claims.extend(kept)
    return list(dict.fromkeys(claims))


def _claims_something(piece: str) -> bool:
    count = len(content_words(piece))
    return count >= MIN_CLAUSE_WORDS or bool(set(words(piece)) & FIRST_PERSON_TOKENS)


# "No, but X" / "Yes, X": the particle answers the previous turn; X is what is claimed.
_ANSWER_PARTICLE = re.compile(r"^\W*(?:yes|yeah|yep|no|nope)\b[\s,.!]*(?:but\b)?", re.IGNORECASE)
# A reply's reaction to the previous turn ("that's great", "wow, cool") refers to the
# conversation, not to the world: it is no claim about the topic.
REACTION = re.compile(
    r"^\W*(?:that|this)(?:'s|’s| is| was| sounds| seems)\b"
    r"|^\W*(?:wow|oh|ah|lol|haha|cool|nice|great|awesome|interesting|yes|yeah|yep|no|nope|"
    r"sure|ok|okay|right|true|indeed|thanks|thank you|hello|hi|bye|goodbye|good luck|enjoy|"
    # closing pleasantries address the user, not the topic
    r"have a (?:great|good|nice|wonderful|lovely) (?:day|night|evening|weekend|one))\b",
    re.IGNORECASE,
)


def _short_claim(sentence: str) -> bool:
    """A whole sentence with one content word is still a claim when it says something of a
    subject ("he was a mathematician", "it is a comedy"), and not when it reacts to the
    conversation ("that's great", "yes, it is")."""
    return (
        len(content_words(sentence)) == 1
        and len(words(sentence)) >= 3  # a subject, a verb, what is said: "the patriots" is not
        and not REACTION.match(sentence)
    )


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
        ranked = self._closest(claim, limit)
        passages = [self.sentences[i] for i in ranked]
        if ranked:
            best = ranked[0]
            if best > 0:
                passages.append(f"{self.sentences[best - 1]} {self.sentences[best]}")
            if best + 1 < len(self.sentences):
                passages.append(f"{self.sentences[best]} {self.sentences[best + 1]}")
        return passages

    def closest_sentences(self, claim: str, limit: int = CANDIDATE_SENTENCES) -> list[str]:
        """The sentences sharing most words with the claim (at least one, if any shares one)."""
        return [self.sentences[i] for i in self._closest(claim, limit)]

    def _closest(self, claim: str, limit: int) -> list[int]:
        claim_stems = stems(claim)
        shared = [len(claim_stems & sentence) for sentence in self.sentence_stems]
        ranked = sorted(range(len(shared)), key=lambda i: (-shared[i], i))[:limit]
        return [i for i in ranked if shared[i] > 0] or ranked[:1]


# A vetoed statement's degree, as a share of the degree its words and meaning give it: BEGIN
# dev AUC is flat in it (0.1-0.49: 0.883-0.884, against 0.878 at 0); 0.1 keeps a "no" near 0.
VETOED_DEGREE = 0.1


@dataclass
class Support:
    score: float
    verdict: bool
    explanation: str
    coverage: float = 0.0
    cosine: float = 0.0
    vetoes: tuple[str, ...] = ()

    @property
    def degree(self) -> float:
        """How strongly the contexts support the statement, in [0, 1]: the score on the line
        through (threshold, 0.5) and (1, 1), so a verbatim statement is 1.0, the yes/no boundary
        0.5; a vetoed statement `VETOED_DEGREE` x that (v14; before, 0), a "no" that still
        tells a near miss from a clear one. The verdict is `degree >= 0.5` (vetoes aside): the
        degree keeps what the yes/no verdict throws away."""
        slope = 0.5 / (1.0 - SUPPORT_THRESHOLD)
        degree = min(1.0, max(0.0, 0.5 + (self.score - SUPPORT_THRESHOLD) * slope))
        return VETOED_DEGREE * degree if self.vetoes else degree


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
    and the vetoes; a negation must appear in one of the passages sharing most words."""
    claim_stems = stems(statement)
    if not claim_stems:
        return Evidence(0.0, [], ["the statement has no content word to check"])
    key = names(statement)
    weights = {word: (2.0 if word in key else 1.0) for word in claim_stems}
    missing = sorted(word for word in claim_stems if word not in index.stems)
    coverage = 1.0 - sum(weights[word] for word in missing) / sum(weights.values())
    closest = index.closest_sentences(statement)
    return Evidence(coverage, missing, _vetoes(statement, index, closest, missing, key))


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
    # A statement decided by its words is not embedded: its meaning term is then taken to agree
    # with its words (the verdict cannot change, and a verbatim statement scores 1.0).
    meaning = best_cosine if statement in vectors else found.coverage
    score = LEXICAL_WEIGHT * found.coverage + (1.0 - LEXICAL_WEIGHT) * meaning
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
    statement: str, index: ContextIndex, closest: Sequence[str], missing: list[str], key: set[str]
) -> list[str]:
    vetoes = []
    unknown_numbers = sorted(numbers(statement) - index.numbers)
    if unknown_numbers:
        vetoes.append("numbers the contexts do not contain: " + ", ".join(unknown_numbers))
    unknown_names = sorted(word for word in missing if word in key)
    if unknown_names:
        vetoes.append("names the contexts do not mention: " + ", ".join(unknown_names))
    tokens = set(words(statement))
    if tokens & FIRST_PERSON_TOKENS and missing:
        vetoes.append("a first-person claim the contexts cannot attest")
    claim = _ANSWER_PARTICLE.sub("", statement)  # "no, but it has..." denies nothing
    if closest and negated(claim) and not any(negated(passage) for passage in closest):
        vetoes.append("it denies what the closest passages state")
    return vetoes


def _best_match(text: str, candidates: Sequence[str], vectors: Vectors) -> tuple[float, str]:
    if not candidates or text not in vectors:
        return 0.0, ""
    matrix = np.stack([vectors[candidate] for candidate in candidates])
    similarities = matrix @ vectors[text]
    best = int(np.argmax(similarities))
    return max(0.0, float(similarities[best])), candidates[best]


# -- context relevance --------------------------------------------------------------------------


def part_texts(question: str) -> list[str]:
    """The parts of a question with several whose vectors pick the sentence answering each:
    the parts asking for a date, a number, a name or a place (several sentences may hold one;
    a content part is matched by its own words, then by the whole question)."""
    parts = asked_parts(strip_prefix(question))
    return [part.text for part in parts if part.kind != "content"] if len(parts) > 1 else []


def answers_a_part(question: str, sentence: str) -> bool:
    """Whether the sentence holds the kind of item a part of the question asks for (a date for
    "when", a duration for "how long", a number for "how many", a name for "who", a place for
    "where"): such a sentence carries an answer even in other words than the question's
    ("when will I get my money back?" / "Refunds are paid ... within 5 business days")."""
    wanted = {part.kind for part in asked_parts(question)} - {"content"}
    return bool(wanted & supplied_kinds(sentence))


def worth_embedding(question: str, sentence: str, asked: set[str]) -> bool:
    """Whether context relevance needs the sentence's vector: it shares a word with the
    question, or holds a date, a duration or a number a part asks for (a name or a place alone
    is in most sentences of a long context: it needs a shared word too). Other sentences are
    never needed, so they are not embedded."""
    if stems(sentence) & asked:
        return True
    wanted = {part.kind for part in asked_parts(question)} & {"date", "duration", "number"}
    return bool(wanted & supplied_kinds(sentence))


def _refers_back(sentence: str) -> bool:
    first = words(sentence)[:1]
    return bool(first) and first[0] in PRONOUN_POSSESSIVES


def _part_answer(
    part: Part,
    query: str,
    sentences: Sequence[str],
    asked: set[str],
    vectors: Vectors,
    *,
    part_min: float = PART_MIN_SIMILARITY,
) -> str | None:
    """The sentence that answers one part of the question: among the sentences on the
    question's topic (sharing a word with it, continuing about its subject, or close to it in
    meaning) that hold the part's kind of item, the one closest in meaning to the part. A
    content part ("what was the primary payload of X") is answered by the sentence sharing
    most of its own words (its names aside: they name the topic, which every sentence shares).
    """
    target = vectors.get(part.text, vectors[query])
    own = stems(part.text) - names(part.text)
    candidates = []
    for sentence in sentences:
        if sentence not in vectors:
            continue
        sentence_stems = stems(sentence)
        on_topic = (
            bool(sentence_stems & asked)
            or _refers_back(sentence)
            or float(vectors[query] @ vectors[sentence]) >= EXTRACT_MIN_SIMILARITY
        )
        kinds = supplied_kinds(sentence)
        overlap = len(sentence_stems & own)
        if part.kind == "content":
            fits = overlap > 0
        else:
            overlap = 0
            fits = part.kind in kinds or (part.kind == "place" and "name" in kinds)
        if on_topic and fits:
            similarity = float(target @ vectors[sentence])
            candidates.append((overlap, similarity, sentence))
    if not candidates:
        return None
    _, similarity, best = max(candidates)
    return best if similarity >= part_min else None


def needed_sentences(
    question: str,
    contexts: Sequence[str],
    vectors: Vectors,
    *,
    margin: float = EXTRACT_MARGIN,
    part_min: float = PART_MIN_SIMILARITY,
) -> list[str]:
    """The context sentences a question needs: for each part of the question, the sentence
    that answers it (`_part_answer`), and the sentences sharing enough of the question's words
    (a third of them, at least one, at most two required), close in meaning to it and to the
    best sentence.

    A relative cut (near the best sentence) keeps background that only mentions the topic out:
    that padding is what separates a focused context from a diluted one. A question with
    several parts ("when ... and where ...") needs a sentence per part, which the cut alone
    misses when the sentences use other words than the question ("how long do I have to
    return it?" / "Refunds are accepted within 30 days").
    """
    sentences = list(dict.fromkeys(s for c in contexts for s in split_sentences(c)))
    query = strip_prefix(question)
    if not sentences or query not in vectors:
        return []
    similarities = [float(vectors[query] @ vectors[s]) if s in vectors else 0.0 for s in sentences]
    best = max(similarities)
    asked = stems(query)
    must_share = min(2, max(1, math.ceil(len(asked) / 3)))
    parts = asked_parts(query)
    if len(parts) == 1:  # the part is the question, whose vector is there
        parts = [Part(parts[0].word, parts[0].kind, query)]
    answering = {
        _part_answer(part, query, sentences, asked, vectors, part_min=part_min) for part in parts
    }
    needed = []
    for sentence, similarity in zip(sentences, similarities, strict=True):
        shared = len(stems(sentence) & asked)
        close = similarity >= EXTRACT_MIN_SIMILARITY and similarity >= best - margin
        if sentence in answering or (close and shared >= must_share):
            needed.append(sentence)
    return needed


# -- answer relevance, when the question is known (GPT Score and GPT Ranking) ---------------------


@dataclass
class PartsAnswered:
    """How an answer meets a question's parts: the parts, those some sentence supplies, whether
    it evades (a sentence says the information is absent), and its sentences off the topic."""

    parts: list[Part]
    supplied: list[Part]
    evasive: int
    sentences: int
    off_topic: int

    @property
    def coverage(self) -> float:
        return len(self.supplied) / len(self.parts) if self.parts else 1.0

    @property
    def focus(self) -> float:
        """(1 + on-topic sentences) / (1 + sentences): one unrelated sentence beside one on the
        topic costs a third, less than an omitted part of two costs (a half)."""
        return (1 + self.sentences - self.off_topic) / (1 + self.sentences)

    def explain(self) -> str:
        missing = [part.word for part in self.parts if part not in self.supplied]
        text = f"{len(self.supplied)} of {len(self.parts)} parts of the question answered"
        if missing:
            text += " (not answered: " + ", ".join(f"'{word}'" for word in missing) + ")"
        if self.evasive:
            text += f"; {self.evasive} sentence(s) say the information is absent"
        if self.off_topic:
            text += f"; {self.off_topic} of {self.sentences} sentences off the question's topic"
        return text + "."


def _close(query: str, sentence: str, vectors: Vectors | None) -> bool:
    if vectors is None or query not in vectors or sentence not in vectors:
        return False
    return float(vectors[query] @ vectors[sentence]) >= EXTRACT_MIN_SIMILARITY


def parts_answered(question: str, answer: str, vectors: Vectors | None = None) -> PartsAnswered:
    """Which parts of the question the answer supplies (`questions.supplies` with stems):
    each part needs a sentence on the question's topic that holds the part's kind of item (a
    date for "when", a number for "how many", a name for "who", a place for "where"), or, for
    a "what"/"how"/"why" part, one of the part's own words. A sentence saying the information
    is absent supplies nothing; a sentence sharing no word with the question, not referring
    back to its subject and (with `vectors` of the question and the sentences) not within the
    context-relevance cut of the question in meaning is off the topic ("money back" and
    "refund" share no word)."""
    query = strip_prefix(question)
    parts = asked_parts(query)
    asked = stems(query)
    sentences = answer_sentences(strip_prefix(answer))
    evasive = [sentence for sentence in sentences if is_evasive(sentence)]
    useful = [sentence for sentence in sentences if sentence not in evasive]
    on_topic = [
        s for s in useful if stems(s) & asked or _refers_back(s) or _close(query, s, vectors)
    ]
    others = [stems(part.text) - names(part.text) for part in parts]
    supplied = []
    for number, part in enumerate(parts):
        own = others[number] - set().union(*(o for i, o in enumerate(others) if i != number))
        for sentence in on_topic:
            kinds = supplied_kinds(sentence)
            if part.kind == "content":
                fits = not own or bool(stems(sentence) & own)
            else:
                fits = part.kind in kinds or (part.kind == "place" and "name" in kinds)
            if fits:
                supplied.append(part)
                break
    off_topic = len(useful) - len(on_topic)
    return PartsAnswered(parts, supplied, len(evasive), len(sentences), off_topic)


# -- an answer's sentences ---------------------------------------------------------------------


PRONOUN_POSSESSIVES = {
    "it": "",
    "this": "",
    "they": "",
    "he": "",
    "she": "",
    "its": "'s",
    "their": "'s",
}
_INITIAL = re.compile(r"(?:^|\s)[A-Z]\.$")


def answer_sentences(text: str) -> list[str]:
    """The answer's sentences, also where two were glued without a space, and never cut after
    an initial ("J. Robert Oppenheimer" is one name, not the end of a sentence)."""
    found: list[str] = []
    for raw in sentences_of(text):
        part = raw.strip().strip("'\"’ ")
        if found and _INITIAL.search(found[-1]):
            found[-1] = f"{found[-1]} {part}"
        elif part and content_words(part):
            found.append(part)
    return found
