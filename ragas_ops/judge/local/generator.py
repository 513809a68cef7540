"""The questions an answer answers: the local judge's side of the answer-relevance prompt.

The paper's method: write the questions the answer answers, and compare them with the question
asked. A question is its answer with the answer taken out: "PharmaCann was founded in 2014"
answers "When was PharmaCann founded?". So each answer sentence becomes a question by dropping
the part that carries the new information (a date, a number, a place, a name that is not
what the answer is about, the complement of "X is Y", the object of the verb) and asking for
it with the question word of its kind. What stays is what the sentence is about: an answer
sentence that answers a part of the question leaves that part, and a sentence that wanders
(the company's history when its location was asked) leaves a question about something else.

The questions the metric averages are *complete* ones, as the prompt asks ("a direct and
complete answer"): each joins the questions of the answer's main sentences, as an LLM writes
"When was X founded and where is it based?". A complete answer to a two-part question then
yields a two-part question close to the one asked, while an answer that covers one part, or
adds unrelated sentences, yields a question with a part missing or a part the user never
asked. Since v13 every one of the n questions covers all of the answer's leading points, as
an LLM's question covers the whole answer: they differ in phrasing (the points in turn,
joined into one sentence, in the other order; an answer with one point has one question,
which an LLM would paraphrase), never in coverage. A part the answer omits is missing from
every question and an unrelated addition is in every question (v12's narrower scopes, the
first two points and the first alone, kept padding out of two questions in three and let
one question in three ignore what the answer lacks: `whole=False`).

The words and sentences these rules read come from `evidence` (stems, an answer's sentences,
evasions) and `questions` (what a question asks for, and whether a text is one).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from ragas_ops.judge.local.evidence import (
    FIRST_PERSON_TOKENS,
    NUMBER_TOKEN,
    NUMBER_WORD_VALUES,
    PRONOUN_POSSESSIVES,
    REACTION,
    answer_sentences,
    is_evasive,
    says_absent,
    stems,
    strip_prefix,
)
from ragas_ops.judge.local.questions import (
    AUXILIARIES,
    CURRENCIES,
    IRREGULAR_PARTICIPLES,
    MONTH_NAMES,
    MONTHS,
    TIME_UNITS,
    WHETHER_IT_HOLDS,
    is_question,
)
from ragas_ops.text import STOPWORDS, content_words, words

QUESTION_SENTENCES = 3
"""The answer's first sentences that the complete question joins (an answer puts its points
first; an LLM's question does not list every detail of a long answer)."""


def _word_set(text: str) -> frozenset[str]:
    return frozenset(text.split())


_DATE_WORDS = MONTH_NAMES | _word_set(
    "monday tuesday wednesday thursday friday saturday sunday century centuries decade decades "
    "bc ad bce ce am pm utc gmt ist est pst cet"
)


_YEAR_OR_TIME = re.compile(r"(?:1[0-9]|20)\d\ds?|\d{1,2}[:.]\d\d|\d{1,2}(?:st|nd|rd|th)", re.I)


_MAGNITUDES = _word_set("hundred hundreds thousand thousands million millions billion billions")


_TOKEN = re.compile(r"\d+(?:[.,:]\d+)*(?:-[\w]+)?|[\w'’]+(?:[-/][\w'’]+)*")


_COPULAS = frozenset({"is", "are", "was", "were"})


# Verbs that define their subject as a copula does: "X refers to Y" answers "What is X?".
_DEFINING = frozenset({"refers", "referred", "means", "meant", "denotes"})


_PLACE_PREPOSITIONS = frozenset(
    {"in", "at", "from", "near", "through", "across", "along", "throughout"}
)


_TIME_PREPOSITIONS = frozenset({"on", "in", "at", "since", "until", "during", "before", "after"})


_PARTICLES = frozenset({"to", "be", "been", "being", "not", "also", "as", "up", "out"})


def _is_name(token: str) -> bool:
    return token[:1].isupper() and token.casefold() not in STOPWORDS


def _starts_with_name(tokens: Sequence[str]) -> bool:
    """Every sentence starts with a capital, so its first word is a name only when it looks
    like one anyway ("PharmaCann", "PSLV-C56") or starts a run of them ("Christopher Nolan");
    "Additionally," and "Estimating" are not names."""
    first = tokens[0]
    return _is_name(first) and (
        any(ch.isupper() or ch.isdigit() for ch in first[1:])
        or (len(tokens) > 1 and _is_name(tokens[1]))
    )


def _name_spans(tokens: Sequence[str]) -> list[tuple[int, int]]:
    """Runs of capitalised tokens ("Satish Dhawan Space Centre", "Bank of England")."""
    spans: list[tuple[int, int]] = []
    start = 0 if tokens and _starts_with_name(tokens) else 1
    while start < len(tokens):
        if not _is_name(tokens[start]):
            start += 1
            continue
        end = start + 1
        while end < len(tokens) and (
            _is_name(tokens[end])
            or (tokens[end] == "of" and end + 1 < len(tokens) and _is_name(tokens[end + 1]))
        ):
            end += 1
        spans.append((start, end))
        start = end
    return spans


def answer_topic(sentences: Sequence[str]) -> str:
    """What the answer is about: a name it repeats in several sentences (an answer keeps naming
    its subject while each new fact brings a new name once), else the subject of its first
    sentence (an answer starts from what was asked about), else its first name."""
    sentences = [
        s for s in sentences if not set(words(_SPEAKER_FRAME.sub("", s))) & FIRST_PERSON_TOKENS
    ] or sentences
    spans: list[str] = []
    counts: Counter[str] = Counter()
    for sentence in sentences:
        tokens = _TOKEN.findall(sentence)
        found = [" ".join(tokens[a:b]) for a, b in _name_spans(tokens)]
        spans.extend(found)
        counts.update({word for span in found for word in stems(span)})
    repeated = [span for span in spans if any(counts[w] > 1 for w in stems(span))]
    if repeated:
        return max(repeated, key=lambda span: max(counts[w] for w in stems(span)))
    first = _TOKEN.findall(_unframed(_FILLER.sub("", sentences[0]))) if sentences else []
    if first and first[0].casefold() in _SUBJECT_PRONOUNS:
        return ""  # "He lives in X": the question asks about "he", not about X
    verb = _verb_index(first)
    if verb is not None and verb <= 8 and content_words(" ".join(first[:verb])):
        subject = first[:verb]
        if subject[0].casefold() in STOPWORDS:  # "the earthquake", inside a question
            subject = [subject[0].casefold(), *subject[1:]]
        return " ".join(subject)
    return spans[0] if spans else topic_of(" ".join(sentences))


