"""The embedded ledger: one SQLite file (WAL), append-only by trigger, written by one thread."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncGenerator, Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar
from urllib.parse import parse_qs, quote, unquote

from landed.ledger.base import (
    Claim,
    GroupCommit,
    LedgerError,
    LedgerNotFound,
    LedgerRow,
    parse_body,
)
from landed.receipts.model import Receipt
from landed.util.paths import user_path

__all__ = ["SqliteLedger", "columns", "sqlite_path"]

T = TypeVar("T")

SCHEMA_VERSION = 6
_PAGE = 500
_QUERY = frozenset({"synchronous"})

# INSERT OR REPLACE (and REPLACE INTO) removes the stored row without firing the DELETE trigger
# (SQLite fires none for a replace unless recursive_triggers is on), so an insert of a stored
# (task_id, attempt) is dropped before it reaches the constraint: the stored row stays and the
# statement changes nothing (rowcount 0). IGNORE, not ABORT, because a runner of the first
# schema's code appends to the same file: its retry of a stored receipt must still read as
# "already there", never fail the settle.
_NO_REPLACE = """CREATE TRIGGER landed_receipts_no_replace BEFORE INSERT ON landed_receipts
    WHEN EXISTS (SELECT 1 FROM landed_receipts
                 WHERE task_id = NEW.task_id AND attempt = NEW.attempt)
    BEGIN SELECT RAISE(IGNORE); END"""

_APPEND_ONLY = [
    """CREATE TRIGGER landed_receipts_no_update BEFORE UPDATE ON landed_receipts
       BEGIN SELECT RAISE(ABORT, 'the landed ledger is append-only: UPDATE is not allowed');
       END""",
    """CREATE TRIGGER landed_receipts_no_delete BEFORE DELETE ON landed_receipts
       BEGIN SELECT RAISE(ABORT, 'the landed ledger is append-only: DELETE is not allowed');
       END""",
]
_NO_ROWID_REWRITE = """CREATE TRIGGER IF NOT EXISTS landed_receipts_no_rowid_rewrite
           BEFORE INSERT ON landed_receipts
           WHEN EXISTS (SELECT 1 FROM landed_receipts WHERE sequence = NEW.sequence)
           BEGIN SELECT RAISE(ABORT,
               'the landed ledger is append-only: a stored sequence cannot be written again');
           END"""

# Schema 6: a row's key is (task_id, attempt, stage), so a recheck's lifecycle row (confirmed,
# reversed) is appended beside the settled one. SQLite cannot change a table's UNIQUE, so the
# table is copied (sequence numbers kept) into one with the new key; DROP TABLE fires no
# trigger, and every trigger is made again on the new table.
_STAGE_KEY = [
    """CREATE TABLE landed_receipts_v6 (
        sequence INTEGER PRIMARY KEY AUTOINCREMENT,
        task_id TEXT NOT NULL,
        attempt INTEGER NOT NULL CHECK (attempt >= 1),
        stage TEXT NOT NULL DEFAULT 'settle',
        verdict TEXT,
        owner TEXT,
        settled_at TEXT,
        body_sha256 TEXT NOT NULL,
        body TEXT NOT NULL,
        appended_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
        UNIQUE (task_id, attempt, stage)
    )""",
    """INSERT INTO landed_receipts_v6 (sequence, task_id, attempt, verdict, owner, settled_at,
        body_sha256, body, appended_at) SELECT sequence, task_id, attempt, verdict, owner,
        settled_at, body_sha256, body, appended_at FROM landed_receipts ORDER BY sequence""",
    "DROP TABLE landed_receipts",
    "ALTER TABLE landed_receipts_v6 RENAME TO landed_receipts",
    "CREATE INDEX landed_receipts_verdict ON landed_receipts (verdict)",
    "CREATE INDEX landed_receipts_owner ON landed_receipts (owner)",
    "CREATE INDEX landed_receipts_settled_at ON landed_receipts (settled_at)",
    *_APPEND_ONLY,
    """CREATE TRIGGER landed_receipts_no_replace BEFORE INSERT ON landed_receipts
    WHEN EXISTS (SELECT 1 FROM landed_receipts WHERE task_id = NEW.task_id
                 AND attempt = NEW.attempt AND stage = NEW.stage)
    BEGIN SELECT RAISE(IGNORE); END""",
    _NO_ROWID_REWRITE,
]

# Each step runs once, in order, inside one transaction with its version row.
_MIGRATIONS: dict[int, list[str]] = {
    1: [
        """CREATE TABLE landed_receipts (
            sequence INTEGER PRIMARY KEY AUTOINCREMENT,
            task_id TEXT NOT NULL,
            attempt INTEGER NOT NULL CHECK (attempt >= 1),
            verdict TEXT,
            owner TEXT,
            settled_at TEXT,
            body_sha256 TEXT NOT NULL,
            body TEXT NOT NULL,
            appended_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
            UNIQUE (task_id, attempt)
        )""",
        "CREATE INDEX landed_receipts_verdict ON landed_receipts (verdict)",
        "CREATE INDEX landed_receipts_owner ON landed_receipts (owner)",
        "CREATE INDEX landed_receipts_settled_at ON landed_receipts (settled_at)",
        """CREATE TRIGGER landed_receipts_no_update BEFORE UPDATE ON landed_receipts
           BEGIN SELECT RAISE(ABORT, 'the landed ledger is append-only: UPDATE is not allowed');
           END""",
        """CREATE TRIGGER landed_receipts_no_delete BEFORE DELETE ON landed_receipts
           BEGIN SELECT RAISE(ABORT, 'the landed ledger is append-only: DELETE is not allowed');
           END""",
    ],
    2: [_NO_REPLACE],
    # Files first written at schema 2 by 3d4e067 carry the same trigger raising ABORT, which
    # fails a stored key's re-append instead of reading as "already there".
    3: ["DROP TRIGGER IF EXISTS landed_receipts_no_replace", _NO_REPLACE],
    # Claims: which run was about to run which act attempt (see Ledger.claim).
    4: [
        """CREATE TABLE landed_claims (
            task_id TEXT NOT NULL,
            run_id TEXT NOT NULL,
            attempt INTEGER NOT NULL CHECK (attempt >= 1),
            spec_sha256 TEXT NOT NULL,
            claimed_at TEXT NOT NULL,
            PRIMARY KEY (task_id, run_id, attempt)
        )""",
        """CREATE TRIGGER landed_claims_no_update BEFORE UPDATE ON landed_claims
           BEGIN SELECT RAISE(ABORT, 'landed claims are append-only: UPDATE is not allowed');
           END""",
        """CREATE TRIGGER landed_claims_no_delete BEFORE DELETE ON landed_claims
           BEGIN SELECT RAISE(ABORT, 'landed claims are append-only: DELETE is not allowed');
           END""",
        """CREATE TRIGGER landed_claims_no_replace BEFORE INSERT ON landed_claims
           WHEN EXISTS (SELECT 1 FROM landed_claims WHERE task_id = NEW.task_id
                        AND run_id = NEW.run_id AND attempt = NEW.attempt)
           BEGIN SELECT RAISE(IGNORE); END""",
    ],
    # A REPLACE that names a stored row by its rowid (receipts: sequence) deletes that row before
    # inserting its own, and the DELETE trigger does not fire for it in a connection without
    # recursive_triggers (the sqlite3 shell's default). This trigger runs before conflict
    # resolution, so the statement aborts and the stored row stays.
    5: [
        _NO_ROWID_REWRITE,
        """CREATE TRIGGER IF NOT EXISTS landed_claims_no_rowid_rewrite
           BEFORE INSERT ON landed_claims
           WHEN EXISTS (SELECT 1 FROM landed_claims WHERE rowid = NEW.rowid)
           BEGIN SELECT RAISE(ABORT,
               'landed claims are append-only: a stored rowid cannot be written again');
           END""",
    ],
    6: _STAGE_KEY,
}

# A stored (task_id, attempt) inserts nothing: dropped by the no-replace trigger (schema 2+) or
# skipped by the conflict clause (schema 1); the caller then compares it with the stored one.
_INSERT = """INSERT INTO landed_receipts
    (task_id, attempt, verdict, owner, settled_at, body_sha256, body, stage)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (task_id, attempt, stage) DO NOTHING"""


_LATEST = (
    "SELECT sequence, body, body_sha256 FROM landed_receipts WHERE task_id = ?"
    " ORDER BY attempt DESC, sequence DESC LIMIT 1"
)


def columns(row: LedgerRow) -> tuple[object, ...]:
    """The row's values in _INSERT's column order, as SQLite stores them."""
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


def _row_refused(exc: BaseException) -> bool:
    """An error about one row's values, not about the file (see GroupCommit)."""
    cause = exc.__cause__ if isinstance(exc, LedgerError) else exc
    # OverflowError: an attempt beyond SQLite's 64-bit integer, raised by the binding itself.
    return isinstance(cause, (sqlite3.IntegrityError, sqlite3.DataError, OverflowError))


