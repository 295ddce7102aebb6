"""Incremental raw reads for the exporter: the rows after a sequence, the claims after a cursor.

A scan hands back rows as stored (body and body_sha256 unchecked): the reader verifies each one
and counts a mismatch instead of failing the whole read. Nothing here writes or migrates.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import sqlite3
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import quote, urlsplit, urlunsplit

import psycopg
from psycopg import sql

from landed.ledger.base import LedgerError
from landed.ledger.chain import ChainRow, SignedHead
from landed.ledger.pg_pages import ORDER as PG_ORDER
from landed.ledger.pg_pages import PAGE_SQL as PG_PAGE
from landed.ledger.pg_pages import TABLES as PG_TABLES
from landed.ledger.postgres import split_url
from landed.ledger.sqlite import sqlite_path
from landed.ledger.sqlite_chain import PAGE_SQL as SQLITE_PAGE


def _sha256_hex(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()


__all__ = [
    "MAX_SCAN_HEADS",
    "START",
    "ClaimRow",
    "EventRow",
    "LedgerScan",
    "RawRow",
    "file_of",
    "open_scan",
    "read_heads",
    "shown",
]

#: (sequence, body, body_sha256) exactly as stored.
RawRow = tuple[int, str, str]
#: (cursor, the task's owner, its loop, the body of the attempt's receipt): owner and loop as the
#: claim stored them (the receipt's owner first), None where neither names them.
ClaimRow = tuple[tuple[str, str, str, int], str | None, str | None, str | None]
#: The claims cursor before the first claim.
START: tuple[str, str, str, int] = ("", "", "", 0)


class LedgerScan(Protocol):
    async def rows(self, after: int, also: Sequence[int], limit: int) -> list[RawRow]:
        """Rows with sequence > ``after`` (ascending, at most ``limit``) plus those in ``also``."""
        ...

    async def claims(
        self, after: tuple[str, str, str, int], before: datetime, limit: int
    ) -> list[ClaimRow]:
        """Claims past the cursor ``after`` (opaque: each backend fills in its own place),
        in the order they were stored, up to the first made at or after ``before``; each with
        its owner and loop, and the body of the same attempt's receipt when it has settled."""
        ...

    async def events(self, after: int, limit: int) -> list[EventRow]:
        """Events (landed.ledger.events) past sequence ``after``, in sequence order; none from
        a ledger of a schema before events."""
        ...

    async def chain(self, chain: str, after: int, limit: int) -> list[ChainRow]:
        """Rows of ``chain`` past the order ``after``, as the chain walk reads them."""
        ...

    async def heads(self, from_pos: int) -> list[SignedHead]:
        """Signed heads at receipts position ``from_pos`` or later (at most MAX_SCAN_HEADS)."""
        ...

    async def close(self) -> None: ...


#: Signed heads one scan reads at most (the exporter asks again from the last one's position).
MAX_SCAN_HEADS = 10_000
_HEADS = "SELECT chain_pos, sequence, chain_link, key_id, signed_at, signature, detail FROM {}"


def _heads(found: list[tuple[Any, ...]]) -> list[SignedHead]:
    out = []
    for r in found:
        link, key_id, at, signature = (str(v) for v in r[2:6])
        out.append(SignedHead(int(r[0]), int(r[1]), link, key_id, at, signature, r[6]))
    return out


#: (sequence, key, kind, loop, body) of one event row.
EventRow = tuple[int, str, str, str | None, str]


def _event_rows(found: list[tuple[Any, ...]]) -> list[EventRow]:
    return [(int(r[0]), str(r[1]), str(r[2]), r[3], str(r[4])) for r in found]


def _no_claim_owner(exc: LedgerError) -> bool:
    # A ledger of a schema before claims named their owner and loop (read, never migrated).
    return "no such column: c.owner" in str(exc) or "column c.owner does not" in str(exc)


def _no_events_table(exc: LedgerError) -> bool:
    # An older ledger (read, never migrated, by the exporter) has no events table yet.
    return "no such table: landed_events" in str(exc) or 'landed_events" does not' in str(exc)


def open_scan(url: str) -> LedgerScan:
    """A scan of the ledger at ``url``; it connects on first use and again after a failure."""
    if url.startswith(("postgresql://", "postgres://")):
        return _PgScan(url)
    if "://" in url and not url.startswith("sqlite://"):
        raise LedgerError(
            f"unknown ledger URL scheme {url.split('://', 1)[0]!r}; use sqlite:///PATH, a file "
            "path, or postgresql://USER@HOST/DB"
        )
    path, _ = sqlite_path(url)
    return _SqliteScan(str(path))


