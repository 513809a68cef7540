"""The labelling page: one queued row at a time, blind (the question, the contexts and the
answer: never the judge's score or evidence, so the judge does not anchor the person), a
three-level choice per metric with its one-line definition, skip, and keyboard shortcuts.

Keyboard shortcuts, single keys: 1/2/3 for the first metric's none/some/all, 4/5/6 for the
second's, 7/8/9 for the third's, S to save, K to skip (`SHORTCUTS_SCRIPT`, the page's one
script, allowed by its content policy through a nonce of the response); the same keys are HTML
access keys (with the browser's modifier) where scripts are off; Tab and the arrow keys move
through the choices, and Enter saves.

A save is checked as an import is (`labels.store.check_candidates`: the row must be in the
day's queue, a level, not a duplicate) and written as a batch of its own with `page_version`
`PAGE_VERSION`. State-changing requests carry a CSRF token: a random value in a cookie
(SameSite=Strict, HttpOnly, only for the page's path) that the form repeats, compared in
constant time, and the request's Origin, when sent, must be the page's own host.
"""

from __future__ import annotations

import html
import secrets
from collections.abc import Mapping, Sequence
from typing import Any

from ragas_ops.labels.definitions import LEVEL_NAMES, label_levels

PAGE_VERSION = "page/1"
"""`page_version` of the labels the page writes: change it when the page shows rows
differently (another layout, other definitions), so labels of each version can be told apart."""
CSRF_COOKIE = "ragas_ops_csrf"
ACCESS_KEYS = "1234567890abcdefghijlmnopqrtuvwxyz"
"""The keys that choose a level, handed out in order, metric by metric (three each for the
paper's: 123, 456, 789; a criterion's levels take the next ones); s and k are Save and Skip."""


SHORTCUTS_SCRIPT = (
    "document.addEventListener('keydown',function(e){"
    "if(e.altKey||e.ctrlKey||e.metaKey||e.repeat)return;"
    "var el=document.querySelector('[data-key=\"'+e.key.toLowerCase()+'\"]');"
    "if(el){e.preventDefault();el.click();}});"
)
"""Press the element whose `data-key` is the key pressed (a radio, Save, Skip)."""


def new_nonce() -> str:
    return secrets.token_urlsafe(16)


def new_csrf_token() -> str:
    return secrets.token_urlsafe(32)


def csrf_ok(cookie: str | None, form: str | None) -> bool:
    return bool(cookie) and bool(form) and secrets.compare_digest(str(cookie), str(form))