def sqlite_path(url: str) -> tuple[Path, dict[str, str]]:
    """``sqlite:///rel.db`` -> rel.db, ``sqlite:////abs.db`` -> /abs.db, a bare path -> itself;
    a leading ``~/`` in either is the home directory.

    A URL's path is percent-decoded (``%20`` is a space, ``%3F`` a question mark) and its query
    may hold only ``synchronous``; a bare path is taken literally, query-like text included.
    """
    query: dict[str, str] = {}
    if url.startswith("sqlite:") and not url.startswith("sqlite://"):
        raise LedgerError(
            f"SQLite ledger URL {url!r} lacks the //; use sqlite:///relative/path.db or "
            "sqlite:////absolute/path.db"
        )
    if url.startswith("sqlite://"):
        rest = url[len("sqlite://") :]
        if not rest.startswith("/"):
            raise LedgerError(
                f"SQLite ledger URL {url!r} has a host part; use sqlite:///relative/path.db "
                "or sqlite:////absolute/path.db"
            )
        rest, _, qs = rest[1:].partition("?")
        query = {k: v[-1] for k, v in parse_qs(qs, keep_blank_values=True).items()}
        unknown = sorted(set(query) - _QUERY)
        if unknown:
            raise LedgerError(
                f"SQLite ledger URL {url!r}: unknown parameter(s) {', '.join(unknown)}; the only "
                "one is synchronous=full|normal|extra"
            )
        url = unquote(rest)
    if not url or url == ":memory:":
        raise LedgerError("the ledger must be a file: pass sqlite:///PATH or a file path")
    return user_path(url), query


