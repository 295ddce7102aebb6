"""The embedded ledger: one SQLite file (WAL), append-only by trigger, written by one thread."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections.abc import AsyncGenerator, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar, cast
from urllib.parse import quote

from landed.ledger.append import AppendPath
from landed.ledger.base import (
    Claim,
    LedgerError,
    LedgerNotFound,
    LoopRow,
    checked_body,
    parse_body,
)
from landed.ledger.chain import MAX_HEADS, ChainRow, HeadSigner, SignedHead
from landed.ledger.events import LedgerEvent
from landed.ledger.reads import MAX_LOOP_ROWS, loop_rows, since_text
from landed.ledger.sqlite import events as stored_events
from landed.ledger.sqlite import write
from landed.ledger.sqlite.chain import PAGE_SQL, all_heads
from landed.ledger.sqlite.connect import connect, failure, prepare
from landed.ledger.sqlite.queries import (
    BOARD,
    BOARD_PAGE,
    LATEST,
    LOOP_AFTER,
    LOOP_LATEST,
    PAGE,
    where_sql,
)
from landed.ledger.sqlite.schema import CHAIN_V2_STEP, schema_version
from landed.ledger.sqlite.url import sqlite_path
from landed.ledger.trusted import ReadGuard
from landed.receipts.model import Receipt

__all__ = ["SqliteLedger"]

T = TypeVar("T")

_CHAIN_PAGE = 5000


class SqliteLedger(AppendPath):
    """A SQLite file ledger. One thread owns the connection; appends are group-committed."""

    def __init__(self, path: Path, synchronous: str, signer: HeadSigner | None = None) -> None:
        super().__init__(
            signer, lambda rows: self._with_db(write.flush, rows, signer), write.row_refused
        )
        self._path = path
        # The latest-receipt lookups walk the receipts chain up to the row they hand on.
        self._guard = ReadGuard()
        self._synchronous = synchronous
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="landed-ledger")
        self._conn: sqlite3.Connection | None = None

    @property
    def url(self) -> str:
        # Quoted, so a path holding ? or % reads back as the same file; a relative folder
        # named ~ keeps a ./ so that it is not read back as the home directory.
        path = str(self._path)
        if path == "~" or path.startswith("~/"):
            path = f"./{path}"
        return f"sqlite:///{quote(path)}"

    @classmethod
    async def open(
        cls, url: str, *, create: bool = True, signer: HeadSigner | None = None
    ) -> SqliteLedger:
        path, query = sqlite_path(url)
        synchronous = query.get("synchronous", "full").upper()
        if synchronous not in {"FULL", "NORMAL", "EXTRA"}:
            raise LedgerError(
                f"synchronous={synchronous.lower()!r} is not supported; use full (default), "
                "normal or extra"
            )
        if not create and not path.is_file():
            raise LedgerNotFound(
                f"no ledger at {path}: nothing has settled there yet; pass --ledger URL or "
                "set LANDED_LEDGER_URL"
            )
        ledger = cls(path, synchronous, signer)
        try:
            await ledger._run(ledger._open_sync, create)
        except BaseException:
            await ledger.close()
            raise
        return ledger

    async def _run(self, fn: Callable[..., T], *args: object) -> T:
        try:
            return await asyncio.get_running_loop().run_in_executor(self._thread, fn, *args)
        except sqlite3.Error as exc:
            raise failure(self._path, exc) from exc

    async def _with_db(self, fn: Callable[..., T], *args: object) -> T:
        """``fn(connection, *args)`` on the ledger thread."""
        return await self._run(lambda: fn(self._db(), *args))

    # --- runs on the ledger thread ------------------------------------------------------------

    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            raise LedgerError("the ledger is closed; open it again with open_ledger()")
        return self._conn

    def _open_sync(self, create: bool) -> None:
        self._conn = connect(self._path, create)
        prepare(self._conn, self._path, create, self._synchronous)

    def _require_chain_sync(self) -> None:
        version = schema_version(self._db())
        if version < CHAIN_V2_STEP:
            raise LedgerError(
                f"{self._path} is at ledger schema version {version}, before the hash chain "
                f"(version {CHAIN_V2_STEP}): run `landed ledger init --ledger URL` to upgrade "
                "it (the rows stored so far are chained then, and verify says so)"
            )

    def _heads_sync(self) -> list[SignedHead]:
        self._require_chain_sync()
        return all_heads(self._db())

    def _chain_page_sync(self, chain: str, after: int) -> list[ChainRow]:
        rows = self._db().execute(PAGE_SQL[chain], (after, _CHAIN_PAGE))
        return cast(list[ChainRow], rows.fetchall())

    def _rows_sync(self, sql: str, params: tuple[object, ...]) -> list[tuple[Any, ...]]:
        return list(self._db().execute(sql, params).fetchall())

    def _window_sync(self, sequence: int) -> list[ChainRow]:
        conn = self._db()
        before = conn.execute(
            "SELECT max(sequence) FROM landed_receipts WHERE sequence < ?", (sequence,)
        ).fetchone()[0]
        after, count = (int(before) - 1, 3) if before is not None else (sequence - 1, 2)
        return cast(list[ChainRow], conn.execute(PAGE_SQL["receipts"], (after, count)).fetchall())

    def _board_page_sync(self, after: str) -> tuple[list[tuple[int, bytes]], str | None]:
        """A page of the board from task_id ``after`` on, each body checked against its hash,
        and the task_id the next page starts after (None after the last page)."""
        rows = self._db().execute(BOARD_PAGE, (after, PAGE)).fetchall()
        page = [(int(seq), checked_body(body, int(seq), sha)) for seq, body, sha, _ in rows]
        return page, str(rows[-1][3]) if len(rows) == PAGE else None

    def _close_sync(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    # --- the Ledger protocol ------------------------------------------------------------------

    async def _release(self) -> None:
        await self._run(self._close_sync)
        self._thread.shutdown(wait=True)

    async def sign_head(self) -> None:
        await self._with_db(write.sign, self._signer)

    async def chain_heads(self) -> list[SignedHead]:
        heads = await self._run(self._heads_sync)
        if len(heads) > MAX_HEADS:
            raise LedgerError(f"the ledger holds more than {MAX_HEADS:,} signed chain heads")
        return heads

    async def iter_chain(
        self, chain: str = "receipts", after: int = 0
    ) -> AsyncGenerator[list[ChainRow], None]:
        await self._run(self._require_chain_sync)
        # The next page is read on the ledger thread while the caller walks this one (SQLite
        # lets go of the GIL while it steps through the file).
        loop = asyncio.get_running_loop()
        pending: asyncio.Task[list[ChainRow]] | None = loop.create_task(
            self._run(self._chain_page_sync, chain, after)
        )
        try:
            while pending is not None:
                page = await pending
                pending = None
                if len(page) == _CHAIN_PAGE:
                    pending = loop.create_task(self._run(self._chain_page_sync, chain, page[-1][0]))
                if page:
                    yield page
        finally:
            if pending is not None:
                await asyncio.gather(pending, return_exceptions=True)

    async def _select(self, sql: str, *params: object) -> list[tuple[int, Receipt]]:
        rows = await self._run(self._rows_sync, sql, params)
        return [(int(seq), parse_body(body, int(seq), sha)) for seq, body, sha in rows]

    async def get(self, task_id: str) -> list[Receipt]:
        query = (
            "SELECT sequence, body, body_sha256 FROM landed_receipts WHERE task_id = ?"
            " ORDER BY attempt, sequence"
        )
        return [r for _, r in await self._select(query, task_id)]

    async def latest(self, task_id: str) -> Receipt | None:
        rows = await self._select(LATEST, task_id)
        if not rows:
            return None
        sequence, receipt = rows[0]
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
        # One transaction on the ledger thread: the receipt check and the claim together.
        now = datetime.now(UTC).isoformat(timespec="microseconds")
        fields = (task_id, run_id, attempt, spec_sha256, now, owner, loop)
        stored, found = await self._with_db(write.claim, fields, record, self._signer)
        if stored is not None:
            receipt = parse_body(stored[1], stored[0], stored[2])
            await self._guard.require(self, task_id, stored[0])
            return receipt, None
        if found is None:
            return None, None
        other, other_attempt, digest, at = found
        return None, Claim(task_id, other, other_attempt, digest, datetime.fromisoformat(at))

    async def board(self) -> list[Receipt]:
        return [r for _, r in await self.board_rows()]

    async def board_rows(self) -> list[tuple[int, Receipt]]:
        """The board with each row's sequence (a read that trusts the chain marks by it)."""
        return await self._select(BOARD)

    async def iter_board_rows(self) -> AsyncGenerator[tuple[int, Receipt], None]:
        async with contextlib.aclosing(self.iter_board_bodies()) as pages:
            async for page in pages:
                for sequence, body in page:
                    yield sequence, parse_body(body, sequence)

    async def iter_board_bodies(self) -> AsyncGenerator[list[tuple[int, bytes]], None]:
        # The next page is read (and its bodies hashed) on the ledger thread while the caller
        # takes this one: SQLite and hashlib let go of the GIL as they work.
        loop = asyncio.get_running_loop()
        pending: asyncio.Task[tuple[list[tuple[int, bytes]], str | None]] | None
        pending = loop.create_task(self._run(self._board_page_sync, ""))
        try:
            while pending is not None:
                page, after = await pending
                pending = None
                if after is not None:
                    pending = loop.create_task(self._run(self._board_page_sync, after))
                yield page
        finally:
            if pending is not None:
                await asyncio.gather(pending, return_exceptions=True)

    async def board_where(
        self,
        *,
        owner: str | None = None,
        loop: str | None = None,
        since: datetime | None = None,
    ) -> list[tuple[int, Receipt]]:
        query, params = where_sql(owner, loop, since)
        return await self._select(query, *params)

    async def chain_window(self, sequence: int) -> list[ChainRow]:
        await self._run(self._require_chain_sync)
        return await self._run(self._window_sync, sequence)

    async def chain_windows(self, sequences: Sequence[int]) -> dict[int, list[ChainRow]]:
        await self._run(self._require_chain_sync)
        # One hop to the ledger thread for all of them: the windows are read in a row.
        return await self._run(lambda: {seq: self._window_sync(seq) for seq in sequences})

    async def walk_chain(self) -> None:
        await self._guard.walk_to_end(self)

    async def loop_latest(
        self, loop: str, since: datetime | None = None, limit: int = 100
    ) -> list[LoopRow]:
        limit = max(1, min(limit, MAX_LOOP_ROWS))
        rows = await self._run(self._rows_sync, LOOP_LATEST, (loop, since_text(since), limit))
        found = [(int(r[0]), str(r[1]), str(r[2]), str(r[3])) for r in rows]
        return await loop_rows(self, self._guard, loop, found)

    async def loop_after(
        self, loop: str, after: int, since: datetime | None = None, limit: int = 100
    ) -> list[LoopRow]:
        limit = max(1, min(limit, MAX_LOOP_ROWS))
        rows = await self._run(self._rows_sync, LOOP_AFTER, (loop, since_text(since), after, limit))
        found = [(int(r[0]), str(r[1]), str(r[2]), str(r[3])) for r in rows]
        return await loop_rows(self, self._guard, loop, found)

    async def iter_receipts(self) -> AsyncGenerator[Receipt, None]:
        async with contextlib.aclosing(self.iter_rows()) as rows:
            async for _, receipt in rows:
                yield receipt

    async def iter_rows(self) -> AsyncGenerator[tuple[int, Receipt], None]:
        # Pages by sequence: SQLite serialises writers, so sequence order is commit order and
        # no receipt committed before the export started can be skipped.
        query = (
            "SELECT sequence, body, body_sha256 FROM landed_receipts WHERE sequence > ? "
            "ORDER BY sequence LIMIT ?"
        )
        after = 0
        while True:
            page = await self._run(self._rows_sync, query, (after, PAGE))
            for sequence, body, sha in page:
                yield int(sequence), parse_body(body, int(sequence), sha)
            if len(page) < PAGE:
                return
            after = int(page[-1][0])

    async def count(self) -> int:
        rows = await self._run(self._rows_sync, "SELECT count(*) FROM landed_receipts", ())
        return int(rows[0][0])

    async def append_event(self, event: LedgerEvent) -> bool:
        wrote = self._signer.wrote if self._signer is not None else None
        return await self._with_db(stored_events.append_event, event, wrote)

    async def events(self, loop: str | None = None, limit: int = 100) -> list[LedgerEvent]:
        return await self._with_db(stored_events.events, loop, limit)
