"""The PostgreSQL ledger's events (landed.ledger.events): linked onto the events chain under
its lock, read newest first."""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg import sql
from psycopg_pool import AsyncConnectionPool

from landed.ledger.base import LedgerError, LedgerEvent
from landed.ledger.events import Wrote, body_sha, check_same, event_of, read_limit
from landed.ledger.links import link_v2, pg_time
from landed.ledger.postgres.chain import lock_chain, read_tail

__all__ = ["append_event", "events"]


async def append_event(
    pool: AsyncConnectionPool, schema: str, event: LedgerEvent, wrote: Wrote | None = None
) -> bool:
    table = sql.Identifier(schema, "landed_events")
    try:
        async with pool.connection() as conn, conn.transaction():
            await lock_chain(conn, schema, "events")
            head = await read_tail(conn, schema, "events")
            body = event.stored_body()
            fields = (event.key, event.kind, event.loop, pg_time(event.at), body_sha(body))
            row_link = link_v2("events", head.pos + 1, fields, head.link)
            cur = await conn.execute(
                sql.SQL(
                    "INSERT INTO {t} (event_key, kind, loop, at, body, chain_pos, chain_link)"
                    " VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (event_key) DO NOTHING"
                ).format(t=table),
                (event.key, event.kind, event.loop, event.at, body, head.pos + 1, row_link),
            )
            if cur.rowcount == 1:
                if wrote is not None:
                    wrote("events", head.pos + 1, row_link)
                return True
            cur = await conn.execute(
                sql.SQL("SELECT body FROM {t} WHERE event_key = %s").format(t=table), (event.key,)
            )
            row = await cur.fetchone()
    except psycopg.Error as exc:
        raise LedgerError(f"recording event {event.key!r} in the ledger failed: {exc}") from exc
    return check_same(event, None if row is None else str(row[0]))


async def events(
    pool: AsyncConnectionPool, schema: str, loop: str | None, limit: int
) -> list[LedgerEvent]:
    table = sql.Identifier(schema, "landed_events")
    where = sql.SQL("WHERE loop = %s" if loop else "")
    params: tuple[Any, ...] = (loop, read_limit(limit)) if loop else (read_limit(limit),)
    try:
        async with pool.connection() as conn:
            cur = await conn.execute(
                sql.SQL(
                    "SELECT sequence, event_key, kind, loop, at, body FROM {t} {w}"
                    " ORDER BY sequence DESC LIMIT %s"
                ).format(t=table, w=where),
                params,
            )
            rows = await cur.fetchall()
    except psycopg.errors.UndefinedTable:
        return []  # a ledger of a schema before events (read-only opens never migrate)
    except psycopg.Error as exc:
        raise LedgerError(f"reading the ledger's events failed: {exc}") from exc
    return [event_of(*r) for r in rows]
