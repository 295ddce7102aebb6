"""The actor's credentials as an act receives them: by name, already parsed.

The actor's operator configures each credential as a URL or DSN string
(``LANDED_ACTOR_CREDENTIALS``, name -> URL). An act asks for one by name and gets what it
needs to act, so no act parses a URL of its own: ``sql`` a database connection, ``url`` the
parsed URL, ``http`` an ``httpx`` client with the credential's auth applied. A name the actor
does not hold is a ``KeyError`` that lists the names it does hold and says where to add one."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import SplitResult, unquote, urlsplit

import httpx

__all__ = ["Credentials"]

_SQLITE = "sqlite:///"
_POSTGRES = ("postgres://", "postgresql://")


class Credentials(Mapping[str, str]):
    """Read-only, by name: the raw string (``creds["shop-db"]``) or a typed view of it."""

    def __init__(self, values: Mapping[str, str] | None = None) -> None:
        self._values = dict(values or {})

    def __getitem__(self, name: str) -> str:
        try:
            return self._values[name]
        except KeyError:
            known = ", ".join(sorted(self._values)) or "none"
            raise KeyError(
                f"the actor has no credential named {name!r} (configured: {known}); add it to "
                "LANDED_ACTOR_CREDENTIALS as a JSON object of name -> URL/DSN"
            ) from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:  # names only: a credential's value never reaches a log
        return f"Credentials({sorted(self._values)})"

    def url(self, name: str) -> SplitResult:
        """The credential parsed as a URL (scheme, username, password, hostname, path...)."""
        return urlsplit(self[name])

    def sql(self, name: str) -> Any:
        """A new connection to the credential's database: ``sqlite3.Connection`` for
        ``sqlite:///PATH``, a ``psycopg.Connection`` for ``postgresql://...``. The act closes
        it (both work as ``with`` blocks; sqlite3's commits there, psycopg's also closes)."""
        value = self[name]
        if value.startswith(_SQLITE):
            return sqlite3.connect(unquote(value.removeprefix(_SQLITE)))
        if value.startswith(_POSTGRES):
            import psycopg  # only an act that uses PostgreSQL pays for the import

            return psycopg.connect(value)
        raise ValueError(
            f"credential {name!r} is not a database URL (sqlite:///PATH or postgresql://...); "
            "use ctx.credentials.url() or [] for other kinds"
        )

    def http(self, name: str, **options: Any) -> httpx.Client:
        """An ``httpx.Client`` on the credential's URL as ``base_url``, its user and password
        applied as basic auth, or a password with an empty user (``https://:TOKEN@host``) as a
        bearer token; the auth is never part of the client's base URL. ``options`` go to
        ``httpx.Client`` (timeout, headers...)."""
        return httpx.Client(**self._http_options(name), **options)

    def async_http(self, name: str, **options: Any) -> httpx.AsyncClient:
        """As :meth:`http`, for an async act."""
        return httpx.AsyncClient(**self._http_options(name), **options)

    def _http_options(self, name: str) -> dict[str, Any]:
        parts = self.url(name)
        if parts.scheme not in ("http", "https"):
            raise ValueError(
                f"credential {name!r} is not an http(s) URL; use ctx.credentials.url()"
            )
        host = parts.hostname or ""
        netloc = f"[{host}]" if ":" in host else host
        netloc += f":{parts.port}" if parts.port else ""
        base = parts._replace(netloc=netloc).geturl()
        user, password = unquote(parts.username or ""), unquote(parts.password or "")
        if user:
            return {"base_url": base, "auth": httpx.BasicAuth(user, password)}
        if password:
            return {"base_url": base, "headers": {"Authorization": f"Bearer {password}"}}
        return {"base_url": base}
