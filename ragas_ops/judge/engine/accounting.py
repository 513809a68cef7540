"""The accounting: what the run may spend, what each request may cost while it is in flight,
and what every attempt did cost, charged to its row and to the run at once.

Under a budget (`judge.budget_usd`, `judge.budget_tokens`) a row starts only when the budget can
pay for it beside the rows under way (`limits.priority`), and a request holds its most possible
cost from the moment it is sent until its reply says what it cost."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Mapping

from ragas_ops.config import JudgeSettings
from ragas_ops.judge.base import JudgeFatalError, RowTicket, Usage
from ragas_ops.judge.engine.chat_request import chat_messages
from ragas_ops.judge.engine.request import Request
from ragas_ops.judge.engine.tiers import answered_tier
from ragas_ops.judge.engine.wire import ChatReply, EmbeddingReply, ReportedUsage
from ragas_ops.judge.limits.budget import Budget, Spend
from ragas_ops.judge.limits.priority import Decision, RowAdmission
from ragas_ops.judge.tokens import estimate_chat_tokens
from ragas_ops.pricing import Price, price_for


def budget_for(settings: JudgeSettings, chat_price: Price | None) -> Budget:
    """The run's budget; a budget in money needs a price for the judge model."""
    if settings.limits.budget_usd is not None and chat_price is None:
        raise JudgeFatalError(
            f"judge.budget_usd is set but model {settings.endpoint.model!r} has no price: add it "
            "to the [prices] table of the config file, or set judge.budget_tokens instead"
        )
    return Budget(settings.limits.budget_usd, settings.limits.budget_tokens)


