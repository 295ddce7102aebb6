"""The SQLite ledger's scan (landed.ledger.scan): one read-only connection for the exporter's
incremental reads, and the fresh read of the head positions."""

from __future__ import annotations

import asyncio
import os
import sqlite3
from collections.abc import Sequence
from datetime import UTC, datetime
from hashlib import sha256
from typing import Any
from urllib.parse import quote

from landed.ledger.base import LedgerError
from landed.ledger.chain import ChainRow, SignedHead
from landed.ledger.scan import (
    HEAD_POS_SQL,
    HEADS_SQL,
    MAX_SCAN_HEADS,
    ClaimRow,
    EventRow,
    RawRow,
    event_rows,
    heads_of,
    no_claim_owner,
    no_events_table,
)
from landed.ledger.sqlite.chain import PAGE_SQL
from landed.ledger.sqlite.url import sqlite_path

__all__ = ["SqliteScan", "read_heads"]


def _sha256_hex(body: bytes) -> str:
    return sha256(body).hexdigest()


# In rowid order (SQLite has one writer at a time, so rowid order is commit order); the
# receipt that settled the same attempt (not a recheck's later row) is one lookup in its unique
# index.
_CLAIMS = """SELECT c.rowid, c.claimed_at, coalesce(r.owner, c.owner), c.loop, r.body
    FROM landed_claims AS c LEFT JOIN landed_receipts AS r
      ON r.task_id = c.task_id AND r.attempt = c.attempt AND r.stage = 'settle'
    WHERE c.rowid > ? ORDER BY c.rowid LIMIT ?"""
# The same before claims named their owner and loop (schema 9).
_CLAIMS_V8 = _CLAIMS.replace("coalesce(r.owner, c.owner), c.loop", "r.owner, NULL")


class SqliteScan:
    """One read-only connection, kept while the file at the path is the one it opened: a
    moved, removed or replaced ledger is seen at the next read, not read on through."""

    def __init__(self, path: str) -> None:
        self._path = path
        self._conn: sqlite3.Connection | None = None
        self._inode: tuple[int, int] | None = None

    def _connect(self) -> sqlite3.Connection:
        try:
            st = os.stat(self._path)
        except OSError as exc:
            self._drop()
            raise sqlite3.OperationalError(f"cannot open the file: {exc.strerror}") from exc
        if self._conn is None or self._inode != (st.st_dev, st.st_ino):
            self._drop()
            uri = f"file:{quote(self._path)}?mode=ro"
            # Reads come one at a time (the exporter holds a lock) from whichever worker thread.
            self._conn = sqlite3.connect(
                uri, uri=True, isolation_level=None, check_same_thread=False
            )
            self._conn.execute("PRAGMA busy_timeout = 2000")
            self._conn.create_function("landed_sha256", 1, _sha256_hex, deterministic=True)
            self._inode = (st.st_dev, st.st_ino)
        return self._conn

    def _drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    def _read(self, query: str, params: Sequence[object]) -> list[tuple[Any, ...]]:
        try:
            return list(self._connect().execute(query, params).fetchall())
        except sqlite3.Error as exc:
            self._drop()
            raise LedgerError(f"reading the ledger file {self._path} failed: {exc}") from exc

    async def rows(self, after: int, also: Sequence[int], limit: int) -> list[RawRow]:
        query = (
            "SELECT * FROM (SELECT sequence, body, body_sha256 FROM landed_receipts "
            "WHERE sequence > ? ORDER BY sequence LIMIT ?)"
        )
        params: list[object] = [after, limit]
        if also:
            marks = ",".join("?" * len(also))
            query += (
                " UNION ALL SELECT sequence, body, body_sha256 FROM landed_receipts"
                f" WHERE sequence IN ({marks}) ORDER BY 1"
            )
            params.extend(also)
        found = await asyncio.to_thread(self._read, query, params)
        return [(int(r[0]), str(r[1]), str(r[2])) for r in found]

    async def claims(
        self, after: tuple[str, str, str, int], before: datetime, limit: int
    ) -> list[ClaimRow]:
        # The cursor's last place holds the rowid; claimed_at is written by the runner as UTC
        # ISO text, so it compares as text. The read stops at the first claim not yet old
        # enough: the ones after it wait for the next read, in order.
        cutoff = before.astimezone(UTC).isoformat(timespec="microseconds")
        try:
            found = await asyncio.to_thread(self._read, _CLAIMS, [after[3], limit])
        except LedgerError as exc:
            if not no_claim_owner(exc):
                raise
            found = await asyncio.to_thread(self._read, _CLAIMS_V8, [after[3], limit])
        out: list[ClaimRow] = []
        for rowid, claimed_at, owner, loop, body in found:
            if str(claimed_at) >= cutoff:
                break
            out.append((("", "", "", int(rowid)), owner, loop, body))
        return out

    async def events(self, after: int, limit: int) -> list[EventRow]:
        query = (
            "SELECT sequence, event_key, kind, loop, body FROM landed_events"
            " WHERE sequence > ? ORDER BY sequence LIMIT ?"
        )
        try:
            return event_rows(await asyncio.to_thread(self._read, query, [after, limit]))
        except LedgerError as exc:
            if no_events_table(exc):
                return []
            raise

    async def chain(self, chain: str, after: int, limit: int) -> list[ChainRow]:
        return await asyncio.to_thread(self._read, PAGE_SQL[chain], [after, limit])

    async def heads(self, from_pos: int) -> list[SignedHead]:
        query = HEADS_SQL.format("landed_chain_heads") + " WHERE chain_pos >= ? ORDER BY chain_pos"
        found = await asyncio.to_thread(self._read, query + " LIMIT ?", [from_pos, MAX_SCAN_HEADS])
        return heads_of(found)

    async def close(self) -> None:
        await asyncio.to_thread(self._drop)


def _heads(path: str, limit: int) -> tuple[int, list[SignedHead]]:
    conn = sqlite3.connect(f"file:{quote(path)}?mode=ro", uri=True, isolation_level=None)
    try:
        conn.execute("PRAGMA busy_timeout = 2000")
        pos = conn.execute(HEAD_POS_SQL.format("landed_receipts")).fetchone()[0]
        query = HEADS_SQL.format("landed_chain_heads") + " ORDER BY chain_pos DESC LIMIT ?"
        return int(pos), heads_of(conn.execute(query, (limit,)).fetchall())
    except sqlite3.Error as exc:
        raise LedgerError(f"reading the chain head of {path} failed: {exc}") from exc
    finally:
        conn.close()


async def read_heads(url: str, limit: int) -> tuple[int, list[SignedHead]]:
    """landed.ledger.factory.read_heads on a SQLite file."""
    path, _ = sqlite_path(url)
    return await asyncio.to_thread(_heads, str(path), limit)
