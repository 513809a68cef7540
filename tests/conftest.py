"""Shared fixtures: the project's OpenAI-compatible test server and settings that point at it."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from ragas_ops_testing.judge_process import free_port
from ragas_ops_testing.judge_server import JudgeServer, JudgeServerConfig

from tests.support import start_moto

# Test files whose tests share one expensive module- or session-scoped fixture: under
# `pytest -n N --dist loadgroup` (make integration) each group runs in one worker, every other
# test goes to whichever worker is free. pytest-xdist's own `xdist_group` mark does nothing
# under pytest 9 (it renames `item._nodeid`, which pytest 9 no longer reads), hence this list.
XDIST_GROUPS = {
    # local_warehouse (6 days through the pipeline's steps) and the plugin's api-server
    "tests/integration/dag/test_plugin_quality_view.py": "quality_warehouse",
    "tests/integration/dag/test_plugin_http.py": "quality_warehouse",
    "tests/integration/s3/test_bi_sql.py": "bi_warehouse",  # its module's warehouse
    "tests/integration/e2e/test_doc_examples.py": "doc_examples",  # its two demo lakes
    "tests/integration/e2e/test_superset_dashboard.py": "superset",  # its lakes and Superset
    "tests/integration/labels/test_labels_cli.py": "labels_cli",  # its two warehouses
    "tests/integration/e2e/test_tables_every_reader.py": "every_reader",  # its two warehouses
    # each test runs a whole Airflow (scheduler, api-server, dag-processor, triggerer): two at
    # once on two cores missed the first's deadlines
    "tests/integration/dag/test_standalone_scheduler.py": "standalone_scheduler",
}


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """`--dist loadgroup`: the files of XDIST_GROUPS by group, every other test alone."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class FileGroupScheduling(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            return XDIST_GROUPS.get(nodeid.split("::", 1)[0], nodeid)

    return FileGroupScheduling(config, log)


@pytest.fixture
def start_judge_server() -> Iterator[Callable[..., JudgeServer]]:
    """Start test servers over real HTTP on 127.0.0.1 with the given fault settings."""
    servers: list[JudgeServer] = []

    def start(**config: Any) -> JudgeServer:
        server = JudgeServer(JudgeServerConfig(**config)).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


@pytest.fixture
def start_s3(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[], str]]:
    """Start local S3-compatible servers, stopped after the test; returns a function that
    starts one and gives its endpoint URL."""
    servers: list[Any] = []

    def start() -> str:
        server, endpoint = start_moto(monkeypatch)
        servers.append(server)
        return endpoint

    yield start
    for server in servers:
        server.stop()


@pytest.fixture
def judge_server(start_judge_server: Callable[..., JudgeServer]) -> JudgeServer:
    """A well-behaved test server: no latency, no faults."""
    return start_judge_server()


@pytest.fixture
def fake_redis_url() -> Iterator[str]:
    """fakeredis' TCP server on 127.0.0.1 (a thread of this process); skips without fakeredis."""
    fakeredis = pytest.importorskip("fakeredis", reason="the redis extra's test server")
    port = free_port()
    server = fakeredis.TcpFakeServer(("127.0.0.1", port), server_type="redis")
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        server.shutdown()
        server.server_close()