# A fronted phrase ("However,", "By integrating X and Y,") and an alias ("X, also known as Y,")
# frame a sentence without being what it states.
_FRONTED = re.compile(r"^([A-Z][a-z]*)(?:\s+[\w'-]+){0,6}?,\s+(?=[a-z])")


_FRONTING_WORDS = _word_set(
    "however moreover furthermore additionally also yes no indeed instead thus therefore overall "
    "by in on at with for after before during according as since unlike like under following "
    "despite within among through"
)


_ALIAS = re.compile(
    r",\s*(?:(?:also|often|commonly|usually)\s+)?(?:known|called|referred to|abbreviated)\s+as"
    r"\s+[^,]+,",
    re.I,
)


def _unframed(sentence: str) -> str:
    sentence = _without_fronted_participle(_ALIAS.sub("", sentence))
    fronted = _FRONTED.match(sentence)
    if fronted:
        first = fronted.group(1).casefold()
        single = " " not in fronted.group(0).strip()  # "Originally, ..." (one word, a comma)
        if first in _FRONTING_WORDS or (first.endswith("ly") and single):
            return sentence[fronted.end() :]
    return sentence


_DETERMINERS = _word_set("the a an this these those its his her their")


_PARTICIPLE_OPENERS = _word_set("born raised known built made written given named situated")


def _without_fronted_participle(sentence: str) -> str:
    """A participial phrase before the subject frames the sentence as a fronted adverbial does
    ("Born in Aberdeen, Washington, Cobain formed Nirvana" states that Cobain formed Nirvana):
    the sentence from the last of its first commas after which a name or a pronoun is the
    subject of a verb."""
    first = sentence.split(maxsplit=1)[0] if sentence.strip() else ""
    low = first.casefold()
    if not first[:1].isupper() or not (low.endswith("ed") or low in _PARTICIPLE_OPENERS):
        return sentence
    pieces = sentence.split(", ")
    for index in range(min(len(pieces) - 1, 3), 0, -1):
        rest = ", ".join(pieces[index:])
        tokens = _TOKEN.findall(rest)
        verb = _verb_index(tokens)
        subject = bool(tokens) and (
            tokens[0][:1].isupper() or tokens[0].casefold() in _SUBJECT_PRONOUNS | _DETERMINERS
        )
        if verb is not None and 1 <= verb <= 4 and subject:
            return rest
    return sentence


def _is_date(token: str) -> bool:
    return token.casefold() in _DATE_WORDS or bool(_YEAR_OR_TIME.fullmatch(token))


def _is_number(token: str) -> bool:
    low = token.casefold()
    return bool(NUMBER_TOKEN.match(token)) or low in NUMBER_WORD_VALUES or low in _MAGNITUDES


def _verb_index(tokens: Sequence[str]) -> int | None:
    """Where the subject ends: the first auxiliary, or the first lower-case word that looks
    like a finite verb (-s, -ed) after a word that is not a determiner. No tagger: wrong on
    some sentences, but the question only needs its words roughly in place.

    A participle with its preposition before a later verb modifies the subject (a reduced
    relative clause: "the distribution based on temperature shows two modes"): the later verb
    is the sentence's, unless "and" or a comma joins it (then both are verbs: "it opened in
    2004 and grossed $1 billion")."""
    first = _first_verb(tokens, 0)
    if first is None or not tokens[first].casefold().endswith("ed"):
        return first
    if first + 1 < len(tokens) and tokens[first + 1].casefold() in _PREPOSITION_WORDS:
        later = _first_verb(tokens, first + 2)
        if later is not None and tokens[later - 1].casefold() not in {"and", "or", ","}:
            return later
    return first


_PREPOSITION_WORDS = frozenset("in on at by as from for with into of".split())  # noqa: SIM905


def _first_verb(tokens: Sequence[str], start: int) -> int | None:
    """The first token from `start` on (within the first 14) that looks like a verb."""
    for index, token in enumerate(tokens[:14]):
        if index < start:
            continue
        low = token.casefold()
        if index and (low in AUXILIARIES or low in _DEFINING):
            return index
        if index == 1 and tokens[0].casefold() in _PLURAL_PRONOUNS and low not in STOPWORDS:
            return index  # "you love the Beatles", "they play in Boston": a base-form verb
        if (
            index
            and token[:1].islower()
            and (low.endswith("s") or low.endswith("ed") or low in _IRREGULAR_PAST)
            and not low.endswith("ss")
            and low not in STOPWORDS
            and tokens[index - 1].casefold() not in {"the", "a", "an", "of", "its", "their"}
            and not _is_number(tokens[index - 1])  # "30 days", "600 milligrams"
            and low not in TIME_UNITS
            and not tokens[index - 1].endswith(("'s", "’s"))
            and not (index + 1 < len(tokens) and tokens[index + 1].casefold() in AUXILIARIES)
        ):
            return index
    return None


def _verb_group_end(tokens: Sequence[str], verb: int) -> int:
    """After the verb: auxiliaries, participles, adverbs and particles ("will be launched",
    "is expected to enhance"). A participle continues the group only after an auxiliary or a
    form of "be" ("has been launched", "was first domesticated"): after any other verb a word
    in "-ed" or "-en" starts its object ("includes unlimited calls", "saw increased demand")."""
    end = verb + 1
    after_auxiliary = tokens[verb].casefold() in AUXILIARIES
    while end < len(tokens):
        low = tokens[end].casefold()
        if not tokens[end][:1].islower():
            break
        if low in AUXILIARIES or low in _BE_FORMS:
            after_auxiliary = True
        elif (low in _PARTICLES and low != "as") or low in _VERB_ADVERBS or low.endswith("ly"):
            pass  # "not", "also", "first", "rapidly" sit anywhere in the group; "as" starts
            # the complement ("described as a masterpiece": "What was it described as?")
        elif _is_participle(low) and after_auxiliary:
            after_auxiliary = False
        else:
            break
        end += 1
    return end


_BE_FORMS = frozenset({"be", "been", "being"})


