"""What a question asks for, what an answer supplies, and what a well-formed question looks like.

Rules of English, not of a data set:

- a question is made of *parts*, one per question word ("When was X founded and where is it
  based?" has two), and each question word expects a kind of answer: a date or a duration for
  "when", a number for "how many"/"how much", a name (a person or an organisation) for "who",
  a place for "where"; "what", "which", "why" and "how" expect content about their own words;
- an answer sentence *supplies* a part when it is about the question's topic (it shares the
  question's words or refers back to its subject with a pronoun) and holds an item of the
  expected kind (`supplied_kinds`; the checks with stems are in `evidence.py`);
- a generated question must read as a question: it starts with a question word or an auxiliary,
  has a verb, ends with "?", and carries no first-person fragment of the answer ("I", "my");
- two questions are alike when they are about the same thing *and* ask for the same kinds of
  item: a question's *form* (`question_form`) counts what its parts ask for, and the local
  judge's vectors carry it beside the model's (`with_question_form`).

No tagger: capitalisation, digits and small word lists stand in for parts of speech, so the rules
are rough on unusual sentences and English only (see docs/local-judge.md, "Limits").
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import numpy.typing as npt

from ragas_ops.text import MEMO_CHARS, STOPWORDS

WH_WORDS = frozenset({"what", "when", "where", "who", "whom", "whose", "which", "why", "how"})
AUXILIARIES = frozenset(
    {"is", "are", "was", "were", "will", "would", "can", "could", "has", "have", "had", "does"}
    | {"did", "do", "may", "might", "shall", "should", "must"}
)
MONTH_NAMES = frozenset(
    "january february march april may june july august september october november "  # noqa: SIM905
    "december".split()
)
MONTHS = MONTH_NAMES | frozenset("jan feb mar apr jun jul aug sep sept oct nov dec".split())  # noqa: SIM905
WEEKDAYS = frozenset("monday tuesday wednesday thursday friday saturday sunday".split())  # noqa: SIM905
TIME_UNITS = frozenset(
    "second seconds minute minutes hour hours day days week weeks month months year years "  # noqa: SIM905
    "decade decades century centuries".split()
)
CURRENCIES = frozenset(
    "euro euros dollar dollars pound pounds yen yuan rupee rupees franc francs cent cents "  # noqa: SIM905
    "usd eur gbp $ € £".split()
)
NUMBER_WORDS = frozenset(
    "one two three four five six seven eight nine ten eleven twelve twenty thirty forty fifty "  # noqa: SIM905
    "sixty seventy eighty ninety hundred thousand million billion dozen".split()
)
PLACE_PREPOSITIONS = frozenset(
    {"in", "at", "from", "near", "based", "located", "headquartered"}
    | {"through", "across", "along", "throughout"}  # "flows through Egypt": where
)
FIRST_PERSON = frozenset({"i", "i'm", "im", "me", "my", "mine", "we", "our", "i've", "i'd", "i'll"})

_TOKEN = re.compile(r"[$€£]|\d+(?:[.,:]\d+)*(?:st|nd|rd|th|s)?|[\w'’]+(?:[-/][\w'’]+)*")
_YEAR = re.compile(r"(?:1[0-9]|20)\d\d(?:s)?")
_CLOCK = re.compile(r"\d{1,2}[:.]\d\d|\d{1,2}(?:st|nd|rd|th)")
_DIGITS = re.compile(r"\d+(?:[.,:]\d+)*")
# A second part of a question starts at a question word after "and", a comma or a semicolon.
_PART_SPLIT = re.compile(
    r"\s*(?:,\s*(?:and\s+)?|;\s*|\s+and\s+)"
    r"(?=(?:what|when|where|who|whom|whose|which|why|how|by whom|is it true that|is there any)\b)",
    re.IGNORECASE,
)
# Question words joined before one clause ("When and where was it held?", "When and by whom
# was it founded?"): each asks that clause (v18).
_COORDINATED = re.compile(
    r"(?:^|(?<=, )|(?<= and ))"
    r"(?P<words>(?:(?:when|where|who|why|how|by whom)(?:\s*,\s*|\s+and\s+))+"
    r"(?:when|where|who|why|how|by whom))\s+(?P<clause>[^,;?]+)",
    re.IGNORECASE,
)
_COORDINATION = re.compile(r"\s*,\s*|\s+and\s+", re.IGNORECASE)


def distributed(text: str) -> str:
    """ "When and where was it held?" as "When was it held, and where was it held?": question
    words joined before one clause each ask that clause, so each is a part of its own."""

    def each(found: re.Match[str]) -> str:
        clause = found.group("clause").strip()
        words = _COORDINATION.split(found.group("words"))
        return ", and ".join(
            f"{word if n == 0 else word.casefold()} {clause}" for n, word in enumerate(words)
        )

    return _COORDINATED.sub(each, text.strip())


# Where one question of a text ends and the next begins ("When? Where?").
_QUESTION_END = re.compile(r"(?<=\?)\s+")
# Question words that need an auxiliary (or a "how" adjective) right after them.
_ADVERBIAL_WH = frozenset({"when", "where", "why"})
_HOW_WORDS = frozenset(
    "many much long old tall far big large often high deep wide soon fast does did do is are "  # noqa: SIM905
    "was were will can could has have had should would may might must".split()
)
_DANGLING = frozenset(
    {"the", "a", "an", "and", "or", "but", "of", "its", "their", "his", "her", "than", "more"}
)


def tokens(text: str) -> list[str]:
    """Word, number and currency-sign tokens, punctuation dropped."""
    return _TOKEN.findall(text)


# -- the form of a question ------------------------------------------------------------------


def question_problems(text: str) -> list[str]:
    """Why `text` is not a well-formed question (empty when it is one).

    A joined question ("When did X open, and how tall is it?") is checked part by part."""
    stripped = text.strip()
    if not stripped.endswith("?"):
        return ["it does not end with '?'"]
    body = stripped[:-1]
    if "?" in body:  # several questions in a row: each one on its own
        questions = _QUESTION_END.split(stripped)
        if len(questions) == 1:
            return ["a question mark inside a word"]
        return [p for part in questions for p in question_problems(part)]
    body = distributed(body)
    problems: list[str] = []
    for part in _PART_SPLIT.split(body):
        problems.extend(_part_problems(part))
    return problems


def is_question(text: str) -> bool:
    """Whether `text` reads as a grammatical question (see `question_problems`)."""
    return not question_problems(text)


def _part_problems(part: str) -> list[str]:
    found = [t.casefold() for t in tokens(part)]
    if len(found) < 2:
        return [f"{part!r} is too short to ask anything"]
    return [
        *_opening_problems(part, found),
        *_phrase_problems(part, found),
        *_missing_main_verb(found),
    ]


def _opening_problems(part: str, found: Sequence[str]) -> list[str]:
    """A question word (or an auxiliary) first, and what English requires right after it."""
    problems = []
    first = found[1] if found[0] in _PREPOSITIONS else found[0]
    rest = found[found.index(first) + 1 :]
    if first not in WH_WORDS and first not in AUXILIARIES and first != "and":
        problems.append(f"{part!r} starts with neither a question word nor an auxiliary")
    if not rest:
        problems.append(f"{part!r} asks nothing after its question word")
    elif first in _ADVERBIAL_WH and rest[0] not in AUXILIARIES:
        problems.append(f"{part!r}: {first!r} is not followed by an auxiliary")
    elif first == "how" and rest[0] not in _HOW_WORDS and not rest[0].endswith("ly"):
        problems.append(f"{part!r}: 'how' is followed by neither an auxiliary nor an adjective")
    elif first == "how" and rest[0] == "many" and (len(rest) < 2 or not _counts(rest[1])):
        problems.append(f"{part!r}: 'how many' is not followed by what is counted")
    if len(found) > 2 and found[1] in {"do", "does", "did"} and found[2] in AUXILIARIES:
        problems.append(f"{part!r}: 'do' before another auxiliary")
    if any(
        a in {"do", "does", "did"} and len(b) > 4 and b.endswith("ed")
        for a, b in itertools.pairwise(found)
    ):  # "When did founded on ...?", "What does regarded as ...?": a participle is no subject
        problems.append(f"{part!r}: 'do' before a participle")
    return problems


def _counts(word: str) -> bool:
    """Whether "how many <word>" counts something: a noun of letters, not an auxiliary or a
    fragment of a number ("How many th ...?" from "19th")."""
    return word.isalpha() and len(word) > 2 and word not in AUXILIARIES


def _phrase_problems(part: str, found: Sequence[str]) -> list[str]:
    """A verb, a complete last phrase, and nothing left over from the answer's wording."""
    problems = []
    if not _has_verb(found):
        problems.append(f"{part!r} has no verb")
    if found[-1] in _DANGLING or (found[-1] in AUXILIARIES - {"have", "do"} and len(found) > 2):
        problems.append(f"{part!r} ends in the middle of a phrase ({found[-1]!r})")
    if any(a == b and a not in {"that", "had"} for a, b in itertools.pairwise(found)):
        problems.append(f"{part!r} repeats a word")
    if set(found) & FIRST_PERSON:
        problems.append(f"{part!r} carries a first-person fragment of the answer")
    if set(found) & _FILLERS:
        problems.append(f"{part!r} carries a filler of the answer")
    if any(t in WH_WORDS for t in found[2:]) and "and" not in found:
        problems.append(f"{part!r} has a second question word inside it")
    return problems


