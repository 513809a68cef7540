"""Keeping credentials out of logs, outputs, reports and error messages."""

from __future__ import annotations

import re

REDACTED = "[redacted]"
# Things that look like keys even when partly masked by a provider ("sk-ab***yz"), and bearer
# tokens in echoed headers.
_KEY_LIKE = re.compile(r"\b(?:sk|pk|rk)-[A-Za-z0-9*_.\-]{2,}|(?i:bearer)\s+\S+")


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


def redact(text: str, *secrets: Secret | str | None) -> str:
    """`text` with the given secrets, and anything shaped like an API key, replaced."""
    for secret in secrets:
        value = secret.reveal() if isinstance(secret, Secret) else secret
        if value:
            text = text.replace(value, REDACTED)
    return _KEY_LIKE.sub(REDACTED, text)
