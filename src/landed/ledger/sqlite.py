"""The embedded ledger: one SQLite file (WAL), append-only by trigger, written by one thread."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections.abc import AsyncGenerator, Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from hashlib import sha256
from pathlib import Path
from typing import TypeVar, cast
from urllib.parse import quote

from landed.ledger.base import (
    Claim,
    GroupCommit,
    LedgerError,
    LedgerNotFound,
    LedgerRow,
    LoopRow,
    parse_body,
)
from landed.ledger.chain import (
    MAX_HEADS,
    ChainHead,
    ChainRow,
    HeadSigner,
    SignedHead,
    keep_signing,
    stop_signing,
)
from landed.ledger.events import LedgerEvent, sqlite_append_event, sqlite_events
from landed.ledger.links import link_v2
from landed.ledger.reads import MAX_LOOP_ROWS, loop_rows, since_text
from landed.ledger.sqlite_chain import PAGE_SQL, all_heads, sign_sync, tail
from landed.ledger.sqlite_schema import (
    CHAIN_V2_STEP,
    LOOP_OF,
    SCHEMA_VERSION,
    chain_head,
    migrate,
    schema_version,
)
from landed.ledger.sqlite_stream import sqlite_loop_after
from landed.ledger.sqlite_url import sqlite_path
from landed.ledger.trusted import ReadGuard
from landed.receipts.model import Receipt

__all__ = ["SqliteLedger", "columns", "sqlite_path"]

T = TypeVar("T")

_PAGE = 500
_CHAIN_PAGE = 5000

# The first eight columns are columns(row); a stored (task_id, attempt, stage) is looked up
# first, under the write lock, so an insert never meets one (see _flush_sync).
_INSERT_CHAINED = """INSERT INTO landed_receipts
    (task_id, attempt, verdict, owner, settled_at, body_sha256, body, stage, sequence,
     chain_pos, chain_link) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"""


_LATEST = (
    "SELECT sequence, body, body_sha256 FROM landed_receipts WHERE task_id = ?"
    " ORDER BY attempt DESC, sequence DESC LIMIT 1"
)


_BOARD = (
    "SELECT sequence, body, body_sha256 FROM landed_receipts AS r WHERE sequence = "
    "(SELECT sequence FROM landed_receipts WHERE task_id = r.task_id"
    " ORDER BY attempt DESC, sequence DESC LIMIT 1) ORDER BY task_id"
)


# One page of the board, in task_id order from a task_id on (the key's index is walked).
_BOARD_PAGE = (
    "SELECT sequence, body, body_sha256, task_id FROM landed_receipts AS r WHERE task_id > ?"
    " AND sequence = (SELECT sequence FROM landed_receipts WHERE task_id = r.task_id"
    " ORDER BY attempt DESC, sequence DESC LIMIT 1) ORDER BY task_id LIMIT ?"
)

# A loop's newest latest-rows, by the loop index (LOOP_OF, settled_at, task_id) read backwards.
_LOOP_LATEST = (
    "SELECT sequence, task_id, body, body_sha256 FROM landed_receipts AS r"
    f" WHERE {LOOP_OF} = ? AND settled_at > ?"
    " AND sequence = (SELECT sequence FROM landed_receipts WHERE task_id = r.task_id"
    " ORDER BY attempt DESC, sequence DESC LIMIT 1)"
    " ORDER BY settled_at DESC, task_id DESC LIMIT ?"
)


_IS_LATEST = (
    "sequence = (SELECT sequence FROM landed_receipts WHERE task_id = r.task_id"
    " ORDER BY attempt DESC, sequence DESC LIMIT 1)"
)


def _where_sql(
    owner: str | None, loop: str | None, since: datetime | None
) -> tuple[str, list[object]]:
    """board_where's query: the loop index when a loop is given, else the owner's, else
    settled_at's (each condition in the form its index is reached by)."""
    terms: list[str] = []
    params: list[object] = []
    if loop is not None:
        terms.append(f"{LOOP_OF} = ?")
        params.append(loop)
    if owner is not None:
        terms.append("owner = ?")
        params.append(owner)
    if since is not None:
        terms.append("settled_at > ?")
        params.append(since_text(since))
    if not terms:
        raise LedgerError("board_where needs an owner, a loop or a since")
    # A since alone is read by its index: the planner would otherwise walk the whole key's
    # index to spare the sort by task_id (the index has been there since schema 1).
    hint = " INDEXED BY landed_receipts_settled_at" if loop is None and owner is None else ""
    query = (
        f"SELECT sequence, body, body_sha256 FROM landed_receipts AS r{hint} WHERE "
        + " AND ".join([*terms, _IS_LATEST])
        + " ORDER BY task_id"
    )
    return query, params


