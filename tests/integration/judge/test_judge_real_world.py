"""`ragas-ops score` against endpoints that misbehave: a mix of every fault, unreachable
endpoints, base URLs with credentials or bad ports, reruns after unusable replies, and two
endpoints serving the same model name. Over real HTTP, the CLI in a process of its own."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from ragas_ops_testing.judge_process import free_port
from ragas_ops_testing.judge_server import JudgeServer

from ragas_ops.cli.main import EXIT_JUDGE, EXIT_OK, EXIT_UNREACHABLE, EXIT_USAGE
from ragas_ops.contract.status import Status
from ragas_ops.samples import sample_interactions
from tests.support import TEST_KEY

METRICS = ("faithfulness", "answer_relevance", "context_relevance")
# The mix: 20% 429, 5% 5xx, 5% malformed JSON content, 2% HTML 200, 2% truncated
# body, 1% resets, 1% hangs.
FAULT_MIX = {
    "rate_429": 0.20,
    "rate_5xx": 0.05,
    "rate_malformed": 0.05,
    "rate_html": 0.02,
    "rate_truncated_body": 0.02,
    "rate_reset": 0.01,
    "rate_timeout": 0.01,
    "hang_seconds": 3.0,
    "retry_after_seconds": 0.01,
}


def write_sample(path: Path, rows: int, seed: int = 1) -> pa.Table:
    table = sample_interactions(rows, seed=seed)
    pq.write_table(table, path)
    return table


def score(
    base_url: str, source: Path, target: Path, cache: Path, *extra: str, key: str = TEST_KEY
) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "ragas_ops.cli", "score", str(source), str(target)]
    command += ["--base-url", base_url, "--model", "gpt-4o-mini"]
    command += ["--embedding-model", "text-embedding-3-small", "--cache", str(cache)]
    command += ["--rpm", "none", "--tpm", "none", "--no-progress", *extra]
    env = {**os.environ, "OPENAI_API_KEY": key, "PYTHONPATH": os.getcwd()}
    return subprocess.run(
        command, capture_output=True, text=True, env=env, timeout=300, check=False
    )


def statuses(table: pa.Table, metric: str) -> list[str]:
    return [str(status) for status in table.column(f"{metric}_status").to_pylist()]


def stats_once_hangs_ended(server: JudgeServer, hang_seconds: float) -> dict[str, Any]:
    """The server's stats once nothing is in flight: it answers the requests it hung after
    `hang_seconds` whether the client still waits or not, and a run may end sooner."""
    deadline = time.monotonic() + hang_seconds + 2.0
    stats = server.stats()
    while stats["in_flight"] and time.monotonic() < deadline:
        time.sleep(0.1)
        stats = server.stats()
    return stats


def test_score_through_every_fault_at_once(
    start_judge_server: Callable[..., JudgeServer], tmp_path: Path
) -> None:
    server = start_judge_server(seed=15, **FAULT_MIX)
    source = write_sample(tmp_path / "logs.parquet", rows=60, seed=4)
    target = tmp_path / "scored.parquet"

    finished = score(
        server.base_url, tmp_path / "logs.parquet", target, tmp_path / "c.sqlite",
        "--timeout", "1", "--concurrency", "16",
    )  # fmt: skip

    assert finished.returncode == EXIT_OK, finished.stderr
    assert "Traceback" not in finished.stderr + finished.stdout
    scored = pq.read_table(target)
    assert scored.num_rows == source.num_rows
    assert scored.column("id").to_pylist() == source.column("id").to_pylist()
    for metric in METRICS:
        for status, reason in zip(
            statuses(scored, metric), scored.column(f"{metric}_reason").to_pylist(), strict=True
        ):
            assert Status(status) in Status
            assert not Status(status).is_failure or reason
    stats = stats_once_hangs_ended(server, FAULT_MIX["hang_seconds"])
    for fault in ("429", "5xx", "malformed", "html", "truncated_body", "reset", "timeout"):
        assert stats["injected"][fault] > 0, fault
    # Every request the server received is on the row that made it; so are the tokens of
    # every reply that came back (those the server sent after a hang, to a client that had
    # given up, nobody can count: a provider bills them all the same).
    assert sum(scored.column("judge_requests").to_pylist()) == stats["requests_by_endpoint"]["chat"]
    assert stats["hung_prompt_tokens"] > 0
    assert (
        sum(scored.column("prompt_tokens").to_pylist())
        == stats["prompt_tokens"] - stats["hung_prompt_tokens"]
    )
    assert (
        sum(scored.column("completion_tokens").to_pylist())
        == stats["completion_tokens"] - stats["hung_completion_tokens"]
    )
    printed = finished.stdout  # the run's totals: the same figures
    assert f"requests: {stats['requests_by_endpoint']['chat']:,} chat" in printed
    assert f"cost: ${sum(scored.column('cost_usd').to_pylist()):,.4f}" in printed
    assert "bad_reply" in printed


def test_an_unreachable_endpoint_stops_the_run_with_its_own_exit_code(tmp_path: Path) -> None:
    write_sample(tmp_path / "logs.parquet", rows=30)
    nobody = f"http://127.0.0.1:{free_port()}/v1"

    finished = score(nobody, tmp_path / "logs.parquet", tmp_path / "out.parquet", tmp_path / "c")

    assert finished.returncode == EXIT_UNREACHABLE
    assert "did not answer: 20 attempts failed and none succeeded" in finished.stderr
    assert "Connect" in finished.stderr  # what failed: the connection
    assert "Traceback" not in finished.stderr
    assert not (tmp_path / "out.parquet").exists()


def test_a_base_url_with_credentials_is_refused_without_showing_them(tmp_path: Path) -> None:
    write_sample(tmp_path / "logs.parquet", rows=5)
    secret = "sk-" + "inurl-0123456789abcdefghij"

    finished = score(
        f"http://user:{secret}@127.0.0.1:9/v1",
        tmp_path / "logs.parquet",
        tmp_path / "out.parquet",
        tmp_path / "c",
    )

    assert finished.returncode == EXIT_USAGE
    assert "credentials never travel in a URL" in finished.stderr
    assert secret not in finished.stderr + finished.stdout
    assert secret[-8:] not in finished.stderr + finished.stdout
    assert "Traceback" not in finished.stderr


def test_a_base_url_with_a_key_in_its_query_string_is_refused_before_any_request(
    judge_server: JudgeServer, tmp_path: Path
) -> None:
    write_sample(tmp_path / "logs.parquet", rows=5)
    secret = "sk-" + "inquery-0123456789abcdefghij"

    finished = score(
        f"{judge_server.base_url}?api_key={secret}",
        tmp_path / "logs.parquet",
        tmp_path / "out.parquet",
        tmp_path / "c",
    )

    assert finished.returncode == EXIT_USAGE
    assert "query string or fragment" in finished.stderr
    assert "Traceback" not in finished.stderr
    assert secret[-8:] not in finished.stderr + finished.stdout
    assert judge_server.stats()["requests"] == 0  # the key never reached a request line


@pytest.mark.parametrize("dummy", ["x", "EMPTY", "none", "sk-no-key-required"])
def test_a_dummy_key_of_a_self_hosted_endpoint_never_changes_a_reply(
    judge_server: JudgeServer, tmp_path: Path, dummy: str
) -> None:
    """Self-hosted endpoints take any key; what users give them is no secret, and searching
    the replies for it would rewrite their words ("e[redacted]planation")."""
    logs = sample_interactions(12, seed=2)
    # Answers that use the dummies as words, as the judge's statements will.
    said = " The limit was none, not EMPTY, and the key was sk-no-key-required."
    answers = [answer + said if answer else answer for answer in logs["answer"].to_pylist()]
    logs = logs.set_column(logs.schema.get_field_index("answer"), "answer", pa.array(answers))
    pq.write_table(logs, tmp_path / "logs.parquet")
    runs: dict[str, pa.Table] = {}
    for key in (TEST_KEY, dummy):
        target = tmp_path / f"{len(runs)}.parquet"
        finished = score(
            judge_server.base_url, tmp_path / "logs.parquet", target,
            tmp_path / f"cache-{len(runs)}.sqlite", key=key,
        )  # fmt: skip
        assert finished.returncode == EXIT_OK, finished.stderr
        runs[key] = pq.read_table(target)

    with_key, with_dummy = runs[TEST_KEY], runs[dummy]
    assert "[redacted]" not in str(with_dummy.to_pylist())
    assert said.strip() in str(with_dummy.column("faithfulness_evidence").to_pylist())
    for metric in METRICS:
        assert statuses(with_dummy, metric).count(Status.OK) > 0
        for part in ("score", "status", "reason", "evidence"):
            column = f"{metric}_{part}"
            assert with_dummy.column(column) == with_key.column(column), column


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("http://127.0.0.1:99999/v1", "invalid port '99999'"),
        ("127.0.0.1:8787/v1", "must start with http:// or https://"),
        ("http:///v1", "has no host"),
        ("http://127.0.0.1:9/v1#top", "query string or fragment"),
    ],
)
def test_a_bad_base_url_is_a_configuration_error(tmp_path: Path, url: str, message: str) -> None:
    write_sample(tmp_path / "logs.parquet", rows=5)

    finished = score(url, tmp_path / "logs.parquet", tmp_path / "out.parquet", tmp_path / "c")

    assert finished.returncode == EXIT_USAGE
    assert message in finished.stderr
    assert "Traceback" not in finished.stderr


def test_a_rerun_pays_nothing_for_unusable_replies_until_asked_to_retry_them(
    start_judge_server: Callable[..., JudgeServer], tmp_path: Path
) -> None:
    server = start_judge_server(rate_malformed=1.0)  # every reply, and every repair, unusable
    write_sample(tmp_path / "logs.parquet", rows=12, seed=2)
    cache = tmp_path / "cache.sqlite"
    args = (server.base_url, tmp_path / "logs.parquet")

    first = score(*args, tmp_path / "first.parquet", cache, "--metrics", "faithfulness")
    assert first.returncode == EXIT_OK, first.stderr
    paid = server.stats()["requests"]
    assert paid > 0
    assert set(statuses(pq.read_table(tmp_path / "first.parquet"), "faithfulness")) <= {
        "judge_output_invalid",
        "not_applicable",
        "invalid_input",
    }

    rerun = score(*args, tmp_path / "rerun.parquet", cache, "--metrics", "faithfulness")
    assert rerun.returncode == EXIT_OK, rerun.stderr
    assert server.stats()["requests"] == paid  # the stored outcomes, not new requests
    again = pq.read_table(tmp_path / "rerun.parquet")
    assert statuses(again, "faithfulness") == statuses(
        pq.read_table(tmp_path / "first.parquet"), "faithfulness"
    )
    assert sum(again.column("judge_requests").to_pylist()) == 0
    reasons = [
        reason
        for status, reason in zip(
            statuses(again, "faithfulness"),
            again.column("faithfulness_reason").to_pylist(),
            strict=True,
        )
        if status == "judge_output_invalid"
    ]
    assert reasons
    assert all("(stored; --retry-failed asks again)" in reason for reason in reasons)

    server.update(rate_malformed=0.0)
    retried = score(
        *args, tmp_path / "retried.parquet", cache, "--metrics", "faithfulness", "--retry-failed"
    )
    assert retried.returncode == EXIT_OK, retried.stderr
    assert server.stats()["requests"] > paid
    assert "judge_output_invalid" not in statuses(
        pq.read_table(tmp_path / "retried.parquet"), "faithfulness"
    )
    # The good answers replaced the stored failures: the next rerun pays nothing.
    settled = server.stats()["requests"]
    last = score(*args, tmp_path / "last.parquet", cache, "--metrics", "faithfulness")
    assert last.returncode == EXIT_OK
    assert server.stats()["requests"] == settled


def test_another_endpoint_never_gets_a_cached_answer_of_the_first(
    start_judge_server: Callable[..., JudgeServer], tmp_path: Path
) -> None:
    double, provider = start_judge_server(), start_judge_server()
    write_sample(tmp_path / "logs.parquet", rows=8)
    cache = tmp_path / "shared-cache.sqlite"

    from_double = score(double.base_url, tmp_path / "logs.parquet", tmp_path / "a.parquet", cache)
    from_provider = score(
        provider.base_url, tmp_path / "logs.parquet", tmp_path / "b.parquet", cache
    )

    assert from_double.returncode == from_provider.returncode == EXIT_OK
    assert provider.stats()["requests"] == double.stats()["requests"] > 0
    names = {
        pq.read_table(tmp_path / name).column("judge")[0].as_py()
        for name in ("a.parquet", "b.parquet")
    }
    assert names == {
        f"openai:gpt-4o-mini@127.0.0.1:{double.port}",
        f"openai:gpt-4o-mini@127.0.0.1:{provider.port}",
    }


class _EchoingGateway:
    """A gateway written for this test, not the project's double: every request is refused
    with a 400 whose message echoes the caller's key the ways gateways were seen to (hex, the
    key without its "sk-", its last 8 characters, upper-cased), or a 401 that does the same."""

    def __init__(self, status: int, quote_in_reply: bool = False, escaped: bool = False) -> None:
        import http.server
        import json
        import threading

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                key = (self.headers.get("Authorization") or "").removeprefix("Bearer ")
                message = (
                    f"invalid request for key hex={key.encode().hex()} body={key[3:]} "
                    f"tail=****{key[-8:]} upper={key.upper()}"
                )
                body = json.dumps({"error": {"message": message, "type": "invalid_request"}})
                if quote_in_reply:  # a well-formed reply whose content quotes the key
                    content = json.dumps({"statements": [f"The key is {key}.", message]})
                    if escaped:  # every character of the key as a JSON \\uXXXX escape
                        content = content.replace(key, "".join(f"\\u{ord(c):04x}" for c in key))
                    body = json.dumps(
                        {
                            "id": "chatcmpl-echo",
                            "object": "chat.completion",
                            "created": 0,
                            "model": "gpt-4o-mini",
                            "choices": [
                                {
                                    "index": 0,
                                    "message": {"role": "assistant", "content": content},
                                    "finish_reason": "stop",
                                }
                            ],
                            "usage": {
                                "prompt_tokens": 9,
                                "completion_tokens": 9,
                                "total_tokens": 18,
                            },
                        }
                    )
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body.encode())

            def log_message(self, format: str, *args: object) -> None:
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.mark.parametrize(
    ("status", "escaped"), [(400, False), (401, False), (200, False), (200, True)]
)
def test_a_gateway_echoing_the_key_in_other_shapes_leaks_none_of_them(
    status: int, escaped: bool, tmp_path: Path
) -> None:
    """400 and 401: in an error message; 200: in a well-formed reply, which becomes evidence
    and a cache entry, the key written plainly or as JSON escapes (`\\u0073\\u006b...`)."""
    key = "sk-" + "canary-7Qx9ZtP3wLm2AbCd"
    gateway = _EchoingGateway(status, quote_in_reply=status == 200, escaped=escaped)
    try:
        write_sample(tmp_path / "logs.parquet", rows=4)
        target = tmp_path / "scored.parquet"
        finished = score(
            gateway.base_url, tmp_path / "logs.parquet", target, tmp_path / "c.sqlite",
            "--max-attempts", "1", "--metrics", "faithfulness", key=key,
        )  # fmt: skip
    finally:
        gateway.close()

    assert "Traceback" not in finished.stderr + finished.stdout
    everything = finished.stdout + finished.stderr
    if status == 200:
        assert finished.returncode == EXIT_OK, finished.stderr
        scored = pq.read_table(target)
        texts = [
            text
            for column in ("faithfulness_evidence", "faithfulness_reason")
            for text in scored.column(column).to_pylist()
            if text
        ]
        cache = (tmp_path / "c.sqlite").read_bytes().decode("latin-1")
        assert "[redacted]" in cache, "the quoting reply was read and cached"
        everything += "\n".join(texts) + target.read_bytes().decode("latin-1") + cache
    elif status == 400:
        # Every request refused the same way: a misconfiguration, the run stops with the
        # refusal (scrubbed) in its one line.
        assert finished.returncode == EXIT_JUDGE, finished.stderr
        assert "every request was refused the same way" in finished.stderr
        everything += (tmp_path / "c.sqlite").read_bytes().decode("latin-1")
    else:
        assert "refused the credentials (HTTP 401)" in finished.stderr
    hexed = key.encode().hex()
    for shape in (key, key[3:], key[-8:], key.upper(), hexed, hexed[-16:]):
        assert shape not in everything, shape
    assert "[redacted]" in everything
