"""A tiny CMS on loopback, standing in for the real one: POST /pages (a bearer token) publishes
a page, GET /pages/SLUG reads it. Like a CMS with a flaky publish queue, it answers 201 to a
post for a slug named by --drop and stores nothing. It stops when the process that started it
(dev.sh's landed dev) is gone.

    python3 cms.py --port-file cms.port --token TOKEN [--drop SLUG ...]
"""

import argparse
import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PAGES: dict[str, str] = {}


def handler(token: str, drop: set[str]) -> type[BaseHTTPRequestHandler]:
    class Cms(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            if self.headers.get("Authorization") != f"Bearer {token}":
                return self.answer(401, "a bearer token is required")
            page = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if page["slug"] not in drop:  # a dropped post is answered as published all the same
                PAGES[page["slug"]] = f"<h1>{page['title']}</h1>\n<p>{page['body']}</p>\n"
            self.answer(201, json.dumps({"url": f"/pages/{page['slug']}"}))

        def do_GET(self) -> None:
            slug = self.path.removeprefix("/pages/")
            if slug in PAGES:
                return self.answer(200, PAGES[slug])
            self.answer(404, "no such page")

        def answer(self, status: int, body: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.end_headers()
            self.wfile.write(body.encode())

        def log_message(self, *args: object) -> None:  # quiet: landed dev owns the terminal
            pass

    return Cms


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port-file", required=True)
    parser.add_argument("--token", required=True)
    parser.add_argument("--drop", action="append", default=[])
    args = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler(args.token, set(args.drop)))
    with open(args.port_file, "w") as f:
        f.write(str(server.server_address[1]))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    parent = os.getppid()
    while os.getppid() == parent:  # dev.sh exec'd landed dev: its exit orphans this process
        time.sleep(0.5)


if __name__ == "__main__":
    main()
