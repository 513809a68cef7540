"""What a chat request asks, built from a prompt and its data: the messages, the parameters,
its key in the response cache and the tokens a provider counts for it. Sync and batch requests
are built here alike, so that both ask the same question under the same key."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ragas_ops.judge.cache.keys import cache_key
from ragas_ops.judge.engine.wire import Fitting
from ragas_ops.judge.spec import EndpointSpec
from ragas_ops.judge.tokens import REQUEST_OVERHEAD_TOKENS, estimate_chat_tokens
from ragas_ops.prompts import Prompt, encode_data
from ragas_ops.text import estimate_tokens

MIN_OUTPUT_TOKENS = 128
OUTPUT_TOKENS_PER_INPUT_TOKEN = 2
"""A ragas-ops prompt's output restates, selects from or judges its input (statements from an
answer, a verdict and reason per statement, sentences copied from the contexts, questions for
an answer): it needs at most about as many tokens as the input, twice that is a wide margin."""
REPAIR_INSTRUCTION = (
    "Your reply cannot be used: {problem}. Reply again with only the JSON object, following "
    "the schema and the instructions."
)


def admission_tokens(
    messages: Sequence[Mapping[str, str]], params: Mapping[str, Any], margin: float = 0.0
) -> int:
    """The tokens a provider's rate limiter counts for a chat request when it admits it, as
    OpenAI's does: the messages, the schema sent in `response_format`, and `max_tokens` for
    each of the `n` choices (counted whatever the answer then uses); `margin` more of the
    prompt part, which is an estimate."""
    prompt = estimate_chat_tokens(messages) + REQUEST_OVERHEAD_TOKENS + schema_tokens(params)
    return round(prompt * (1 + margin)) + most_completion_tokens(params)


def most_completion_tokens(params: Mapping[str, Any]) -> int:
    """`max_tokens` x `n`: the most completion tokens a reply to `params` may use."""
    return int(params.get("max_tokens", 0)) * int(params.get("n", 1))


def schema_tokens(params: Mapping[str, Any]) -> int:
    """Tokens of the `response_format` sent, which providers count with the prompt."""
    response_format = params.get("response_format")
    if response_format is None:
        return 0
    return estimate_tokens(json.dumps(response_format, separators=(",", ":")))


def output_tokens_for(prompt: Prompt[Any], data: Mapping[str, Any]) -> int:
    """`max_tokens` for one request: what the prompt's output can need for this input (the
    prompt's own `output_budget`, else its data's tokens, see `OUTPUT_TOKENS_PER_INPUT_TOKEN`),
    at most the prompt's own maximum.
    Providers reserve `max_tokens` at admission: a blanket maximum wastes the TPM budget."""
    if prompt.output_budget is not None:
        return max(1, min(prompt.max_output_tokens, prompt.output_budget(data)))
    input_tokens = estimate_tokens(encode_data(data))
    needed = MIN_OUTPUT_TOKENS + OUTPUT_TOKENS_PER_INPUT_TOKEN * input_tokens
    return min(prompt.max_output_tokens, needed)


def chat_params(
    endpoint: EndpointSpec,
    prompt: Prompt[Any],
    n: int,
    data: Mapping[str, Any] | None = None,
    shape: Fitting | None = None,
) -> dict[str, Any]:
    """The request parameters besides the messages (sync and batch requests alike), in the
    canonical form `shape.fit` fits to the model at the wire: `max_tokens` holds the visible
    answer's room and, for a reasoning model, the reasoning the effort needs before it."""
    visible = prompt.max_output_tokens if data is None else output_tokens_for(prompt, data)
    params: dict[str, Any] = {
        "model": endpoint.model,
        "temperature": prompt.temperature,
        "max_tokens": visible
        if shape is None
        else min(
            visible + shape.reasoning_allowance(), shape.room_ceiling(prompt.max_output_tokens)
        ),
    }
    if shape is not None and shape.effort is not None:
        params["reasoning_effort"] = shape.effort  # part of the cache key: effort changes answers
    if n > 1:
        params["n"] = n
    if endpoint.structured_output == "json_schema":
        params["response_format"] = {
            "type": "json_schema",
            "json_schema": {
                "name": prompt.schema_name,
                "strict": True,
                "schema": prompt.json_schema,
            },
        }
    elif endpoint.structured_output == "json_object":
        params["response_format"] = {"type": "json_object"}
    return params


def chat_messages(
    endpoint: EndpointSpec, prompt: Prompt[Any], data: Mapping[str, Any]
) -> list[dict[str, str]]:
    """The messages of a request: with strict json_schema output the schema goes only in
    `response_format`, not in the text too."""
    return prompt.messages(data, schema_in_text=endpoint.structured_output != "json_schema")


def chat_cache_key(
    endpoint: str, prompt: Prompt[Any], params: Mapping[str, Any], messages: Any
) -> str:
    """The key of a chat request in the response cache; batch requests use it as custom_id.
    The endpoint is part of it: another server's answers are never reused."""
    # Not `max_tokens`: room to answer is not part of the question (a reply cut short is
    # asked again with more, under the same key), so a change of budget reuses the answers.
    keyed = {name: value for name, value in params.items() if name != "max_tokens"}
    return cache_key(
        kind="chat", endpoint=endpoint, prompt=prompt.id, params=keyed, messages=messages
    )


def repair_messages(
    messages: Sequence[Mapping[str, str]], text: str, problem: Exception
) -> list[dict[str, str]]:
    """The conversation that asks the judge once to fix an unusable reply."""
    return [
        *(dict(message) for message in messages),
        {"role": "assistant", "content": text},
        {"role": "user", "content": REPAIR_INSTRUCTION.format(problem=problem)},
    ]
