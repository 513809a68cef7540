"""The processes of a one-machine Airflow, started in a safe order and stopped together.

`airflow standalone` starts its four components at once. With a DAG that is unpaused on
creation, the scheduler then starts the first run's tasks as soon as the dag-processor has
parsed the DAG, often before the api-server listens, and every task of that run dies with
"Connection refused" (tasks report to the api-server's execution API). Here the dag-processor
starts only once the api-server answers, so no task can start before it. The scheduler and the
triggerer run without their log servers (they would listen on every interface, on fixed ports;
the api-server reads the task logs from the local files).

The api-server runs as two processes: one for the UI and the REST API (`--apps core`, on
AIRFLOW__API__PORT), one for the tasks' execution API (`--apps execution`, on the port of
AIRFLOW__CORE__EXECUTION_API_SERVER_URL). In one process, on SQLite, a click in the UI could
stop every task for a minute: Airflow writes a REST call's audit-log row from the server's
event loop, blocking it while it waits for SQLite's one write lock, and that lock may be held
by a task's request whose commit is itself waiting for the event loop (Airflow 3.3; the two
waited out the 60 s busy timeout, then the REST call failed). Apart, the tasks' requests
commit on a loop of their own.

Run as `python -m ragas_ops_testing.local_airflow.supervisor [--test-judge-port PORT]`,
configured by the environment (`standalone` prepares both). Every component's output goes to
this process's output, each line prefixed with the component's name. SIGTERM or SIGINT stops
everything; so does any component that exits on its own.
"""

from __future__ import annotations

import argparse
import functools
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Sequence
from types import FrameType
from typing import IO

DEFAULT_EXECUTION_API_URL = "http://127.0.0.1:8080/execution/"
LATE_COMPONENTS = {"dag-processor": ["-m", "airflow", "dag-processor"]}
API_SERVER_WAIT_SECONDS = 600.0
STOP_GRACE_SECONDS = 20.0


def early_components(execution_api_url: str) -> dict[str, list[str]]:
    """The components started at once (the dag-processor waits for the api-servers, see the
    module's docstring), each as this Python's arguments."""
    execution_port = str(urllib.parse.urlsplit(execution_api_url).port or 80)
    return {
        "api-server": ["-m", "airflow", "api-server", "--apps", "core"],
        "execution-api": [
            *("-m", "airflow", "api-server", "--apps", "execution", "--port", execution_port),
        ],
        "scheduler": ["-m", "airflow", "scheduler", "--skip-serve-logs"],
        "triggerer": ["-m", "airflow", "triggerer", "--skip-serve-logs"],
    }


class Components:
    """The running child processes, by name, their output relayed line by line."""

    def __init__(self) -> None:
        self.processes: dict[str, subprocess.Popen[bytes]] = {}
        self._lock = threading.Lock()

    def start(self, name: str, arguments: Sequence[str]) -> None:
        """Start this Python with `arguments` as the component `name`."""
        process = subprocess.Popen(  # noqa: S603 (Airflow's CLI and ours, fixed arguments)
            [sys.executable, *arguments],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
        self.processes[name] = process
        assert process.stdout is not None
        threading.Thread(target=self._relay, args=(name, process.stdout), daemon=True).start()
        self.say(name, f"started (pid {process.pid})")

    def say(self, name: str, line: str) -> None:
        with self._lock:
            sys.stdout.write(f"{name:13} | {line.rstrip()}\n")
            sys.stdout.flush()

    def _relay(self, name: str, stream: IO[bytes]) -> None:
        for raw in stream:
            self.say(name, raw.decode("utf-8", "replace"))

    def exited(self) -> tuple[str, int] | None:
        """The first component that has exited, and its exit code."""
        for name, process in self.processes.items():
            code = process.poll()
            if code is not None:
                return name, code
        return None

    def stop(self) -> None:
        """SIGTERM every component still running, SIGKILL those left after the grace period."""
        for process in self.processes.values():
            if process.poll() is None:
                process.terminate()
        deadline = time.monotonic() + STOP_GRACE_SECONDS
        for name, process in self.processes.items():
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                self.say(name, "did not stop in time: killed")
                process.kill()
                process.wait()


def answers(url: str) -> bool:
    """Whether a server answers at `url` (whatever it says)."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(url, timeout=5):
            return True
    except urllib.error.HTTPError:
        return True
    except OSError:
        return False


def api_servers_answer(base_url: str, execution_api_url: str) -> bool:
    """Whether both api-servers answer their health endpoints."""
    return answers(f"{base_url}/api/v2/monitor/health") and answers(
        f"{execution_api_url.rstrip('/')}/health"
    )


def supervise(test_judge_port: int | None, stopping: threading.Event) -> int:
    """Start the components in order and keep them running until `stopping` is set or one of
    them exits; then stop them all. Returns the exit code."""
    components = Components()
    base_url = os.environ.get("AIRFLOW__API__BASE_URL", "http://127.0.0.1:8080")
    execution_api_url = os.environ.get(
        "AIRFLOW__CORE__EXECUTION_API_SERVER_URL", DEFAULT_EXECUTION_API_URL
    )
    try:
        if test_judge_port:
            port = str(test_judge_port)
            components.start("test-judge", ["-m", "ragas_ops.cli", "test-judge", "--port", port])
        for name, arguments in early_components(execution_api_url).items():
            components.start(name, arguments)
        ready = functools.partial(api_servers_answer, base_url, execution_api_url)
        if not wait(ready, components, stopping):
            return 1
        for name, arguments in LATE_COMPONENTS.items():
            components.start(name, arguments)
        return 0 if wait(lambda: False, components, stopping, timeout=None) else 1
    finally:
        components.stop()


def wait(
    done: Callable[[], bool],
    components: Components,
    stopping: threading.Event,
    timeout: float | None = API_SERVER_WAIT_SECONDS,
) -> bool:
    """Wait until `done()`; False when a component exits, on a stop request, or at timeout."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while not done():
        exited = components.exited()
        if exited is not None:
            components.say(exited[0], f"exited with code {exited[1]}: stopping everything")
            return False
        if deadline is not None and time.monotonic() > deadline:
            components.say("supervisor", f"the api-servers did not answer in {timeout:.0f} s")
            return False
        if stopping.wait(1):
            return timeout is None
    return True


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--test-judge-port", type=int, help="also serve the test judge here")
    options = parser.parse_args(argv)
    stopping = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stopping.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    return supervise(options.test_judge_port, stopping)


if __name__ == "__main__":
    sys.exit(main())
