"""The test judge's HTTP plumbing and lifecycle: the threaded server and `JudgeServer`."""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, cast

from ragas_ops_testing.judge_server.app import App
from ragas_ops_testing.judge_server.config import JudgeServerConfig, loopback_host
from ragas_ops_testing.judge_server.replies import MAX_BODY_BYTES, Reply, error_reply


class _HTTPServer(ThreadingHTTPServer):
    """A threading HTTP server that knows its app and its open connections."""

    daemon_threads = True  # a hanging request must never keep the process alive
    # socketserver's listen backlog is 5: a burst of new connections (32 clients opening at
    # once) overflowed it and the kernel reset some of them, which clients saw as errors.
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], app: App) -> None:
        self.app = app
        self._connections: set[socket.socket] = set()
        self._connections_lock = threading.Lock()
        super().__init__(address, _Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._connections_lock:
            self._connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._connections_lock:
            self._connections.discard(request)
        super().shutdown_request(request)

    def close_connections(self) -> None:
        """End idle keep-alive connections, so that a stopped server answers nothing more."""
        with self._connections_lock:
            connections = list(self._connections)
        for connection in connections:
            with contextlib.suppress(OSError):  # already closed by the client
                connection.shutdown(socket.SHUT_RDWR)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive; every reply carries a Content-Length
    server_version = "ragas-ops-test-judge/1"

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: tests and users read /stats instead of a line per request."""

    def _dispatch(self, method: str) -> None:
        body = self._read_body()
        if body is None:
            return
        app = cast(_HTTPServer, self.server).app
        try:
            reply = app.handle(
                method,
                self.path,
                self.headers.get("Authorization"),
                body,
                self.headers.get("Content-Type") or "",
            )
        except Exception as error:  # a bug in the double: say so rather than drop the connection
            reply = error_reply(
                500, f"test double internal error: {error!r}", "server_error", "test_double_bug"
            )
        if reply is None:
            self.close_connection = True
            return
        self._send(reply)

    def _read_body(self) -> bytes | None:
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            self.close_connection = True
            self._send(
                error_reply(
                    411,
                    "send a Content-Length; chunked bodies are not supported",
                    "invalid_request_error",
                )
            )
            return None
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = -1
        if not 0 <= length <= MAX_BODY_BYTES:
            self.close_connection = True
            self._send(
                error_reply(
                    413, "missing, invalid or too large Content-Length", "invalid_request_error"
                )
            )
            return None
        return self.rfile.read(length) if length else b""

    def _send(self, reply: Reply) -> None:
        body = reply.body()
        try:
            self.send_response(reply.status)
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.send_header("Content-Type", reply.content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if reply.reset_after_headers:
                self._reset(body[: len(body) // 3])
                return
            self.wfile.write(body)
        except ConnectionError:  # the client gave up, e.g. its timeout passed during a hang
            self.close_connection = True

    def _reset(self, part: bytes) -> None:
        """Send `part` of a body, then reset the connection (SO_LINGER 0: a TCP RST)."""
        self.wfile.write(part)
        self.wfile.flush()
        self.close_connection = True
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)


class JudgeServer:
    """The test double, served from a daemon thread: `with JudgeServer(config) as server:`."""

    def __init__(self, config: JudgeServerConfig | None = None) -> None:
        self._initial = replace(config) if config is not None else JudgeServerConfig()
        self._host = loopback_host(self._initial.host)
        self._app = App(self._initial)
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> JudgeServer:
        """Bind the port and serve in a daemon thread; returns self."""
        if self._httpd is not None:
            raise RuntimeError("the test judge server was already started")
        self._httpd = _HTTPServer((self._host, self._initial.port), self._app)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"judge-server-{self.port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving: hanging requests are abandoned, open connections closed. Idempotent."""
        if self._httpd is None or self._app.stopping.is_set():
            return
        self._app.stopping.set()
        self._httpd.shutdown()
        self._httpd.close_connections()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> JudgeServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        """The bound port (the free one picked when the config said 0)."""
        if self._httpd is None:
            raise RuntimeError("the test judge server is not started")
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        """The OpenAI base URL, e.g. `http://127.0.0.1:8787/v1`."""
        return f"http://{self._host}:{self.port}/v1"

    @property
    def config(self) -> JudgeServerConfig:
        """A copy of the current settings (after any `update`)."""
        return self._app.settings()

    def stats(self) -> dict[str, Any]:
        """A snapshot of what the server has seen and done (see `Stats`); thread-safe."""
        return self._app.stats()

    def requests(self) -> list[dict[str, Any]]:
        """The requests kept with `request_log` (as `GET /requests`: endpoint, times, status,
        body)."""
        reply = self._app.handle("GET", "/requests", None, b"")
        assert reply is not None
        requests: list[dict[str, Any]] = reply.payload["requests"]
        return requests

    def reset_stats(self) -> None:
        """Start counting afresh (rate-limit buckets are left as they are)."""
        self._app.reset_stats()

    def update(self, **changes: Any) -> None:
        """Change settings of a running server, e.g. `update(rate_5xx=0.5, rpm=None)`.

        New rpm/tpm/burst settings start with full buckets; a new seed restarts the fault
        sequence. `host` and `port` cannot change.
        """
        self._app.update(changes)
