"""What a launcher of local processes needs, for `airflow up` and `make cluster` alike: free
ports on 127.0.0.1, JSON over HTTP to the servers it started (no proxy consulted), and process
groups it can probe, stop and reap."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import time
import urllib.request
from collections.abc import Collection
from typing import Any


class LauncherError(RuntimeError):
    """Local processes could not be started, or did not become ready in time."""


def free_port(preferred: int = 0, taken: Collection[int] = ()) -> int:
    """`preferred` when nothing listens on it on 127.0.0.1, else a free port not in `taken`
    (the ports already chosen for the other servers, which do not listen yet)."""
    candidates = [preferred] if preferred else []
    for port in [*candidates, *[0] * 10]:
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            found = int(probe.getsockname()[1])
        if found not in taken:
            return found
    raise LauncherError("no free port on 127.0.0.1")


def request(
    url: str, method: str = "GET", body: Any = None, token: str | None = None, timeout: float = 60
) -> Any:
    """One JSON request to Airflow (on 127.0.0.1: no proxy is consulted). The timeout is
    generous: on SQLite a write waits for the scheduler's, which takes seconds on a busy
    machine."""
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    data = None if body is None else json.dumps(body).encode()
    call = urllib.request.Request(url, data=data, method=method, headers=headers)  # noqa: S310
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(call, timeout=timeout) as response:
        return json.loads(response.read() or b"null")


def get_json(url: str) -> Any:
    """The JSON at `url`, or None while nothing answers there."""
    try:
        return request(url, timeout=5)
    except (OSError, ValueError):
        return None


def group_alive(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def stop_group(group: int, grace_seconds: float = 30) -> None:
    """SIGTERM the group's leader (the supervisor stops its components, signalling each once),
    or the whole group when the leader is gone; SIGKILL whatever is left after the grace
    period."""
    try:
        os.kill(group, signal.SIGTERM)
    except ProcessLookupError:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(group, signal.SIGTERM)
    deadline = time.monotonic() + grace_seconds
    while group_alive(group) and time.monotonic() < deadline:
        reap()
        time.sleep(0.2)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(group, signal.SIGKILL)
    reap()


def reap() -> None:
    """Collect this process's exited children, so that a stopped group is not kept alive by
    zombies (when `up` and `down` run in the same process, as in tests)."""
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
