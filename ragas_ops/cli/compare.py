"""`ragas-ops compare-judges`: the judge of record against a candidate, per metric, on the
same rows: over a Parquet file or folder (both judges score the candidate's sample, after the
estimate of what that costs is printed), or over days of the warehouse (the candidate rows
the pipeline's shadow judge kept: nothing to pay)."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa

from ragas_ops.cli.options import COMPARE, add_setting_flags, settings_from_options
from ragas_ops.config import Settings


def add_compare_parser(commands: Any) -> None:
    compare = commands.add_parser(
        COMPARE,
        help="compare the judge with a candidate judge on the same rows (a shadow judge)",
        description="Compare the judge of record with a candidate ([judge.candidate], or "
        "--candidate-model / --candidate-kind / --candidate-base-url) per metric: both means "
        "on the same rows, their difference with a 95% paired bootstrap interval, and their "
        "agreement. Give INPUT (a Parquet file or folder: both judges score the rows the "
        "row-id hash picks at --candidate-sample, after the estimate is printed), or --from "
        "and --to for days of the warehouse (the candidate rows the pipeline kept).",
    )
    compare.add_argument("input", metavar="INPUT", nargs="?")
    compare.add_argument("--from", dest="first", metavar="DAY", help="first day of the warehouse")
    compare.add_argument("--to", dest="last", metavar="DAY", help="last day of the range")
    add_setting_flags(compare, COMPARE)
    compare.add_argument("--json", type=Path, metavar="PATH", help="also write it as JSON")
    compare.add_argument("-v", "--verbose", action="store_true")
    compare.set_defaults(run=run_compare)


def run_compare(options: argparse.Namespace) -> int:
    settings = settings_from_options(options)
    if bool(options.first) != bool(options.last):
        raise ValueError("--from and --to go together")
    if bool(options.input) == bool(options.first):
        raise ValueError("give either INPUT or --from and --to (days of the warehouse)")
    if options.input:
        lines, bounds = estimate_lines(options.input, settings)
        for line in lines:
            print(line, flush=True)
        table = _compare_input(options.input, settings, bounds)
    else:
        table = _compare_days(options.first, options.last, settings)
    print("\n".join(table_lines(table)))
    if options.json:
        options.json.write_text(json.dumps(table.to_pylist(), indent=2) + "\n")
    return 0


BOUND_FACTOR = 2.0
"""Each judge's budget for a comparison over a folder: this many times its estimate. The
estimate stands a reply in by the prompt's own output model; retries, repairs and longer
replies cost more (one run spent 1.33x its estimate), so the printed "at most" is this
budget, which the judge keeps (every request's most possible cost is held before it is sent):
a row past it is `budget_exhausted`, never paid."""


def estimate_lines(input_uri: str, settings: Settings) -> tuple[list[str], dict[str, float | None]]:
    """What both judges would spend on the sample, before anything is sent, and the budget
    each may spend (`BOUND_FACTOR` times its estimate, or `judge.budget_usd` when lower;
    None: no bound, its model has no price)."""
    from ragas_ops.estimate import Prices, estimate_input
    from ragas_ops.judge.factory import capabilities
    from ragas_ops.scoring.shadow import candidate_settings, candidate_share

    share = candidate_share(settings)
    lines = [f"estimate before any call (the sample: {share:g} of the rows, by row id):"]
    total: float | None = 0.0
    bounds: dict[str, float | None] = {}
    for role, judged in (("judge", settings), ("candidate", candidate_settings(settings))):
        sampled = dataclasses.replace(
            judged, pipeline=dataclasses.replace(judged.pipeline, sample_fraction=share)
        )
        tally = estimate_input(input_uri, sampled).total
        rows = f"{tally.rows_sampled:,} of {tally.rows:,} rows"
        if not capabilities(judged.judge).endpoint:  # e.g. the local judge: no API request
            cost: float | None = 0.0
            line = f"the {judged.judge.kind} judge: {rows}, no API request, {_usd(cost)}"
            bounds[role] = 0.0
        else:
            prices = Prices.of(judged)
            cost = prices.cost(tally, batch=False)
            tokens = tally.prompt_tokens + tally.completion_tokens
            line = (
                f"{prices.chat_model}: {rows}, {tally.chat_requests:,} requests, "
                f"{tokens:,} chat tokens, {_usd(cost)}"
            )
            configured = judged.judge.limits.budget_usd
            bound = None if cost is None else cost * BOUND_FACTOR
            if configured is not None:
                bound = configured if bound is None else min(bound, configured)
            bounds[role] = bound
        total = None if cost is None or total is None else total + cost
        lines.append(f"  {role:<10} {line}")
    values = list(bounds.values())
    most = None if None in values else sum(value or 0.0 for value in values)
    lines.append(
        f"  total about {_usd(total)}, at most {_usd(most)}: each judge's budget here is "
        f"{BOUND_FACTOR:g}x its estimate (or judge.budget_usd), a row past it is "
        "budget_exhausted (answers the cache holds are not paid again)"
    )
    return [*lines, ""], bounds


def shadow_estimate_lines(settings: Settings, estimate_for: Callable[[Settings], Any]) -> list[str]:
    """What a configured shadow judge adds to a run `ragas-ops estimate` estimated (none
    without one): `estimate_for` estimates the same input or days with other settings."""
    from ragas_ops.estimate import Prices
    from ragas_ops.judge.factory import capabilities
    from ragas_ops.scoring.shadow import candidate_settings, candidate_share

    if not settings.judge.candidate.enabled:
        return []
    share = candidate_share(settings)
    shadow = candidate_settings(settings)
    shadow = dataclasses.replace(
        shadow, pipeline=dataclasses.replace(shadow.pipeline, sample_fraction=share)
    )
    tally = estimate_for(shadow).total
    rows = f"{tally.rows_sampled:,} rows ({share:g} by row id)"
    if not capabilities(shadow.judge).endpoint:
        kind = shadow.judge.kind
        return ["", f"shadow judge ([judge.candidate]): the {kind} judge on {rows}, no API request"]
    prices = Prices.of(shadow)
    tokens = tally.prompt_tokens + tally.completion_tokens
    return [
        "",
        f"shadow judge ([judge.candidate]) {prices.chat_model} on at most {rows}: "
        f"{tally.chat_requests:,} requests, {tokens:,} chat tokens, "
        f"{_usd(prices.cost(tally, batch=False))} more (in sync, in every mode)",
    ]


def _compare_input(input_uri: str, settings: Settings, bounds: dict[str, float | None]) -> pa.Table:
    from ragas_ops.scoring.shadow import compare_folder

    outcome = asyncio.run(
        compare_folder(input_uri, settings, budgets=(bounds.get("judge"), bounds.get("candidate")))
    )
    pick = outcome.pick
    print(
        f"scored {pick.chosen:,} of {pick.rows:,} rows with both judges"
        + (f" ({pick.without_id:,} without an id, left out)" if pick.without_id else "")
        + f"; spent: judge {_usd(outcome.judge_usage.cost_usd)}, "
        f"candidate {_usd(outcome.candidate_usage.cost_usd)}"
    )
    return outcome.comparison


def _compare_days(first: str, last: str, settings: Settings) -> pa.Table:
    from ragas_ops.contract.layout import Lake
    from ragas_ops.estimate import day_range
    from ragas_ops.pipeline.shadow import compare_days

    days = day_range(first, last)
    lake = Lake(settings.pipeline)
    print(
        f"estimate: $0.0000, no judge is called: the candidate rows the pipeline kept in "
        f"{lake.warehouse.uri}, {days[0]} to {days[-1]}"
    )
    table, missing = compare_days(lake, days, settings)
    if missing:
        print(f"no candidate rows on {len(missing)} day(s): {', '.join(missing)}")
    if table.num_rows == 0:
        raise ValueError(
            "no day of the range has candidate rows: the pipeline keeps them when a shadow "
            "judge is configured ([judge.candidate], docs/configuration.md)"
        )
    return table


def table_lines(table: pa.Table) -> list[str]:
    """The comparison as text: per label (a day, a range, the folder), who was compared and
    a row per metric."""
    from ragas_ops.quality.judge_comparison import COMPARISON_HEADER, comparison_cells

    lines: list[str] = []
    rows = table.to_pylist()
    for label in dict.fromkeys(row["day"] for row in rows):
        mine = [row for row in rows if row["day"] == label]
        cells = [list(COMPARISON_HEADER), *(comparison_cells(row) for row in mine)]
        widths = [max(len(line[i]) for line in cells) for i in range(len(COMPARISON_HEADER))]
        lines += [
            "",
            f"{label}: candidate {mine[0]['candidate']} vs judge {mine[0]['judge']}",
        ]
        lines += [
            "  ".join(
                cell.ljust(width) if i == 0 else cell.rjust(width)
                for i, (cell, width) in enumerate(zip(line, widths, strict=True))
            )
            for line in cells
        ]
    lines += [
        "",
        "difference = candidate - judge, with its 95% paired bootstrap interval; pairs: rows "
        "both judges scored",
    ]
    return lines


def _usd(value: float | None) -> str:
    return "unknown" if value is None else f"${value:,.4f}"
