"""The outcome of one metric on one row. Every output row carries one per metric."""

from __future__ import annotations

from enum import StrEnum


class Status(StrEnum):
    """Why a score is there, or why it is not. Only `OK` rows have a score."""

    OK = "ok"
    """Scored; the evidence column says how."""
    INVALID_INPUT = "invalid_input"
    """The row breaks the input contract for this metric (the reason says how)."""
    NOT_APPLICABLE = "not_applicable"
    """The metric has no meaning for this row, e.g. faithfulness of an answer with no claims."""
    JUDGE_OUTPUT_INVALID = "judge_output_invalid"
    """The judge's reply did not follow the output format, even after one repair attempt."""
    JUDGE_OUTPUT_CUT = "judge_output_cut"
    """Every reply was cut at its output limit (`finish_reason: length`, no visible answer:
    a reasoning model that reasoned to its limit), even with the most room a request of its
    prompt may get: the row's spend stops there."""
    JUDGE_REJECTED = "judge_rejected"
    """The provider refused the request (HTTP 400/422, content filter)."""
    JUDGE_UNAVAILABLE = "judge_unavailable"
    """Retries ran out on rate limits, server errors or timeouts (or, in batch mode, the batch
    did not answer the request and `on_batch_unanswered = "status"`)."""
    BUDGET_EXHAUSTED = "budget_exhausted"
    """The run's budget (`judge.budget_usd` / `judge.budget_tokens`) was spent before this row."""
    UNSUPPORTED_LANGUAGE = "unsupported_language"
    """The judge cannot read the row's language: the local judge's rules and its English
    sentence model cover Latin-script text only (the reason names the script found). Score
    such rows with an LLM judge; counted among the failures, so it shows in the aggregates."""
    UNSUPPORTED_CRITERION = "unsupported_criterion"
    """The judge cannot apply a free-text criterion (`[criteria.<name>]`): the local judge's
    rules measure the paper's qualities only. Never a score; counted among the failures, so a
    criterion that no judge applied shows in the aggregates and the report."""
    NOT_SAMPLED = "not_sampled"
    """Left out by `pipeline.sample_fraction`: the same rows are left out on every rerun."""

    @property
    def is_failure(self) -> bool:
        """A failure is something to fix or retry; `not_applicable` is a defined result and
        `not_sampled` a choice."""
        return self not in (Status.OK, Status.NOT_APPLICABLE, Status.NOT_SAMPLED)