def _missing_main_verb(found: Sequence[str]) -> list[str]:
    """After "does"/"did"/a modal, a subject and then a verb: "What does it create?", not
    "What must you?" or "What does some species?"; after "What is X", no bare participle
    ("What is it developed?" lacks its preposition, "Who was it written?" its "by")."""
    aux = next((i for i, t in enumerate(found[:3]) if t in _NEEDS_VERB), None)
    if aux is not None:
        after = found[aux + 1 :]
        if (
            len(after) < 2
            or (len(after) == 2 and after[0] in _DETERMINERS)
            or after[0] in _PREPOSITIONS  # "What does within 30 day?" has no subject
        ):
            return [f"{' '.join(found)!r}: {found[aux]!r} has no main verb after its subject"]
    if (
        found[0] in {"what", "who"}
        and len(found) > 2
        and found[1] in {"is", "are", "was", "were"}
        and (found[-1].endswith("ed") or found[-1] in _EN_PARTICIPLES)
        and found[-1] not in {"called", "named", "needed", "required", "involved", "used"}
    ):
        return [f"{' '.join(found)!r} ends in a participle without its preposition"]
    return []


IRREGULAR_PARTICIPLES = frozenset(
    "paid made built sold held told found left led kept sent spent won born run set put cut "  # noqa: SIM905
    "brought bought thought caught taught understood done known shown drawn grown thrown worn "
    "torn sworn begun sung hung struck shot lost meant met said heard laid lit fed fought "
    "written given taken driven chosen spoken broken stolen eaten forgotten hidden beaten seen "
    "fallen risen ridden proven frozen shaken mistaken forbidden bitten forgiven blown flown "
    "overtaken undertaken rewritten woken".split()
)
"""Past participles not in "-ed" ("is paid", "was built", "was written"): a closed class, so
"-en" alone makes no participle ("open", "often", "children" are none)."""
_EN_PARTICIPLES = frozenset(
    "written given taken driven chosen spoken broken shown drawn grown thrown stolen eaten "  # noqa: SIM905
    "forgotten hidden beaten begun done seen made built sold won led held".split()
)
_PREPOSITIONS = frozenset(
    "within between in on at by for of to from into with without during until since".split()  # noqa: SIM905
)
_NEEDS_VERB = frozenset(
    "does did do will would can could may might shall should must".split()  # noqa: SIM905
)
_DETERMINERS = frozenset({"the", "a", "an", "some", "any", "this", "that", "these", "those"})
_FILLERS = frozenset({"yes", "yeah", "yep", "well", "wow", "oh", "ok", "okay", "lol", "um"})


