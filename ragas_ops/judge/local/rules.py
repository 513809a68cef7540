"""The local judge's rules, by prompt: each metric's package registers the rule that answers each
of its prompts (`@local_rule(PROMPT)`), so the local judge dispatches on the prompt it is asked
and keeps no list of metrics of its own. A rule computes its answer with the toolkit of this
package (sentence splitting, lexical evidence, the question generator) and the judge's vectors
(`LocalTools`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ragas_ops.judge.local.evidence import Support, Vectors
from ragas_ops.prompts import Prompt


@dataclass
class Reply:
    """A rule's answer to one prompt: the outputs as an LLM would write them, and for verdicts
    how strongly each is held (`Completion.confidences`)."""

    outputs: list[dict[str, Any]]
    confidences: list[list[float]] | None = None


class LocalTools(Protocol):
    """What a rule may ask of the local judge: the embedding model's vectors, shared by every
    row and metric of a run (each distinct text encoded once)."""

    async def vectors(self, texts: Sequence[str]) -> Vectors: ...

    async def question_vectors(self, texts: Sequence[str]) -> Vectors: ...

    async def supports(self, claims: list[str], contexts: list[str]) -> list[Support]: ...


LocalRule = Callable[[LocalTools, Mapping[str, Any], int], Awaitable[Reply]]
"""A rule: (the judge's tools, the prompt's data, the number of outputs asked) -> its reply."""

_RULES: dict[str, LocalRule] = {}


def local_rule(prompt: Prompt[Any]) -> Callable[[LocalRule], LocalRule]:
    """Register the decorated function as the local judge's answer to `prompt` (every version:
    a rule that changes bumps `LOCAL_JUDGE_VERSION`, which keys the cache)."""

    def register(rule: LocalRule) -> LocalRule:
        known = _RULES.get(prompt.name)
        if known is not None and known is not rule:
            raise ValueError(f"prompt {prompt.name!r} has a local rule: {known.__qualname__}")
        _RULES[prompt.name] = rule
        return rule

    return register


def forget_local_rule(prompt: Prompt[Any]) -> None:
    """Drop `prompt`'s rule (for tests and plug-ins that register a metric for a while)."""
    _RULES.pop(prompt.name, None)


def rule_for(prompt: Prompt[Any]) -> LocalRule | None:
    return _RULES.get(prompt.name)


def field_strings(value: Any) -> list[str]:
    """A data field as a list of texts (a lone string is a list of one, None none)."""
    if isinstance(value, str):
        return [value]
    return [str(item) for item in value or [] if item is not None]


def field_text(value: Any) -> str:
    """A data field as one text (a list of texts joined by lines)."""
    return "\n".join(field_strings(value))
