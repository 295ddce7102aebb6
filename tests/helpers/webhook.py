"""A webhook receiver the test runs: what Alertmanager notifies, in arrival order."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["Webhook", "webhook"]

_MAX_BODY = 1 << 20  # an Alertmanager notification is a few KiB; refuse anything past 1 MiB


class Webhook:
    """Every JSON notification POSTed to it, in arrival order."""

    def __init__(self) -> None:
        self.received: list[dict[str, Any]] = []
        received = self.received

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                if not 0 < length <= _MAX_BODY:
                    self.send_response(413)
                    self.end_headers()
                    return
                received.append(json.loads(self.rfile.read(length)))
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        host, port = self._server.server_address[:2]
        self.url = f"http://{host!s}:{port}/alerts"

    def statuses(self, alertname: str) -> list[str]:
        """The status (firing, resolved) of each notification naming ``alertname``."""
        return [
            alert["status"]
            for note in list(self.received)
            for alert in note.get("alerts", [])
            if alert.get("labels", {}).get("alertname") == alertname
        ]


@contextmanager
def webhook() -> Iterator[Webhook]:
    hook = Webhook()
    hook._thread.start()
    try:
        yield hook
    finally:
        hook._server.shutdown()
        hook._server.server_close()