def _is_participle(word: str) -> bool:
    """Whether a lower-case word can be a past participle ("opened", "written", "paid")."""
    return word.endswith("ed") or word in IRREGULAR_PARTICIPLES


# Adverbs that sit inside a verb group without "-ly" ("was first domesticated", "has never
# been"): the participle after them still makes the group passive.
_VERB_ADVERBS = frozenset(
    "first once still never always often later originally recently already soon then".split()  # noqa: SIM905
)


# What a sentence states in its main clause, without what elaborates on it (v18):
# - a colon introduces an elaboration or a list of what the clause before it says ("Six teams
#   took part: Fiji, Samoa, ...");
# - a description set off by commas between the subject and its verb ("The lead role of Ines,
#   a marine biologist who returns home, is played by X") describes the subject;
# - a participial clause after a comma at the end (a free modifier: "It won the cup, beating
#   the hosts 4-2") adds a circumstance;
# - a description of the last noun after a comma at the end ("... won the Prize for the
#   Library, a five-storey timber building that ...") describes it; a list ("rooms, a kitchen
#   and a garden") is no description;
# - a time phrase before the subject sets the scene ("In 2023 she won the prize").
_COLON = re.compile(r"\s*:\s+.*$")
_PARENTHETICAL = re.compile(
    r",\s+(?:a|an|the|who|which|whose|whom|one of)\b[^,]*,\s+"
    r"(?=(?:is|are|was|were|has|have|had|will|would|can|could)\b)",
    re.IGNORECASE,
)
_FREE_MODIFIER = re.compile(
    r",\s+(?!(?:during|something|anything|nothing|everything)\b)[a-z]+ing\b.*$"
)
_CLOSING_APPOSITIVE = re.compile(r",\s+(?:a|an)\s+(?![^,]*\b(?:and|or)\b)[^,]*$")
_FRONTED_TIME = re.compile(
    r"^(?:in|on|by|since|during|until)\s+(?:[a-z]+\s+){0,2}(?:1[0-9]|20)\d\d\s+"
    r"(?=(?:he|she|it|they|the|[A-Z])\b)",
    re.IGNORECASE,
)


def main_clause(sentence: str) -> str:
    """The sentence without what elaborates on its main clause (`_COLON`, `_PARENTHETICAL`,
    `_FREE_MODIFIER`, `_CLOSING_APPOSITIVE`, `_FRONTED_TIME`); the sentence itself when
    cutting would leave fewer than three words."""
    clause = _FREE_MODIFIER.sub("", _PARENTHETICAL.sub(" ", _COLON.sub("", sentence)))
    clause = _FRONTED_TIME.sub("", _CLOSING_APPOSITIVE.sub("", clause))
    return clause if len(clause.split()) >= 3 else sentence


def question_for(sentence: str, topic: str, pronoun: str = "") -> str:
    """The question one answer sentence answers: the sentence without its new information,
    asked with the question word of what was taken out (When, Where, Who, How many, How much,
    How long, What). Empty when the sentence answers nothing a user asks: a first-person
    remark ("I'm sorry, I could not find it") is about the speaker, not the topic.

    A sentence saying the information is absent asks whether it is known, which is not what
    the user asked. A sentence without a verb ("Within 30 days.") answers an elliptical
    question: it is asked about "it" by the kind of what it holds ("How long is it?").

    `pronoun` is given for the follow-up parts of a joined question: there the topic is
    referred to by the pronoun the answer uses for it, as a question with two parts does
    ("When was X founded and where is its headquarters?"). Naming the topic again would make
    the question about it twice, and when the topic is the answer to the first part ("Who is
    the director of X? Jane Roe. She founded...") it would put the answer into the question.

    Every question returned passes `questions.is_question`; a sentence whose question would not
    (no tagger: some sentences defeat the word-order rules) asks the yes/no question "Is it
    true that <sentence>?" instead (v14), else "What is <topic>?", else "What is known about
    it?". A question back to the user asks nothing.
    """
    stated = _statement(expanded(_SPLIT_CONTRACTION.sub(r"\1", sentence.strip())))
    subject = topic or pronoun or "it"
    if stated and says_absent(stated):
        # about the topic, never about the speaker's frame ("I'm not sure, that information...")
        absent = f"Is there any information about {subject}?"
        return absent if is_question(absent) else "Is there any information about it?"
    if not stated or is_evasive(stated) or _reacts(stated) or _CITATION.match(stated):
        return ""
    sentence = addressed(stated)
    tokens = _TOKEN.findall(_unframed(main_clause(_FILLER.sub("", sentence))))
    if not tokens:
        return ""
    possessive = PRONOUN_POSSESSIVES.get(tokens[0].casefold())
    if possessive is not None and pronoun:
        tokens[0] = tokens[0].casefold()
    elif possessive is not None and topic:  # "It was launched..." is about the answer's subject
        tokens[0] = f"{topic}{possessive}"
    elif pronoun and _starts_with_topic(tokens, topic):
        tokens = [pronoun, *tokens[len(_TOKEN.findall(topic)) :]]
    verb = _verb_index(tokens)
    if verb is None:
        asked = _elliptical(tokens)
    elif _negated(tokens, verb):
        # a denial supplies no item: its wh-question ("When does the museum not open?") asks
        # for what it excludes, while the yes/no question below carries what it says
        asked = ""
    else:
        kind, kept = _drop_answer(tokens, verb, stems(topic))
        # "Who directed the film" keeps the verb first; any other question puts the auxiliary
        # (or "does"/"did") before the subject
        invert = kind != "person" or tokens[0] in kept
        asked = _ask(kind, kept, verb if invert else None)
    if is_question(asked):
        return asked
    # The sentence says something the rules cannot turn into its wh-question: it still answers
    # the yes/no question that asks whether it holds, which carries what it says (v14; "What is
    # <topic>?", v13's, made any sentence the rules could not read look about the topic).
    for fallback in (_polar(sentence), f"What is {subject}?" if topic else ""):
        if fallback and is_question(fallback):
            return fallback
    return "What is known about it?"


def _polar(sentence: str) -> str:
    """ "Is it true that <sentence>?": the yes/no question every statement answers."""
    statement = addressed(_unframed(sentence)).strip(" ,;:")
    first, _, rest = statement.partition(" ")
    if first[1:] == first[1:].casefold() and first.casefold() in STOPWORDS | {"it's"}:
        first = first.casefold()  # "The bridge" inside the question; names keep their capital
    if not rest or "?" in statement:
        return ""
    return f"{WHETHER_IT_HOLDS} {first} {rest}?"


