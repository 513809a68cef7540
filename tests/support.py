"""Helpers that tests import by name (fixtures live in conftest.py, which pytest loads)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ragas_ops.config import Settings
from ragas_ops.testing.judge_server import JudgeServer

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
    settings.judge.base_url = server.base_url
    settings.judge.model = "test-judge"
    settings.judge.embedding_model = "test-embedding"
    settings.judge.cache_path = str(tmp_path / "cache" / "judge.sqlite")
    settings.judge.rpm = None
    settings.judge.tpm = None
    for name, value in judge.items():
        setattr(settings.judge, name, value)
    return settings
