"""Which writing systems a text is in: the local judge reads Latin-script text only.

Its rules match words split at spaces against an English stop-word list, and its sentence
model (all-MiniLM-L6-v2) was trained on English: Chinese and Japanese (no spaces between
words), Arabic and Hebrew (right to left), Devanagari, Thai, Cyrillic... get scores that mean
nothing (a plain factual Chinese answer "makes no factual statement"). A row whose letters are
mostly in such scripts is said to be so (`unsupported_language`), not scored.
"""

from __future__ import annotations

import unicodedata
from collections import Counter
from collections.abc import Iterable
from functools import lru_cache

READABLE_SCRIPTS = frozenset({"LATIN"})
UNREADABLE_SHARE = 0.2
"""A row is unreadable when more than this share of its letters are in other scripts (a
Latin-script row quoting a few foreign names stays readable)."""
_NAMES = {
    "CJK": "Han (Chinese characters)",
    "HIRAGANA": "Japanese kana",
    "KATAKANA": "Japanese kana",
}
_MEMO_CHARS = 4_000


def letter_scripts(text: str) -> Counter[str]:
    """How many letters of `text` are in each script (by the Unicode name's first word)."""
    if text.isascii():  # the common case, at C speed
        return Counter({"LATIN": sum(ch.isalpha() for ch in text)})
    return Counter(dict(_kept(text))) if len(text) <= _MEMO_CHARS else _count(text)


def _count(text: str) -> Counter[str]:
    counts: Counter[str] = Counter()
    for character in text:
        if character.isalpha():
            counts[unicodedata.name(character, "UNKNOWN").split(" ", 1)[0]] += 1
    return counts


@lru_cache(maxsize=1 << 12)
def _kept(text: str) -> tuple[tuple[str, int], ...]:
    return tuple(_count(text).items())


def unreadable_scripts(texts: Iterable[str]) -> list[str]:
    """The scripts, by name, that make these texts unreadable to the local judge; [] when
    at most `UNREADABLE_SHARE` of their letters are outside `READABLE_SCRIPTS`."""
    counts: Counter[str] = Counter()
    for text in texts:
        counts.update(letter_scripts(text))
    letters = sum(counts.values())
    other = {script: n for script, n in counts.items() if script not in READABLE_SCRIPTS}
    if not letters or sum(other.values()) <= UNREADABLE_SHARE * letters:
        return []
    major = sorted((s for s, n in other.items() if n >= 0.05 * letters), key=lambda s: -other[s])
    return list(dict.fromkeys(_NAMES.get(s, s.title()) for s in major))


def strings_in(value: object) -> Iterable[str]:
    """Every string in a prompt's data (nested lists and mappings included)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings_in(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from strings_in(item)
