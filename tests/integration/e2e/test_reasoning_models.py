"""`ragas-ops score` against today's models, over HTTP against the test judge playing them: a
request that fits the model (its profile, or learnt from the endpoint's 400s), reasoning tokens
counted as the provider counts them, and a run refused the same way stopped early."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from ragas_ops_testing.judge_server import JudgeServer

from ragas_ops.cli.main import EXIT_JUDGE, EXIT_OK, EXIT_USAGE, main
from ragas_ops.estimate import estimate_input
from ragas_ops.samples import sample_interactions
from ragas_ops.scoring.jobs import score_file
from tests.support import TEST_KEY, settings_for

ROWS = 40
METRICS = ("faithfulness", "answer_relevance", "context_relevance")
GATEWAY_MODEL = "acme-reasoner"
"""A model no profile names, on a gateway that serves it as a gpt-5.1-kind reasoning model."""
PRICE = (0.25, 2.0)
EMBEDDING_PRICE = 0.02


@pytest.fixture
def gateway(start_judge_server: Callable[..., JudgeServer]) -> JudgeServer:
    return start_judge_server(model_aliases={GATEWAY_MODEL: "gpt-5.4-mini"})


def score(
    server: JudgeServer, tmp_path: Path, model: str, *extra: str, name: str = "scored"
) -> tuple[int, Path]:
    source = tmp_path / "logs.parquet"
    if not source.exists():
        pq.write_table(sample_interactions(ROWS, seed=3), source)
    config = tmp_path / "prices.toml"
    config.write_text(
        f'[prices."{model}"]\ninput_per_million = {PRICE[0]}\noutput_per_million = {PRICE[1]}\n'
        f'[prices."test-embedding"]\ninput_per_million = {EMBEDDING_PRICE}\n'
    )
    target = tmp_path / f"{name}.parquet"
    args = [
        "score", str(source), str(target), "--config", str(config),
        "--base-url", server.base_url, "--model", model, "--embedding-model", "test-embedding",
        "--cache", str(tmp_path / f"{name}.sqlite"), "--rpm", "none", "--tpm", "none",
        "--no-progress", *extra,
    ]  # fmt: skip
    return main(args), target


def judge_statuses(path: Path) -> list[str]:
    table = pq.read_table(path)
    return [
        status
        for metric in METRICS
        for status in table.column(f"{metric}_status").to_pylist()
        if status.startswith(("judge_", "budget"))
    ]


def test_an_unknown_reasoning_model_is_learnt_and_every_row_scored(
    gateway: JudgeServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """No profile, no effort set: it refuses max_tokens, then temperature; the judge adapts
    after at most two refusals of each kind, and the server's default effort (medium) is
    spent, counted and billed."""
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    code, target = score(gateway, tmp_path, GATEWAY_MODEL)
    out = capsys.readouterr()
    assert code == EXIT_OK, out.err
    assert judge_statuses(target) == []
    stats = gateway.stats()
    refused = stats["refused_by_param"]
    assert set(refused) == {"max_tokens", "temperature"}
    assert max(refused.values()) <= 2
    table = pq.read_table(target)
    completion = sum(table.column("completion_tokens").to_pylist())
    prompt = sum(table.column("prompt_tokens").to_pylist())
    assert completion == stats["completion_tokens"]  # reasoning included, row by row
    assert prompt == stats["prompt_tokens"]
    assert stats["reasoning_tokens"] > 0
    assert f"{completion:,} completion ({stats['reasoning_tokens']:,} reasoning)" in out.out
    cost = sum(table.column("cost_usd").to_pylist())
    embedded = stats["embedding_tokens"] * EMBEDDING_PRICE
    assert cost == pytest.approx((prompt * PRICE[0] + completion * PRICE[1] + embedded) / 1e6)


def test_an_unknown_reasoning_model_behind_a_gateway_sending_param_null_scores_every_row(
    start_judge_server: Callable[..., JudgeServer],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A gateway passes the model's refusals on with `"param": null` and `"code": null` (the
    parameter named only in OpenAI's message): the judge reads the message, adapts after at
    most two refusals of each kind, and every row is scored (before: the run stopped after 3
    requests, saying "check judge.model")."""
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    server = start_judge_server(
        model_aliases={"acme-thinker-2": "gpt-5-mini"}, refusal_param_null=True
    )

    code, target = score(server, tmp_path, "acme-thinker-2")

    out = capsys.readouterr()
    assert code == EXIT_OK, out.err
    assert judge_statuses(target) == []
    assert pq.read_table(target).num_rows == ROWS
    refused = server.stats()["refused_by_param"]
    assert set(refused) == {"max_tokens", "temperature"}  # the server's own count
    assert max(refused.values()) <= 2
    assert server.stats()["reasoning_tokens"] > 0


