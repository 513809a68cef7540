"""Answer relevance over a provider that repeats a generated question (issue 30): a model at
low temperature returns the same question twice for a short answer. The row is scored with
what came back (the paper's mean cosine needs no distinct questions), not failed after a
paid repair. Over real HTTP, against a fake written for this test (not the project's double)."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from ragas_ops.cli.main import EXIT_OK, main
from ragas_ops.samples import sample_interactions
from tests.support import TEST_KEY


class _RepeatingProvider(http.server.BaseHTTPRequestHandler):
    """Chat: the same question twice and one other; embeddings: a vector per text."""

    chat_requests = 0

    def do_POST(self) -> None:
        request = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        if self.path.endswith("/embeddings"):
            texts = request["input"]
            body = {
                "object": "list",
                "model": request["model"],
                "data": [
                    {"object": "embedding", "index": i, "embedding": [1.0, 1.0 + len(t) % 5, 0.5]}
                    for i, t in enumerate(texts)
                ],
                "usage": {"prompt_tokens": len(texts), "total_tokens": len(texts)},
            }
        else:
            type(self).chat_requests += 1
            content = json.dumps(
                {
                    "questions": ["What does it cost?", "What does it cost?", "Is it free?"],
                    "noncommittal": False,
                }
            )
            body = {
                "id": "chatcmpl-repeat",
                "object": "chat.completion",
                "created": 0,
                "model": request["model"],
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": content},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 20, "completion_tokens": 12, "total_tokens": 32},
            }
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def provider() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _RepeatingProvider)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def test_a_repeated_generated_question_is_scored_not_failed(
    provider: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    logs = sample_interactions(12, seed=8)
    pq.write_table(logs, tmp_path / "logs.parquet")
    asked = [bool(answer) for answer in logs["answer"].to_pylist()]
    code = main(
        ["score", str(tmp_path / "logs.parquet"), str(tmp_path / "out.parquet"),
         "--base-url", provider, "--metrics", "answer_relevance", "--cache", "none",
         "--rpm", "none", "--tpm", "none", "--no-progress"]
    )  # fmt: skip
    assert code == EXIT_OK

    scored = pq.read_table(tmp_path / "out.parquet")
    statuses = scored["answer_relevance_status"].to_pylist()
    assert [status for status, ok in zip(statuses, asked, strict=True) if ok] == ["ok"] * sum(asked)
    assert _RepeatingProvider.chat_requests == sum(asked), "no repair was asked or paid"
    evidence = json.loads(scored["answer_relevance_evidence"][asked.index(True)].as_py())
    assert evidence["questions"] == ["What does it cost?", "Is it free?"], "a repeat weighs once"