def _statement(sentence: str) -> str:
    """What the sentence states, without its speaker's frame and its final punctuation; empty
    for a question back to the user ("Do you like it?" supplies nothing), but "Did you know
    (that) X?" states X."""
    unfilled = _FILLER.sub("", sentence)
    asserted = _ASSERTING_QUESTION.sub("", unfilled)
    if asserted.rstrip().endswith("?") and asserted == unfilled:
        return ""
    return _SPEAKER_FRAME.sub("", asserted.rstrip(".!? ")) or sentence.rstrip(".!?")


# "(Source: KB-12.)", "Sources: [1] the handbook": where the answer comes from, not what it says
# about the topic; it asks nothing (faithfulness still checks that the cited source is there).
_CITATION = re.compile(r"^\W*(?:sources?|references?|citations?|cited from)\s*:", re.IGNORECASE)


_ASSERTING_QUESTION = re.compile(
    r"^\W*(?:did|do) you know(?: that)?\b[\s,]*(?=\w)"
    r"(?!(?:who|what|when|where|why|how|which|if|whether)\b)",
    re.IGNORECASE,
)


# "I think (that) X", "I'm pretty sure X": the speaker's stance frames the claim X, which is
# what the sentence answers; a first-person sentence without such a frame is about the speaker.
_SPEAKER_FRAME = re.compile(
    r"^\W*(?:(?:i|we) (?:think|believe|know|heard|read|guess|feel|learned|suppose|remember|"
    r"understand|recall)(?: that)?|i'm (?:pretty |fairly |quite )?sure(?: that)?|"
    r"i'm not sure,? but|as far as i know|i (?:have )?heard that|"
    # reported speech: "some historians believe (that) it...", "experts say that..."
    r"(?:some |many |most )?[a-z]+s (?:believe|say|think|claim|suggest|argue|estimate|expect|"
    r"predict|report|note|show|found|showed|reported|estimated|said|noted)"
    r"(?: that|(?= (?:it|he|she|they|the|this|these)\b)))\b[\s,]*",
    re.IGNORECASE,
)


# Tokenised dialogue text writes "It 's", "do n't": one word each.
_SPLIT_CONTRACTION = re.compile(r"\s+('s|'re|'m|'ve|'d|'ll|n't)\b")


# Words that open a reply without being part of what it states ("Yes, ...", "Well, ..."), and
# the conjunctions that link a sentence to the one before ("But it opened in 2004").
_FILLER = re.compile(
    r"^\W*(?:(?:yes|yeah|yep|no|nope|well|so|oh|ah|wow|ok|okay|sure|indeed|actually|um|hmm|"
    r"but|and|also|plus)\b[\s,.!]*)+",
    re.IGNORECASE,
)


# Contractions, written out so that the word-order rules see the auxiliary and the subject
# ("it's been closed" -> "it has been closed", "doesn't" -> "does not"); "'s" after a pronoun
# is "has" before "been"/"got" (and a person's before a participle), else "is" (after a noun
# it is a possessive, left alone).
_PRONOUN_S = r"\b(it|that|there|here|he|she|what|who|where|this)['’]s"


_CONTRACTIONS = [
    (re.compile(r"\b(can)['’]t\b", re.IGNORECASE), r"\1 not"),
    (re.compile(r"\b(w)on['’]t\b", re.IGNORECASE), r"\1ill not"),
    (re.compile(r"\b(\w+)n['’]t\b", re.IGNORECASE), r"\1 not"),
    (re.compile(_PRONOUN_S + r"(?= (?:been|got)\b)", re.IGNORECASE), r"\1 has"),
    # a person's "'s" before a participle is mostly a perfect ("she's written"), a thing's a
    # passive ("it's located")
    (re.compile(r"\b(he|she|who)['’]s(?= \w+(?:ed|en)\b)", re.IGNORECASE), r"\1 has"),
    (re.compile(_PRONOUN_S + r"\b", re.IGNORECASE), r"\1 is"),
    (re.compile(r"\b(you|we|they)['’]re\b", re.IGNORECASE), r"\1 are"),
    (re.compile(r"\b(i|you|we|they)['’]ve\b", re.IGNORECASE), r"\1 have"),
    (re.compile(r"\b(i|you|we|they|it|he|she)['’]ll\b", re.IGNORECASE), r"\1 will"),
]


def expanded(sentence: str) -> str:
    """The sentence with its contractions written out (`_CONTRACTIONS`)."""
    for pattern, replacement in _CONTRACTIONS:
        sentence = pattern.sub(replacement, sentence)
    return sentence


def _negated(tokens: Sequence[str], verb: int) -> bool:
    """Whether the verb group is negated ("does not open", "has never been")."""
    return any(
        t.casefold() in {"not", "never"} for t in tokens[verb : _verb_group_end(tokens, verb)]
    )


_TO_SECOND_PERSON = {
    "i'm": "you are",
    "i am": "you are",
    "i was": "you were",
    "i've": "you have",
    "i'd": "you would",
    "i'll": "you will",
    "i": "you",
    "me": "you",
    "my": "your",
    "mine": "yours",
    "myself": "yourself",
    "we": "you",
    "us": "you",
    "our": "your",
    "ours": "yours",
}


_FIRST_PERSON_WORDS = re.compile(
    r"\b(?:" + "|".join(sorted(map(re.escape, _TO_SECOND_PERSON), key=len, reverse=True)) + r")\b",
    re.IGNORECASE,
)


def addressed(sentence: str) -> str:
    """The sentence as the question to its speaker puts it: "I love the Beatles" answers "What
    do you love?", so the first person becomes the second (a question carries no "I")."""
    return _FIRST_PERSON_WORDS.sub(
        lambda match: _TO_SECOND_PERSON[match.group().casefold().replace("’", "'")], sentence
    )


def _reacts(sentence: str) -> bool:
    """A reaction to the conversation ("That sounds cool", "Wow, nice", "You must be good"):
    about the exchange, not the topic, so it answers no question about the topic."""
    unfilled = _FILLER.sub("", sentence)
    if not unfilled.strip():
        return True
    return bool(REACTION.match(unfilled)) or unfilled.casefold().startswith(
        ("you must", "you should", "you can't", "you are", "you're")
    )