def _has_verb(found: Sequence[str]) -> bool:
    """An auxiliary, or (a subject question: "Who directed X?") a finite-looking verb."""
    if set(found) & AUXILIARIES:
        return True
    return any(
        (
            token.endswith(("ed", "es"))
            or (token.endswith("s") and not token.endswith("ss"))
            or token in IRREGULAR_PARTICIPLES  # "Who won the cup?", "Who led it?"
        )
        and token not in STOPWORDS
        and not token[:1].isdigit()
        for token in found[1:3]
    )


# -- what a question asks for ----------------------------------------------------------------


@dataclass(frozen=True)
class Part:
    """One part of a question: its question word, the kind of answer it expects, its words."""

    word: str
    kind: str
    text: str


# "how <word>": the kind of answer each expects
_HOW = {"long": "duration"} | dict.fromkeys(
    ("many", "much", "old", "tall", "far", "big", "large", "high"), "number"
)
_BY_WORD = {"when": "date", "who": "name", "whom": "name", "whose": "name", "where": "place"}


def expected_kind(part: str) -> tuple[str, str]:
    """(question word, expected kind) of one part: date, duration, number, name, place or
    content (anything about the part's own words)."""
    found = [t.casefold() for t in tokens(part)]
    index = next((i for i, t in enumerate(found) if t in WH_WORDS), None)
    if index is None:  # "Is X based in Y?" expects content too (a yes/no answer restates it)
        return (found[0] if found else ""), "content"
    word = found[index]
    after = found[index + 1] if index + 1 < len(found) else ""
    if word == "how" and after in _HOW:
        return f"how {after}", _HOW[after]
    if word in {"what", "which"}:
        typed = _TYPE_NOUNS.get(after) or _TYPE_NOUNS.get(_predicate_head(found[index + 1 :]))
        if typed:
            return word, typed
    return word, _BY_WORD.get(word, "content")