class Accounting:
    """The run's budget, its rows under way, and the ledger of what was spent."""

    def __init__(self, settings: JudgeSettings, prices: Mapping[str, Price]) -> None:
        self.settings = settings
        self.chat_price = price_for(settings.endpoint.model, prices)
        self._embedding_price = price_for(settings.endpoint.embedding_model, prices)
        self.budget = budget_for(settings, self.chat_price)
        self.rows = RowAdmission(self.budget)
        """The rows under way, and whether the budget lets a new one start."""
        self.total = Usage()
        self._budget_settled = asyncio.Event()
        self._budget_queue: Counter[int] = Counter()
        """Requests waiting for budget, by the priority of their row."""

    def chat_spend(self, prompt_tokens: int, max_completion: int) -> Spend:
        """The most a chat request can cost."""
        price = self.chat_price
        usd = 0.0 if price is None else price.cost(prompt_tokens, max_completion)
        return Spend(usd, prompt_tokens + max_completion)

    def embedding_spend(self, tokens: int) -> Spend:
        """The most an embeddings request can cost."""
        usd = 0.0 if self._embedding_price is None else self._embedding_price.cost(tokens, 0)
        return Spend(usd, tokens)

    def charge(self, spent: Usage, usage: Usage) -> None:
        """Count `usage` on the row's ledger and in the run's total at once: they cannot drift."""
        spent.add(usage)
        self.total.add(usage)

    def usage_of(self, request: Request, reply: ChatReply | EmbeddingReply) -> Usage:
        """Tokens and cost of an answered request (its request is counted when sent)."""
        if isinstance(reply, ChatReply):
            return self._chat_usage(reply, request.tier)
        return self._embedding_usage(reply.usage)

    async def start_row(self, request: Request) -> None:
        """Under a budget, let the request's row start only when the budget can pay for it
        beside the rows under way (`ragas_ops.judge.limits.priority`); a row under way goes on."""
        row = request.row
        if row is None or not self.budget.limited or self.rows.started(row.ordinal):
            return
        expected = self._expected_spend(row)
        if row.sequence is not None and self._sequence_row_done not in row.sequence.listeners:
            row.sequence.listeners.append(self._sequence_row_done)
        self.rows.wait(row.ordinal)
        try:
            while not self.rows.started(row.ordinal):  # another metric may start it first
                decision = self.rows.decide(row, expected, in_flight=self.budget.in_flight)
                if decision is Decision.START:
                    row.listeners.append(self._row_finished)
                    return
                if decision is Decision.REFUSE:
                    raise self.budget.refuse(request.what)
                await self._budget_settled.wait()
        finally:
            self.rows.stop_waiting(row.ordinal)
            self._wake_budget_waiters()  # the first row in line changed

    async def reserve(self, request: Request) -> Spend:
        """Hold the most `request` can cost, at send time.

        When it fits only once requests in flight have settled (they usually cost less than
        their most), it waits for them instead of being refused, so the budget is used to
        within one request's worth. Requests of rows begun earlier go first.
        """
        budget = self.budget
        if not budget.limited:
            return budget.reserve(request.expected, request.what)
        rank = request.priority
        self._budget_queue[rank] += 1
        try:
            while True:
                first = rank <= min(r for r, waiting in self._budget_queue.items() if waiting)
                if first and budget.fits(request.expected, with_reserved=True):
                    reserved = budget.reserve(request.expected, request.what)
                    self.rows.reserve(request.ordinal, reserved)
                    return reserved
                if first and (
                    not budget.in_flight or not budget.fits(request.expected, with_reserved=False)
                ):
                    raise budget.refuse(request.what)
                await self._budget_settled.wait()
        finally:
            self._budget_queue[rank] -= 1
            if not self._budget_queue[rank]:
                del self._budget_queue[rank]
            self._wake_budget_waiters()  # the first in line changed

    def settle(self, request: Request, reserved: Spend, actual: Spend) -> None:
        """Replace what `request` held by what it cost (nothing: not answered)."""
        self.budget.settle(reserved, actual)
        if self.budget.limited:
            self.rows.settle(request.ordinal, reserved, actual)
        self._wake_budget_waiters()

    def _row_finished(self, row: RowTicket) -> None:
        self.rows.finish(row.ordinal)
        self._wake_budget_waiters()

    def _sequence_row_done(self, row: RowTicket) -> None:
        """A row of the run is finished, started or not: the rows after it may go."""
        self._wake_budget_waiters()

    def _wake_budget_waiters(self) -> None:
        """Those waiting for budget look again (a settle, a row done, a change of who is
        first)."""
        self._budget_settled.set()
        self._budget_settled = asyncio.Event()

    def _expected_spend(self, row: RowTicket) -> Spend:
        """What the row is expected to cost: its expected requests' messages counted as the
        judge counts them, their expected replies, at the model's price."""
        if row.expected is None:
            return Spend()
        prompt_tokens = completion_tokens = 0
        for expected in row.expected():
            messages = chat_messages(self.settings.endpoint, expected.prompt, expected.data)
            prompt_tokens += estimate_chat_tokens(messages)
            completion_tokens += expected.n * expected.completion_tokens
        return self.chat_spend(prompt_tokens, completion_tokens)

    def _chat_usage(self, reply: ChatReply, sent_tier: str | None) -> Usage:
        """Priced at the tier that answered it."""
        reported = reply.usage
        tier = answered_tier(reply.service_tier, sent_tier)
        return Usage(
            prompt_tokens=reported.prompt_tokens,
            cached_prompt_tokens=reported.cached_prompt_tokens,
            completion_tokens=reported.completion_tokens,
            reasoning_tokens=reported.reasoning_tokens,
            cost_usd=None
            if self.chat_price is None
            else self.chat_price.cost_at_tier(
                tier,
                reported.prompt_tokens,
                reported.completion_tokens,
                reported.cached_prompt_tokens,
            ),
            requests_by_tier={tier: 1},
        )

    def _embedding_usage(self, reported: ReportedUsage) -> Usage:
        return Usage(
            embedding_tokens=reported.prompt_tokens,
            cost_usd=None
            if self._embedding_price is None
            else self._embedding_price.cost(reported.prompt_tokens, 0),
        )
