"""Helpers that tests import by name (fixtures live in conftest.py, which pytest loads)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from ragas_ops_testing.judge_server import JudgeServer

from ragas_ops.config import Settings, apply_mapping

TEST_KEY = "sk-" + "test-0123456789abcdefghijklmnop"


def start_moto(monkeypatch: pytest.MonkeyPatch) -> tuple[Any, str]:
    """Start a local S3-compatible server (moto) on 127.0.0.1 and point the AWS variables at
    it; returns the server (stop it yourself) and its endpoint URL."""
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    for name, value in {
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(name, value)
    return server, endpoint


def settings_for(server: JudgeServer, tmp_path: Path, **judge: Any) -> Settings:
    """Settings that score against `server`, with a cache file of their own under `tmp_path`."""
    settings = Settings()
    settings.judge.endpoint.base_url = server.base_url
    settings.judge.endpoint.model = "test-judge"
    settings.judge.endpoint.embedding_model = "test-embedding"
    settings.judge.cache.path = str(tmp_path / "cache" / "judge.sqlite")
    settings.judge.limits.rpm = None
    settings.judge.limits.tpm = None
    apply_mapping(settings, {"judge": judge}, source="settings_for")  # by their config keys
    return settings


def with_answer_bytes(table: Any, index: int, data: bytes) -> Any:
    """`table` with row `index`'s answer set to `data` as it is, valid UTF-8 or not (Parquet
    does not check it): what a log with an undecodable byte holds."""
    import pyarrow as pa

    answers = [text.encode() for text in table.column("answer").to_pylist()]
    answers[index] = data
    raw = pa.array(answers, pa.binary())
    broken = pa.Array.from_buffers(pa.string(), len(raw), raw.buffers())
    return table.set_column(table.schema.get_field_index("answer"), "answer", broken)


def with_flat_contexts(table: Any) -> Any:
    """`table` with each row's contexts joined into one string: a log that breaks the
    contract's list<string>."""
    import pyarrow as pa

    joined = [" ".join(items) for items in table.column("contexts").to_pylist()]
    return table.set_column(table.schema.get_field_index("contexts"), "contexts", pa.array(joined))


USERS_LOG_COLUMNS = {
    "question": "request.question",
    "contexts": "retrieval.documents",
    "answer": "response.text",
}
"""The `[columns]` of the user's own JSON log that `write_users_jsonl_log` writes."""
NESTED_KEY_COLUMNS = {"id": "request.id", "timestamp": "meta.ts"}
"""The `[columns]` naming the nested id and time of `write_users_jsonl_log(nested_keys=True)`."""
USERS_LOG_SEGMENTS = ("tenant", "channel")


def write_users_jsonl_log(
    path: Path, rows: int = 30, day: str = "2026-11-21", *, nested_keys: bool = False
) -> list[Any]:
    """A user's own log as an application writes it: one JSON object a line, the question and
    answer nested (`USERS_LOG_COLUMNS`), the contexts as objects with a text field and a score,
    ISO 8601 timestamps, ids, and two segment columns of their own (`USERS_LOG_SEGMENTS`).
    With `nested_keys`, the id and the time are nested too (`request.id`, `meta.ts`:
    `NESTED_KEY_COLUMNS`) instead of `request_id` and `timestamp`. Returns the lines written,
    as dicts."""
    import json

    from ragas_ops.samples import sample_interactions

    # The samples' rows that retrieved something: a log of answerable interactions.
    sampled = sample_interactions(rows * 2, seed=4, day=day).to_pylist()
    answered = [row for row in sampled if row["contexts"]][:rows]
    lines = [
        {
            "request_id": f"req-{index:03d}",
            "timestamp": row["timestamp"].strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            "request": {"question": row["question"], "user_agent": "web/1.0"},
            "retrieval": {
                "documents": [
                    {"text": text, "score": round(1 - rank / 10, 2)}
                    for rank, text in enumerate(row["contexts"])
                ]
            },
            "response": {"text": row["answer"]},
            "tenant": ("acme", "globex")[index % 2],
            "channel": ("web", "slack", "api")[index % 3],
        }
        for index, row in enumerate(answered)
    ]
    if nested_keys:
        for line in lines:
            line["request"]["id"] = line.pop("request_id")
            line["meta"] = {"ts": line.pop("timestamp"), "region": "eu"}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return lines


def users_log_config(path: Path, *, nested_keys: bool = False, **pipeline: Any) -> Path:
    """A config file for the user's log: its `[columns]` (with `nested_keys`, the nested id
    and time's too), its segments, and `pipeline`."""
    columns = {**USERS_LOG_COLUMNS, **(NESTED_KEY_COLUMNS if nested_keys else {})}
    lines = ["[columns]"]
    lines += [f'{name} = "{column}"' for name, column in columns.items()]
    lines += ["[pipeline]", f"segments = {list(USERS_LOG_SEGMENTS)!r}".replace("'", '"')]
    lines += [f"{key} = {value!r}".replace("'", '"') for key, value in pipeline.items()]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
