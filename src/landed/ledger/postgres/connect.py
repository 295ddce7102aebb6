"""Opening a PostgreSQL ledger: one plain connection first (a wrong URL fails at once with the
server's reason, and the schema is checked and, for a writer, migrated), then the pool; and
the server's clock as this machine sees it (``landed doctor``)."""

from __future__ import annotations

import time
from typing import Any

import psycopg
from psycopg_pool import AsyncConnectionPool

from landed.ledger.base import LedgerError, LedgerNotFound
from landed.ledger.postgres.schema import SCHEMA_VERSION, migrate, schema_version
from landed.ledger.postgres.url import redact, split_url

__all__ = ["open_pool", "schema_at"]


async def open_pool(url: str, create: bool, max_size: int) -> tuple[str, AsyncConnectionPool]:
    """The ledger's schema name and an open pool of autocommit connections to it."""
    dsn, schema, role = split_url(url)
    try:
        conn = await psycopg.AsyncConnection.connect(dsn, autocommit=True)
    except psycopg.Error as exc:
        raise LedgerError(
            f"cannot connect to the PostgreSQL ledger at {redact(dsn)}: "
            f"{str(exc).strip()}; check the URL and that the server is running"
        ) from exc
    async with conn:
        try:
            await _prepare(conn, url, schema, role, create)
        except psycopg.errors.InsufficientPrivilege as exc:
            raise LedgerError(
                f"the login of {redact(dsn)} may not use the ledger in schema {schema!r} "
                f"({str(exc).strip()}); as the database owner, run `landed ledger init "
                f"--ledger URL` once and then GRANT {role} TO <this login>"
            ) from exc
        except psycopg.Error as exc:
            raise LedgerError(
                f"opening the ledger in schema {schema!r} at {redact(dsn)} failed: "
                f"{str(exc).strip()}"
            ) from exc
    pool = AsyncConnectionPool(
        dsn,
        min_size=1,
        max_size=max_size,
        open=False,
        kwargs={"autocommit": True},
        configure=_no_jit,
    )
    try:
        await pool.open(wait=True, timeout=10)
    except Exception as exc:
        await pool.close()
        raise LedgerError(f"cannot open a connection pool to {redact(dsn)}: {exc}") from exc
    return schema, pool


async def _no_jit(conn: psycopg.AsyncConnection[Any]) -> None:
    """The ledger's reads are short indexed reads, whose plans cost more on a large table: the
    server's JIT would compile each of them (tens of milliseconds a query on a ledger of a
    million rows, where the read itself takes one), so it is off on the ledger's connections."""
    await conn.execute("SET jit = off")


async def _prepare(
    conn: psycopg.AsyncConnection[Any],
    url: str,
    schema: str,
    role: str,
    create: bool,
) -> None:
    version = await schema_version(conn, schema)
    if version > SCHEMA_VERSION and create:
        raise LedgerError(
            f"the ledger in schema {schema!r} is at schema version {version}, newer "
            f"than this landed's {SCHEMA_VERSION}: a runner of older code would skip "
            "what the newer schema records (claims before each act); upgrade "
            "landed here, and stop every older runner before newer ones start"
        )
    if version < 1 and not create:
        raise LedgerNotFound(
            f"no landed ledger in schema {schema!r} at {redact(url)}; open it "
            "once as the database owner: `landed ledger init --ledger URL`"
        )
    if version < SCHEMA_VERSION and create:
        await migrate(conn, schema, role)


async def schema_at(url: str) -> tuple[int, int, str]:
    """The schema version the ledger's schema holds (0: no schema), this landed's, and where
    it is (the URL without secrets); nothing is created."""
    dsn, schema, _ = split_url(url)
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
        return await schema_version(conn, schema), SCHEMA_VERSION, f"{redact(dsn)} schema {schema}"


async def clock_offset(url: str) -> tuple[float, float]:
    """How far the ledger server's clock is ahead of this machine's, in seconds, and within how
    much (half the read's round trip); nothing is written."""
    dsn, _, _ = split_url(url)
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
        before = time.time()
        cursor = await conn.execute("select extract(epoch from clock_timestamp())::float8")
        row = await cursor.fetchone()
        after = time.time()
    assert row is not None
    return float(row[0]) - (before + after) / 2, (after - before) / 2
