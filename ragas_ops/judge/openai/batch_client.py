"""The OpenAI Batch API, as batch mode uses it: input files cut to the limits, batches
submitted under a key that finds them again, and their results read back by custom_id.

A batch is created with `metadata = {"ragas_ops_part": KEY}`. Before submitting a part, the
client looks for a batch already created under its key: a task that died between creating a
batch and recording its id re-attaches to it instead of paying twice.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import openai

from ragas_ops.config import JudgeSettings
from ragas_ops.judge.base import JudgeFatalError, Usage
from ragas_ops.judge.batch import AnswerBook, BatchAnswer, BatchRequest, Unanswered
from ragas_ops.judge.engine.tiers import BATCH_TIER
from ragas_ops.judge.openai.transport import openai_client
from ragas_ops.pricing import Price
from ragas_ops.secrets import Secret, redact, without_secret

log = logging.getLogger(__name__)

PART_METADATA_KEY = "ragas_ops_part"
# How far back to look for a batch created under a part's key (the completion window is 24 h).
_FIND_HORIZON_SECONDS = 3 * 24 * 3600


@dataclass
class BatchFiles:
    """A round's requests as batch input files (JSONL), each within the file limits."""

    files: list[bytes] = field(default_factory=list)
    custom_ids: list[list[str]] = field(default_factory=list)
    too_large: list[str] = field(default_factory=list)
    """Requests larger than a whole file may be: they cannot go through the Batch API."""


def batch_files(requests: Sequence[BatchRequest], max_requests: int, max_bytes: int) -> BatchFiles:
    """Cut requests into input files of at most `max_requests` lines and `max_bytes` bytes.

    All requests of a run use one model, so every file holds one model, as the API requires.
    """
    models = {str(request.body.get("model")) for request in requests}
    if len(models) > 1:
        raise ValueError(f"a batch file holds one model; these requests use {sorted(models)}")
    result = BatchFiles()
    current: list[bytes] = []
    ids: list[str] = []
    size = 0
    for request in requests:
        line = (json.dumps(request.line(), ensure_ascii=False) + "\n").encode("utf-8")
        if len(line) > max_bytes:
            result.too_large.append(request.custom_id)
            continue
        if current and (len(current) >= max_requests or size + len(line) > max_bytes):
            result.files.append(b"".join(current))
            result.custom_ids.append(ids)
            current, ids, size = [], [], 0
        current.append(line)
        ids.append(request.custom_id)
        size += len(line)
    if current:
        result.files.append(b"".join(current))
        result.custom_ids.append(ids)
    return result


