"""A webhook receiver on 127.0.0.1 that plays a Slack incoming webhook as Slack documents it
(api.slack.com/messaging/webhooks): a POST of JSON with a non-empty `text` (or `blocks`) is
answered 200 `ok`; a body that is not JSON is 400 `invalid_payload`, one without text is
400 `no_text`; any other path than the hook's is 404 `no_service`. Every POST it received is
kept (path and body), for a test to read what was sent."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

HOOK_PATH = "/services/T0000TEST/B0000TEST/not-a-real-secret"


class WebhookReceiver:
    """`start()` listens on a free port of 127.0.0.1; `url` is the hook's whole URL."""

    def __init__(self, path: str = HOOK_PATH) -> None:
        self.path = path
        self.received: list[dict[str, Any]] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                receiver.received.append({"path": self.path, "body": raw.decode("utf-8")})
                status, answer = receiver.answer(self.path, raw)
                self.send_response(status)
                self.send_header("Content-Type", "text/plain")
                self.end_headers()
                self.wfile.write(answer.encode())

            def log_message(self, *args: Any) -> None:
                """Quiet: the test reads `received`."""

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def answer(self, path: str, raw: bytes) -> tuple[int, str]:
        if path != self.path:
            return 404, "no_service"
        try:
            body = json.loads(raw)
        except ValueError:
            return 400, "invalid_payload"
        if not isinstance(body, dict) or not (body.get("text") or body.get("blocks")):
            return 400, "no_text"
        return 200, "ok"

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}{self.path}"

    def bodies(self) -> list[dict[str, Any]]:
        """The JSON bodies received on the hook's path, in order."""
        return [json.loads(item["body"]) for item in self.received if item["path"] == self.path]

    def start(self) -> WebhookReceiver:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