# The noun a "what"/"which" part asks for names its answer's kind ("what year", "which city",
# "what is its headquarters location"): the answer-type classes of question answering.
_TYPE_NOUNS = (
    dict.fromkeys("year date day month time decade century birthday".split(), "date")  # noqa: SIM905
    | dict.fromkeys(
        "location place city country town region address headquarters".split(),  # noqa: SIM905
        "place",
    )
    | dict.fromkeys(
        "number amount percentage percent population price cost size height length "  # noqa: SIM905
        "weight distance age".split(),
        "number",
    )
    | dict.fromkeys("duration period".split(), "duration")  # noqa: SIM905
)


def _predicate_head(rest: Sequence[str]) -> str:
    """The noun "what is <phrase>" names: the phrase's last word, or the word before "of" ("its
    headquarters location", "the population of X"); nothing when another verb follows."""
    if len(rest) < 2 or rest[0] not in {"is", "are", "was", "were"}:
        return ""
    phrase = list(rest[1:])
    if "of" in phrase:  # "the population of Paris" names a population
        phrase = phrase[: phrase.index("of")]
    return phrase[-1] if phrase and len(phrase) <= 4 else ""


def asked_parts(question: str) -> list[Part]:
    """The parts of a question, each with the kind of answer it expects."""
    text = distributed(question.strip().rstrip("?").strip())
    parts = [p for p in _PART_SPLIT.split(text) if p.strip()] or [text]
    found = []
    for part in parts:
        word, kind = expected_kind(part)
        found.append(Part(word, kind, part))
    return found


# -- what an answer sentence supplies ---------------------------------------------------------


def supplied_kinds(sentence: str) -> set[str]:
    """The kinds of answer items the sentence holds (see `expected_kind`); kept for the
    sentences seen last (context relevance asks it of every context sentence, for each part)."""
    if len(sentence) <= MEMO_CHARS:
        return set(_supplied_kinds_kept(sentence))
    return set(_supplied_kinds(sentence))


def _supplied_kinds(sentence: str) -> frozenset[str]:
    found = tokens(sentence)
    low = [t.casefold() for t in found]
    kinds: set[str] = set()
    for index, (token, word) in enumerate(zip(found, low, strict=True)):
        before = low[index - 1] if index else ""
        number = bool(_DIGITS.fullmatch(token)) or word in NUMBER_WORDS
        dated = word in MONTHS - {"may"} or word in WEEKDAYS or _CLOCK.fullmatch(token)
        if dated or (_YEAR.fullmatch(token) and before not in CURRENCIES):
            kinds.add("date")
        if number or word in CURRENCIES:
            kinds.add("number")
        if number and set(low[index + 1 : index + 3]) & TIME_UNITS:
            kinds |= {"duration", "date"}  # "within 5 days" answers "when" as well
        if token[:1].isupper() and word not in STOPWORDS and index > 0:
            kinds.add("name")
            if before in PLACE_PREPOSITIONS:
                kinds.add("place")
    if len(found) > 1 and found[0][:1].isupper() and found[1][:1].isupper():
        kinds.add("name")  # "Christopher Nolan directed..." starts with a name
    return frozenset(kinds)


_supplied_kinds_kept = lru_cache(maxsize=1 << 15)(_supplied_kinds)


# -- the form of a question, for comparing questions ----------------------------------------

