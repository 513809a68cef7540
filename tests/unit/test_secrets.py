"""Credentials never show: not in repr, str, f-strings, nor in redacted messages."""

from __future__ import annotations

import logging

import pytest

from ragas_ops.secrets import REDACTED, Secret, redact

KEY = "sk-" + "proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"


def test_a_secret_never_shows_its_value():
    secret = Secret(KEY)
    shown = [
        repr(secret),
        str(secret),
        f"{secret}",
        f"{secret!r}",
        f"{secret!s}",
        "%s %r" % (secret, secret),  # noqa: UP031 (old-style formatting is what logging uses)
        "{}".format(secret),  # noqa: UP032
        repr([secret, {"key": secret}]),
    ]
    for text in shown:
        assert KEY not in text
        assert "AbCdEf" not in text
        assert REDACTED in text


def test_a_secret_in_a_log_record_stays_hidden(caplog):
    with caplog.at_level(logging.INFO):
        logging.getLogger("test").info("using key %s", Secret(KEY))
    assert KEY not in caplog.text
    assert REDACTED in caplog.text


def test_reveal_gives_the_value_and_truthiness_says_whether_there_is_one():
    assert Secret(KEY).reveal() == KEY
    assert Secret(KEY)
    assert not Secret("")


def test_a_secret_has_no_attribute_dictionary_to_leak_through():
    with pytest.raises(TypeError):
        vars(Secret(KEY))


def test_redact_removes_the_exact_secret_whatever_its_shape():
    azure_key = "0123456789abcdef0123456789abcdef"  # no sk- prefix: only the exact match finds it
    text = f"request failed with key {azure_key} (again: {azure_key})"
    assert redact(text, Secret(azure_key)) == (
        f"request failed with key {REDACTED} (again: {REDACTED})"
    )
    assert redact(text, azure_key) == redact(text, Secret(azure_key))


def test_redact_removes_key_shaped_text_even_when_partially_masked():
    message = "Incorrect API key provided: sk-ab***********wxyz. You can find your API key at ..."
    redacted = redact(message)
    assert "sk-ab" not in redacted
    assert "wxyz" not in redacted
    assert redacted.startswith(f"Incorrect API key provided: {REDACTED}")
    assert redacted.endswith("You can find your API key at ...")


@pytest.mark.parametrize(
    "key", [KEY, "sk-1234567890abcdef", "sk-proj-ab**************************wxyz", "rk-live_AbC"]
)
def test_redact_removes_every_key_like_token_without_being_told_the_key(key):
    assert redact(f"key={key};") == f"key={REDACTED};"


@pytest.mark.parametrize(
    "header",
    ["Authorization: Bearer abc.def-ghi_123", "authorization: bearer abc.def-ghi_123"],
)
def test_redact_removes_bearer_tokens(header):
    redacted = redact(header)
    assert "abc.def" not in redacted
    assert redacted.endswith(REDACTED)


def test_redact_keeps_ordinary_text_and_ignores_absent_secrets():
    text = "a risk-free task-list with 3 items; ask-me-anything"
    assert redact(text, None, "", Secret("")) == text


def test_redact_removes_the_exact_key_before_the_pattern_so_no_fragment_survives():
    odd_key = "sk-abc def"  # a space would stop the pattern; the exact match still catches it
    assert redact(f"got {odd_key}!", odd_key) == f"got {REDACTED}!"


def test_redact_removes_the_key_url_encoded_and_base64_encoded_at_every_alignment():
    import base64
    from urllib.parse import quote

    key = "sk-" + "pr/oj+Ab=Cd&Ef?Gh:IjKl"
    for prefix in ("", "u:", "us:", "use:", "user:"):
        basic = base64.b64encode(f"{prefix}{key}".encode()).decode()
        for text in (
            f"Incorrect API key provided: {basic}.",
            f"header was {basic[2:]}, odd",  # cut out of a longer string
            f"url {quote(key, safe='')} here",
            f"urlsafe {base64.urlsafe_b64encode(f'{prefix}{key}'.encode()).decode()}",
        ):
            shown = redact(text, Secret(key))
            assert REDACTED in shown, text
            for size in (12, 16):
                assert basic[6 : 6 + size] not in shown
            assert quote(key, safe="") not in shown


def test_redact_removes_basic_credentials_and_userinfo_in_urls_whatever_the_key():
    shown = redact(
        "sent Authorization: Basic dXNlcjpzZWNyZXQ= to http://user:hunter2@host:99/v1 and "
        "https://token@other/v1"
    )
    assert "dXNlcjpzZWNyZXQ" not in shown
    assert "hunter2" not in shown
    assert "host:99/v1" in shown  # the rest of the message stays readable


def test_redact_leaves_ordinary_text_alone():
    text = "gave up after 8 attempts; last: server error (503), see http://127.0.0.1:8787/v1"
    assert redact(text, Secret("sk-" + "abcdefghijklmnopqrstuvwx")) == text


