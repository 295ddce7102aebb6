"""A small system of record for tests: a SQLite table and an HTTP site on 127.0.0.1."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

__all__ = ["Site", "act_runs", "make_rows_db", "publish_task", "row_count", "rows_task"]


def make_rows_db(path: Path, preexisting: int = 0, batch: str = "b") -> Path:
    """A SQLite file with a ``rows`` table (no unique key: a duplicate write stays visible);
    its directory is made if missing (under `landed dev`, a database the actor writes lives in
    a directory of its own, apart from the dev home's keys and ledger)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(path) as conn:
        conn.execute("pragma journal_mode=wal")
        conn.execute("create table if not exists rows (batch text not null, seq integer, key text)")
        conn.execute("create table if not exists act_log (task text, attempt integer, key text)")
        conn.executemany(
            "insert into rows (batch, seq, key) values (?, ?, 'before')",
            [(batch, i) for i in range(preexisting)],
        )
    return path


def row_count(path: Path, batch: str) -> int:
    with sqlite3.connect(path) as conn:
        return int(conn.execute("select count(*) from rows where batch = ?", [batch]).fetchone()[0])


def act_runs(path: Path, task: str) -> list[tuple[int, str]]:
    with sqlite3.connect(path) as conn:
        return [
            (int(a), str(k))
            for a, k in conn.execute(
                "select attempt, key from act_log where task = ? order by rowid", [task]
            )
        ]


@dataclass
class Site:
    """Posts by slug. ``save_then_fail`` answers the next N publishes with HTTP 500 after saving
    (the seed's publishing API); ``count_unavailable`` answers the next N count reads with 503;
    ``count_delay_s`` delays count reads (a slow system of record), and
    ``count_delay_after_publish_s`` only those after the first publish."""

    save_then_fail: int = 0
    count_unavailable: int = 0
    count_delay_s: float = 0.0
    count_delay_after_publish_s: float = 0.0
    posts: list[dict[str, Any]] = field(default_factory=list)
    publishes: int = 0
    count_reads: int = 0
    _server: ThreadingHTTPServer | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def count(self, slug: str) -> int:
        with self._lock:
            return sum(1 for p in self.posts if p.get("slug") == slug)

    def start(self) -> Site:
        site = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, body: str, ctype: str = "text/plain") -> None:
                data = body.encode()
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                parts = urlsplit(self.path)
                query = parse_qs(parts.query)
                if parts.path == "/posts/count":
                    with site._lock:
                        site.count_reads += 1
                        unavailable = site.count_unavailable > 0
                        if unavailable:
                            site.count_unavailable -= 1
                        delay = site.count_delay_s
                        if site.publishes:
                            delay = max(delay, site.count_delay_after_publish_s)
                    if delay:
                        time.sleep(delay)
                    if unavailable:
                        self._send(503, "down for maintenance")
                        return
                    self._send(200, str(site.count(query.get("slug", [""])[0])))
                    return
                if parts.path == "/posts":
                    slug = query.get("slug", [""])[0]
                    with site._lock:
                        found = [p for p in site.posts if p.get("slug") == slug]
                    self._send(200, json.dumps(found), "application/json")
                    return
                self._send(404, "not found")

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                with site._lock:
                    site.publishes += 1
                    site.posts.append({**body, "key": self.headers.get("Idempotency-Key")})
                    fail = site.save_then_fail > 0
                    if fail:
                        site.save_then_fail -= 1
                if fail:
                    self._send(500, "internal error")  # saved, then errored
                else:
                    self._send(201, json.dumps({"ok": True}), "application/json")

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()


# --- tasks over these systems of record --------------------------------------------------


def rows_task(task_id: str, db: Path, *, expect: int, batch: str, **act: Any) -> dict[str, Any]:
    return {
        "task_id": task_id,
        "owner": "agent-a",
        "outcome": f"{expect} rows of batch {batch} are in the rows table",
        "target": "rows-db: table rows",
        "act": {"name": "test.rows", "input": {"batch": batch, **act}},
        "proof_plan": [
            {
                "action": f"insert {expect} rows",
                "probe": {
                    "kind": "record",
                    "source": "rows-db",
                    "query": "select count(*) from rows where batch = ?",
                    "params": [batch],
                },
                "expect": {"type": "count", "value": expect},
            }
        ],
        "retry": {"verify_backoff": 0.2},
        "timeouts": {"act_heartbeat": 2, "verify_heartbeat": 2},
    }


def publish_task(task_id: str, slug: str) -> dict[str, Any]:
    return {
        "task_id": task_id,
        "owner": "agent-b",
        "outcome": f"one post {slug} is on the site",
        "target": "site: /posts",
        "act": {"name": "test.publish", "input": {"slug": slug}},
        "proof_plan": [
            {
                "action": "publish one post",
                "probe": {"kind": "http", "source": "site", "url": f"/posts/count?slug={slug}"},
                "expect": {"type": "count", "value": 1},
            }
        ],
        "retry": {"verify_backoff": 0.2},
        "timeouts": {"act_heartbeat": 2, "verify_heartbeat": 2},
    }