def _elliptical(tokens: Sequence[str]) -> str:
    """The question a verbless answer answers, asked about "it" by the kind it holds."""
    for index in range(len(tokens)):
        kind = _answer_kind(tokens, index, set())
        if kind and kind != "what":
            return _ask(kind, ["it", "is"], 1)
    return "What is it?"


def _starts_with_topic(tokens: Sequence[str], topic: str) -> bool:
    """Whether the sentence's subject is the topic, all of it ("Acme is...", not "Acme Bank
    is...")."""
    named = [token.casefold() for token in _TOKEN.findall(topic)]
    subject = [token.casefold() for token in tokens[: _verb_index(tokens) or 0]]
    return bool(named) and subject == named


def topic_pronoun(sentences: Sequence[str]) -> str:
    """The pronoun the answer uses for its subject: the first one that starts a sentence
    after the first ("She founded..."), else "it"."""
    for sentence in sentences[1:]:
        first = sentence.split(maxsplit=1)[0].casefold() if sentence.split() else ""
        if first in _SUBJECT_PRONOUNS:
            return first
    return "it"


_SUBJECT_PRONOUNS = frozenset({"it", "he", "she", "they"})


_PLURAL_PRONOUNS = frozenset({"you", "they", "we", "i"})


def _drop_answer(tokens: list[str], verb: int, topic: set[str]) -> tuple[str, list[str]]:
    """(the kind of the information dropped, the tokens left).

    English puts what a sentence is about first and its new information last (the given-new
    order), so the answer is the end of the sentence: from the first date, number, place,
    name or "by <doing>" after the verb, or else the whole complement of the verb. The
    exceptions are a subject that is new (`_new_subject`). An item inside a list ("single
    sign-on, audit logs and 1 TB") is not the answer: the list is, and it answers "What".
    """
    low = [token.casefold() for token in tokens]
    end = _verb_group_end(tokens, verb)
    participle = any(_is_participle(t) for t in low[verb + 1 : end])
    new_subject = _new_subject(tokens, verb, participle, topic)
    if new_subject is not None:
        return new_subject
    if low[verb] in _DEFINING or (low[verb] in _COPULAS and not participle):
        return _copula_answer(tokens, verb, end, topic)
    if (
        participle
        and end + 1 < len(tokens)
        and low[end] == "by"
        and low[end + 1] in _ARTICLES
        and not any(_is_name(t) for t in _noun_phrase(tokens, end + 1))
    ):
        # a passive's agent or cause that is no name ("caused by a fire at X"): "What was it
        # caused by?" (v18; a name after "by" asks "Who ... by?")
        return "strand:by", tokens[:end]
    for index in range(end, len(tokens)):
        kind = _answer_kind(tokens, index, topic)
        if kind:
            kind, kept = _cut_answer(tokens, (verb, end, index), kind, participle)
            return _stranded(_with_later_items(tokens, index, kind, topic), kept, low, end)
    if participle and end < len(tokens) and low[end] in _STRANDED:
        return f"strand:{low[end]}", tokens[:end]  # "used as synonyms": "used as what?"
    return _stranded("what", tokens[:end], low, end)


def _new_subject(
    tokens: list[str], verb: int, participle: bool, topic: set[str]
) -> tuple[str, list[str]] | None:
    """When the subject is the new information, (its kind, the rest of the sentence):
    - a new name before an active verb ("Christopher Nolan directed the film", "Västerås SK
      of Sweden won the cup") answers "Who directed the film?"; a passive's subject is what
      the sentence is about ("Paper Lanterns was released in X": "Where was it released?",
      v18);
    - a count that starts the subject ("Six teams took part in X") answers "How many teams
      took part in X?" (v18).
    """
    subject = tokens[:verb]
    if (
        subject
        and _is_name(subject[0])
        and all(
            _is_name(t) or (t == "of" and 0 < i < len(subject) - 1) for i, t in enumerate(subject)
        )
        and not stems(" ".join(subject)) & topic
        and not participle
    ):
        return "person", tokens[verb:]
    if len(subject) >= 2 and _is_number(subject[0]) and subject[1][:1].islower():
        counted = _counted(tokens, 0)
        if counted.startswith("number:"):
            noun = counted.partition(":")[2]
            low = [token.casefold() for token in subject]
            rest = tokens[low.index(noun, 1) + 1 :] if noun in low[1:] else tokens[verb:]
            return f"subject:{counted}", rest
    return None


# The circumstances a sentence can supply one after another, each answering its own question
# word: "held on 5 May at the Lapland Arena" answers "When and where was it held?".
_CIRCUMSTANCES = {"date": "when", "place": "where", "agent": "by whom"}


def _with_later_items(tokens: Sequence[str], index: int, kind: str, topic: set[str]) -> str:
    """The kind of the answer at `index`, joined with the other circumstances (a date, a place,
    an agent) the sentence supplies after it (v18): all of them are its new information, and
    an LLM asks for each ("When and where was it held?", "When and by whom was it founded?"),
    while the first alone asked about one ("When was it held?")."""
    if kind not in _CIRCUMSTANCES:
        return kind
    kinds = [kind]
    for later in range(index + 1, len(tokens)):
        found = _answer_kind(tokens, later, topic)
        phrase = [t.casefold() for t in tokens[max(index, later - 4) : later]]
        if _is_name(tokens[later]) and _after_by(phrase):
            found = "agent"  # "by Theodore Scott", though "in 2014" comes before it
        if found in _CIRCUMSTANCES and found not in kinds:
            kinds.append(found)
    return kind if len(kinds) == 1 else "circumstances:" + "+".join(kinds)


def _noun_phrase(tokens: Sequence[str], start: int) -> list[str]:
    """The words of the noun phrase at `start`, up to the first word that ends one."""
    phrase = []
    for token in tokens[start : start + 8]:
        if token.casefold() in _NOUN_PHRASE_END:
            break
        phrase.append(token)
    return phrase


def _stranded(kind: str, kept: list[str], low: Sequence[str], end: int) -> tuple[str, list[str]]:
    """A "what" whose answer is a preposition's object right after the verb keeps the
    preposition at the end, as English strands it ("It runs on Windows": "What does it run
    on?", "embarked on his career": "What did he embark on?"; v18, was "What does it run?")."""
    if kind == "what" and len(kept) == end and end < len(low) and low[end] in _STRANDED - {"of"}:
        return f"strand:{low[end]}", kept
    return kind, kept


