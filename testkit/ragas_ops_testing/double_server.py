"""The HTTP plumbing of a provider's test double that is no OpenAI-compatible server (Azure
OpenAI's, Amazon Bedrock's): a threaded server on the loopback interface that hands each
request, with all its headers, to the double's `handle`, and sends its `Reply`."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, cast

from ragas_ops_testing.judge_server.replies import MAX_BODY_BYTES, Reply

Handle = Callable[[str, str, Mapping[str, str], bytes], Reply]
"""(method, path with its query, headers with lower-case names, body) -> the reply."""


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], handle: Handle) -> None:
        self.handle_request_of = handle
        super().__init__(address, _Handler)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "ragas-ops-provider-double/1"

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def log_message(self, format: str, *args: Any) -> None:
        return  # quiet: the tests read the double's counts

    def _dispatch(self, method: str) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(min(length, MAX_BODY_BYTES)) if length else b""
        headers = {name.lower(): value for name, value in self.headers.items()}
        handle = cast(_Server, self.server).handle_request_of
        try:
            reply = handle(method, self.path, headers, body)
        except Exception as error:  # a bug in the double: say so rather than drop the connection
            reply = Reply(500, {"message": f"test double internal error: {error!r}"})
        payload = reply.body()
        try:
            self.send_response(reply.status)
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.send_header("Content-Type", reply.content_type)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
        except ConnectionError:
            self.close_connection = True


class DoubleServer:
    """Serves `handle` on 127.0.0.1 (port 0: a free one) in a thread, as a context manager."""

    def __init__(self, handle: Handle, port: int = 0) -> None:
        self._handle = handle
        self._port = port
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> DoubleServer:
        self._httpd = _Server(("127.0.0.1", self._port), self._handle)
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> DoubleServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """`http://127.0.0.1:<port>`."""
        assert self._httpd is not None, "the double is not started"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"
