"""The PostgreSQL ledger's scan (landed.ledger.scan): one connection for the exporter's
incremental reads, and the fresh read of the head positions."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import psycopg
from psycopg import sql

from landed.ledger.base import LedgerError
from landed.ledger.chain import ChainRow, SignedHead
from landed.ledger.postgres.pages import ORDER, PAGE_SQL, TABLES
from landed.ledger.postgres.url import split_url
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

__all__ = ["PgScan", "read_heads"]


class PgScan:
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
            if not no_claim_owner(exc):
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
            return event_rows(await self._read(query, [after, limit]))
        except LedgerError as exc:
            if no_events_table(exc):
                return []
            raise

    async def chain(self, chain: str, after: int, limit: int) -> list[ChainRow]:
        order = ORDER[chain]
        query = sql.SQL(
            PAGE_SQL[chain] + f" FROM {{}} WHERE {order} > %s ORDER BY {order} LIMIT %s"
        ).format(sql.Identifier(self._schema, TABLES[chain]))
        return await self._read(query, [after, limit])

    async def heads(self, from_pos: int) -> list[SignedHead]:
        query = sql.SQL(
            HEADS_SQL + " WHERE chain_pos >= %s ORDER BY chain_pos, signed_at LIMIT %s"
        ).format(sql.Identifier(self._schema, "landed_chain_heads"))
        return heads_of(await self._read(query, [from_pos, MAX_SCAN_HEADS]))

    async def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(psycopg.Error):
                await conn.close()


async def read_heads(url: str, limit: int) -> tuple[int, list[SignedHead]]:
    """landed.ledger.factory.read_heads on PostgreSQL."""
    dsn, schema, _ = split_url(url)
    receipts = sql.Identifier(schema, "landed_receipts")
    heads = sql.Identifier(schema, "landed_chain_heads")
    try:
        async with await psycopg.AsyncConnection.connect(
            dsn, autocommit=True, connect_timeout=5
        ) as conn:
            cur = await conn.execute(sql.SQL(HEAD_POS_SQL).format(receipts))
            row = await cur.fetchone()
            query = sql.SQL(HEADS_SQL + " ORDER BY chain_pos DESC LIMIT %s").format(heads)
            cur = await conn.execute(query, (limit,))
            return int(row[0] if row else 0), heads_of(list(await cur.fetchall()))
    except psycopg.Error as exc:
        raise LedgerError(f"reading the PostgreSQL ledger's chain head failed: {exc}") from exc
