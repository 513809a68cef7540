"""The judge of batch mode's scoring passes: answers from finished batches, requests for the next.

Batch mode scores a chunk in passes. Each pass runs the metrics over every row with this judge.
A request answered by an earlier batch is answered from it; any other request is written down
for the next batch and its row is set aside (`AwaitingBatch`). A pass that wrote nothing down
is the last one, and its table is the result; the tables of the other passes are thrown away.
Faithfulness needs three passes (statements, then verdicts), the other metrics two, and a reply
that must be repaired one more.

A request's custom_id is its response-cache key, so a request asked by several rows is sent
once, and answers are the same whether they came from a batch or from a sync request.

Requests a batch did not answer (an expired or failed batch, an error line) are sent again in
sync mode between two passes (`sync_retries`), or give their row `judge_unavailable`, as
`judge.on_batch_unanswered` says; requests the run's budget could not pay for give
`budget_exhausted`. Either way the answers, and what they cost, are counted once, in the last
pass. Embeddings are not batched: they are sent in sync mode in the last pass (they cost
about 0.1% of the chat requests).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ragas_ops.config import JudgeSettings
from ragas_ops.judge.base import (
    Completion,
    Embeddings,
    Judge,
    JudgeOutputError,
    JudgeRowError,
    JudgeUnavailableError,
    Usage,
)
from ragas_ops.judge.batch import AnswerBook, BatchRequest, SyncRetry
from ragas_ops.judge.endpoint import describe_judge, effective_base_url, endpoint_name
from ragas_ops.judge.engine.chat_request import (
    chat_cache_key,
    chat_messages,
    chat_params,
    repair_messages,
)
from ragas_ops.judge.limits.budget import BudgetExhaustedError, Spend
from ragas_ops.judge.openai.shape import shape_for
from ragas_ops.judge.tokens import estimate_chat_tokens
from ragas_ops.pricing import Price
from ragas_ops.prompts import OutputParseError, OutputT, Prompt


class AwaitingBatch(JudgeRowError):
    """The row needs an answer that the next batch (or sync retry) will bring. Never
    published: a pass that raised it is not the last."""


class BatchPassJudge:
    """The judge of one scoring pass (see the module's docstring). `sync_judge` builds the sync
    judge used for embeddings and for what batches did not answer; it is built only if needed.
    """

    def __init__(
        self,
        settings: JudgeSettings,
        price: Price | None,
        book: AnswerBook,
        sync_judge: Callable[[], Judge],
    ) -> None:
        self.settings = settings
        self.endpoint = endpoint_name(effective_base_url(settings.endpoint.base_url))
        self._price = price
        self._book = book
        self._build_sync_judge = sync_judge
        self._sync: Judge | None = None
        self._consumed: set[str] = set()
        self.pending: dict[str, BatchRequest] = {}
        """Requests this pass needs answered by a batch, in the order first asked."""
        self.sync_retries: dict[str, SyncRetry] = {}
        """Requests this pass needs answered in sync mode (batches did not answer them)."""
        self.batch_usage = Usage()
        self.events: Counter[str] = Counter()
        self._shape = shape_for(settings, self.events)
        """The model's request shape, from its profile: batch lines are fitted as sync
        requests are (a batch has no 400 to learn from before it is answered)."""

    @property
    def description(self) -> str:
        return describe_judge(self.settings.endpoint.model, self.endpoint)

    @property
    def embedding_description(self) -> str:
        return describe_judge(self.settings.endpoint.embedding_model, self.endpoint)

    def usage_total(self) -> Usage:
        total = Usage()
        total.add(self.batch_usage)
        if self._sync is not None:
            total.add(self._sync.usage_total())
        return total

    async def aclose(self) -> None:
        if self._sync is not None:
            await self._sync.aclose()

    def sync_events(self) -> Counter[str]:
        return Counter() if self._sync is None else self._sync.events

    @property
    def waiting(self) -> bool:
        """Whether this pass is not the last: some row waits for an answer."""
        return bool(self.pending or self.sync_retries)

    def _sync_judge(self) -> Judge:
        if self._sync is None:
            self._sync = self._build_sync_judge()
        return self._sync

    async def embed(self, texts: Sequence[str]) -> Embeddings:
        if self.waiting:
            raise AwaitingBatch("embeddings wait until this pass's requests are answered")
        return await self._sync_judge().embed(texts)

    async def complete(
        self, prompt: Prompt[OutputT], data: Mapping[str, Any], *, n: int = 1
    ) -> Completion[OutputT]:
        messages = chat_messages(self.settings.endpoint, prompt, data)
        params = chat_params(self.settings.endpoint, prompt, n, data, self._shape)
        texts, usage = self._answer(prompt, messages, params)
        single = {key: value for key, value in params.items() if key != "n"}
        while len(texts) < n:  # an endpoint that ignored `n`: top up, as the sync judge does
            more, more_usage = self._answer(prompt, messages, {**single, "seed": len(texts)})
            texts, usage = [*texts, *more], _sum(usage, more_usage)
        outputs = []
        for text in texts[:n]:
            try:
                outputs.append(prompt.parse(data, text))
            except OutputParseError as problem:
                self.events["repair"] += 1
                fixed, fixed_usage = self._answer(
                    prompt, repair_messages(messages, text, problem), single
                )
                usage.add(fixed_usage)
                try:
                    outputs.append(prompt.parse(data, fixed[0]))
                except OutputParseError as second_problem:
                    raise JudgeOutputError(
                        f"{prompt.id}: the judge's output did not follow the format after one "
                        f"repair attempt ({second_problem})",
                        usage,
                    ) from None
        return Completion(outputs, usage)

    def _answer(
        self, prompt: Prompt[Any], messages: list[dict[str, str]], params: dict[str, Any]
    ) -> tuple[list[str], Usage]:
        """The texts a batch answered for this request, or an exception that says why not."""
        custom_id = chat_cache_key(self.endpoint, prompt, params, messages)
        answer = self._book.answers.get(custom_id)
        if answer is not None:
            if custom_id in self._consumed:  # asked by another row too: paid once
                self.events["deduplicated"] += 1
                return list(answer.texts), Usage()
            self._consumed.add(custom_id)
            self.batch_usage.add(answer.usage)
            return list(answer.texts), _sum(Usage(), answer.usage)
        missing = self._book.unanswered.get(custom_id)
        if missing is not None:
            if missing.over_budget:
                raise BudgetExhaustedError(f"{prompt.id}: {missing.reason}")
            if self.settings.batch.on_unanswered == "sync" and not missing.sync_tried:
                self.sync_retries[custom_id] = SyncRetry(prompt, messages, params)
                raise AwaitingBatch(f"{prompt.id}: to be sent again in sync mode")
            raise JudgeUnavailableError(f"{prompt.id}: not answered: {missing.reason}")
        if custom_id not in self.pending:
            self.pending[custom_id] = BatchRequest(
                custom_id,
                {**self._shape.fit(params), "messages": messages},
                self._expected(messages, params),
            )
        raise AwaitingBatch(f"{prompt.id}: waiting for the batch to answer")

    def _expected(self, messages: list[dict[str, str]], params: Mapping[str, Any]) -> Spend:
        """At most what a request can cost: its prompt and `max_tokens` for each choice."""
        prompt_tokens = estimate_chat_tokens(messages)
        completion_tokens = int(params["max_tokens"]) * int(params.get("n", 1))
        usd = (
            0.0
            if self._price is None
            else self._price.cost(prompt_tokens, completion_tokens, batch=True)
        )
        return Spend(usd, prompt_tokens + completion_tokens)


def _sum(first: Usage, second: Usage) -> Usage:
    total = Usage()
    total.add(first)
    total.add(second)
    return total
