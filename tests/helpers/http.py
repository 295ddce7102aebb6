"""A real HTTP server on a free loopback port for probe tests: routes are plain functions."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Body = bytes | Iterable[bytes]


@dataclass
class Request:
    path: str
    headers: dict[str, str]


@dataclass
class Response:
    status: int = 200
    body: Body = b""
    headers: dict[str, str] = field(default_factory=dict)


Route = Callable[[Request], Response]


class LocalHTTP:
    """ThreadingHTTPServer in a thread. ``routes`` maps a path to a function; every request
    is recorded in ``requests`` (path and headers), so tests can see what was sent."""

    def __init__(self) -> None:
        self.routes: dict[str, Route] = {}
        self.requests: list[Request] = []
        self.release = threading.Event()  # set at shutdown: wakes handlers that hang on purpose
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                request = Request(self.path, {k.lower(): v for k, v in self.headers.items()})
                server.requests.append(request)
                route = server.routes.get(self.path.split("?", 1)[0])
                response = route(request) if route else Response(404, b'{"error": "not found"}')
                body = response.body
                self.send_response(response.status)
                for key, value in response.headers.items():
                    self.send_header(key, value)
                if isinstance(body, bytes):
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    # A client that hung up (a probe past its timeout) reads nothing.
                    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                        self.wfile.write(body)
                    return
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                try:
                    for chunk in body:
                        if chunk:
                            self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    self.wfile.write(b"0\r\n\r\n")
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def base(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def url(self, path: str) -> str:
        return self.base + path

    def route(self, path: str, status: int = 200, body: Body = b"", **headers: str) -> None:
        self.routes[path] = lambda _req: Response(status, body, dict(headers))

    def json(self, path: str, text: str, status: int = 200) -> None:
        self.route(path, status, text.encode(), **{"Content-Type": "application/json"})

    def hang(self, path: str) -> None:
        def hanging(_req: Request) -> Response:
            self.release.wait(30)
            return Response(200, b"too late")

        self.routes[path] = hanging

    def start(self) -> LocalHTTP:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.release.set()
        self._server.shutdown()
        self._server.server_close()


def repeat(chunk: bytes, times: int) -> Iterator[bytes]:
    for _ in range(times):
        yield chunk
