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
