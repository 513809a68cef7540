"""Keeping credentials out of logs, outputs, reports and error messages."""

from __future__ import annotations

import base64
import re
from urllib.parse import quote, quote_plus

REDACTED = "[redacted]"
# Things that look like keys even when partly masked by a provider ("sk-ab***yz"), bearer and
# basic credentials in echoed headers, and credentials in URLs (`scheme://user:pass@host`).
_KEY_LIKE = re.compile(
    r"\b(?:sk|pk|rk)-[A-Za-z0-9*_.\-]{2,}"
    r"|(?i:bearer)\s+\S+"
    r"|(?i:basic)\s+[A-Za-z0-9+/_\-]{4,}=*"
    r"|(?<=://)[^\s/@:]*:[^\s/@]*(?=@)"
)
# A base64 run shorter than this is not searched for a key: too many false matches.
_MIN_ENCODED_CHARS = 8


class Secret:
    """A string that does not show itself: repr, str and f-strings print a placeholder."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        """The value itself, for the one place that must send it (an HTTP client)."""
        return self._value

    def __repr__(self) -> str:
        return f"Secret({REDACTED})"

    __str__ = __repr__

    def __bool__(self) -> bool:
        return bool(self._value)


def secret_forms(value: str) -> list[str]:
    """The ways `value` shows up in text: itself, URL-encoded, and base64-encoded (standard
    and URL-safe alphabets) at each of the three alignments it can have inside a longer
    encoded string such as a Basic `user:key` header; longest first."""
    forms = {value, quote(value, safe=""), quote_plus(value)}
    raw = value.encode("utf-8")
    for offset in range(3):
        padded = b"\0" * offset + raw
        # Only the characters that depend on the value's bytes alone: the first ones also
        # encode what precedes it, the last ones what follows it.
        start = -(-8 * offset // 6)
        end = 8 * len(padded) // 6
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            core = encode(padded).decode("ascii")[start:end]
            if len(core) >= _MIN_ENCODED_CHARS:
                forms.add(core)
    return sorted(forms, key=len, reverse=True)


def redact(text: str, *secrets: Secret | str | None) -> str:
    """`text` with the given secrets (in any of their `secret_forms`), and anything shaped like
    an API key or a credential, replaced."""
    for secret in secrets:
        value = secret.reveal() if isinstance(secret, Secret) else secret
        if value:
            for form in secret_forms(value):
                text = text.replace(form, REDACTED)
    return _KEY_LIKE.sub(REDACTED, text)
