"""The fleet ledger: PostgreSQL, append-only by trigger, written through an INSERT-only role."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, Sequence
from datetime import datetime
from typing import Any

import psycopg
from psycopg import sql
from psycopg_pool import AsyncConnectionPool

from landed.ledger.append import AppendPath
from landed.ledger.base import Claim, LedgerError, LoopRow, checked_body, parse_body
from landed.ledger.chain import ChainRow, HeadSigner, SignedHead
from landed.ledger.events import LedgerEvent
from landed.ledger.postgres import events as stored_events
from landed.ledger.postgres.chain import chain_heads, iter_chain, require_chain
from landed.ledger.postgres.connect import open_pool
from landed.ledger.postgres.pages import PAGE_SQL
from landed.ledger.postgres.queries import BOARD, Queries
from landed.ledger.postgres.url import redact
from landed.ledger.postgres.write import PgWriter, row_refused
from landed.ledger.reads import MAX_LOOP_ROWS, loop_rows
from landed.ledger.trusted import ReadGuard
from landed.receipts.model import Receipt

__all__ = ["PostgresLedger"]

_PAGE = 500


class PostgresLedger(AppendPath):
    """A PostgreSQL ledger. Appends are group-committed through one writer at a time."""

    def __init__(
        self, url: str, schema: str, pool: AsyncConnectionPool, signer: HeadSigner | None = None
    ) -> None:
        self._writer = PgWriter(pool, schema, signer)
        super().__init__(signer, self._writer.flush, row_refused)
        self._url = redact(url)
        # The latest-receipt lookups walk the receipts chain up to the row they hand on.
        self._guard = ReadGuard()
        self._schema = schema
        self._pool = pool
        self._sql = Queries(schema)

    @property
    def url(self) -> str:
        return self._url

    @classmethod
    async def open(
        cls,
        url: str,
        *,
        create: bool = True,
        max_size: int = 4,
        signer: HeadSigner | None = None,
    ) -> PostgresLedger:
        schema, pool = await open_pool(url, create, max_size)
        return cls(url, schema, pool, signer)

    async def _release(self) -> None:
        await self._pool.close()

    async def sign_head(self) -> None:
        await self._writer.sign(self.url)

    def _failed(self, exc: psycopg.Error) -> LedgerError:
        return LedgerError(f"reading the ledger at {self.url} failed: {exc}")

    async def chain_heads(self) -> list[SignedHead]:
        try:
            async with self._pool.connection() as conn:
                return await chain_heads(conn, self._schema)
        except psycopg.Error as exc:
            raise self._failed(exc) from exc

    async def iter_chain(
        self, chain: str = "receipts", after: int = 0
    ) -> AsyncGenerator[list[ChainRow], None]:
        try:
            async with self._pool.connection() as conn:
                await conn.set_autocommit(False)
                try:
                    walk = iter_chain(conn, self._schema, chain, after)
                    async with contextlib.aclosing(walk) as pages:
                        async for page in pages:
                            yield page
                finally:
                    await conn.set_isolation_level(None)
                    await conn.set_autocommit(True)
        except psycopg.Error as exc:
            raise self._failed(exc) from exc

    async def _fetch(self, query: sql.Composed, *params: Any) -> list[tuple[Any, ...]]:
        try:
            async with self._pool.connection() as conn:
                cur = await conn.execute(query, params)
                return await cur.fetchall()
        except psycopg.Error as exc:
            raise self._failed(exc) from exc

    async def _select_rows(self, query: sql.Composed, *params: Any) -> list[tuple[int, Receipt]]:
        rows = await self._fetch(query, *params)
        return [(int(seq), parse_body(body, int(seq), sha)) for seq, body, sha in rows]

    async def get(self, task_id: str) -> list[Receipt]:
        return [r for _, r in await self._select_rows(self._sql.get, task_id)]

    async def latest(self, task_id: str) -> Receipt | None:
        found = await self._select_rows(self._sql.latest, task_id)
        if not found:
            return None
        sequence, receipt = found[0]
        await self._guard.require(self, task_id, sequence)
        return receipt

    async def claim(
        self,
        task_id: str,
        run_id: str,
        attempt: int,
        spec_sha256: str,
        *,
        record: bool = True,
        owner: str | None = None,
        loop: str | None = None,
    ) -> tuple[Receipt | None, Claim | None]:
        fields = (task_id, run_id, attempt, spec_sha256, owner, loop)
        stored, row = await self._writer.claim(self._sql.latest, fields, record, self.url)
        if stored is not None:
            receipt = parse_body(stored[1], int(stored[0]), stored[2])
            await self._guard.require(self, task_id, int(stored[0]))
            return receipt, None
        if row is None:
            return None, None
        return None, Claim(task_id, str(row[0]), int(row[1]), str(row[2]), row[3])

    async def board(self) -> list[Receipt]:
        return [r for _, r in await self.board_rows()]

    async def board_rows(self) -> list[tuple[int, Receipt]]:
        """The board with each row's sequence (a read that trusts the chain marks by it)."""
        return await self._select_rows(self._sql.board)

    async def iter_receipts(self) -> AsyncGenerator[Receipt, None]:
        async with contextlib.aclosing(self.iter_rows()) as rows:
            async for _, receipt in rows:
                yield receipt

    async def iter_rows(self) -> AsyncGenerator[tuple[int, Receipt], None]:
        # A server-side cursor in one REPEATABLE READ snapshot: sequence numbers may commit out
        # of order under concurrent writers, so paging by sequence could skip a receipt.
        query = sql.SQL("SELECT sequence, body, body_sha256 FROM {t} ORDER BY sequence")
        async with contextlib.aclosing(self._stream(query, "landed_export")) as rows:
            async for row in rows:
                yield row

    async def iter_board_rows(self) -> AsyncGenerator[tuple[int, Receipt], None]:
        # board_rows()'s query through a server-side cursor: the server sorts (within its
        # work_mem, spilling to disk), the reader holds one page at a time.
        async with contextlib.aclosing(self._stream(BOARD, "landed_board")) as rows:
            async for row in rows:
                yield row

    async def iter_board_bodies(self) -> AsyncGenerator[list[tuple[int, bytes]], None]:
        async with contextlib.aclosing(self._pages(BOARD, "landed_board")) as pages:
            async for page in pages:
                yield [(int(seq), checked_body(body, int(seq), sha)) for seq, body, sha in page]

    async def _stream(self, query: sql.SQL, name: str) -> AsyncGenerator[tuple[int, Receipt], None]:
        async with contextlib.aclosing(self._pages(query, name)) as pages:
            async for page in pages:
                for sequence, body, sha in page:
                    yield int(sequence), parse_body(body, int(sequence), sha)

    async def _pages(
        self, query: sql.SQL, name: str
    ) -> AsyncGenerator[list[tuple[Any, ...]], None]:
        """``query``'s rows a page at a time, through a server-side cursor in one snapshot."""
        try:
            async with self._pool.connection() as conn:
                await conn.set_autocommit(False)
                try:
                    await conn.set_isolation_level(psycopg.IsolationLevel.REPEATABLE_READ)
                    async with conn.transaction(), conn.cursor(name=name) as cur:
                        await cur.execute(query.format(t=self._sql.table))
                        while page := await cur.fetchmany(_PAGE):
                            yield page
                finally:
                    await conn.set_isolation_level(None)
                    await conn.set_autocommit(True)
        except psycopg.Error as exc:
            raise self._failed(exc) from exc

    async def board_where(
        self,
        *,
        owner: str | None = None,
        loop: str | None = None,
        since: datetime | None = None,
    ) -> list[tuple[int, Receipt]]:
        query, params = self._sql.where(owner, loop, since)
        return await self._select_rows(query, *params)

    async def chain_window(self, sequence: int) -> list[ChainRow]:
        page = sql.SQL(
            PAGE_SQL["receipts"] + " FROM {t} WHERE sequence > %s ORDER BY sequence LIMIT %s"
        ).format(t=self._sql.table)
        try:
            async with self._pool.connection() as conn:
                await require_chain(conn, self._schema)
                cur = await conn.execute(self._sql.before, (sequence,))
                row = await cur.fetchone()
                before = row[0] if row is not None else None
                after, count = (int(before) - 1, 3) if before is not None else (sequence - 1, 2)
                cur = await conn.execute(page, (after, count))
                return await cur.fetchall()
        except psycopg.Error as exc:
            raise self._failed(exc) from exc

    async def chain_windows(self, sequences: Sequence[int]) -> dict[int, list[ChainRow]]:
        windows: dict[int, list[ChainRow]] = {seq: [] for seq in sequences}
        if not windows:
            return windows
        try:
            async with self._pool.connection() as conn:
                await require_chain(conn, self._schema)
                cur = await conn.execute(self._sql.windows, (list(windows),))
                for seq, *row in await cur.fetchall():
                    windows[int(seq)].append(tuple(row))
        except psycopg.Error as exc:
            raise self._failed(exc) from exc
        return windows

    async def walk_chain(self) -> None:
        await self._guard.walk_to_end(self)

    async def loop_latest(
        self, loop: str, since: datetime | None = None, limit: int = 100
    ) -> list[LoopRow]:
        limit = max(1, min(limit, MAX_LOOP_ROWS))
        rows = await self._fetch(self._sql.loop_latest, loop, Queries.since(since), limit)
        found = [(int(seq), str(task), str(body), str(sha)) for seq, task, body, sha in rows]
        return await loop_rows(self, self._guard, loop, found)

    async def loop_after(
        self, loop: str, after: int, since: datetime | None = None, limit: int = 100
    ) -> list[LoopRow]:
        limit = max(1, min(limit, MAX_LOOP_ROWS))
        args = (loop, Queries.since(since), after, limit)
        rows = await self._fetch(self._sql.loop_after, *args)
        found = [(int(seq), str(task), str(body), str(sha)) for seq, task, body, sha in rows]
        return await loop_rows(self, self._guard, loop, found)

    async def count(self) -> int:
        rows = await self._fetch(self._sql.count)
        return int(rows[0][0]) if rows else 0

    async def append_event(self, event: LedgerEvent) -> bool:
        wrote = self._signer.wrote if self._signer is not None else None
        return await stored_events.append_event(self._pool, self._schema, event, wrote)

    async def events(self, loop: str | None = None, limit: int = 100) -> list[LedgerEvent]:
        return await stored_events.events(self._pool, self._schema, loop, limit)