def _copula_answer(
    tokens: list[str], verb: int, end: int, topic: set[str]
) -> tuple[str, list[str]]:
    """ "X is Y", "X refers to Y": Y answers "What is X?" ("Who is X?" when Y is a person,
    "Where?" when Y is a place: "its epicentre was near Gaziantep", "When?" for a date)."""
    low = [token.casefold() for token in tokens]
    complement = tokens[end : end + 2]
    person = len(complement) == 2 and all(_is_name(t) for t in complement)
    kept = tokens[:end] if low[verb] in _COPULAS else [*tokens[:verb], "is"]
    led = next(
        (
            _answer_kind(tokens, i, topic)
            for i in range(end + 1, end + 3)
            if i < len(tokens) and low[end] in _LEADING_WORDS
        ),
        "",
    )
    if led in {"place", "date"}:
        return led, kept
    measured = _answer_kind(tokens, end, topic) if end < len(tokens) else ""
    if measured in {"date", "much", "long"} or measured.startswith("number"):
        return measured, kept  # "its deck is 2460 metres long": "How many metres is its deck?"
    evaluated = _evaluated_noun(low[end:])
    if evaluated and low[verb] in _COPULAS:
        return f"what:kind of {evaluated}", kept
    return ("person" if person else "what"), kept


# Adjectives that evaluate rather than define ("an important mission", "a leading company"):
# generic praise says what kind of thing the subject is, not what it is.
_EVALUATIVE = _word_set(
    "important significant leading major key notable renowned famous popular prominent "
    "well-known rare unique innovative crucial vital essential remarkable influential "
    "successful great good excellent valuable"
)


_NOUN_PHRASE_END = _word_set(
    "that which who whose for of in on at to with by from and , known based found located"
)


def _evaluated_noun(complement: Sequence[str]) -> str:
    """The noun of "a/an <evaluative adjective> ... <noun>" ("an important space mission for
    India": "mission"), or "" when the complement does not start that way."""
    if len(complement) < 3 or complement[0] not in {"a", "an"}:
        return ""
    if complement[1] not in _EVALUATIVE and complement[1].removesuffix("ly") not in _EVALUATIVE:
        return ""
    phrase = []
    for word in complement[2:8]:
        if word in _NOUN_PHRASE_END:
            break
        phrase.append(word)
    head = phrase[-1] if phrase else ""
    return head if head.isalpha() and head not in STOPWORDS and head not in _EVALUATIVE else ""


def _cut_answer(
    tokens: list[str], where: tuple[int, int, int], kind: str, participle: bool
) -> tuple[str, list[str]]:
    """Take out the answer that starts at `index` (`where` = verb, verb group end, index),
    with the words that lead into it ("on", "in the state of")."""
    verb, end, index = where
    low = [token.casefold() for token in tokens]
    cut = index
    while cut > end and _is_name(tokens[cut - 1]) and _is_name(tokens[cut]):
        cut -= 1  # the whole name ("Jane Roe"), though its first word is the topic's
    if low[cut - 1] in {"and", "or"} and cut - 1 > end:
        return "what", tokens[:end]  # the last item of a list: the list is the answer
    if kind == "what" and cut > end and not set(low[end:cut]) & _LEADING_WORDS - _ARTICLES:
        # a name after the verb's object is in apposition to it ("plays the lead character,
        # deputy Rick Grimes", "formed the band Nirvana"): the whole object is the answer
        answer = "what", end
        if low[end - 1] in _STRANDED:  # "belongs to the genus X": "What does it belong to?"
            answer = f"strand:{low[end - 1]}", end - 1
        elif participle and low[end] == "as":  # "known as the Iron Lady": "known as?"
            answer = "strand:as", end
        return answer[0], tokens[: answer[1]]
    if kind == "what" and participle and low[cut - 1] in _STRANDED and cut - 1 > verb:
        # "closely related to Acme Rope" answers "What is it closely related to?"
        return f"strand:{low[cut - 1]}", tokens[: cut - 1]
    while cut > end and low[cut - 1] in _LEADING_WORDS:
        cut -= 1
    if kind == "place":  # the whole phrase: "in the state of Illinois"
        phrase = range(max(end, index - 4), index)
        cut = next((i for i in phrase if low[i] in _PLACE_PREPOSITIONS), cut)
    if kind == "person" and "by" in low[end : cut + 1]:
        # "written by (the poet) X" answers "Who was it written by?": the whole phrase is cut
        cut = max(i for i in range(end, cut + 1) if low[i] == "by")
        kind = "agent"
    if kind.startswith("number") and cut - end >= 2 and low[cut - 2] in {"a", "an", "the"}:
        # "had a magnitude of 7.8" answers "What magnitude did it have?"
        return f"what:{low[cut - 1]}", tokens[: cut - 2]
    return kind, tokens[:cut]


_ARTICLES = frozenset({"the", "a", "an"})


_STRANDED = frozenset({"as", "in", "on", "for", "with", "to", "from", "into", "about", "of"})


_LEADING_WORDS = (
    _TIME_PREPOSITIONS
    | _PLACE_PREPOSITIONS
    | {"by", "the", "a", "an", "of", "within", "for", "over", "under", "about", "around"}
    | {"approximately", "nearly", "almost", "only", "just", "between", "up", "to", "some"}
)


def _answer_kind(tokens: Sequence[str], index: int, topic: set[str]) -> str:
    """The kind of answer that starts at `tokens[index]`, or "" when none starts there.

    A number's kind says what it counts: "number:metres" (How many metres), "much" for money
    (How much), "long" for a duration (How long); a day number beside a month is a date."""
    token, before = tokens[index], tokens[index - 1].casefold() if index else ""
    after = tokens[index + 1].casefold() if index + 1 < len(tokens) else ""
    phrase = [t.casefold() for t in tokens[max(0, index - 4) : index]]
    kind = ""
    if token.casefold() == "one":  # "one of the largest X" answers "What is it?"; not a count
        kind = "what" if after == "of" else ""
    elif (
        _is_date(token) and not (token.isdigit() and len(token) < 3) and not _counts(tokens, index)
    ):
        kind = "date"
    elif token.isdigit() and len(token) < 3 and (after in MONTHS or before in MONTHS):
        kind = "date"  # "16 December", "December 16"
    elif before in CURRENCIES or token in CURRENCIES:
        kind = "much"
    elif _is_number(token):
        kind = _counted(tokens, index)
    elif before == "by" and token.casefold().endswith("ing"):
        kind = "how"  # "estimated by calculating X" answers "How is it estimated?"
    elif _is_name(token) and any(word in _PLACE_PREPOSITIONS for word in phrase):
        # "based in Fremantle", "located in the state of Illinois" answer "Where?", even when
        # the place is the topic's own name
        kind = "place"
    elif _is_name(token) and not stems(token) <= topic:
        kind = "person" if _after_by(phrase) else "what"
    return kind


