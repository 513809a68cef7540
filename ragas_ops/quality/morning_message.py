"""What the morning message says, from the night's run manifest: the verdict, the metrics and
segments that moved (their mean with its interval, against the baseline), the cost, what to
worry about (a judge model shutting down, quiet days, rejected files, a failed shadow judge)
and the report's link. Plain data and text: the notifier (`ragas_ops.airflow.notify`) sends it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ragas_ops.notify.spec import NotifySpec
from ragas_ops.quality.daily_metrics import ALL

MOVED = ("regression", "improved")
"""The outcomes a finding is told for: the others did not move (or were not compared)."""


@dataclass
class MorningMessage:
    """One night's message, as fields (the `json` style sends them as they are) and as text."""

    day: str
    verdict: str
    """The regression check's verdict (`ok`, `warn`, `regression`, `not_checked`), or
    `not_finished` for a run that left no manifest."""
    summary: str
    moved: list[dict[str, Any]] = field(default_factory=list)
    rows: int | None = None
    cost_usd: float | None = None
    """None: no price is known for a model the night used ([prices])."""
    tokens: int = 0
    """Tokens the night's judge calls were billed for (prompt, completion and embedding)."""
    warnings: list[str] = field(default_factory=list)
    report_url: str | None = None

    @property
    def title(self) -> str:
        shown = {"ok": "OK", "warn": "watch", "regression": "REGRESSION"}
        return f"RAG quality {self.day}: {shown.get(self.verdict, self.verdict.replace('_', ' '))}"

    def text(self, bold: str = "*") -> str:
        """The message as lines of text (`bold`: the markup of the title, `*` for Slack's
        mrkdwn, nothing for plain text)."""
        lines = [f"{bold}{self.title}{bold}", self.summary]
        if self.moved:
            lines.append("Moved:")
            lines += [f"- {moved['sentence']}" for moved in self.moved]
        facts = []
        if self.rows is not None:
            facts.append(f"{self.rows:,} rows scored")
        if self.cost_usd is not None:
            facts.append(f"judge cost ${self.cost_usd:,.4f} ({self.tokens:,} tokens)")
        else:
            facts.append(f"{self.tokens:,} judge tokens, cost unknown (no price for the model)")
        if facts:
            lines.append(", ".join(facts))
        if self.warnings:
            lines.append("Warnings:")
            lines += [f"- {warning}" for warning in self.warnings]
        if self.report_url:
            lines.append(f"Report: {self.report_url}")
        return "\n".join(lines)

    def fields(self) -> dict[str, Any]:
        """The `json` style's body."""
        return {
            "day": self.day,
            "verdict": self.verdict,
            "summary": self.summary,
            "moved": self.moved,
            "rows": self.rows,
            "cost_usd": self.cost_usd,
            "tokens": self.tokens,
            "warnings": self.warnings,
            "report_url": self.report_url,
            "text": self.text(bold=""),
        }


def is_due(message: MorningMessage, spec: NotifySpec) -> bool:
    """Whether the message is sent under `notify.when`."""
    if spec.when == "always":
        return True
    return spec.when == "regressions" and message.verdict in ("regression", "not_finished")


def morning_message(day: str, manifest: Mapping[str, Any], spec: NotifySpec) -> MorningMessage:
    """The message of the night whose run wrote `manifest` (its final one, after the report)."""
    regression = manifest.get("regression") or {}
    plan = manifest.get("plan") or {}
    usage = (manifest.get("scoring") or {}).get("usage") or {}
    report = manifest.get("report") or {}
    return MorningMessage(
        day=day,
        verdict=str(regression.get("verdict", "not_checked")),
        summary=str(regression.get("summary") or "no regression check was made"),
        moved=[
            moved_finding(finding)
            for finding in regression.get("findings", [])
            if finding.get("outcome") in MOVED
        ],
        rows=plan.get("rows"),
        cost_usd=usage.get("cost_usd"),
        tokens=sum(
            int(usage.get(name) or 0)
            for name in ("prompt_tokens", "completion_tokens", "embedding_tokens")
        ),
        warnings=warnings_of(manifest),
        report_url=spec.report_url.format(day=day) if spec.report_url else report.get("html"),
    )


def unfinished_message(day: str, run_id: str, why: str) -> MorningMessage:
    """The message of a night that left no manifest: it failed before publishing."""
    return MorningMessage(
        day=day,
        verdict="not_finished",
        summary=f"the nightly run {run_id} did not publish the day: {why}",
        warnings=["nothing was published for this day: see the run's failed task in Airflow"],
    )


def moved_finding(finding: Mapping[str, Any]) -> dict[str, Any]:
    """A finding that moved, with the sentence the message shows: the metric (and segment),
    which way, today's mean with its 95% interval, the baseline and the change."""
    metric = str(finding["metric"])
    where = (
        f"{metric} (all rows)"
        if finding.get("segment_column") in (None, ALL)
        else f"{metric} for {finding['segment_column']}={finding['segment_value']}"
    )
    sentence = f"{where} {finding['outcome']}"
    mean, low, high = finding.get("mean"), finding.get("ci_low"), finding.get("ci_high")
    if mean is not None:
        sentence += f": {mean:.3f}"
        if low is not None and high is not None:
            sentence += f" (95% CI {low:.3f}-{high:.3f})"
    baseline, delta = finding.get("baseline"), finding.get("delta")
    if baseline is not None:
        sentence += f" vs baseline {baseline:.3f}"
        if delta is not None:
            sentence += f" ({delta:+.3f})"
    if finding.get("rows_scored") is not None:
        sentence += f", {finding['rows_scored']:,} rows"
    return {
        "metric": metric,
        "segment_column": finding.get("segment_column"),
        "segment_value": finding.get("segment_value"),
        "outcome": finding["outcome"],
        "mean": mean,
        "ci_low": low,
        "ci_high": high,
        "baseline": baseline,
        "delta": delta,
        "sentence": sentence,
    }


def warnings_of(manifest: Mapping[str, Any]) -> list[str]:
    """What someone should look at beyond the verdict, as sentences."""
    plan = manifest.get("plan") or {}
    warnings = [f"judge model shutting down: {text}" for text in plan.get("model_warnings", [])]
    if plan.get("no_traffic_reason"):
        quiet = plan.get("quiet_days") or 0
        warnings.append(
            f"no traffic: {plan['no_traffic_reason']}"
            + (f" ({quiet} quiet day(s) in a row)" if quiet else "")
        )
    alarm = manifest.get("input_alarm")
    if alarm:
        warnings.append(f"{alarm.get('title', 'input alarm')}: {alarm.get('message', '')}")
    rejected = plan.get("rejected_files") or []
    if rejected:
        warnings.append(
            f"{len(rejected)} input file(s) rejected, e.g. {rejected[0]['path']}: "
            f"{rejected[0]['reason']}"
        )
    if plan.get("derived_ids"):
        warnings.append(
            f"{plan['derived_ids']:,} row(s) without an id got derived ids (map yours with "
            "columns.id)"
        )
    candidate = manifest.get("candidate") or {}
    failed = candidate.get("failed_chunks") or []
    if failed:
        warnings.append(
            f"the shadow judge failed on {len(failed)} chunk(s), e.g. chunk "
            f"{failed[0]['chunk']}: {failed[0]['error']}"
        )
    return warnings
