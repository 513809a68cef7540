"""Scoring a chunk in batch mode: scoring passes, batch rounds, and a record that survives crashes.

    pass -> requests nobody answered yet -> round of batches -> wait (deferred) -> collect -> pass
         -> requests the batches did not answer -> sync retries (a round without batches) -> pass

`advance` moves a chunk as far as it can without waiting and says what it waits for. Its
record is kept in the warehouse, beside the tables (`Lake.batch_work`):

    state.json            the rounds: for each part, its key, its custom_ids and its batch id
    round-0001.jsonl      what the round's batches answered (or not), one request per line

so a retried task, a task restarted on another worker, or a rerun of the day re-attaches to
the batches already submitted instead of paying for them again. A part is recorded (key and
custom_ids) before its batch is created, and the batch carries the key in its metadata, so even
a crash between creating a batch and recording its id loses nothing (`BatchClient.submit`).
The record is keyed by the chunk's rows and the judge model, and removed when the day is
published.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from ragas_ops.config import Settings
from ragas_ops.contract.layout import Lake
from ragas_ops.judge.batch import (
    TERMINAL_STATUSES,
    AnswerBook,
    BatchAnswer,
    BatchMode,
    BatchPass,
    BatchRequest,
    Unanswered,
)
from ragas_ops.judge.factory import batch_mode
from ragas_ops.pipeline.plan import Chunk
from ragas_ops.pipeline.score import chunk_result, chunk_scorer, new_attempt_id, score_chunk_into
from ragas_ops.storage import Location

# Passes run back to back when a round sends nothing (everything over budget or too large);
# more than this means a bug, not a slow batch.
_MAX_PASSES_WITHOUT_WAITING = 8


@dataclass
class Part:
    """One batch input file of a round."""

    key: str
    custom_ids: list[str]
    batch_id: str | None = None


@dataclass
class Round:
    number: int
    kind: str = "batch"
    """`batch`, or `sync` for the retries of requests the batches did not answer."""
    parts: list[Part] = field(default_factory=list)
    not_sent: dict[str, Unanswered] = field(default_factory=dict)
    """Requests of the round not sent (over budget, too large for a batch file), and why."""
    collected: bool = False

    @property
    def batch_ids(self) -> list[str]:
        return [part.batch_id for part in self.parts if part.batch_id]


@dataclass
class BatchState:
    rounds: list[Round] = field(default_factory=list)

    def open_round(self) -> Round | None:
        return next((r for r in self.rounds if not r.collected), None)

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> BatchState:
        return cls(
            [
                Round(
                    number=r["number"],
                    kind=r["kind"],
                    parts=[Part(**part) for part in r["parts"]],
                    not_sent={key: Unanswered(**why) for key, why in r["not_sent"].items()},
                    collected=r["collected"],
                )
                for r in values["rounds"]
            ]
        )


@dataclass
class Waiting:
    """The chunk waits for these batches; ask again (`advance`) when they are finished."""

    batch_ids: list[str]


class BatchWork:
    """The record of one chunk's batches in the warehouse."""

    def __init__(self, lake: Lake, day: str, chunk: Chunk, settings: Settings) -> None:
        self.day = day
        self.chunk = chunk
        fingerprint = hashlib.sha256(
            json.dumps(
                {
                    "slices": [asdict(piece) for piece in chunk.slices],
                    "model": settings.judge.endpoint.model,
                },
                sort_keys=True,
            ).encode()
        ).hexdigest()[:16]
        self.folder = lake.batch_work(day).child(f"chunk-{chunk.index:05d}-{fingerprint}")
        self.key_prefix = f"{day}/chunk-{chunk.index:05d}/{fingerprint}"

    def load(self) -> BatchState:
        location = self.folder.child("state.json")
        if not location.exists():
            return BatchState()
        return BatchState.from_dict(json.loads(location.read_text()))

    def save(self, state: BatchState) -> None:
        self.folder.child("state.json").write_text(json.dumps(asdict(state), indent=1))

    def answers_file(self, number: int) -> Location:
        return self.folder.child(f"round-{number:04d}.jsonl")

    def answer_book(self, state: BatchState) -> AnswerBook:
        book = AnswerBook()
        for done in state.rounds:
            if not done.collected:
                continue
            for line in self.answers_file(done.number).read_text().splitlines():
                record = json.loads(line)
                if "unanswered" in record:
                    book.unanswered[record["custom_id"]] = Unanswered(**record["unanswered"])
                else:
                    book.answers[record["custom_id"]] = BatchAnswer.from_dict(record)
        return book

    def write_answers(self, number: int, book: AnswerBook) -> None:
        lines = [
            json.dumps({"custom_id": custom_id, **answer.to_dict()}, ensure_ascii=False)
            for custom_id, answer in book.answers.items()
        ] + [
            json.dumps({"custom_id": custom_id, "unanswered": asdict(missing)})
            for custom_id, missing in book.unanswered.items()
        ]
        self.answers_file(number).write_text("\n".join(lines) + "\n")