FORM_KINDS = ("date", "duration", "number", "name", "place", "content", "polar", "absent")
"""What a question's parts can ask for: the kinds of `expected_kind`, "polar" for a yes/no
question, and "absent" for the question an evasion answers ("Is there any information about
X?", "Is the information available?"): whether the information exists, which is no item of any
kind a user asks for, so it shares no form with any question asked."""
# The questions `generator.question_for` and `generated_questions` ask for an evasion.
_ABOUT_AVAILABILITY = re.compile(
    r"^is (?:there any information about\b|the information available\b)", re.IGNORECASE
)
QUESTION_FORM_WEIGHT = 0.15
"""The share of a question's similarity that is its form (what its parts ask for); the rest is
the embedding model's reading (mostly the topic). Chosen on the perturbation suite (BEGIN dev
and the sample logs), not on WikiEval: see docs/local-judge.md."""


WHETHER_IT_HOLDS = "Is it true that"
"""How the local judge asks about an answer sentence whose wh-question its rules cannot word
(`generator.question_for`): the question carries the sentence's content, and its form counts as
unknown, not as a yes/no question (the sentence answers some question the rules cannot tell)."""


def question_parts(text: str) -> list[str]:
    """The parts a text asks, each as its own text: "When was X founded? Where is it?" and
    "When was X founded, and where is it?" both give "When was X founded" and "where is it".
    A text of one part is itself (its own words, "?" included)."""
    questions = [q for q in _QUESTION_END.split(text.strip()) if q]
    parts = [
        part.strip()
        for question in questions
        for part in _PART_SPLIT.split(distributed(question.rstrip("?").strip()))
        if part.strip()
    ]
    # "how does it work" after ", and " is the part "How does it work" (the model is uncased)
    return [part[:1].upper() + part[1:] for part in parts] if len(parts) > 1 else [text]


def question_form(text: str) -> dict[str, int]:
    """How many parts of the question(s) in `text` ask for each kind (`FORM_KINDS`): "When was
    X founded? Where is it based?" asks for a date and a place. Empty when `text` asks nothing."""
    form: dict[str, int] = {}
    for question in _QUESTION_END.split(text.strip()):
        if not question.endswith("?"):
            continue
        if _ABOUT_AVAILABILITY.match(question):
            form["absent"] = form.get("absent", 0) + 1
            continue
        for part in asked_parts(question):
            if part.text.casefold().startswith(WHETHER_IT_HOLDS.casefold()):
                kind = "content"  # the generator's stand-in for a "what" it could not word
            else:
                kind = "polar" if part.word not in WH_WORDS else part.kind
            form[kind] = form.get(kind, 0) + 1
    return form


def form_similarity(left: str, right: str) -> float | None:
    """The cosine of two questions' forms (`question_form` as count vectors); None when one of
    the texts asks nothing (then only the embedding compares them)."""
    one, two = question_form(left), question_form(right)
    if not one or not two:
        return None
    dot = sum(count * two.get(kind, 0) for kind, count in one.items())
    norms = math.sqrt(sum(c * c for c in one.values()) * sum(c * c for c in two.values()))
    return dot / norms


def with_question_form(
    text: str, vector: npt.NDArray[np.float32], weight: float = QUESTION_FORM_WEIGHT
) -> npt.NDArray[np.float32]:
    """The vector of `text` for comparing questions: the model's unit vector scaled by
    sqrt(1 - weight), followed by the unit form vector scaled by sqrt(weight). The cosine of
    two questions is then (1 - weight) x the model's cosine + weight x their forms' cosine, so
    "When did X open?" and "Where is X?" differ by what they ask although the model reads
    one topic. Text that asks nothing gets a zero form (its vector keeps unit length)."""
    form = question_form(text)
    counts = np.array([form.get(kind, 0) for kind in FORM_KINDS], dtype=np.float32)
    norm = float(np.linalg.norm(counts))
    if norm == 0.0:
        return np.concatenate([vector, counts]).astype(np.float32)
    scaled = np.asarray(vector, dtype=np.float32) * np.float32(math.sqrt(1.0 - weight))
    return np.concatenate([scaled, counts / norm * np.float32(math.sqrt(weight))]).astype(
        np.float32
    )


def question_similarity(
    left: str, right: str, model_cosine: float, weight: float = QUESTION_FORM_WEIGHT
) -> float:
    """What the cosine of the two `with_question_form` vectors is, from the model's cosine."""
    form = form_similarity(left, right)
    if form is None:
        one, two = question_form(left), question_form(right)
        return model_cosine * (math.sqrt(1.0 - weight) if one or two else 1.0)
    return (1.0 - weight) * model_cosine + weight * form
