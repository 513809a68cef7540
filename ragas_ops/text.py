"""Plain-text helpers shared by the metrics, the judges and the test server.

The sentence rule here is the one that defines the denominator of context relevance, so it is
deliberately simple and documented in docs/metrics.md ("How sentences are counted").
"""

from __future__ import annotations

import math
import re
import unicodedata
from functools import lru_cache

# A sentence ends at . ! ? followed by whitespace, at the full stops and question marks of the
# major scripts that need no space after them (CJK 。！？ and their halfwidth ｡, Arabic ؟ and
# ۔, Devanagari । and ॥), or at a line break. Thai marks no sentence end (a space separates
# phrases and sentences alike): a Thai context is one sentence per line. Abbreviations like
# "e.g." may split a sentence in two: the rule is applied the same way to the context and to
# what the judge extracts from it, so the ratio stays fair.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？｡؟۔।॥])\s*|\n+")
_HAS_WORD = re.compile(r"[^\W_]")  # a letter or a digit
_WORD = re.compile(r"\w+", re.UNICODE)
_SPACES = re.compile(r"\s+")

STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further
    had has have having he her here hers herself him himself his how i if in into is it its itself
    just me more most my myself no nor not now of off on once only or other our ours ourselves out
    over own same she should so some such than that the their theirs them themselves then there
    these they this those through to too under until up very was we were what when where which
    while who whom why will with would you your yours yourself yourselves also may might must
    shall within without upon via per yes""".split()  # noqa: SIM905 (a word list reads better)
)


def split_sentences(text: str) -> list[str]:
    """Split text into sentences: the counting rule of context relevance.

    Fragments with no letter or digit (stray punctuation, blank lines) are not sentences.
    A context is split by every metric of its row: the last few thousand contexts of up to
    `SPLIT_MEMO_CHARS` characters are kept.
    """
    if len(text) <= SPLIT_MEMO_CHARS:
        return list(_split_kept(text))
    return list(_split(text))


def _split(text: str) -> tuple[str, ...]:
    pieces = (piece.strip() for piece in _SENTENCE_END.split(text))
    return tuple(piece for piece in pieces if piece and _HAS_WORD.search(piece))


SPLIT_MEMO_CHARS = 20_000
"""Texts (whole contexts) up to this length are kept by `split_sentences`: 4,096 of them, at
most 80 MB of keys and far less in practice (contexts of a few thousand characters)."""
_split_kept = lru_cache(maxsize=1 << 12)(_split)


MEMO_CHARS = 1_000
"""Texts up to this length (sentences, not whole contexts) are kept by `normalize` and
`content_words` for the next call: the local judge's rules ask for the same sentences again and
again. Longer texts (whole contexts) are computed each time, so the memo stays bounded: 32k
texts of at most 1,000 characters."""


def normalize(text: str) -> str:
    """Case-fold, unify Unicode forms and collapse whitespace, for matching text verbatim."""
    return _normalize_kept(text) if len(text) <= MEMO_CHARS else _normalize(text)


def _normalize(text: str) -> str:
    folded = unicodedata.normalize("NFKC", text).casefold()
    return _SPACES.sub(" ", folded).strip()


_normalize_kept = lru_cache(maxsize=1 << 15)(_normalize)


def words(text: str) -> list[str]:
    """Lower-cased word tokens."""
    return _WORD.findall(normalize(text))


def content_words(text: str) -> set[str]:
    """Words that carry meaning: no stop words, no single characters (except digits)."""
    if len(text) <= MEMO_CHARS:
        return set(_content_words_kept(text))
    return set(_content_words(text))


def _content_words(text: str) -> frozenset[str]:
    return frozenset(w for w in words(text) if w not in STOPWORDS and (len(w) > 1 or w.isdigit()))


_content_words_kept = lru_cache(maxsize=1 << 15)(_content_words)


def estimate_tokens(text: str) -> int:
    """A tokenizer-free estimate of the tokens in `text`.

    About four characters per token for ASCII text (OpenAI's rule of thumb), one token per
    character elsewhere (CJK scripts are close to that, accented Latin is over-estimated, which
    is the safe side for rate limiting). Judges correct it with the usage the API returns.
    """
    if not text:
        return 0
    # Counted in C (encoding drops what is not ASCII): a Python loop over the characters was
    # 4% of the client's CPU per request.
    ascii_chars = len(text.encode("ascii", "ignore"))
    return math.ceil(ascii_chars / 4) + len(text) - ascii_chars