def _esc(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


LABEL_CSS = """
body{font:15px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;padding:20px 28px;
color:#1f2328;max-width:980px}
h1{font-size:20px;margin:0 0 4px}.muted{color:#59636e}.small{font-size:13px}
.box{border:1px solid #d1d9e0;border-radius:8px;padding:12px 16px;margin:12px 0;background:#fff}
.box h2{font-size:14px;margin:0 0 6px;color:#59636e;text-transform:uppercase}
.context{white-space:pre-wrap;border-left:3px solid #d1d9e0;padding-left:10px;margin:8px 0}
fieldset{border:1px solid #d1d9e0;border-radius:8px;margin:10px 0;padding:8px 14px}
legend{font-weight:600}label.level{display:inline-block;margin:4px 18px 4px 0;cursor:pointer}
kbd{border:1px solid #d1d9e0;border-radius:4px;padding:0 4px;font-size:12px}
button,a.button{font:inherit;padding:6px 16px;border-radius:6px;border:1px solid #1f883d;
background:#1f883d;color:#fff;text-decoration:none;margin-right:10px}
a.button.skip{background:#f6f8fa;color:#1f2328;border-color:#d1d9e0}
.banner{padding:8px 12px;border-radius:6px;background:#dafbe1}
.banner.warn{background:#fff8c5}
"""


def label_page(
    *,
    base: str,
    day: str | None,
    labeller: str,
    rows: Sequence[Mapping[str, Any]],
    after: int,
    csrf: str,
    nonce: str = "",
    saved: int | None = None,
    refused: Sequence[str] = (),
) -> str:
    """The page: the first row of `rows` past `after` skipped ones, or the end of the queue."""
    head = (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        f"<title>Label · RAG quality</title><style>{LABEL_CSS}</style></head><body>"
        f"<h1>Label rows · {_esc(day or 'no day')}</h1>"
        f"<div class='muted small'>Labelling as <b>{_esc(labeller)}</b>. Blind: the judge's "
        "scores are not shown. <a href='" + _esc(base) + "/'>Back to RAG quality</a></div>"
    )
    notes = ""
    if saved:
        notes += f"<p class='banner'>Saved {saved} label(s).</p>"
    if refused:
        items = "".join(f"<li>{_esc(reason)}</li>" for reason in refused)
        notes += f"<div class='banner warn'>Not saved:<ul>{items}</ul></div>"
    if day is None:
        return head + notes + "<p>No labelling queue yet: it is written by each night's run.</p>"
    left = list(rows)[after:]
    if not left:
        return (
            head + notes + f"<p class='banner'>Nothing left to label for {_esc(day)}"
            f"{' (some rows were skipped)' if after else ''}. Thank you.</p></body></html>"
        )
    row = left[0]
    contexts = "".join(f"<div class='context'>{_esc(text)}</div>" for text in row["contexts"])
    passed = "".join(
        f"<div class='box'><h2>{_esc(name)}</h2>{_esc(_shown(value))}</div>"
        for name, value in (row.get("passed") or {}).items()
    )
    fieldsets = "".join(
        _metric_fieldset(metric, keys)
        for metric, keys in zip(row["metrics"], metric_keys(row["metrics"]), strict=True)
    )
    skip = f"{_esc(base)}/label?day={_esc(day)}&amp;after={after + 1}"
    return (
        head
        + notes
        + f"<div class='muted small'>{len(left)} row(s) left in the queue of {_esc(day)} · row "
        f"<code>{_esc(row['row_id'])}</code></div>"
        f"<div class='box'><h2>Question</h2>{_esc(row['question'])}</div>"
        f"<div class='box'><h2>Contexts</h2>{contexts or '<i>none</i>'}</div>"
        f"<div class='box'><h2>Answer</h2>{_esc(row['answer'])}</div>{passed}"
        f"<form method='post' action='{_esc(base)}/label'>"
        f"<input type='hidden' name='csrf' value='{_esc(csrf)}'>"
        f"<input type='hidden' name='day' value='{_esc(day)}'>"
        f"<input type='hidden' name='row_id' value='{_esc(row['row_id'])}'>"
        f"<input type='hidden' name='after' value='{after}'>"
        f"{fieldsets}"
        "<button type='submit' accesskey='s' data-key='s'>Save <kbd>S</kbd></button>"
        f"<a class='button skip' accesskey='k' data-key='k' href='{skip}'>Skip <kbd>K</kbd></a>"
        "</form><p class='muted small'>Shortcuts: the keys shown (without scripts, the "
        "browser's access-key modifier with them, e.g. Alt+Shift); Tab and the arrow keys move "
        "through the choices and Enter saves. A metric left unanswered is not labelled.</p>"
        + (f"<script nonce='{_esc(nonce)}'>{SHORTCUTS_SCRIPT}</script>" if nonce else "")
        + "</body></html>"
    )


def metric_keys(metrics: Sequence[str]) -> list[str]:
    """The keys of each metric's levels, in order (none once the keys run out)."""
    given, handed = [], 0
    for metric in metrics:
        count = len(label_levels(metric)[1])
        keys = ACCESS_KEYS[handed : handed + count]
        given.append(keys if len(keys) == count else "")
        handed += count
    return given


def _shown(value: Any) -> str:
    """A pass-through cell as text: a list's items joined, anything else as it prints."""
    if isinstance(value, list | tuple):
        return " · ".join(str(item) for item in value)
    return str(value)


def _choice_text(value: str, name: str, meaning: str) -> str:
    """`0.5 · some: ...` for the three shared levels; a criterion's level by its own name
    first (`4: Addresses most of it (0.75)`), its value, the score it stands for, after."""
    if name in LEVEL_NAMES:
        return f"{value} · {name}: {_esc(meaning)}"
    return f"{_esc(name)}: {_esc(meaning)} ({value})"


def _metric_fieldset(metric: str, keys: str) -> str:
    question, levels = label_levels(metric)
    choices = []
    for index, (value, name, meaning) in enumerate(levels):
        key = keys[index] if keys else ""
        access = f" accesskey='{key}' data-key='{key}'" if key else ""
        shown = f" <kbd>{key}</kbd>" if key else ""
        choices.append(
            f"<label class='level'><input type='radio' name='m_{_esc(metric)}' "
            f"value='{value}'{access}> {_choice_text(value, name, meaning)}{shown}</label>"
        )
    return (
        f"<fieldset><legend>{_esc(metric.replace('_', ' '))}</legend>"
        f"<div class='muted small'>{_esc(question)}</div>{''.join(choices)}</fieldset>"
    )