# In rowid order (SQLite has one writer at a time, so rowid order is commit order); the
# receipt that settled the same attempt (not a recheck's later row) is one lookup in its unique
# index.
_CLAIMS = """SELECT c.rowid, c.claimed_at, coalesce(r.owner, c.owner), c.loop, r.body
    FROM landed_claims AS c LEFT JOIN landed_receipts AS r
      ON r.task_id = c.task_id AND r.attempt = c.attempt AND r.stage = 'settle'
    WHERE c.rowid > ? ORDER BY c.rowid LIMIT ?"""
# The same before claims named their owner and loop (schema 9).
_CLAIMS_V8 = _CLAIMS.replace("coalesce(r.owner, c.owner), c.loop", "r.owner, NULL")


class _SqliteScan:
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
            if not _no_claim_owner(exc):
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
            return _event_rows(await asyncio.to_thread(self._read, query, [after, limit]))
        except LedgerError as exc:
            if _no_events_table(exc):
                return []
            raise

    async def chain(self, chain: str, after: int, limit: int) -> list[ChainRow]:
        return await asyncio.to_thread(self._read, SQLITE_PAGE[chain], [after, limit])

    async def heads(self, from_pos: int) -> list[SignedHead]:
        query = _HEADS.format("landed_chain_heads") + " WHERE chain_pos >= ? ORDER BY chain_pos"
        found = await asyncio.to_thread(self._read, query + " LIMIT ?", [from_pos, MAX_SCAN_HEADS])
        return _heads(found)

    async def close(self) -> None:
        await asyncio.to_thread(self._drop)


class _PgScan:
    """One connection, opened on first use and dropped after any failure."""

    def __init__(self, url: str) -> None:
        self._dsn, schema, _ = split_url(url)
        self._schema = schema
        self._url = url
        self._table = sql.Identifier(schema, "landed_receipts")
        self._claims = sql.Identifier(schema, "landed_claims")
        self._events = sql.Identifier(schema, "landed_events")
        self._claims_name = (f'"{schema}"', "landed_claims")
        self._conn: psycopg.AsyncConnection[Any] | None = None

    async def _read(self, query: sql.Composed, params: Sequence[object]) -> list[tuple[Any, ...]]:
        try:
            if self._conn is None or self._conn.closed:
                self._conn = await psycopg.AsyncConnection.connect(
                    self._dsn, autocommit=True, connect_timeout=5
                )
            cur = await self._conn.execute(query, params)
            return list(await cur.fetchall())
        except psycopg.Error as exc:
            await self.close()
            raise LedgerError(f"reading the PostgreSQL ledger failed: {exc}") from exc

    async def rows(self, after: int, also: Sequence[int], limit: int) -> list[RawRow]:
        # Two index scans, never an OR across them, which PostgreSQL answers with a full scan.
        query = sql.SQL(
            "(SELECT sequence, body, body_sha256 FROM {t} WHERE sequence > %s"
            " ORDER BY sequence LIMIT %s)"
        ).format(t=self._table)
        params: list[object] = [after, limit]
        if also:
            query = sql.SQL(
                "{} UNION ALL (SELECT sequence, body, body_sha256 FROM {t}"
                " WHERE sequence = ANY(%s)) ORDER BY 1"
            ).format(query, t=self._table)
            params.append(list(also))
        found = await self._read(query, params)
        return [(int(r[0]), str(r[1]), str(r[2])) for r in found]

    async def claims(
        self, after: tuple[str, str, str, int], before: datetime, limit: int
    ) -> list[ClaimRow]:
        # The cursor is (the table's file node, the last claim's ctid). landed_claims has no
        # index on time (schema 2), but it is never updated or deleted from, so its rows sit
        # in insert order and a TID range scan reads only those past the cursor. The read
        # stops at the first claim younger than ``before``: a claim transaction still open
        # below it then has had the whole claim lag to commit.
        node = await self._read(
            sql.SQL("SELECT pg_relation_filenode({})::text").format(
                sql.Literal(".".join(self._claims_name))
            ),
            [],
        )
        filenode = str(node[0][0]) if node else ""
        if after[0] and after[0] != filenode:
            raise LedgerError(
                "landed_claims was rewritten (VACUUM FULL, CLUSTER or a restore) since the "
                "exporter read it, so its place in it is lost; restart the exporter"
            )
        text = (
            "SELECT c.ctid::text, c.claimed_at, coalesce(r.owner, c.owner), c.loop, r.body"
            " FROM {c} AS c"
            " LEFT JOIN LATERAL (SELECT owner, body FROM {t} WHERE task_id = c.task_id"
            " AND attempt = c.attempt AND stage = 'settle') AS r ON true"
            " WHERE c.ctid > %s::tid ORDER BY c.ctid LIMIT %s"
        )
        params = [after[1] or "(0,0)", limit]
        try:
            found = await self._read(sql.SQL(text).format(c=self._claims, t=self._table), params)
        except LedgerError as exc:
            if not _no_claim_owner(exc):
                raise
            # A ledger before claims named their owner and loop (schema 6).
            old = text.replace("coalesce(r.owner, c.owner), c.loop", "r.owner, NULL")
            found = await self._read(sql.SQL(old).format(c=self._claims, t=self._table), params)
        out: list[ClaimRow] = []
        for ctid, claimed_at, owner, loop, body in found:
            if claimed_at >= before:
                break
            out.append(((filenode, str(ctid), "", 0), owner, loop, body))
        return out

    async def events(self, after: int, limit: int) -> list[EventRow]:
        query = sql.SQL(
            "SELECT sequence, event_key, kind, loop, body FROM {e}"
            " WHERE sequence > %s ORDER BY sequence LIMIT %s"
        ).format(e=self._events)
        try:
            return _event_rows(await self._read(query, [after, limit]))
        except LedgerError as exc:
            if _no_events_table(exc):
                return []
            raise

    async def chain(self, chain: str, after: int, limit: int) -> list[ChainRow]:
        order = PG_ORDER[chain]
        query = sql.SQL(
            PG_PAGE[chain] + f" FROM {{}} WHERE {order} > %s ORDER BY {order} LIMIT %s"
        ).format(sql.Identifier(self._schema, PG_TABLES[chain]))
        return await self._read(query, [after, limit])

    async def heads(self, from_pos: int) -> list[SignedHead]:
        query = sql.SQL(
            _HEADS + " WHERE chain_pos >= %s ORDER BY chain_pos, signed_at LIMIT %s"
        ).format(sql.Identifier(self._schema, "landed_chain_heads"))
        return _heads(await self._read(query, [from_pos, MAX_SCAN_HEADS]))

    async def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(psycopg.Error):
                await conn.close()


