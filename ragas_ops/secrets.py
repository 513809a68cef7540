"""Keeping credentials out of logs, outputs, reports and error messages."""

from __future__ import annotations

import base64
import logging
import re
import threading
from collections.abc import Callable
from typing import Any
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
# A run of base64 characters in a text that shares this many characters in a row with a
# key's encoding is hidden whole: a cut-out piece of an encoded key still gives most of it.
_ENCODED_PIECE_CHARS = 10
_ENCODED_RUN = re.compile(rf"[A-Za-z0-9+/_\-]{{{_ENCODED_PIECE_CHARS},}}=*")
# A word of a text that shares this many characters in a row with a key, or with its hex
# encoding, in any case, is hidden whole: what providers and gateways show of a key (its last
# characters, the key without its "sk-", upper-cased) still identifies most of it.
_PLAIN_PIECE_CHARS = 8
_PLAIN_RUN = re.compile(rf"[A-Za-z0-9_\-]{{{_PLAIN_PIECE_CHARS},}}")

MIN_SECRET_CHARS = 8
"""A credential shorter than this is no secret (it is guessed in seconds) and is not searched
for: self-hosted endpoints take any key, and a key such as `x` would turn every "x" of every
reply into REDACTED ("e[redacted]planation") and fail the rows."""
PLACEHOLDER_KEYS = frozenset(
    {"sk-no-key-required", "not-needed", "lm-studio", "no-api-key", "changeme", "password"}
)
"""Keys of 8 characters or more that endpoints' own documentation tells users to give (llama.cpp,
LM Studio) or that say they are none: not searched for either (compared in any case)."""

# A JSON escape: a backslash and `uXXXX`, or a backslash and one character (an escaped
# backslash is taken as a pair, so that the `u0041` after it is text, not an escape).
_JSON_ESCAPE = re.compile(r"\\(?:u([0-9a-fA-F]{4})|.)", re.DOTALL)