def test_redact_removes_what_gateways_show_of_a_key_hex_its_end_its_body_any_case():
    """Echoes a gateway was seen to make (the secrets review): the key in hex, its last 8
    characters, the key without its "sk-", upper-cased."""
    key = "sk-" + "canary-7Qx9ZtP3wLm2"
    hexed = key.encode().hex()
    for text in (
        f"bad key hex={hexed}",
        f"bad key HEX={hexed.upper()}",
        f"Invalid token '{key[3:]}'",
        f"key ending in {key[-8:]}",
        f"shown as ****{key[-8:]}",
        f"KEY {key.upper()}",
        f"half of it: {hexed[10:40]}",
    ):
        shown = redact(text, Secret(key))
        assert REDACTED in shown, text
        for piece in (key[-8:], key[3:], hexed[-16:], key.upper()[-8:]):
            assert piece not in shown, text
        assert shown.split()[0] == text.split()[0], "the words around it stay"


def test_redact_keeps_words_that_share_fewer_than_8_characters_with_the_key():
    key = "sk-" + "canary-7Qx9ZtP3wLm2"
    text = "ending in P3wLm2 after 7 attempts; the canary sings"
    assert redact(text, Secret(key)) == text


def test_without_secret_hides_the_key_and_leaves_key_shaped_words_of_a_reply():
    from ragas_ops.secrets import without_secret

    key = "sk-" + "canary-7Qx9ZtP3wLm2"
    reply = f"Basic plans use a Bearer token such as sk-demo; the key is {key.upper()}."
    assert without_secret(reply, Secret(key)) == (
        f"Basic plans use a Bearer token such as sk-demo; the key is {REDACTED}."
    )
    assert without_secret(reply, None) == reply


def test_a_key_written_as_json_escapes_is_hidden_and_the_reply_still_parses():
    import json

    from ragas_ops.secrets import without_secret

    key = "sk-" + "canary-7Qx9ZtP3wLm2"
    # some characters escaped, in either case of hex, as an echoing gateway writes them
    spelled = "".join(
        f"\\u{ord(c):04X}" if i % 2 else f"\\u{ord(c):04x}" for i, c in enumerate(key[:10])
    )
    reply = json.dumps({"statements": ["The key is KEY.", 'A "quoted" \\u0041 word.']})
    reply = reply.replace("KEY", spelled + key[10:])
    cleaned = without_secret(reply, Secret(key))
    assert json.loads(cleaned) == {
        "statements": [f"The key is {REDACTED}.", 'A "quoted" \\u0041 word.']
    }


def test_decoding_needless_json_escapes_keeps_every_document_meaning_the_same():
    import json
    import random

    from ragas_ops.secrets import unescape_json_text

    generator = random.Random(30)
    alphabet = ['"', "\\", "/", "\n", "\t", "\x00", "\x1f", "a", "Z", "0", "u", "é", "€", "😀"]
    for _ in range(500):
        value = {
            "".join(generator.choices(alphabet, k=3)): [
                "".join(generator.choices(alphabet, k=generator.randint(0, 12))) for _ in range(3)
            ]
        }
        for text in (json.dumps(value), json.dumps(value, ensure_ascii=False)):
            assert json.loads(unescape_json_text(text)) == value, text


@pytest.mark.parametrize("dummy", ["x", "EMPTY", "none", "sk-1234", "NOT-NEEDED", "lm-studio"])
def test_a_short_or_placeholder_key_is_no_secret_and_never_changes_a_text(dummy):
    from ragas_ops.secrets import is_secret, without_secret

    assert not is_secret(dummy)
    reply = f'{{"explanation": "none of it is EMPTY; the key {dummy} (sk-1234) is not-needed"}}'
    assert without_secret(reply, Secret(dummy)) == reply
    # an error message still loses what is shaped like a key
    assert redact(f"bad key sk-1234 for {dummy}", Secret(dummy)).startswith(f"bad key {REDACTED}")


def test_a_key_of_eight_characters_is_a_secret():
    from ragas_ops.secrets import MIN_SECRET_CHARS, is_secret

    assert MIN_SECRET_CHARS == 8
    assert is_secret("k3y-8chr")
    assert redact("the key k3y-8chr leaked", Secret("k3y-8chr")) == f"the key {REDACTED} leaked"


def test_every_log_record_is_masked_whatever_its_logger_and_handler(monkeypatch):
    import io

    from ragas_ops.secrets import mask_log_records

    monkeypatch.setattr(logging, "_logRecordFactory", logging.getLogRecordFactory())
    key = "sk-" + "logged-9f8e7d6c5b4a3210"
    Secret(key)  # registers it
    mask_log_records()
    mask_log_records()  # twice is once
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)  # attached after the masking was installed
    logger = logging.getLogger("a.library.created.later")
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        logger.debug("headers %r", [(b"x-echo-key", key.encode())])
        logger.debug("upper %s, tail %s", key.upper(), key[-10:])
        try:
            raise RuntimeError(f"refused {key}")
        except RuntimeError:
            logger.exception("failed with %s", "Bearer " + key)
        logger.debug("bad format %d", key)  # logging would print its arguments
    finally:
        logger.removeHandler(handler)
    text = stream.getvalue()
    assert "x-echo-key" in text
    assert "RuntimeError: refused [redacted]" in text
    for piece in (key, key.removeprefix("sk-"), key.upper(), key[-10:]):
        assert piece not in text
