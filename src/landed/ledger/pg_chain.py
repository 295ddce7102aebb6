"""The PostgreSQL ledger's chain: its lock, its head, its signed heads, the verify walk's read."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from typing import Any, cast

import psycopg
from psycopg import sql

from landed.ledger.base import LedgerError
from landed.ledger.chain import MAX_HEADS, ChainHead, ChainRow, SignedHead
from landed.ledger.pg_schema import SCHEMA_VERSION, schema_version

__all__ = ["chain_heads", "insert_head", "iter_chain", "lock_chain", "read_head", "sequence_name"]

_PAGE = 5000


async def lock_chain(conn: psycopg.AsyncConnection[Any], schema: str) -> None:
    """Take the ledger's chain lock until the transaction ends. Every landed writer reads the
    head and links onto it under this lock, so concurrent appends (this pool's, other
    runners') join the chain one at a time. Bounded: a session that never lets go of it fails
    the append (the settle is retried) instead of holding every runner."""
    await conn.execute("SET LOCAL lock_timeout = '10s'")
    await conn.execute(
        "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (f"landed-chain:{schema}",)
    )


async def read_head(conn: psycopg.AsyncConnection[Any], schema: str) -> ChainHead:
    """The last row's place in the chain (sequence order is chain order: see lock_chain)."""
    cur = await conn.execute(
        sql.SQL(
            "SELECT chain_pos, sequence, chain_link FROM {} ORDER BY sequence DESC LIMIT 1"
        ).format(sql.Identifier(schema, "landed_receipts"))
    )
    row = await cur.fetchone()
    if row is None:
        return ChainHead()
    if row[0] is None or row[2] is None:
        raise LedgerError(
            f"the ledger's last row (sequence {row[1]}) has no chain link: it was inserted "
            "by something other than landed; run `landed ledger verify` and inspect it"
        )
    return ChainHead(int(row[0]), int(row[1]), str(row[2]))


async def sequence_name(conn: psycopg.AsyncConnection[Any], schema: str) -> str:
    cur = await conn.execute(
        "SELECT pg_get_serial_sequence(format('%%I.landed_receipts', %s::text), 'sequence')",
        (schema,),
    )
    row = await cur.fetchone()
    if row is None or row[0] is None:
        raise LedgerError(f"the ledger in schema {schema!r} has no sequence for its receipts")
    return str(row[0])


async def insert_head(conn: psycopg.AsyncConnection[Any], schema: str, head: SignedHead) -> None:
    await conn.execute(
        sql.SQL(
            "INSERT INTO {} (chain_pos, sequence, chain_link, key_id, signed_at, signature)"
            " VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (key_id, chain_pos) DO NOTHING"
        ).format(sql.Identifier(schema, "landed_chain_heads")),
        head.values(),
    )


async def _require_chain(conn: psycopg.AsyncConnection[Any], schema: str) -> None:
    version = await schema_version(conn, schema)
    if version < SCHEMA_VERSION:
        raise LedgerError(
            f"the ledger in schema {schema!r} is at schema version {version}, before the hash "
            f"chain (version {SCHEMA_VERSION}): run `landed ledger init --ledger URL` as the "
            "database owner to upgrade it (the rows stored so far are chained then, and "
            "verify says so)"
        )


async def chain_heads(conn: psycopg.AsyncConnection[Any], schema: str) -> list[SignedHead]:
    await _require_chain(conn, schema)
    cur = await conn.execute(
        sql.SQL(
            "SELECT chain_pos, sequence, chain_link, key_id, signed_at, signature FROM {}"
            " ORDER BY chain_pos LIMIT %s"
        ).format(sql.Identifier(schema, "landed_chain_heads")),
        (MAX_HEADS + 1,),
    )
    heads = [SignedHead(int(p), int(s), *(str(v) for v in r)) for p, s, *r in await cur.fetchall()]
    if len(heads) > MAX_HEADS:
        raise LedgerError(f"the ledger holds more than {MAX_HEADS:,} signed chain heads")
    return heads


async def iter_chain(
    conn: psycopg.AsyncConnection[Any], schema: str
) -> AsyncGenerator[list[ChainRow], None]:
    """Every row in sequence order, a page at a time, from one REPEATABLE READ snapshot (a
    connection the caller has taken out of autocommit)."""
    await conn.set_isolation_level(psycopg.IsolationLevel.REPEATABLE_READ)
    async with conn.transaction(), conn.cursor(name="landed_chain") as cur:
        await _require_chain(conn, schema)
        await cur.execute(
            sql.SQL(
                # Qualified: a table owner's own sha256() in another schema is never called.
                "SELECT sequence, chain_pos, chain_link, body_sha256, pg_catalog.encode("
                "pg_catalog.sha256(pg_catalog.convert_to(body, 'UTF8')), 'hex') FROM {}"
                " ORDER BY sequence"
            ).format(sql.Identifier(schema, "landed_receipts"))
        )
        pending = asyncio.ensure_future(cur.fetchmany(_PAGE))
        try:
            while page := await pending:
                # Ask for the next page before walking this one: the server reads and hashes
                # it meanwhile.
                pending = asyncio.ensure_future(cur.fetchmany(_PAGE))
                await asyncio.sleep(0)
                # psycopg's rows are tuples in ChainRow's column order (bigint, bigint, text,
                # text, text): taken as they come, not rebuilt one object per row.
                yield cast(list[ChainRow], page)
        finally:
            if not pending.done():
                await asyncio.gather(pending, return_exceptions=True)