def _after_by(phrase: Sequence[str]) -> bool:
    """Whether a name follows "by" and its noun phrase ("by X", "by the structural engineer X",
    "by the poet X"): the agent of a passive, which answers "Who ... by?"."""
    if "by" not in phrase:
        return False
    between = phrase[len(phrase) - phrase[::-1].index("by") :]
    return all(word.isalpha() and word not in _NOUN_PHRASE_END for word in between)


def _counts(tokens: Sequence[str], index: int) -> bool:
    """Whether a number that could be a year counts the plural noun after it ("1000
    milligrams", "2000 employees"; "the 2004 games" and "in 2004 the bridge" are years)."""
    after = tokens[index + 1] if index + 1 < len(tokens) else ""
    before = tokens[index - 1].casefold() if index else ""
    return (
        tokens[index].isdigit()
        and after.isalpha()
        and after[:1].islower()
        and after.endswith("s")
        and after not in STOPWORDS
        and before not in _DETERMINERS
    )


def _counted(tokens: Sequence[str], index: int) -> str:
    """What a number counts: the noun after it (and its magnitude word: "5 million people")."""
    following = [t.casefold() for t in tokens[index + 1 : index + 5]]
    while following and (
        following[0] in _MAGNITUDES or _is_number(following[0]) or following[0] in _RANGE
    ):
        following = following[1:]
    if len(following) > 1 and (following[1] in TIME_UNITS or following[1] in CURRENCIES):
        following = following[1:]  # the head after a modifier: "5 business days", "3 US dollars"
    unit = following[0] if following else ""
    if unit in MONTH_NAMES:
        return "date"  # "from 5 to 12 February": days of the month (v18)
    if unit in TIME_UNITS and following[1:2] == ["ago"]:
        return "date"  # "100 centuries ago" answers "When?"
    if unit in CURRENCIES:
        return "much"
    if unit in TIME_UNITS:
        return "long"
    if unit and unit not in STOPWORDS and unit.isalpha() and len(unit) > 1:
        return f"number:{unit}"
    return "number"


_RANGE = frozenset({"and", "to", "or", "-"})


# Verbs that take a to-infinitive as their complement ("aims to launch", "is expected to
# enhance"): a closed class of English, so "opened to traffic" and "is to" are none.
_CATENATIVE = _word_set(
    "aim plan want hope expect decide seek intend try need continue begin start agree promise "
    "refuse fail manage choose attempt offer tend wish prepare propose threaten vow pledge "
    "strive struggle serve design require allow enable encourage ask use"
)


def _ask(kind: str, tokens: list[str], verb: int | None) -> str:
    """Word the question: the question word, then the auxiliary (or "does"/"did") before the
    subject; a question needs one, so a finite verb without an auxiliary takes "does"."""
    if kind.startswith("subject:"):  # "How many teams took part in X?": the subject asked
        counted = kind.partition(":")[2].partition(":")[2]
        return f"How many {counted} {' '.join(tokens)}?" if tokens else ""
    if kind.startswith("circumstances:"):  # "When and where was it held?"
        words = [_CIRCUMSTANCES[k] for k in kind.partition(":")[2].split("+")]
        joined = ", ".join(words[:-1]) + " and " + words[-1]
        asked = _ask("date", tokens, verb)  # the clause as "When" asks it
        return joined[:1].upper() + joined[1:] + asked.removeprefix("When") if asked else ""
    word, _, counted = kind.partition(":")
    question_word = {
        "date": "When",
        "number": f"How many {counted}" if counted else "How many",
        "much": "How much",
        "long": "How long",
        "place": "Where",
        "person": "Who",
        "agent": "Who",
        "how": "How",
    }.get(word, f"What {counted}" if counted else "What")
    # "It aims to [launch a satellite]": the answer is the infinitive's action, which English
    # asks for with the pro-verb "do" ("What does it aim to do?"), never by a bare "to"
    infinitive = (
        word == "what"
        and verb is not None
        and len(tokens) >= verb + 2
        and tokens[-1].casefold() == "to"
        and _base_form(tokens[-2]).casefold() in _CATENATIVE  # "opened to traffic" is none
    )
    while tokens and tokens[-1].casefold() in _LEADING_WORDS | _PARTICLES | {"and", ","}:
        tokens = tokens[:-1]
    if not tokens:
        return ""
    if infinitive:
        tokens = [*tokens, "to", "do"]
    if tokens[0].casefold() in STOPWORDS:  # "The bridge" inside the question
        tokens = [tokens[0].casefold(), *tokens[1:]]
    if verb is not None and verb < len(tokens):
        low = tokens[verb].casefold()
        following = [  # the word after "has", past adverbs ("has often been")
            t.casefold()
            for t in tokens[verb + 1 :]
            if t.casefold() not in _VERB_ADVERBS and not t.casefold().endswith("ly")
        ][:1]
        has_main = (
            low in {"has", "have", "had"}
            and not set(following) & _PARTICLES
            and not any(_is_participle(t) for t in following)
        )
        if low in AUXILIARIES and not has_main:
            tokens = [tokens[verb], *tokens[:verb], *tokens[verb + 1 :]]
        else:
            # "What X involves?" is asked "What does X involve?"; "had a" is "did ... have"
            past = low.endswith("ed") or low == "had" or low in _IRREGULAR_PAST
            base = "have" if has_main else _base_form(tokens[verb])
            plural = low in {"have", "are"} or not low.endswith("s")
            aux = "did" if past else ("do" if plural else "does")
            tokens = [aux, *tokens[:verb], base, *tokens[verb + 1 :]]
    if word == "agent":
        tokens = [*tokens, "by"]
    if word == "strand":
        tokens, question_word = [*tokens, counted], "What"
    return f"{question_word} {' '.join(tokens)}?"


