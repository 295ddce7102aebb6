"""PostgreSQL login roles for source tests: landed refuses a source whose role can do more on
the server than read, so tests connect as roles made for them."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit, urlunsplit

import psycopg


def dsn_as(admin_dsn: str, role: str) -> str:
    """``admin_dsn`` with ``role`` as its user (trust auth: no password)."""
    parts = urlsplit(admin_dsn)
    port = f":{parts.port}" if parts.port else ""
    return urlunsplit(parts._replace(netloc=f"{role}@{parts.hostname}{port}"))


@contextmanager
def temporary_role(admin_dsn: str, name: str, options: str = "") -> Iterator[tuple[str, str]]:
    """A login role made for one test (``create role NAME login OPTIONS``), its name and DSN;
    dropped afterwards."""
    role = f"landed_test_{name}_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute(f"create role {role} login {options}")
    try:
        yield role, dsn_as(admin_dsn, role)
    finally:
        with psycopg.connect(admin_dsn, autocommit=True) as conn:
            conn.execute(f"drop role {role}")