def test_a_lower_effort_spends_fewer_tokens_for_the_same_scores(
    gateway: JudgeServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    spent = {}
    for effort in ("provider", "low"):
        gateway.reset_stats()
        code, target = score(
            gateway, tmp_path, GATEWAY_MODEL, "--reasoning-effort", effort, name=effort
        )
        assert code == EXIT_OK
        assert judge_statuses(target) == []
        spent[effort] = gateway.stats()["reasoning_tokens"]
    assert 0 < spent["low"] < spent["provider"] / 2
    provider, low = (pq.read_table(tmp_path / f"{name}.parquet") for name in ("provider", "low"))
    for metric in METRICS:
        column = f"{metric}_score"
        assert low.column(column).to_pylist() == provider.column(column).to_pylist()


def test_a_known_reasoning_model_is_asked_at_its_lowest_effort_with_no_refusal(
    start_judge_server: Callable[..., JudgeServer],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    server = start_judge_server(request_log=True)
    code, target = score(server, tmp_path, "gpt-5-mini")
    assert code == EXIT_OK
    assert judge_statuses(target) == []
    assert server.stats()["refused_by_param"] == {}
    bodies = [
        json.loads(entry["body"]) for entry in server.requests() if entry["endpoint"] == "chat"
    ]
    assert {body["reasoning_effort"] for body in bodies} == {"minimal"}
    assert all("max_completion_tokens" in body for body in bodies)
    assert not any("temperature" in body or "max_tokens" in body for body in bodies)


@pytest.mark.parametrize(
    ("extra", "setting"),
    [
        (("--reasoning-effort", "minimal"), "judge.reasoning_effort"),
        (("--service-tier", "flex"), "judge.service_tier"),
    ],
)
def test_a_run_refused_the_same_way_stops_within_ten_requests_naming_the_setting(
    start_judge_server: Callable[..., JudgeServer],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    extra: tuple[str, ...],
    setting: str,
) -> None:
    """An effort the operator chose that the model lacks; flex on a gateway's classic model."""
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    server = start_judge_server(
        model_aliases={GATEWAY_MODEL: "gpt-5.4-mini", "acme-classic": "gpt-4o-mini"}
    )
    model = GATEWAY_MODEL if setting == "judge.reasoning_effort" else "acme-classic"
    code, _ = score(server, tmp_path, model, *extra)
    err = capsys.readouterr().err
    assert code == EXIT_JUDGE
    assert server.stats()["requests_by_endpoint"]["chat"] <= 10
    [line] = [line for line in err.splitlines() if "stopping" in line]
    assert setting in line
    assert "takes that family's profile with judge.model_profile" in line
    assert TEST_KEY not in err


def test_an_effort_the_profile_lacks_is_refused_before_any_request(
    judge_server: JudgeServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    code, _ = score(judge_server, tmp_path, "gpt-5-mini", "--reasoning-effort", "none")
    assert code == EXIT_USAGE
    assert "judge.reasoning_effort: 'none' is not an effort of model 'gpt-5-mini'" in (
        capsys.readouterr().err
    )
    assert judge_server.stats()["requests"] == 0


@pytest.mark.parametrize("effort", ["lowest", "high"])
def test_the_estimate_of_a_reasoning_model_is_within_15_percent_of_its_run(
    judge_server: JudgeServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    effort: str,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    source = tmp_path / "logs.parquet"
    pq.write_table(sample_interactions(ROWS, seed=4), source)
    settings = settings_for(judge_server, tmp_path, model="gpt-5-mini", reasoning_effort=effort)
    settings.judge.cache.path = None

    estimated = estimate_input(str(source), settings)
    assert judge_server.stats()["requests"] == 0
    asyncio.run(score_file(str(source), str(tmp_path / "scored.parquet"), settings, progress=False))
    real = judge_server.stats()

    tally = estimated.total
    assert tally.reasoning_tokens == pytest.approx(real["reasoning_tokens"], rel=0.15)
    assert tally.prompt_tokens + tally.completion_tokens == pytest.approx(
        real["prompt_tokens"] + real["completion_tokens"], rel=0.15
    )
    shown = "minimal" if effort == "lowest" else effort
    [line] = [line for line in estimated.lines() if line.startswith("reasoning:")]
    assert line.startswith(f"reasoning: profile gpt-5, effort {shown}: about ")


def test_a_model_shutting_down_in_20_days_is_warned_of_in_the_score_output(
    start_judge_server: Callable[..., JudgeServer],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    ends = (datetime.now(UTC) + timedelta(days=20)).date().isoformat()
    server = start_judge_server(shutdown_dates={"gpt-4o-mini": ends})
    code, _ = score(server, tmp_path, "gpt-4o-mini")
    out = capsys.readouterr().out
    assert code == EXIT_OK
    [line] = [line for line in out.splitlines() if line.startswith("warning: ")]
    assert f"judge model gpt-4o-mini shuts down on {ends} (in 20 days)" in line
    assert "the price table's successor is gpt-5.4-mini" in line
    assert server.stats()["model_lookups"] == {"gpt-4o-mini": 1, "test-embedding": 1}

    server.update(shutdown_dates={})  # 2027-01-14, 40 days ahead: past the 30 days
    code, _ = score(server, tmp_path, "gpt-4o-mini", name="later")
    assert code == EXIT_OK
    assert "warning: " not in capsys.readouterr().out


def test_an_endpoint_that_cannot_say_gives_no_warning_and_no_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from ragas_ops.config import Settings
    from ragas_ops.judge.factory import shutdown_warnings

    settings = Settings()
    settings.judge.endpoint.base_url = "http://127.0.0.1:9/v1"  # nothing listens on port 9
    assert shutdown_warnings(settings, {"OPENAI_API_KEY": TEST_KEY}) == []


def test_an_endpoint_that_cannot_say_leaves_the_projects_own_shutdown_dates(
    tmp_path: Path,
) -> None:
    """gpt-5-mini's date (2026-12-11, OpenAI's deprecations page, docs/judge.md) is warned of
    through a gateway that answers no lookup, with OpenAI's named replacement."""
    from ragas_ops.config import Settings
    from ragas_ops.judge.factory import shutdown_warnings

    settings = Settings()
    settings.judge.endpoint.base_url = "http://127.0.0.1:9/v1"  # nothing listens on port 9
    settings.judge.endpoint.model = "gpt-5-mini"
    [warning] = shutdown_warnings(settings, {"OPENAI_API_KEY": TEST_KEY})
    assert "judge model gpt-5-mini shut" in warning
    assert "2026-12-11" in warning
    assert "the price table's successor is gpt-6.1-terra" in warning


@pytest.mark.parametrize(
    ("strategy", "ignore_n"), [("list", False), ("sample", False), ("sample", True)]
)
def test_answer_relevance_keeps_its_questions_on_a_model_taking_only_temperature_1(
    start_judge_server: Callable[..., JudgeServer],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    strategy: str,
    ignore_n: bool,
) -> None:
    """One request asking for n questions (the default), n choices at the model's own
    temperature, or n requests (an endpoint without `n`): no temperature sent, every row's
    n questions come back (docs/judge.md has what each costs)."""
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    server = start_judge_server(ignore_n=ignore_n, request_log=True)
    code, target = score(
        server, tmp_path, "gpt-5-mini", "--metrics", "answer_relevance",
        "--question-strategy", strategy,
    )  # fmt: skip
    assert code == EXIT_OK
    table = pq.read_table(target)
    statuses = set(table.column("answer_relevance_status").to_pylist())
    assert statuses <= {"ok", "invalid_input"}
    assert server.stats()["refused_by_param"] == {}
    bodies = [
        json.loads(entry["body"]) for entry in server.requests() if entry["endpoint"] == "chat"
    ]
    assert not any("temperature" in body for body in bodies)
    evidence = [
        json.loads(text) for text in table.column("answer_relevance_evidence").to_pylist() if text
    ]
    assert evidence
    assert all(len(item["questions"]) == 3 for item in evidence)


def test_a_retired_model_stops_the_run_at_once_naming_the_model(
    judge_server: JudgeServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    code, _ = score(judge_server, tmp_path, "gpt-4.5-preview")
    err = capsys.readouterr().err
    assert code == EXIT_JUDGE
    assert "does not know this model or path (HTTP 404)" in err
    assert "gpt-4.5-preview" in err
    assert judge_server.stats()["requests_by_endpoint"]["chat"] <= 3