class SqliteLedger:
    """A SQLite file ledger. One thread owns the connection; appends are group-committed."""

    def __init__(self, path: Path, synchronous: str) -> None:
        self._path = path
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
    async def open(cls, url: str, *, create: bool = True) -> SqliteLedger:
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
        ledger = cls(path, synchronous)
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
        try:
            conn.execute("PRAGMA busy_timeout = 10000")
            version = self._version(conn)
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
                self._migrate_sync(conn)
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

    def _migrate_sync(self, conn: sqlite3.Connection) -> None:
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute(
                "CREATE TABLE IF NOT EXISTS landed_schema_version (version INTEGER PRIMARY KEY,"
                " applied_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')))"
            )
            # Re-read under the write lock: another process may have migrated meanwhile.
            for step in range(self._version(conn) + 1, SCHEMA_VERSION + 1):
                for statement in _MIGRATIONS[step]:
                    conn.execute(statement)
                conn.execute("INSERT INTO landed_schema_version (version) VALUES (?)", (step,))
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    @staticmethod
    def _version(conn: sqlite3.Connection) -> int:
        try:
            row = conn.execute("SELECT max(version) FROM landed_schema_version").fetchone()
        except sqlite3.OperationalError as exc:
            if "no such table" in str(exc):  # an empty or foreign database
                return 0
            raise
        return int(row[0] or 0)

    def _flush_sync(self, rows: Sequence[LedgerRow]) -> list[bool | str]:
        conn = self._db()
        out: list[bool | str] = []
        conn.execute("BEGIN IMMEDIATE")
        try:
            for row in rows:
                if conn.execute(_INSERT, columns(row)).rowcount == 1:
                    out.append(True)
                    continue
                stored = conn.execute(
                    "SELECT body_sha256 FROM landed_receipts WHERE task_id = ? AND attempt = ?"
                    " AND stage = ?",
                    row.key,
                ).fetchone()
                out.append(str(stored[0]))
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        return out

    def _claim_sync(
        self, task_id: str, run_id: str, attempt: int, spec_sha256: str, at: str, record: bool
    ) -> tuple[tuple[int, str, str] | None, tuple[str, int, str, str] | None]:
        conn = self._db()
        # A lookup alone needs no write lock (WAL readers never wait for the writer).
        conn.execute("BEGIN IMMEDIATE" if record else "BEGIN")
        try:
            stored = conn.execute(_LATEST, (task_id,)).fetchone()
            row = None
            if stored is None and record:
                conn.execute(
                    "INSERT INTO landed_claims (task_id, run_id, attempt, spec_sha256, claimed_at)"
                    " VALUES (?, ?, ?, ?, ?) ON CONFLICT (task_id, run_id, attempt) DO NOTHING",
                    (task_id, run_id, attempt, spec_sha256, at),
                )
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

    def _rows_sync(self, sql: str, params: tuple[object, ...]) -> list[tuple[int, str, str]]:
        return [
            (int(r[0]), str(r[1]), str(r[2])) for r in self._db().execute(sql, params).fetchall()
        ]

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

    async def append(self, receipt: Receipt) -> bool:
        return (await self._commit.submit([LedgerRow.of(receipt)]))[0]

    async def append_many(self, receipts: Iterable[Receipt]) -> list[bool]:
        return await self._commit.submit([LedgerRow.of(r) for r in receipts])

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
        found = await self._select(_LATEST, task_id)
        return found[0] if found else None

    async def claim(
        self, task_id: str, run_id: str, attempt: int, spec_sha256: str, *, record: bool = True
    ) -> tuple[Receipt | None, Claim | None]:
        # One transaction on the ledger thread: the receipt check and the claim together.
        now = datetime.now(UTC).isoformat(timespec="microseconds")
        stored, found = await self._run(
            self._claim_sync, task_id, run_id, attempt, spec_sha256, now, record
        )
        if stored is not None:
            return parse_body(stored[1], stored[0], stored[2]), None
        if found is None:
            return None, None
        other, other_attempt, digest, at = found
        return None, Claim(task_id, other, other_attempt, digest, datetime.fromisoformat(at))

    async def board(self) -> list[Receipt]:
        return await self._select(
            "SELECT sequence, body, body_sha256 FROM landed_receipts AS r WHERE sequence = "
            "(SELECT sequence FROM landed_receipts WHERE task_id = r.task_id"
            " ORDER BY attempt DESC, sequence DESC LIMIT 1) ORDER BY task_id"
        )

    async def iter_receipts(self) -> AsyncGenerator[Receipt, None]:
        # Pages by sequence: SQLite serialises writers, so sequence order is commit order and
        # no receipt committed before the export started can be skipped.
        after = 0
        while True:
            page = await self._run(self._page_sync, after)
            for sequence, body, sha in page:
                yield parse_body(body, sequence, sha)
            if len(page) < _PAGE:
                return
            after = page[-1][0]

    async def count(self) -> int:
        return await self._run(self._count_sync)

    async def close(self) -> None:
        # Waited for first, by every close(): one that was cancelled while rows were queued
        # must not make the next return with those rows unwritten.
        await self._commit.wait_idle()
        if self._closed:
            return
        self._closed = True
        await self._run(self._close_sync)
        self._thread.shutdown(wait=True)

    async def __aenter__(self) -> SqliteLedger:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
