"""A loop's settlements as a stream, on PostgreSQL (Ledger.loop_after): the loop's settle rows
after a sequence, read through the loop index from a floor on settled_at, as
landed.ledger.sqlite_stream reads them on SQLite (its docstring says why the cursor is the
sequence)."""

from __future__ import annotations

from datetime import UTC, datetime

import psycopg
from psycopg import sql
from psycopg_pool import AsyncConnectionPool

from landed.ledger.base import LedgerError
from landed.ledger.sqlite_stream import Found, stream_limit

__all__ = ["pg_loop_after"]

_PG = (
    "SELECT sequence, task_id, body, body_sha256 FROM {t}"
    " WHERE {s}.landed_loop_of(body) = %s AND settled_at > %s AND sequence > %s"
    " AND stage = 'settle' ORDER BY sequence LIMIT %s"
)


async def pg_loop_after(
    pool: AsyncConnectionPool,
    schema: str,
    loop: str,
    after: int,
    since: datetime | None,
    limit: int,
) -> Found:
    floor = since if since is not None else datetime.min.replace(tzinfo=UTC)
    if floor.tzinfo is None:
        floor = floor.replace(tzinfo=UTC)
    query = sql.SQL(_PG).format(
        t=sql.Identifier(schema, "landed_receipts"), s=sql.Identifier(schema)
    )
    try:
        async with pool.connection() as conn:
            cur = await conn.execute(query, (loop, floor, after, stream_limit(limit)))
            return [(int(a), str(b), str(c), str(d)) for a, b, c, d in await cur.fetchall()]
    except psycopg.Error as exc:
        raise LedgerError(f"reading the ledger's loop {loop!r} failed: {exc}") from exc