class Secret:
    """A string that does not show itself: repr, str and f-strings print a placeholder."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value
        register_secret(value)  # whatever holds it, no log record shows it

    def reveal(self) -> str:
        """The value itself, for the one place that must send it (an HTTP client)."""
        return self._value

    def __repr__(self) -> str:
        return f"Secret({REDACTED})"

    __str__ = __repr__

    def __bool__(self) -> bool:
        return bool(self._value)


def secret_forms(value: str) -> list[str]:
    """The ways `value` shows up in text: itself, URL-encoded, hex-encoded (either case), and
    base64-encoded (standard and URL-safe alphabets) at each of the three alignments it can
    have inside a longer encoded string such as a Basic `user:key` header; longest first."""
    hexed = value.encode("utf-8").hex()
    forms = {value, quote(value, safe=""), quote_plus(value), hexed, hexed.upper()}
    forms |= _encoded_forms(value)
    return sorted(forms, key=len, reverse=True)


def _encoded_forms(value: str) -> set[str]:
    forms = set()
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
    return forms


def redact(text: str, *secrets: Secret | str | None) -> str:
    """`text` with the given secrets (in any of their `secret_forms`, a piece of one of their
    base64 forms, or a word sharing 8 characters in a row with the secret or its hex, in any
    case), and anything shaped like an API key or a credential, replaced."""
    for secret in secrets:
        text = without_secret(text, secret)
    return _KEY_LIKE.sub(REDACTED, text)


def is_secret(value: str) -> bool:
    """Whether `value` is worth searching for: long enough to be secret (`MIN_SECRET_CHARS`)
    and not a known placeholder (`PLACEHOLDER_KEYS`)."""
    return len(value) >= MIN_SECRET_CHARS and value.casefold() not in PLACEHOLDER_KEYS


def without_secret(text: str, secret: Secret | str | None) -> str:
    """`text` with `secret` replaced as `redact` replaces it, and nothing else: for a text
    that is not an error message (a judge's reply, which may well say "Bearer" or "sk-").
    A JSON text is searched as it decodes: the key written as `\\uXXXX` escapes is found
    too. A value that `is_secret` says is none is not searched for."""
    value = secret.reveal() if isinstance(secret, Secret) else secret
    if not value or not is_secret(value):
        return text
    text = unescape_json_text(text)
    for form in secret_forms(value):
        text = text.replace(form, REDACTED)
    text = _hide_encoded_pieces(text, _encoded_forms(value))
    return _hide_plain_pieces(text, value)


def unescape_json_text(text: str) -> str:
    """`text` with the JSON escapes that JSON does not need decoded (`\\u006b` is `k`, `\\/`
    is `/`): a JSON document keeps its meaning and a key spelled in escapes shows as itself.
    The escapes JSON needs stay: a quote, a backslash, control characters, and surrogates."""
    if "\\" not in text:
        return text

    def decode(escape: re.Match[str]) -> str:
        hexed = escape.group(1)
        if hexed is None:
            return "/" if escape.group() == "\\/" else escape.group()
        character = chr(int(hexed, 16))
        needed = character in '"\\' or ord(character) < 0x20 or 0xD800 <= ord(character) < 0xE000
        return escape.group() if needed else character

    return _JSON_ESCAPE.sub(decode, text)


def _hide_encoded_pieces(text: str, forms: set[str]) -> str:
    def hide(run: re.Match[str]) -> str:
        return _hide_encoded(run.group(), forms)

    return _ENCODED_RUN.sub(hide, text)


def _hide_encoded(run: str, forms: set[str]) -> str:
    """`run` (base64 characters), or REDACTED when it shares a piece with an encoded key."""
    size = _ENCODED_PIECE_CHARS
    for start in range(len(run) - size + 1):
        piece = run[start : start + size]
        if any(piece in form for form in forms):
            return REDACTED
    return run


def _hide_plain_pieces(text: str, value: str) -> str:
    forms = {value.casefold(), value.encode("utf-8").hex()}
    if all(len(form) < _PLAIN_PIECE_CHARS for form in forms):
        return text
    size = _PLAIN_PIECE_CHARS

    def hide(run: re.Match[str]) -> str:
        word = run.group().casefold()
        for start in range(len(word) - size + 1):
            piece = word[start : start + size]
            if any(piece in form for form in forms):
                return REDACTED
        return run.group()

    return _PLAIN_RUN.sub(hide, text)


# -- log records ----------------------------------------------------------------------------
# Every value a `Secret` was made of, searched for in every log record of the process once
# `mask_log_records` has run. Kept for the process's life: a record logged after the Secret is
# gone (a traceback, a retry's echo) must still not show it.
_REGISTERED: dict[str, None] = {}
_REGISTERED_LOCK = threading.Lock()
_MASKING_MARK = "_ragas_ops_masks_secrets"


def register_secret(value: str | None) -> None:
    """Search every later log record for `value` (when `is_secret` says it is one)."""
    if value and is_secret(value):
        with _REGISTERED_LOCK:
            _REGISTERED[value] = None


def registered_secrets() -> tuple[str, ...]:
    """The values `register_secret` was given (for Airflow's secrets masker)."""
    with _REGISTERED_LOCK:
        return tuple(_REGISTERED)


def mask_log_records() -> None:
    """Redact every log record of this process as it is made, whatever its level, its logger
    and its handlers: the registered secrets in every form `redact` knows, and anything shaped
    like a key or credential. A record factory rather than a filter: a filter on a logger does
    not see its children's records, and a filter on a handler misses handlers attached later
    (Airflow's, pytest's, `logging.lastResort`); every record a `Logger` makes, from any
    library, comes from the factory. Installing it twice is installing it once."""
    current = logging.getLogRecordFactory()
    if not getattr(current, _MASKING_MARK, False):
        logging.setLogRecordFactory(_masking_factory(current))


def _masking_factory(make: Callable[..., logging.LogRecord]) -> Callable[..., logging.LogRecord]:
    def make_masked(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = make(*args, **kwargs)
        mask_record(record)
        return record

    setattr(make_masked, _MASKING_MARK, True)
    return make_masked


def mask_record(record: logging.LogRecord) -> None:
    """`record` with its message, exception text and stack redacted (see `mask_log_records`):
    the message is formatted here, once, so its arguments cannot show a secret later."""
    secrets = registered_secrets()
    try:
        message = record.getMessage()
    except Exception:  # logging reports a bad format with its arguments: show neither whole
        message = f"{record.msg} (arguments that did not fit the message: {record.args!r})"
    masked = redact(message, *secrets)
    if masked != message:
        record.msg, record.args = masked, ()
    if record.exc_info and record.exc_info[0] is not None and not record.exc_text:
        record.exc_text = redact(logging.Formatter().formatException(record.exc_info), *secrets)
    if record.stack_info:
        record.stack_info = redact(record.stack_info, *secrets)
