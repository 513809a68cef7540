"""Batch mode on an OpenAI-compatible endpoint with the Batch API: the judge's `BatchMode`.

It plans a round within the budget the batches left, cuts it into input files, submits and
reads them (`batch_client`), answers each scoring pass from what came back (`batch_judge`),
and sends what the batches did not answer through the sync judge, rate-limited and retried."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence

import openai

from ragas_ops.config import JudgeSettings
from ragas_ops.judge.base import JudgeRowError
from ragas_ops.judge.batch import (
    AnswerBook,
    BatchAnswer,
    BatchPollError,
    BatchRequest,
    PlannedRound,
    SyncRetry,
    Unanswered,
)
from ragas_ops.judge.cache import open_cache
from ragas_ops.judge.engine.accounting import budget_for
from ragas_ops.judge.engine.judge import EngineJudge
from ragas_ops.judge.engine.wire import JudgeRuntime
from ragas_ops.judge.limits.budget import BudgetExhaustedError
from ragas_ops.judge.openai.batch_client import BatchClient, batch_files
from ragas_ops.judge.openai.batch_judge import BatchPassJudge
from ragas_ops.judge.openai.wire import openai_judge
from ragas_ops.pricing import Price, price_for
from ragas_ops.secrets import Secret
from ragas_ops.storage import S3Options


class OpenAIBatchMode:
    """Batches on the judge endpoint; `s3` reaches a shared response cache on S3."""

    def __init__(
        self,
        settings: JudgeSettings,
        prices: Mapping[str, Price],
        api_key: Secret,
        s3: S3Options | None = None,
    ) -> None:
        self.settings = settings
        self._prices = prices
        self._runtime = JudgeRuntime(api_key)
        self._s3 = s3
        self._price = price_for(settings.endpoint.model, prices)
        self._client = BatchClient(settings, api_key, self._price)

    def pass_judge(self, book: AnswerBook) -> BatchPassJudge:
        return BatchPassJudge(self.settings, self._price, book, lambda: self._sync_judge(book))

    def plan(self, requests: Sequence[BatchRequest], book: AnswerBook) -> PlannedRound:
        budget = budget_for(self.settings, self._price)
        budget.add_spent(book.spent())
        planned = PlannedRound()
        sent: list[BatchRequest] = []
        for request in requests:
            try:
                budget.reserve(request.expected, "batch request")
            except BudgetExhaustedError as refused:
                planned.not_sent[request.custom_id] = Unanswered(str(refused), over_budget=True)
                continue
            sent.append(request)
        files = batch_files(sent, self.settings.batch.max_requests, self.settings.batch.max_bytes)
        for custom_id in files.too_large:
            planned.not_sent[custom_id] = Unanswered(
                "too large for a batch input file (judge.batch_max_bytes)", sync_tried=True
            )
        planned.files = list(zip(files.files, files.custom_ids, strict=True))
        return planned

    async def submit(self, content: bytes, part_key: str) -> str:
        return await self._client.submit(content, part_key)

    async def statuses(self, batch_ids: Sequence[str]) -> dict[str, str]:
        try:
            return await self._client.statuses(batch_ids)
        except openai.APIStatusError as error:  # the fatal ones are JudgeFatalError by now
            raise BatchPollError(f"checking batches failed (HTTP {error.status_code})") from None
        except openai.APIConnectionError:
            raise BatchPollError("checking batches failed (connection)") from None

    async def results(self, batch_id: str, custom_ids: Sequence[str]) -> AnswerBook:
        return await self._client.results(batch_id, custom_ids)

    async def send_in_sync(self, retries: Mapping[str, SyncRetry], book: AnswerBook) -> AnswerBook:
        """Those that fail again are marked so (`sync_tried`), those over budget too."""
        judge = openai_judge(
            self.settings, self._runtime, self._prices, open_cache(self.settings.cache)
        )
        judge.budget.add_spent(book.spent())
        answered = AnswerBook()

        async def send(custom_id: str, retry: SyncRetry) -> None:
            try:
                texts, usage = await judge.send_chat(retry.prompt, retry.messages, retry.params)
            except BudgetExhaustedError as refused:
                answered.unanswered[custom_id] = Unanswered(str(refused), over_budget=True)
            except JudgeRowError as error:
                reason = f"{book.unanswered[custom_id].reason}; then in sync mode: {error}"
                answered.unanswered[custom_id] = Unanswered(reason, sync_tried=True)
            else:
                answered.answers[custom_id] = BatchAnswer(texts, usage)

        try:
            await asyncio.gather(*(send(custom_id, retry) for custom_id, retry in retries.items()))
        finally:
            await judge.aclose()
        return answered

    async def aclose(self) -> None:
        await self._client.aclose()

    def _sync_judge(self, book: AnswerBook) -> EngineJudge:
        """For embeddings and what the batches did not answer; the batches' spending counts
        against the budget."""
        cache = open_cache(self.settings.cache, self._s3)
        judge = openai_judge(self.settings, self._runtime, self._prices, cache)
        judge.budget.add_spent(book.spent())
        return judge