def columns(row: LedgerRow) -> tuple[object, ...]:
    """The row's values in _INSERT_CHAINED's column order, as SQLite stores them."""
    return (
        row.task_id,
        row.attempt,
        row.verdict,
        row.owner,
        row.settled_at.isoformat() if row.settled_at else None,
        row.sha256,
        row.body.decode(),
        row.stage,
    )


def _sha256_hex(body: bytes) -> str:
    return sha256(body).hexdigest()


def _row_refused(exc: BaseException) -> bool:
    """An error about one row's values, not about the file (see GroupCommit)."""
    cause = exc.__cause__ if isinstance(exc, LedgerError) else exc
    # OverflowError: an attempt beyond SQLite's 64-bit integer, raised by the binding itself.
    return isinstance(cause, (sqlite3.IntegrityError, sqlite3.DataError, OverflowError))


class SqliteLedger:
    """A SQLite file ledger. One thread owns the connection; appends are group-committed."""

    def __init__(self, path: Path, synchronous: str, signer: HeadSigner | None = None) -> None:
        self._path = path
        self._signer = signer
        # The latest-receipt lookups walk the receipts chain up to the row they hand on.
        self._guard = ReadGuard()
        self._ticker: asyncio.Task[None] | None = None
        self._synchronous = synchronous
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="landed-ledger")
        self._conn: sqlite3.Connection | None = None
        self._closed = False
        self._commit = GroupCommit(
            lambda rows: self._run(self._flush_sync, rows), row_refused=_row_refused
        )

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
            if isinstance(exc, sqlite3.DatabaseError) and "malformed" in str(exc):
                fix = (
                    "the file is damaged: copy it aside before anything else writes to it, and "
                    "recover its rows with sqlite3's .recover"
                )
            elif "locked" in str(exc) or "busy" in str(exc):
                fix = "another process held the ledger's lock past the 10 s busy timeout; try again"
            else:
                fix = "check the file, its directory and the disk"
            raise LedgerError(
                f"the ledger file {self._path} failed: {type(exc).__name__}: {exc}; {fix}"
            ) from exc

    # --- runs on the ledger thread ------------------------------------------------------------

    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            raise LedgerError("the ledger is closed; open it again with open_ledger()")
        return self._conn

    def _open_sync(self, create: bool) -> None:
        try:
            if create:
                self._path.parent.mkdir(parents=True, exist_ok=True)
                conn = sqlite3.connect(self._path, isolation_level=None, check_same_thread=False)
            else:
                # Read-only: a file that is not a ledger (or not yet) is left exactly as it was.
                uri = f"file:{quote(str(self._path.resolve()))}?mode=ro"
                conn = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
        except (OSError, sqlite3.Error) as exc:
            raise LedgerError(f"cannot open the ledger file {self._path}: {exc}") from exc
        self._conn = conn
        # The verify walk's body hash, computed as SQLite reads each row (see ChainRow).
        conn.create_function("landed_sha256", 1, _sha256_hex, deterministic=True)
        try:
            conn.execute("PRAGMA busy_timeout = 10000")
            version = schema_version(conn)
            if not create:
                if version < 1:
                    raise LedgerNotFound(
                        f"{self._path} is not a landed ledger (schema version {version}); "
                        "create it with `landed ledger init --ledger URL` (a runner creates "
                        "its own)"
                    )
                return  # an older schema reads the same; only a writer migrates it
            if version > SCHEMA_VERSION:
                raise LedgerError(
                    f"{self._path} is at ledger schema version {version}, newer than this "
                    f"landed's {SCHEMA_VERSION}: a runner of older code would skip what the "
                    "newer schema records (claims before each act); upgrade landed here, and "
                    "stop every older runner before newer ones start"
                )
            if version < 1:
                self._refuse_foreign(conn)
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute(f"PRAGMA synchronous = {self._synchronous}")
            if version < SCHEMA_VERSION:
                migrate(conn)
        except sqlite3.DatabaseError as exc:
            hint = (
                "; reading a WAL ledger needs write access to its directory (SQLite keeps a "
                "-shm file beside it): run as the ledger's owner or open the directory to them"
                if "readonly" in str(exc)
                else ""
            )
            raise LedgerError(f"{self._path} is not a usable landed ledger: {exc}{hint}") from exc

    def _refuse_foreign(self, conn: sqlite3.Connection) -> None:
        """A database holding other tables is someone else's: the ledger gets its own file."""
        names = [
            str(r[0])
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
                " AND name NOT LIKE 'landed_%' ORDER BY name"
            )
        ]
        if names:
            shown = ", ".join(names[:5]) + (", ..." if len(names) > 5 else "")
            raise LedgerError(
                f"{self._path} is another database (tables: {shown}), not a landed ledger; "
                "give the ledger a file of its own, e.g. --ledger sqlite:///.landed/ledger.db"
            )

    def _flush_sync(self, rows: Sequence[LedgerRow]) -> list[bool | str]:
        conn = self._db()
        out: list[bool | str] = []
        signer, signed = self._signer, None
        # BEGIN IMMEDIATE takes the file's write lock first: no other process appends between
        # reading the chain head and linking onto it.
        conn.execute("BEGIN IMMEDIATE")
        try:
            head = chain_head(conn)
            # AUTOINCREMENT's counter, so a sequence is never reused, not even a deleted one's.
            counter = conn.execute(
                "SELECT seq FROM sqlite_sequence WHERE name = 'landed_receipts'"
            ).fetchone()
            sequence = max(head.sequence, int(counter[0]) if counter else 0)
            for row in rows:
                stored = conn.execute(
                    "SELECT body_sha256 FROM landed_receipts WHERE task_id = ? AND attempt = ?"
                    " AND stage = ?",
                    row.key,
                ).fetchone()
                if stored is not None:
                    out.append(str(stored[0]))
                    continue
                sequence += 1
                values = columns(row)
                fields = (sequence, row.task_id, row.attempt, row.stage, *values[2:6])
                pos = head.pos + 1
                head = ChainHead(pos, sequence, link_v2("receipts", pos, fields, head.link))
                values = (*values, sequence, head.pos, head.link)
                if conn.execute(_INSERT_CHAINED, values).rowcount != 1:
                    raise LedgerError(
                        f"task {row.task_id!r} attempt {row.attempt}: the insert was dropped by "
                        "a trigger landed did not make; check the ledger's triggers"
                    )
                out.append(True)
                if signer is not None:
                    signer.wrote("receipts", head.pos, head.link)
            if signer is not None and signer.due():
                signed = sign_sync(conn, signer)
                if signed is None:
                    signer.refused()
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        if signed is not None and signer is not None:
            signer.committed()
        return out

    def _sign_sync(self) -> None:
        conn, signer = self._db(), self._signer
        if signer is None or signer.unsigned <= 0:
            return
        conn.execute("BEGIN IMMEDIATE")
        try:
            signed = sign_sync(conn, signer)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        if signed is None:
            signer.refused()
        else:
            signer.committed()

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

    def _claim_sync(
        self,
        task_id: str,
        run_id: str,
        attempt: int,
        spec_sha256: str,
        at: str,
        record: bool,
        who: tuple[str | None, str | None],
    ) -> tuple[tuple[int, str, str] | None, tuple[str, int, str, str] | None]:
        conn = self._db()
        # A lookup alone needs no write lock (WAL readers never wait for the writer).
        conn.execute("BEGIN IMMEDIATE" if record else "BEGIN")
        try:
            stored = conn.execute(_LATEST, (task_id,)).fetchone()
            row = None
            if stored is None and record:
                self._insert_claim(conn, (task_id, run_id, attempt, spec_sha256, at, *who))
            if stored is None:
                row = conn.execute(
                    "SELECT run_id, attempt, spec_sha256, claimed_at FROM landed_claims "
                    "WHERE task_id = ? AND run_id <> ? ORDER BY claimed_at, run_id LIMIT 1",
                    (task_id, run_id),
                ).fetchone()
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        return (
            None if stored is None else (int(stored[0]), str(stored[1]), str(stored[2])),
            None if row is None else (str(row[0]), int(row[1]), str(row[2]), str(row[3])),
        )

    def _insert_claim(self, conn: sqlite3.Connection, fields: tuple[object, ...]) -> None:
        # The claims chain's tail is read under the same write lock the receipt check took.
        head = tail(conn, "claims")
        pos = head.pos + 1
        row_link = link_v2("claims", pos, fields, head.link)
        cur = conn.execute(
            "INSERT INTO landed_claims (task_id, run_id, attempt, spec_sha256, claimed_at, owner,"
            " loop, chain_pos, chain_link) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
            " ON CONFLICT (task_id, run_id, attempt) DO NOTHING",
            (*fields, pos, row_link),
        )
        if cur.rowcount == 1 and self._signer is not None:
            self._signer.wrote("claims", pos, row_link)

    def _rows_sync(self, sql: str, params: tuple[object, ...]) -> list[tuple[int, str, str]]:
        return [
            (int(r[0]), str(r[1]), str(r[2])) for r in self._db().execute(sql, params).fetchall()
        ]

    def _board_page_sync(self, after: str) -> list[tuple[int, str, str, str]]:
        return [
            (int(r[0]), str(r[1]), str(r[2]), str(r[3]))
            for r in self._db().execute(_BOARD_PAGE, (after, _PAGE))
        ]

    def _loop_sync(self, loop: str, since: str, limit: int) -> list[tuple[int, str, str, str]]:
        return [
            (int(r[0]), str(r[1]), str(r[2]), str(r[3]))
            for r in self._db().execute(_LOOP_LATEST, (loop, since, limit))
        ]

    def _window_sync(self, sequence: int) -> list[ChainRow]:
        conn = self._db()
        before = conn.execute(
            "SELECT max(sequence) FROM landed_receipts WHERE sequence < ?", (sequence,)
        ).fetchone()[0]
        after, count = (int(before) - 1, 3) if before is not None else (sequence - 1, 2)
        return cast(list[ChainRow], conn.execute(PAGE_SQL["receipts"], (after, count)).fetchall())

    def _count_sync(self) -> int:
        return int(self._db().execute("SELECT count(*) FROM landed_receipts").fetchone()[0])

    def _page_sync(self, after: int) -> list[tuple[int, str, str]]:
        return [
            (int(r[0]), str(r[1]), str(r[2]))
            for r in self._db().execute(
                "SELECT sequence, body, body_sha256 FROM landed_receipts WHERE sequence > ? "
                "ORDER BY sequence LIMIT ?",
                (after, _PAGE),
            )
        ]

    def _close_sync(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    # --- the Ledger protocol ------------------------------------------------------------------

    def _tick(self) -> None:
        if self._signer is not None and self._ticker is None:
            self._ticker = asyncio.get_running_loop().create_task(
                keep_signing(self._signer, self.sign_head)
            )

    async def append(self, receipt: Receipt) -> bool:
        self._tick()
        return (await self._commit.submit([LedgerRow.of(receipt)]))[0]

    async def append_many(self, receipts: Iterable[Receipt]) -> list[bool]:
        self._tick()
        return await self._commit.submit([LedgerRow.of(r) for r in receipts])

    async def sign_head(self) -> None:
        await self._run(self._sign_sync)

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

    async def _select(self, sql: str, *params: object) -> list[Receipt]:
        rows = await self._run(self._rows_sync, sql, params)
        return [parse_body(body, sequence, sha) for sequence, body, sha in rows]

    async def get(self, task_id: str) -> list[Receipt]:
        return await self._select(
            "SELECT sequence, body, body_sha256 FROM landed_receipts WHERE task_id = ?"
            " ORDER BY attempt, sequence",
            task_id,
        )

    async def latest(self, task_id: str) -> Receipt | None:
        rows = await self._run(self._rows_sync, _LATEST, (task_id,))
        if not rows:
            return None
        sequence, body, sha = rows[0]
        receipt = parse_body(body, sequence, sha)
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
        stored, found = await self._run(
            self._claim_sync, task_id, run_id, attempt, spec_sha256, now, record, (owner, loop)
        )
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
        rows = await self._run(self._rows_sync, _BOARD, ())
        return [(seq, parse_body(body, seq, sha)) for seq, body, sha in rows]

    async def iter_board_rows(self) -> AsyncGenerator[tuple[int, Receipt], None]:
        after = ""
        while True:
            page = await self._run(self._board_page_sync, after)
            for sequence, body, sha, _ in page:
                yield sequence, parse_body(body, sequence, sha)
            if len(page) < _PAGE:
                return
            after = page[-1][3]

    async def board_where(
        self,
        *,
        owner: str | None = None,
        loop: str | None = None,
        since: datetime | None = None,
    ) -> list[tuple[int, Receipt]]:
        query, params = _where_sql(owner, loop, since)
        rows = await self._run(self._rows_sync, query, tuple(params))
        return [(seq, parse_body(body, seq, sha)) for seq, body, sha in rows]

    async def chain_window(self, sequence: int) -> list[ChainRow]:
        await self._run(self._require_chain_sync)
        return await self._run(self._window_sync, sequence)

    async def walk_chain(self) -> None:
        await self._guard.walk_to_end(self)

    async def loop_latest(
        self, loop: str, since: datetime | None = None, limit: int = 100
    ) -> list[LoopRow]:
        limit = max(1, min(limit, MAX_LOOP_ROWS))
        found = await self._run(self._loop_sync, loop, since_text(since), limit)
        return await loop_rows(self, self._guard, loop, found)

    async def loop_after(
        self, loop: str, after: int, since: datetime | None = None, limit: int = 100
    ) -> list[LoopRow]:
        found = await self._run(lambda: sqlite_loop_after(self._db(), loop, after, since, limit))
        return await loop_rows(self, self._guard, loop, found)

    async def iter_receipts(self) -> AsyncGenerator[Receipt, None]:
        async with contextlib.aclosing(self.iter_rows()) as rows:
            async for _, receipt in rows:
                yield receipt

    async def iter_rows(self) -> AsyncGenerator[tuple[int, Receipt], None]:
        # Pages by sequence: SQLite serialises writers, so sequence order is commit order and
        # no receipt committed before the export started can be skipped.
        after = 0
        while True:
            page = await self._run(self._page_sync, after)
            for sequence, body, sha in page:
                yield sequence, parse_body(body, sequence, sha)
            if len(page) < _PAGE:
                return
            after = page[-1][0]

    async def count(self) -> int:
        return await self._run(self._count_sync)

    async def append_event(self, event: LedgerEvent) -> bool:
        wrote = self._signer.wrote if self._signer is not None else None
        return await self._run(lambda: sqlite_append_event(self._db(), event, wrote))

    async def events(self, loop: str | None = None, limit: int = 100) -> list[LedgerEvent]:
        return await self._run(lambda: sqlite_events(self._db(), loop, limit))

    async def close(self) -> None:
        # Waited for first, by every close(): one that was cancelled while rows were queued
        # must not make the next return with those rows unwritten.
        await self._commit.wait_idle()
        if self._closed:
            return
        try:
            await stop_signing(self._signer, self._ticker, self.sign_head)
        finally:
            self._closed = True
            await self._run(self._close_sync)
        self._thread.shutdown(wait=True)

    async def __aenter__(self) -> SqliteLedger:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