def file_of(url: str) -> Path | None:
    """The file of a SQLite ledger (None: a PostgreSQL one), for what is kept beside it."""
    if url.startswith(("postgresql://", "postgres://")):
        return None
    return sqlite_path(url)[0]


def shown(url: str) -> str:
    """The URL as printed: a PostgreSQL password is replaced by ***."""
    parts = urlsplit(url)
    if parts.password:
        return urlunsplit(
            parts._replace(netloc=parts.netloc.replace(f":{parts.password}@", ":***@"))
        )
    return url


# --- the head positions (the exporter's landed_ledger_head_position and last signed one) ---
_HEAD_POS = "SELECT coalesce(max(chain_pos), 0) FROM {}"


def _sqlite_heads(path: str, limit: int) -> tuple[int, list[SignedHead]]:
    conn = sqlite3.connect(f"file:{quote(path)}?mode=ro", uri=True, isolation_level=None)
    try:
        conn.execute("PRAGMA busy_timeout = 2000")
        pos = conn.execute(_HEAD_POS.format("landed_receipts")).fetchone()[0]
        query = _HEADS.format("landed_chain_heads") + " ORDER BY chain_pos DESC LIMIT ?"
        return int(pos), _heads(conn.execute(query, (limit,)).fetchall())
    except sqlite3.Error as exc:
        raise LedgerError(f"reading the chain head of {path} failed: {exc}") from exc
    finally:
        conn.close()


async def _pg_heads(url: str, limit: int) -> tuple[int, list[SignedHead]]:
    dsn, schema, _ = split_url(url)
    receipts = sql.Identifier(schema, "landed_receipts")
    heads = sql.Identifier(schema, "landed_chain_heads")
    try:
        async with await psycopg.AsyncConnection.connect(
            dsn, autocommit=True, connect_timeout=5
        ) as conn:
            cur = await conn.execute(sql.SQL(_HEAD_POS).format(receipts))
            row = await cur.fetchone()
            query = sql.SQL(_HEADS + " ORDER BY chain_pos DESC LIMIT %s").format(heads)
            cur = await conn.execute(query, (limit,))
            return int(row[0] if row else 0), _heads(list(await cur.fetchall()))
    except psycopg.Error as exc:
        raise LedgerError(f"reading the PostgreSQL ledger's chain head failed: {exc}") from exc


async def read_heads(url: str, limit: int) -> tuple[int, list[SignedHead]]:
    """The chain's head position (its last receipt row; 0: none) and the ``limit`` latest
    signed heads, highest position first: a fresh read each time, so a ledger put back to an
    earlier copy shows at once (the resumed walk above would not see it)."""
    if url.startswith(("postgresql://", "postgres://")):
        return await _pg_heads(url, limit)
    path, _ = sqlite_path(url)
    return await asyncio.to_thread(_sqlite_heads, str(path), limit)
