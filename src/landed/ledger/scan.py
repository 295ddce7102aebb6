"""Incremental raw reads for the exporter: the rows after a sequence, the claims after a cursor.

A scan hands back rows as stored (body and body_sha256 unchecked): the reader verifies each one
and counts a mismatch instead of failing the whole read. Nothing here writes or migrates.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, Protocol
from urllib.parse import quote, urlsplit, urlunsplit

import psycopg
from psycopg import sql

from landed.ledger.base import LedgerError
from landed.ledger.postgres import split_url
from landed.ledger.sqlite import sqlite_path

__all__ = ["START", "ClaimRow", "LedgerScan", "RawRow", "open_scan", "shown"]

#: (sequence, body, body_sha256) exactly as stored.
RawRow = tuple[int, str, str]
#: (cursor, owner of the task's receipt or None, that receipt's body or None).
ClaimRow = tuple[tuple[str, str, str, int], str | None, str | None]
#: The claims cursor before the first claim.
START: tuple[str, str, str, int] = ("", "", "", 0)


class LedgerScan(Protocol):
    async def rows(self, after: int, also: Sequence[int], limit: int) -> list[RawRow]:
        """Rows with sequence > ``after`` (ascending, at most ``limit``) plus those in ``also``."""
        ...

    async def claims(
        self, after: tuple[str, str, str, int], before: datetime, limit: int
    ) -> list[ClaimRow]:
        """Claims made before ``before`` whose cursor (claimed_at, task_id, run_id, attempt)
        is past ``after``, ascending, with the receipt of the same attempt when settled."""
        ...

    async def close(self) -> None: ...


def open_scan(url: str) -> LedgerScan:
    """A scan of the ledger at ``url``; it connects on first use and again after a failure."""
    if url.startswith(("postgresql://", "postgres://")):
        return _PgScan(url)
    path, _ = sqlite_path(url.removeprefix("file:"))
    return _SqliteScan(str(path))


_CLAIMS = """SELECT c.claimed_at, c.task_id, c.run_id, c.attempt, r.owner, r.body
    FROM landed_claims AS c LEFT JOIN landed_receipts AS r
      ON r.task_id = c.task_id AND r.attempt = c.attempt
    WHERE (c.claimed_at, c.task_id, c.run_id, c.attempt) > (?, ?, ?, ?) AND c.claimed_at < ?
    ORDER BY c.claimed_at, c.task_id, c.run_id, c.attempt LIMIT ?"""


class _SqliteScan:
    """One read-only connection per read: a moved or unreadable file is seen at once."""

    def __init__(self, path: str) -> None:
        self._path = path

    def _connect(self) -> sqlite3.Connection:
        uri = f"file:{quote(self._path)}?mode=ro"
        conn = sqlite3.connect(uri, uri=True, isolation_level=None)
        conn.execute("PRAGMA busy_timeout = 2000")
        return conn

    def _read(self, query: str, params: Sequence[object]) -> list[tuple[Any, ...]]:
        try:
            conn = self._connect()
            try:
                return list(conn.execute(query, params).fetchall())
            finally:
                conn.close()
        except sqlite3.Error as exc:
            raise LedgerError(f"reading the ledger file {self._path} failed: {exc}") from exc

    async def rows(self, after: int, also: Sequence[int], limit: int) -> list[RawRow]:
        marks = ",".join("?" * len(also))
        extra = f" OR sequence IN ({marks})" if also else ""
        query = (
            "SELECT sequence, body, body_sha256 FROM landed_receipts "
            f"WHERE sequence > ?{extra} ORDER BY sequence LIMIT ?"
        )
        found = await asyncio.to_thread(self._read, query, [after, *also, limit + len(also)])
        return [(int(r[0]), str(r[1]), str(r[2])) for r in found]

    async def claims(
        self, after: tuple[str, str, str, int], before: datetime, limit: int
    ) -> list[ClaimRow]:
        cutoff = before.astimezone(UTC).isoformat(timespec="microseconds")
        found = await asyncio.to_thread(self._read, _CLAIMS, [*after, cutoff, limit])
        return [((str(r[0]), str(r[1]), str(r[2]), int(r[3])), r[4], r[5]) for r in found]

    async def close(self) -> None:
        return None


class _PgScan:
    """One connection, opened on first use and dropped after any failure."""

    def __init__(self, url: str) -> None:
        self._dsn, schema, _ = split_url(url)
        self._url = url
        self._table = sql.Identifier(schema, "landed_receipts")
        self._claims = sql.Identifier(schema, "landed_claims")
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
        query = sql.SQL(
            "SELECT sequence, body, body_sha256 FROM {t} WHERE sequence > %s "
            "OR sequence = ANY(%s) ORDER BY sequence LIMIT %s"
        ).format(t=self._table)
        found = await self._read(query, [after, list(also), limit + len(also)])
        return [(int(r[0]), str(r[1]), str(r[2])) for r in found]

    async def claims(
        self, after: tuple[str, str, str, int], before: datetime, limit: int
    ) -> list[ClaimRow]:
        # claimed_at is compared as text in one fixed UTC format, so the cursor is one value
        # for both backends and a restart resumes it as it was written.
        query = sql.SQL(
            "SELECT to_char(c.claimed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US') AS at,"
            " c.task_id, c.run_id, c.attempt, r.owner, r.body FROM {c} AS c LEFT JOIN {t} AS r"
            " ON r.task_id = c.task_id AND r.attempt = c.attempt"
            " WHERE c.claimed_at < %s AND (to_char(c.claimed_at AT TIME ZONE 'UTC',"
            ' \'YYYY-MM-DD"T"HH24:MI:SS.US\'), c.task_id COLLATE "C", c.run_id COLLATE "C",'
            " c.attempt) > (%s, %s, %s, %s)"
            ' ORDER BY 1, c.task_id COLLATE "C", c.run_id COLLATE "C", c.attempt LIMIT %s'
        ).format(c=self._claims, t=self._table)
        found = await self._read(query, [before, *after, limit])
        return [((str(r[0]), str(r[1]), str(r[2]), int(r[3])), r[4], r[5]) for r in found]

    async def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(psycopg.Error):
                await conn.close()


def shown(url: str) -> str:
    """The URL as printed: a PostgreSQL password is replaced by ***."""
    parts = urlsplit(url)
    if parts.password:
        return urlunsplit(
            parts._replace(netloc=parts.netloc.replace(f":{parts.password}@", ":***@"))
        )
    return url