class BatchClient:
    """Files and batches on an OpenAI-compatible endpoint. `aclose()` it after use."""

    def __init__(self, settings: JudgeSettings, api_key: Secret, price: Price | None) -> None:
        self.settings = settings
        self._api_key = api_key
        self._price = price
        # Control-plane calls (files, batches): the SDK's own backoff is enough.
        endpoint = settings.endpoint
        self._client = openai_client(endpoint, api_key, max_retries=endpoint.max_attempts)

    async def aclose(self) -> None:
        await self._client.close()

    async def submit(self, content: bytes, part_key: str) -> str:
        """The id of the batch of this part: the one already created under its key, if any,
        else a new one."""
        existing = await self.find(part_key)
        if existing is not None:
            log.info("batch %s for %s was already submitted: re-attaching", existing, part_key)
            return existing
        with self._fatal_errors("uploading a batch input file"):
            uploaded = await self._client.files.create(
                file=(part_key.replace("/", "_") + ".jsonl", content), purpose="batch"
            )
            batch = await self._client.batches.create(
                input_file_id=uploaded.id,
                endpoint="/v1/chat/completions",
                completion_window=self.settings.batch.completion_window,  # type: ignore[arg-type]
                metadata={PART_METADATA_KEY: part_key},
            )
        log.info("submitted batch %s for %s (%d bytes)", batch.id, part_key, len(content))
        return batch.id

    async def find(self, part_key: str) -> str | None:
        """A batch created under `part_key` in the last days, or None."""
        horizon = time.time() - _FIND_HORIZON_SECONDS
        with self._fatal_errors("listing batches"):
            async for batch in self._client.batches.list(limit=100):
                if (batch.metadata or {}).get(PART_METADATA_KEY) == part_key:
                    return batch.id
                if batch.created_at < horizon:  # newest first: nothing older can match
                    return None
        return None

    async def statuses(self, batch_ids: Sequence[str]) -> dict[str, str]:
        with self._fatal_errors("checking batches"):
            return {
                batch_id: (await self._client.batches.retrieve(batch_id)).status
                for batch_id in batch_ids
            }

    async def results(self, batch_id: str, custom_ids: Sequence[str]) -> AnswerBook:
        """The answers of a finished batch; every request in `custom_ids` it did not answer is
        in `unanswered` with the reason."""
        with self._fatal_errors("reading batch results"):
            batch = await self._client.batches.retrieve(batch_id)
            results = AnswerBook()
            if batch.output_file_id:
                for record in await self._lines(batch.output_file_id):
                    self._read_record(record, results)
            if batch.error_file_id:
                for record in await self._lines(batch.error_file_id):
                    self._read_record(record, results)
        seen = results.answers.keys() | results.unanswered.keys()
        reason = f"batch {batch_id} ended {batch.status}" + _batch_errors(batch)
        for custom_id in custom_ids:
            if custom_id not in seen:
                results.unanswered[custom_id] = Unanswered(reason)
        return results

    async def _lines(self, file_id: str) -> list[dict[str, Any]]:
        content = await self._client.files.content(file_id)
        return [json.loads(line) for line in content.text.splitlines() if line.strip()]

    def _read_record(self, record: dict[str, Any], into: AnswerBook) -> None:
        custom_id = str(record.get("custom_id"))
        response = record.get("response") or {}
        error = record.get("error")
        body = response.get("body") or {}
        if error or response.get("status_code") != 200:
            into.unanswered[custom_id] = Unanswered(self._safe(_describe_failure(error, response)))
            return
        choices = body.get("choices") or []
        if any(choice.get("finish_reason") == "content_filter" for choice in choices):
            into.unanswered[custom_id] = Unanswered("the provider's content filter refused it")
            return
        texts = [
            without_secret((choice.get("message") or {}).get("content") or "", self._api_key)
            for choice in choices
        ]
        if not texts:
            into.unanswered[custom_id] = Unanswered("the reply had no choices")
            return
        into.answers[custom_id] = BatchAnswer(texts, self._usage(body.get("usage") or {}))

    def _usage(self, reported: dict[str, Any]) -> Usage:
        """What a batch line cost, at the Batch price; its rows' tier is `batch`."""
        prompt_tokens = int(reported.get("prompt_tokens") or 0)
        completion_tokens = int(reported.get("completion_tokens") or 0)
        cached = int((reported.get("prompt_tokens_details") or {}).get("cached_tokens") or 0)
        details = reported.get("completion_tokens_details") or {}
        return Usage(
            requests=1,
            prompt_tokens=prompt_tokens,
            cached_prompt_tokens=cached,
            completion_tokens=completion_tokens,
            reasoning_tokens=int(details.get("reasoning_tokens") or 0),
            cost_usd=None
            if self._price is None
            else self._price.cost(prompt_tokens, completion_tokens, cached, batch=True),
            requests_by_tier={BATCH_TIER: 1},
        )

    @contextmanager
    def _fatal_errors(self, doing: str) -> Iterator[None]:
        """Turns errors no retry can fix (bad key, unknown endpoint) into `JudgeFatalError`;
        others propagate, so that Airflow retries the task, which re-attaches to its batches."""
        try:
            yield
        except openai.APIStatusError as error:
            if error.status_code not in (401, 403, 404):
                raise
            raise JudgeFatalError(
                f"{doing}: the endpoint refused (HTTP {error.status_code}): "
                f"{self._safe(error.message)}. Check the key in "
                f"${self.settings.endpoint.api_key_env}, the base URL, and that this endpoint "
                "offers the Batch API."
            ) from None

    def _safe(self, text: str) -> str:
        return redact(text, self._api_key)


def _describe_failure(error: Any, response: dict[str, Any]) -> str:
    if isinstance(error, dict) and error:
        return f"{error.get('code') or 'error'}: {error.get('message') or ''}".strip()
    inner = (response.get("body") or {}).get("error") or {}
    message = inner.get("message") if isinstance(inner, dict) else None
    return f"HTTP {response.get('status_code')}: {message or 'no detail'}"


def _batch_errors(batch: Any) -> str:
    errors = getattr(getattr(batch, "errors", None), "data", None) or []
    messages = [f"{e.code}: {e.message}" for e in errors[:3] if e is not None]
    return f" ({'; '.join(messages)})" if messages else ""