# Common irregular past forms and their base ("began" -> "did ... begin"): no dictionary, so the
# verbs that news and encyclopaedic answers use most.
_IRREGULAR_PAST = {
    past: base
    for past, base in (
        pair.split(":")
        for pair in (  # noqa: SIM905
            "began:begin became:become built:build came:come found:find gave:give got:get "
            "grew:grow held:hold knew:know led:lead left:leave made:make met:meet ran:run "
            "said:say saw:see sent:send spent:spend stood:stand took:take told:tell "
            "thought:think went:go won:win wrote:write brought:bring bought:buy caught:catch "
            "fought:fight taught:teach drove:drive rose:rise fell:fall felt:feel kept:keep "
            "lost:lose meant:mean paid:pay sold:sell struck:strike flew:fly drew:draw "
            "chose:choose spoke:speak broke:break threw:throw sang:sing shot:shoot sat:sit "
            "underwent:undergo overcame:overcome forgot:forget"
        ).split()
    )
}


_E_DROPPED_AFTER_CONSONANT = re.compile(r"[^aeiou](?:at|id|ud)$", re.IGNORECASE)


_E_DROPPED = ("is", "us", "iz", "v", "c", "g", "ur")


def _base_form(verb: str) -> str:
    """The form a verb takes after "does"/"did": "involves" -> "involve", "applies" ->
    "apply", "founded" -> "found". Rough (no dictionary), like `stem`: the embedding model
    reads "utiliz" close to "utilize", while "What X utilizes?" is not a question's word order."""
    low = verb.casefold()
    if low in _IRREGULAR_PAST:
        return _IRREGULAR_PAST[low]
    if low.endswith(("ies", "ied")) and len(low) > 4:
        return verb[:-3] + "y"
    if low.endswith(("sses", "shes", "ches", "xes", "zzes")):
        return verb[:-2]
    if low.endswith("ed"):
        base = verb[:-2]
        if len(base) > 2 and base[-1] == base[-2]:  # "planned"
            return base[:-1]
        # "advised", "utilized", "achieved", "produced", "managed": the "e" dropped before "-ed"
        # and after a consonant, "-at", "-id", "-ud": "located", "decided", "included" (a
        # vowel before keeps the stem: "treated", "avoided")
        dropped = base.casefold().endswith(_E_DROPPED) or bool(
            _E_DROPPED_AFTER_CONSONANT.search(base)
        )
        return f"{base}e" if dropped else base
    return verb[:-1] if low.endswith("s") and not low.endswith("ss") else verb


def topic_of(text: str) -> str:
    """The first capitalised name of the text, or "" (an answer naming nothing refers to its
    subject by a pronoun, and the question keeps it: "When did it open?")."""
    tokens = re.findall(r"[\w'’-]+", text)
    name: list[str] = []
    for token in tokens:
        if token[:1].isupper() and token.casefold() not in STOPWORDS:
            name.append(token)
        elif name:
            break
    if name:
        return " ".join(name[:5])
    return ""


# "X had a magnitude of 7.8 and its epicentre was near Y" makes two points: a clause with its own
# subject (a pronoun, a possessive or a determiner, then a verb soon after) starts after "and".
_SECOND_CLAUSE = re.compile(
    r",?\s+(?:and|but|while|whereas)\s+(?=(?:its|their|his|her|it|they|he|she|the|this)\s)",
    re.IGNORECASE,
)


# What the n questions add to be distinct when the answer makes a single point: the same question
# asked with a different stress, as an LLM's paraphrases are.
_VARIANTS = (", exactly", ", precisely", ", briefly", ", specifically", ", concretely")


def points(sentences: Sequence[str]) -> list[str]:
    """The answer's points: its sentences, and a sentence's second clause with its own subject."""
    found = []
    for sentence in sentences:
        pieces = _SECOND_CLAUSE.split(sentence)
        head, tail = pieces[0], pieces[1:]
        found.append(head)
        for piece in tail:
            if _verb_index(_TOKEN.findall(piece)[:6]) is not None:
                found.append(piece)
            else:
                found[-1] = f"{found[-1]} and {piece}"
    return found


def _lower_first(question: str) -> str:
    first, _, rest = question.partition(" ")
    return f"{first.casefold()} {rest}" if first.casefold() in _QUESTION_WORDS else question


# "by" opens a part only as "By whom was it founded" (the circumstances' agent)
_QUESTION_WORDS = _word_set("what when where who how which why is are by")


def generated_questions(
    answer: str, count: int, points_asked: int = QUESTION_SENTENCES, *, whole: bool = True
) -> list[str]:
    """`count` distinct questions the answer is a complete answer to.

    Each joins the questions of all of the answer's first `QUESTION_SENTENCES` points, in
    different phrasings (with `whole=False`, v12's scopes: all, the first two, the first; see
    the section comment); after the first part the topic is
    referred to by its pronoun, as in a question with several parts. An answer that says
    nothing about a topic (a refusal, a first-person remark) answers "Is the information
    available?". Every question passes `questions.is_question`.
    """
    text = strip_prefix(answer)
    sentences = points(answer_sentences(text) or [text])
    topic = answer_topic(sentences)
    pronoun = topic_pronoun(sentences)
    asked = (
        question_for(sentence, topic, pronoun if number else "")
        for number, sentence in enumerate(sentences)
    )
    parts = list(dict.fromkeys(q for q in asked if q))
    parts = parts[:points_asked] or ["Is the information available?"]
    # `whole`: every question covers every point, the n questions differing in phrasing only;
    # False gives v12's narrowing scopes (for the leave-one-out's grid).
    scopes = [len(parts)] if whole else range(len(parts), 0, -1)
    joined = [
        *(" ".join(parts[:size]) for size in scopes),
        ", and ".join(
            part.rstrip("?") if number == 0 else _lower_first(part.rstrip("?"))
            for number, part in enumerate(parts)
        )
        + "?",
        " ".join(reversed(parts)),
    ]
    distinct = list(dict.fromkeys(joined))
    varied = distinct[0].rstrip("?") if whole else parts[0].rstrip("?")
    for variant in _VARIANTS:
        if len(distinct) >= count:
            break
        if variant.strip(", ") in varied.casefold():
            continue
        distinct.append(f"{varied}{variant}?")
    number = 2
    while len(distinct) < count:  # more questions than variants: numbered, still questions
        distinct.append(f"{varied}, point {number}?")
        number += 1
    return distinct[:count]
