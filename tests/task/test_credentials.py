"""An act's credentials arrive parsed: a database connection, a URL, an HTTP client with the
auth applied; a missing name says which exist and where to add one; no value reaches a repr."""

from __future__ import annotations

import base64
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from landed.task.acts import ActContext
from landed.task.credentials import Credentials


@pytest.fixture
def seen_auth() -> Iterator[tuple[str, list[str]]]:
    """A loopback HTTP server; its base URL and the Authorization header of each request."""
    headers: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            headers.append(f"{self.path} {self.headers.get('Authorization', '-')}")
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}", headers
    finally:
        server.shutdown()
        server.server_close()


def test_sql_gives_a_sqlite_connection_to_the_credentials_file(tmp_path: Path) -> None:
    creds = Credentials({"shop-db": f"sqlite:///{tmp_path / 'shop.db'}"})
    with creds.sql("shop-db") as conn:
        conn.execute("create table orders (n integer)")
        conn.execute("insert into orders values (7)")
    conn.close()
    with Credentials({"db": f"sqlite:///{tmp_path / 'shop.db'}"}).sql("db") as again:
        assert again.execute("select n from orders").fetchall() == [(7,)]
    again.close()


def test_sql_gives_a_postgres_connection(postgres_dsn: str) -> None:
    with Credentials({"pg": postgres_dsn}).sql("pg") as conn:
        assert conn.execute("select 41 + 1").fetchone() == (42,)


def test_sql_refuses_a_url_that_is_no_database() -> None:
    with pytest.raises(ValueError, match="not a database URL"):
        Credentials({"api": "https://example.invalid"}).sql("api")


def test_url_is_parsed() -> None:
    url = Credentials({"api": "https://bot:s3cr%40t@api.example.invalid:8443/v2"}).url("api")
    assert (url.scheme, url.username, url.hostname, url.port, url.path) == (
        "https",
        "bot",
        "api.example.invalid",
        8443,
        "/v2",
    )


def test_http_applies_basic_auth_and_keeps_it_out_of_the_base_url(
    seen_auth: tuple[str, list[str]],
) -> None:
    host, headers = seen_auth
    with Credentials({"api": f"http://bot:s3cr%40t@{host}/v2/"}).http("api") as client:
        assert "s3cr" not in str(client.base_url) and "bot" not in str(client.base_url)
        assert client.get("orders").status_code == 204
    expected = base64.b64encode(b"bot:s3cr@t").decode()
    assert headers == [f"/v2/orders Basic {expected}"]


async def test_async_http_sends_a_token_as_bearer(seen_auth: tuple[str, list[str]]) -> None:
    host, headers = seen_auth
    async with Credentials({"api": f"http://:tok-123@{host}/"}).async_http("api") as client:
        assert (await client.get("/ping")).status_code == 204
    assert headers == ["/ping Bearer tok-123"]


def test_http_refuses_a_url_that_is_not_http() -> None:
    with pytest.raises(ValueError, match="not an http"):
        Credentials({"db": "sqlite:///x.db"}).http("db")


def test_a_missing_name_lists_the_names_held_and_the_setting() -> None:
    ctx = ActContext(
        task_id="t",
        attempt=1,
        idempotency_key="k",
        identity="actor@t",
        credentials=Credentials({"shop-db": "sqlite:///x.db"}),
    )
    for ask in (lambda: ctx.credential("crm"), lambda: ctx.credentials.url("crm")):
        with pytest.raises(
            KeyError, match=r"no credential named 'crm'.*shop-db.*LANDED_ACTOR_CREDENTIALS"
        ):
            ask()


def test_a_plain_mapping_is_taken_and_no_value_reaches_a_repr() -> None:
    ctx = ActContext(
        task_id="t",
        attempt=1,
        idempotency_key="k",
        identity="actor@t",
        credentials={"api": "https://bot:hunter2@api.example.invalid"},  # type: ignore[arg-type]
    )
    assert isinstance(ctx.credentials, Credentials)
    assert ctx.credential("api").startswith("https://bot:")
    assert "hunter2" not in repr(ctx) and "hunter2" not in repr(ctx.credentials)
