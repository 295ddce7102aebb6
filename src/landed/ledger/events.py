"""Events beside the receipts: what a watcher decided (a tripwire's trip, its rule, the receipts
that tripped it, the repair it queued), append-only like the receipts and keyed so that a
retried or replayed write stores it once.

Events are links of a chain of their own (``events``, landed.ledger.links) whose tail every
signed head carries: an edited, deleted or inserted event is reported by `landed ledger
verify` like a receipt, beside the same refusals (UPDATE, DELETE and a rewrite of a stored
key fail)."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Callable
from datetime import datetime
from typing import Any

import psycopg
from psycopg import sql
from psycopg_pool import AsyncConnectionPool

from landed.ledger.base import LedgerError, LedgerEvent
from landed.ledger.chain import GENESIS
from landed.ledger.links import link_v2, pg_time

__all__ = [
    "MAX_EVENTS",
    "EventConflict",
    "LedgerEvent",
    "pg_append_event",
    "pg_events",
    "sqlite_append_event",
]
__all__ += ["sqlite_events"]

#: The most events one read returns (newest first): a read is bounded before it is buffered.
MAX_EVENTS = 1000


class EventConflict(LedgerError):
    """A stored event's key was appended again with a different body."""


def _check_same(event: LedgerEvent, stored: str | None) -> bool:
    """True if new; False if the same event was stored; a different one under its key fails."""
    if stored is None:
        return True
    if stored != event.stored_body():
        raise EventConflict(
            f"the ledger already holds event {event.key!r} with a different body; events are "
            "append-only: record a new event under a new key instead of changing a stored one"
        )
    return False


def _limit(limit: int) -> int:
    if not 1 <= limit <= MAX_EVENTS:
        raise LedgerError(f"an events read takes a limit from 1 to {MAX_EVENTS}, not {limit}")
    return limit


_SQLITE_INSERT = """INSERT INTO landed_events (event_key, kind, loop, at, body, chain_pos,
    chain_link) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (event_key) DO NOTHING"""
#: Told of each event row this ledger appended (the head signer's own links).
Wrote = Callable[[str, int, str], None]


def _sha(body: str) -> str:
    return hashlib.sha256(body.encode()).hexdigest()


def sqlite_append_event(
    conn: sqlite3.Connection, event: LedgerEvent, wrote: Wrote | None = None
) -> bool:
    """On the ledger's thread: insert (linked onto the events chain), or read the stored body
    back (one transaction)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        row = conn.execute(
            "SELECT body FROM landed_events WHERE event_key = ?", (event.key,)
        ).fetchone()
        if row is None:
            last = conn.execute(
                "SELECT chain_pos, chain_link FROM landed_events ORDER BY sequence DESC LIMIT 1"
            ).fetchone()
            if last is not None and (last[0] is None or last[1] is None):
                raise LedgerError(
                    "the ledger's last event has no chain link: it was inserted by something "
                    "other than landed; run `landed ledger verify` and inspect it"
                )
            pos, prev = (int(last[0]), str(last[1])) if last else (0, GENESIS)
            body = event.stored_body()
            fields = (event.key, event.kind, event.loop, event.at.isoformat(), _sha(body))
            row_link = link_v2("events", pos + 1, fields, prev)
            conn.execute(_SQLITE_INSERT, (*fields[:4], body, pos + 1, row_link))
            if wrote is not None:
                wrote("events", pos + 1, row_link)
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return _check_same(event, None if row is None else str(row[0]))


def sqlite_events(conn: sqlite3.Connection, loop: str | None, limit: int) -> list[LedgerEvent]:
    """Newest first; a ledger of a schema before events holds none."""
    where, params = ("WHERE loop = ?", (loop, _limit(limit))) if loop else ("", (_limit(limit),))
    try:
        rows = conn.execute(
            "SELECT sequence, event_key, kind, loop, at, body FROM landed_events "
            f"{where} ORDER BY sequence DESC LIMIT ?",
            params,
        ).fetchall()
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):
            return []
        raise
    return [_event(*r) for r in rows]


def _event(sequence: int, key: str, kind: str, loop: str | None, at: Any, body: str) -> LedgerEvent:
    return LedgerEvent(
        sequence=int(sequence),
        key=key,
        kind=kind,
        loop=loop,
        at=at if isinstance(at, datetime) else datetime.fromisoformat(str(at)),
        body=json.loads(body),
    )


async def pg_append_event(
    pool: AsyncConnectionPool, schema: str, event: LedgerEvent, wrote: Wrote | None = None
) -> bool:
    from landed.ledger.pg_chain import lock_chain, read_tail

    table = sql.Identifier(schema, "landed_events")
    try:
        async with pool.connection() as conn, conn.transaction():
            await lock_chain(conn, schema, "events")
            head = await read_tail(conn, schema, "events")
            body = event.stored_body()
            fields = (event.key, event.kind, event.loop, pg_time(event.at), _sha(body))
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
    return _check_same(event, None if row is None else str(row[0]))


async def pg_events(
    pool: AsyncConnectionPool, schema: str, loop: str | None, limit: int
) -> list[LedgerEvent]:
    table = sql.Identifier(schema, "landed_events")
    where = sql.SQL("WHERE loop = %s" if loop else "")
    params: tuple[Any, ...] = (loop, _limit(limit)) if loop else (_limit(limit),)
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
    return [_event(*r) for r in rows]
