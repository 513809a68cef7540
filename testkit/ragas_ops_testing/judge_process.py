"""The test judge server in a process of its own (for benchmarks: no shared GIL with the client)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def test_judge_process(*options: str) -> Iterator[str]:
    """Run `ragas-ops test-judge` with `options` until the block ends; yields its base URL."""
    port = free_port()
    command = [
        sys.executable,
        "-m",
        "ragas_ops.cli",
        "test-judge",
        "--port",
        str(port),
        *options,
    ]
    process = subprocess.Popen(command, stderr=subprocess.DEVNULL)  # noqa: S603 (our own CLI)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(100):
            try:
                with urllib.request.urlopen(f"{base}/stats", timeout=1):  # noqa: S310 (loopback)
                    break
            except OSError:
                time.sleep(0.1)
        yield f"{base}/v1"
    finally:
        process.terminate()
        process.wait(timeout=10)


def server_stats(base_url: str) -> dict[str, Any]:
    """What the test server at `base_url` has counted (its GET /stats)."""
    stats_url = base_url.removesuffix("/v1") + "/stats"
    with urllib.request.urlopen(stats_url, timeout=5) as reply:  # noqa: S310 (loopback)
        stats: dict[str, Any] = json.load(reply)
    return stats
