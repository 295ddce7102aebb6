"""The SQLite ledger's events (landed.ledger.events): appended on the ledger's thread, linked
onto the events chain under the file's write lock, read newest first."""

from __future__ import annotations

import sqlite3

from landed.ledger.base import LedgerError, LedgerEvent
from landed.ledger.chain import GENESIS
from landed.ledger.events import Wrote, body_sha, check_same, event_of, read_limit
from landed.ledger.links import link_v2

__all__ = ["append_event", "events"]

_INSERT = """INSERT INTO landed_events (event_key, kind, loop, at, body, chain_pos,
    chain_link) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (event_key) DO NOTHING"""


def append_event(conn: sqlite3.Connection, event: LedgerEvent, wrote: Wrote | None = None) -> bool:
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
            fields = (event.key, event.kind, event.loop, event.at.isoformat(), body_sha(body))
            row_link = link_v2("events", pos + 1, fields, prev)
            conn.execute(_INSERT, (*fields[:4], body, pos + 1, row_link))
            if wrote is not None:
                wrote("events", pos + 1, row_link)
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return check_same(event, None if row is None else str(row[0]))


def events(conn: sqlite3.Connection, loop: str | None, limit: int) -> list[LedgerEvent]:
    """Newest first; a ledger of a schema before events holds none."""
    where, params = (
        ("WHERE loop = ?", (loop, read_limit(limit))) if loop else ("", (read_limit(limit),))
    )
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
    return [event_of(*r) for r in rows]