async def advance(
    lake: Lake,
    day: str,
    run_id: str,
    *,
    chunk: Chunk,
    settings: Settings,
    environ: Mapping[str, str] | None = None,
) -> Waiting | dict[str, Any]:
    """Move the chunk on: collect finished batches, run a scoring pass, submit what it still
    needs. Returns what it waits for, or, when the last pass is done, what the manifest records
    of the chunk (its table is then in the run's staging folder, as in sync mode)."""
    mode = batch_mode(settings, environ, lake.s3)
    work = BatchWork(lake, day, chunk, settings)
    try:
        for _ in range(_MAX_PASSES_WITHOUT_WAITING):
            state = work.load()
            open_round = state.open_round()
            if open_round is not None:
                waiting = await _submit_and_check(work, state, open_round, mode)
                if waiting is not None:
                    return waiting
                continue
            book = work.answer_book(state)
            outcome = await _scoring_pass(
                lake, day, run_id, chunk=chunk, settings=settings, judge=mode.pass_judge(book)
            )
            if isinstance(outcome, dict):
                batch_ids = [b for done in state.rounds for b in done.batch_ids]
                return {**outcome, "batches": batch_ids, "rounds": len(state.rounds)}
            if outcome.sync_retries:
                answered = await mode.send_in_sync(outcome.sync_retries, book)
                state.rounds.append(Round(len(state.rounds) + 1, kind="sync", collected=True))
                work.write_answers(state.rounds[-1].number, answered)
                work.save(state)
            if outcome.pending:
                number = len(state.rounds) + 1
                state.rounds.append(
                    _plan_round(work, number, list(outcome.pending.values()), book, mode)
                )
                work.save(state)  # parts are recorded before any batch is created
        raise RuntimeError(f"chunk {chunk.index}: no progress after {_MAX_PASSES_WITHOUT_WAITING}")
    finally:
        await mode.aclose()


async def _submit_and_check(
    work: BatchWork, state: BatchState, open_round: Round, mode: BatchMode
) -> Waiting | None:
    """Submit the round's parts not yet submitted, then collect the round if it is finished."""
    requests = work.folder.child(f"round-{open_round.number:04d}.requests")
    for index, part in enumerate(open_round.parts):
        if part.batch_id is None:
            content = requests.child(f"part-{index + 1:04d}.jsonl").read_text().encode()
            part.batch_id = await mode.submit(content, part.key)
            work.save(state)
    statuses = await mode.statuses(open_round.batch_ids)
    if not all(status in TERMINAL_STATUSES for status in statuses.values()):
        return Waiting(open_round.batch_ids)
    book = AnswerBook()
    for part in open_round.parts:
        assert part.batch_id is not None
        results = await mode.results(part.batch_id, part.custom_ids)
        book.answers.update(results.answers)
        book.unanswered.update(results.unanswered)
    book.unanswered.update(open_round.not_sent)
    work.write_answers(open_round.number, book)
    open_round.collected = True
    work.save(state)
    requests.delete_tree()
    return None


def _plan_round(
    work: BatchWork,
    number: int,
    requests: list[BatchRequest],
    book: AnswerBook,
    mode: BatchMode,
) -> Round:
    """The next round: the requests the budget can pay for, cut into batch files (written to
    the record before anything is sent)."""
    planned = mode.plan(requests, book)
    round_ = Round(number, not_sent=dict(planned.not_sent))
    folder = work.folder.child(f"round-{number:04d}.requests")
    for index, (content, custom_ids) in enumerate(planned.files, start=1):
        folder.child(f"part-{index:04d}.jsonl").write_text(content.decode())
        round_.parts.append(Part(f"{work.key_prefix}/round-{number}/part-{index}", custom_ids))
    if not round_.parts:  # nothing to send: the next pass reads `not_sent` as the answers
        round_.collected = True
        work.write_answers(number, AnswerBook(unanswered=dict(round_.not_sent)))
    return round_


async def _scoring_pass(
    lake: Lake,
    day: str,
    run_id: str,
    *,
    chunk: Chunk,
    settings: Settings,
    judge: BatchPass,
) -> dict[str, Any] | BatchPass:
    """One pass over the chunk: its result if nothing is missing, else the pass's judge, which
    holds the requests still missing."""
    started = time.monotonic()
    scorer = chunk_scorer(settings, judge)
    finished = await score_chunk_into(  # a pass still waiting for answers discards its file
        lake,
        day,
        run_id,
        chunk=chunk,
        settings=settings,
        scorer=scorer,
        complete=lambda: not judge.waiting,
    )
    if not finished:
        return judge
    events = judge.events + judge.sync_events()
    result = chunk_result(chunk, scorer, judge, started, mode="batch", attempt=new_attempt_id())
    result["events"] = dict(events)
    return result
