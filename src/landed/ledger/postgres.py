"""The fleet ledger: PostgreSQL, append-only by trigger, written through an INSERT-only role."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import random
import re
from collections.abc import AsyncGenerator, Iterable, Sequence
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

import psycopg
from psycopg import sql
from psycopg_pool import AsyncConnectionPool

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
    ChainHead,
    ChainRow,
    HeadSigner,
    SignedHead,
    keep_signing,
    stop_signing,
)
from landed.ledger.events import LedgerEvent, pg_append_event, pg_events
from landed.ledger.links import link_v2, pg_time
from landed.ledger.pg_chain import (
    chain_heads,
    iter_chain,
    lock_chain,
    read_head,
    read_tail,
    require_chain,
    sequence_name,
    sign_heads,
)
from landed.ledger.pg_pages import PAGE_SQL
from landed.ledger.pg_schema import SCHEMA_VERSION, migrate, schema_version
from landed.ledger.pg_stream import pg_loop_after
from landed.ledger.reads import MAX_LOOP_ROWS, loop_rows
from landed.ledger.trusted import ReadGuard
from landed.receipts.model import Receipt

__all__ = ["PostgresLedger", "split_url"]

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")
_LANDED_PARAMS = ("schema", "writer_role")
_PAGE = 500
_COLUMNS = 11
_CHAIN_PAGE = 5000


@functools.lru_cache(maxsize=64)
def _values(n: int) -> str:
    # Native $n placeholders (a raw cursor): psycopg does not re-parse a query per batch size.
    return ", ".join(
        "(" + ", ".join(f"${i * _COLUMNS + c + 1}" for c in range(_COLUMNS)) + ")" for i in range(n)
    )


def split_url(url: str) -> tuple[str, str, str]:
    """Take landed's own query parameters (schema, writer_role) out of a PostgreSQL URL."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - parsed lazily; a bad port or host raises here, not later
    except ValueError as exc:
        raise LedgerError(
            f"the PostgreSQL ledger URL cannot be parsed ({exc}); write it as "
            "postgresql://USER@HOST:PORT/DB?schema=NAME"
        ) from None
    query = parse_qsl(parts.query, keep_blank_values=True)
    ours = {k: v for k, v in query if k in _LANDED_PARAMS}
    rest = [(k, v) for k, v in query if k not in _LANDED_PARAMS]
    schema, role = ours.get("schema", "public"), ours.get("writer_role", "landed_writer")
    for what, name in (("schema", schema), ("writer_role", role)):
        if not _NAME.match(name):
            raise LedgerError(
                f"{what}={name!r} is not a plain SQL name; use letters, digits and _ only"
            )
    # quote, not quote_plus: libpq reads + as itself, so an encoded space must stay %20.
    return urlunsplit(parts._replace(query=urlencode(rest, quote_via=quote))), schema, role


_SECRET_PARAMS = frozenset({"password", "sslpassword"})


def _redact(url: str) -> str:
    """The URL without its secrets: the password in user:password@ and in the query."""
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return "<a PostgreSQL URL that cannot be parsed>"
    if password is not None:
        parts = parts._replace(netloc=parts.netloc.replace(f":{password}@", ":***@"))
    query = parse_qsl(parts.query, keep_blank_values=True)
    if any(k in _SECRET_PARAMS for k, _ in query):
        hidden = [(k, "***" if k in _SECRET_PARAMS else v) for k, v in query]
        parts = parts._replace(query=urlencode(hidden, quote_via=quote, safe="*"))
    return urlunsplit(parts)


_DEADLOCK_TRIES = 10


def _row_refused(exc: BaseException) -> bool:
    """An error about one row's values, not about the server (see GroupCommit)."""
    return isinstance(
        exc,
        # ProgramLimitExceeded: a key too large for the unique index's btree entry.
        (psycopg.DataError, psycopg.IntegrityError, psycopg.errors.ProgramLimitExceeded),
    )


class PostgresLedger:
    """A PostgreSQL ledger. Appends are group-committed through one writer at a time."""

    def __init__(
        self,
        url: str,
        dsn: str,
        schema: str,
        pool: AsyncConnectionPool,
        signer: HeadSigner | None = None,
    ) -> None:
        self._url = _redact(url)
        self._signer = signer
        # The latest-receipt lookups walk the receipts chain up to the row they hand on.
        self._guard = ReadGuard()
        self._ticker: asyncio.Task[None] | None = None
        self._sequence: str | None = None
        self._dsn = dsn
        self._schema = schema
        self._pool = pool
        self._table = sql.Identifier(schema, "landed_receipts")
        self._latest_sql = sql.SQL(
            "SELECT sequence, body, body_sha256 FROM {t} WHERE task_id = %s"
            " ORDER BY attempt DESC, sequence DESC LIMIT 1"
        ).format(t=self._table)
        self._commit = GroupCommit(
            self._flush,
            row_refused=_row_refused,
        )
        self._closed = False

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
        dsn, schema, role = split_url(url)
        # One plain connection first: a wrong URL fails at once with the server's reason,
        # and the schema is ready before the pool hands out connections.
        try:
            conn = await psycopg.AsyncConnection.connect(dsn, autocommit=True)
        except psycopg.Error as exc:
            raise LedgerError(
                f"cannot connect to the PostgreSQL ledger at {_redact(dsn)}: "
                f"{str(exc).strip()}; check the URL and that the server is running"
            ) from exc
        async with conn:
            try:
                version = await schema_version(conn, schema)
                if version > SCHEMA_VERSION and create:
                    raise LedgerError(
                        f"the ledger in schema {schema!r} is at schema version {version}, newer "
                        f"than this landed's {SCHEMA_VERSION}: a runner of older code would skip "
                        "what the newer schema records (claims before each act); upgrade "
                        "landed here, and stop every older runner before newer ones start"
                    )
                if version < 1 and not create:
                    raise LedgerNotFound(
                        f"no landed ledger in schema {schema!r} at {_redact(url)}; open it "
                        "once as the database owner: `landed ledger init --ledger URL`"
                    )
                if version < SCHEMA_VERSION and create:
                    await migrate(conn, schema, role)
            except psycopg.errors.InsufficientPrivilege as exc:
                raise LedgerError(
                    f"the login of {_redact(dsn)} may not use the ledger in schema {schema!r} "
                    f"({str(exc).strip()}); as the database owner, run `landed ledger init "
                    f"--ledger URL` once and then GRANT {role} TO <this login>"
                ) from exc
            except psycopg.Error as exc:
                raise LedgerError(
                    f"opening the ledger in schema {schema!r} at {_redact(dsn)} failed: "
                    f"{str(exc).strip()}"
                ) from exc
        pool = AsyncConnectionPool(
            dsn, min_size=1, max_size=max_size, open=False, kwargs={"autocommit": True}
        )
        try:
            await pool.open(wait=True, timeout=10)
        except Exception as exc:
            await pool.close()
            raise LedgerError(f"cannot open a connection pool to {_redact(dsn)}: {exc}") from exc
        return cls(url, dsn, schema, pool, signer)

    async def _flush(self, rows: Sequence[LedgerRow]) -> list[bool | str]:
        # Two runners sharing the ledger can insert overlapping keys in opposite orders; the
        # server then aborts one transaction as a deadlock. Nothing of it was written, and the
        # same batch again waits for the other's commit and finds its rows, so try again.
        for left in range(_DEADLOCK_TRIES - 1, -1, -1):
            try:
                return await self._flush_once(rows)
            except psycopg.errors.DeadlockDetected:
                if not left:
                    raise
                # Both sides aborted at once would meet again at once: a random wait apart.
                await asyncio.sleep(random.uniform(0.005, 0.05) * (_DEADLOCK_TRIES - left))
        raise AssertionError("unreachable")

    async def _flush_once(self, rows: Sequence[LedgerRow]) -> list[bool | str]:
        signer, signed = self._signer, None
        async with self._pool.connection() as conn, conn.transaction():
            await lock_chain(conn, self._schema)
            cur = await conn.execute(
                sql.SQL(
                    "SELECT task_id, attempt, stage, body_sha256 FROM {t} WHERE"
                    " (task_id, attempt, stage) IN"
                    " (SELECT * FROM unnest(%s::text[], %s::int[], %s::text[]))"
                ).format(t=self._table),
                ([r.task_id for r in rows], [r.attempt for r in rows], [r.stage for r in rows]),
            )
            stored = {(str(t), int(a), str(g)): str(h) for t, a, g, h in await cur.fetchall()}
            new = [r for r in rows if r.key not in stored]
            head = await read_head(conn, self._schema)
            if new:
                head = await self._insert(conn, new, head)
            if signer is not None and signer.due():
                signed = await sign_heads(conn, self._schema, signer, locked=True)
                if signed is None:
                    signer.refused()
        if signed is not None and signer is not None:
            signer.committed()
        return [stored.get(r.key, True) for r in rows]

    async def _insert(
        self, conn: psycopg.AsyncConnection[Any], rows: Sequence[LedgerRow], head: ChainHead
    ) -> ChainHead:
        # The sequence is drawn first, so the link binds it; under the lock, so sequence order
        # stays chain order. One multi-row INSERT: one round trip for the whole batch.
        cur = await conn.execute(
            "SELECT nextval(%s::regclass) FROM generate_series(1, %s)",
            (self._sequence or await self._load_sequence(conn), len(rows)),
        )
        sequences = sorted(int(n) for (n,) in await cur.fetchall())
        params: list[Any] = []
        for r, sequence in zip(rows, sequences, strict=True):
            pos = head.pos + 1
            at = pg_time(r.settled_at)
            fields = (sequence, r.task_id, r.attempt, r.stage, r.verdict, r.owner, at, r.sha256)
            head = ChainHead(pos, sequence, link_v2("receipts", pos, fields, head.link))
            if self._signer is not None:
                self._signer.wrote("receipts", pos, head.link)
            values = (r.task_id, r.attempt, r.verdict, r.owner, r.settled_at, r.sha256)
            params.extend((*values, r.body.decode(), r.stage, sequence, head.pos, head.link))
        insert = sql.SQL(
            "INSERT INTO {t} (task_id, attempt, verdict, owner, settled_at, body_sha256, body,"
            " stage, sequence, chain_pos, chain_link) OVERRIDING SYSTEM VALUE VALUES {values}"
        ).format(t=self._table, values=sql.SQL(_values(len(rows))))
        async with psycopg.AsyncRawCursor(conn) as raw:
            await raw.execute(insert, params)
        return head

    async def _load_sequence(self, conn: psycopg.AsyncConnection[Any]) -> str:
        self._sequence = await sequence_name(conn, self._schema)
        return self._sequence

    async def chain_heads(self) -> list[SignedHead]:
        try:
            async with self._pool.connection() as conn:
                return await chain_heads(conn, self._schema)
        except psycopg.Error as exc:
            raise LedgerError(f"reading the ledger at {self.url} failed: {exc}") from exc

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
            raise LedgerError(f"reading the ledger at {self.url} failed: {exc}") from exc

    async def sign_head(self) -> None:
        signer = self._signer
        if signer is None or signer.unsigned <= 0:
            return
        try:
            async with self._pool.connection() as conn, conn.transaction():
                signed = await sign_heads(conn, self._schema, signer)
        except psycopg.Error as exc:
            raise LedgerError(f"signing the chain head at {self.url} failed: {exc}") from exc
        if signed is None:
            signer.refused()
        else:
            signer.committed()

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

    async def _select(self, query: sql.Composed, *params: Any) -> list[Receipt]:
        return [r for _, r in await self._select_rows(query, *params)]

    async def _select_rows(self, query: sql.Composed, *params: Any) -> list[tuple[int, Receipt]]:
        try:
            async with self._pool.connection() as conn:
                cur = await conn.execute(query, params)
                rows = await cur.fetchall()
        except psycopg.Error as exc:
            raise LedgerError(f"reading the ledger at {self.url} failed: {exc}") from exc
        return [(int(seq), parse_body(body, int(seq), sha)) for seq, body, sha in rows]

    async def get(self, task_id: str) -> list[Receipt]:
        return await self._select(
            sql.SQL(
                "SELECT sequence, body, body_sha256 FROM {t} WHERE task_id = %s"
                " ORDER BY attempt, sequence"
            ).format(t=self._table),
            task_id,
        )

    async def latest(self, task_id: str) -> Receipt | None:
        found = await self._select_rows(self._latest_sql, task_id)
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
        claims = sql.Identifier(self._schema, "landed_claims")
        try:
            async with self._pool.connection() as conn, conn.transaction():
                if record:
                    # Two runs claiming one task id at once would each insert, neither see the
                    # other's uncommitted row, and both be told nobody else claimed it: the
                    # lock (released at commit) makes the second wait and then see the first.
                    # Bounded: a session that never lets go of the key (any client of this
                    # database can take advisory locks) fails the claim, which the workflow
                    # retries and then settles as not done, instead of holding the task.
                    await conn.execute("SET LOCAL lock_timeout = '10s'")
                    await conn.execute(
                        "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                        (f"landed-claim:{self._schema}:{task_id}",),
                    )
                cur = await conn.execute(self._latest_sql, (task_id,))
                stored = await cur.fetchone()
                row = None
                if stored is None:
                    if record:
                        fields = (task_id, run_id, attempt, spec_sha256, owner, loop)
                        await self._insert_claim(conn, claims, fields)
                    cur = await conn.execute(
                        sql.SQL(
                            "SELECT run_id, attempt, spec_sha256, claimed_at FROM {c} WHERE"
                            " task_id = %s AND run_id <> %s ORDER BY claimed_at, run_id LIMIT 1"
                        ).format(c=claims),
                        (task_id, run_id),
                    )
                    row = await cur.fetchone()
        except psycopg.Error as exc:
            raise LedgerError(
                f"claiming task {task_id!r} in the ledger at {self.url} failed: {exc}"
            ) from exc
        if stored is not None:
            receipt = parse_body(stored[1], int(stored[0]), stored[2])
            await self._guard.require(self, task_id, int(stored[0]))
            return receipt, None
        if row is None:
            return None, None
        return None, Claim(task_id, str(row[0]), int(row[1]), str(row[2]), row[3])

    async def _insert_claim(
        self, conn: psycopg.AsyncConnection[Any], claims: sql.Identifier, values: tuple[Any, ...]
    ) -> None:
        # Linked onto the claims chain under its lock; the time is the runner's, so that the
        # link binds it (a server default would be known only after the insert).
        await lock_chain(conn, self._schema, "claims")
        head = await read_tail(conn, self._schema, "claims")
        task_id, run_id, attempt, spec, owner, loop = values
        at = datetime.now(UTC)
        pos = head.pos + 1
        fields = (task_id, run_id, attempt, spec, pg_time(at), owner, loop)
        row_link = link_v2("claims", pos, fields, head.link)
        cur = await conn.execute(
            sql.SQL(
                "INSERT INTO {c} (task_id, run_id, attempt, spec_sha256, claimed_at, owner, loop,"
                " chain_pos, chain_link) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)"
                " ON CONFLICT (task_id, run_id, attempt) DO NOTHING"
            ).format(c=claims),
            (task_id, run_id, attempt, spec, at, owner, loop, pos, row_link),
        )
        if cur.rowcount == 1 and self._signer is not None:
            self._signer.wrote("claims", pos, row_link)

    async def board(self) -> list[Receipt]:
        return [r for _, r in await self.board_rows()]

    async def board_rows(self) -> list[tuple[int, Receipt]]:
        """The board with each row's sequence (a read that trusts the chain marks by it)."""
        return await self._select_rows(
            sql.SQL(
                # Code point order, as SQLite's: the database's own collation would order
                # (and page) the same board differently from one server locale to the next.
                'SELECT DISTINCT ON (task_id COLLATE "C") sequence, body, body_sha256 FROM {t}'
                ' ORDER BY task_id COLLATE "C", attempt DESC, sequence DESC'
            ).format(t=self._table)
        )

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
        query = sql.SQL(
            'SELECT DISTINCT ON (task_id COLLATE "C") sequence, body, body_sha256 FROM {t}'
            ' ORDER BY task_id COLLATE "C", attempt DESC, sequence DESC'
        )
        async with contextlib.aclosing(self._stream(query, "landed_board")) as rows:
            async for row in rows:
                yield row

    async def _stream(self, query: sql.SQL, name: str) -> AsyncGenerator[tuple[int, Receipt], None]:
        try:
            async with self._pool.connection() as conn:
                await conn.set_autocommit(False)
                try:
                    await conn.set_isolation_level(psycopg.IsolationLevel.REPEATABLE_READ)
                    async with conn.transaction(), conn.cursor(name=name) as cur:
                        cur.itersize = _PAGE
                        await cur.execute(query.format(t=self._table))
                        async for sequence, body, sha in cur:
                            yield int(sequence), parse_body(body, int(sequence), sha)
                finally:
                    await conn.set_isolation_level(None)
                    await conn.set_autocommit(True)
        except psycopg.Error as exc:
            raise LedgerError(f"reading the ledger at {self.url} failed: {exc}") from exc

    async def board_where(
        self,
        *,
        owner: str | None = None,
        loop: str | None = None,
        since: datetime | None = None,
    ) -> list[tuple[int, Receipt]]:
        # Each condition in the form its index is reached by (the loop index's expression).
        terms: list[sql.Composable] = []
        params: list[object] = []
        if loop is not None:
            terms.append(
                sql.SQL("{s}.landed_loop_of(body) = %s").format(s=sql.Identifier(self._schema))
            )
            params.append(loop)
        if owner is not None:
            terms.append(sql.SQL("owner = %s"))
            params.append(owner)
        if since is not None:
            terms.append(sql.SQL("settled_at > %s"))
            params.append(since if since.tzinfo is not None else since.replace(tzinfo=UTC))
        if not terms:
            raise LedgerError("board_where needs an owner, a loop or a since")
        latest = sql.SQL(
            "sequence = (SELECT sequence FROM {t} WHERE task_id = r.task_id"
            " ORDER BY attempt DESC, sequence DESC LIMIT 1)"
        ).format(t=self._table)
        query = sql.SQL(
            # Code point order, as the whole board's.
            "SELECT sequence, body, body_sha256 FROM {t} AS r WHERE {w}"
            ' ORDER BY task_id COLLATE "C"'
        ).format(t=self._table, w=sql.SQL(" AND ").join([*terms, latest]))
        return await self._select_rows(query, *params)

    async def chain_window(self, sequence: int) -> list[ChainRow]:
        page = sql.SQL(
            PAGE_SQL["receipts"] + " FROM {t} WHERE sequence > %s ORDER BY sequence LIMIT %s"
        )
        try:
            async with self._pool.connection() as conn:
                await require_chain(conn, self._schema)
                cur = await conn.execute(
                    sql.SQL("SELECT max(sequence) FROM {t} WHERE sequence < %s").format(
                        t=self._table
                    ),
                    (sequence,),
                )
                row = await cur.fetchone()
                before = row[0] if row is not None else None
                after, count = (int(before) - 1, 3) if before is not None else (sequence - 1, 2)
                cur = await conn.execute(page.format(t=self._table), (after, count))
                return await cur.fetchall()
        except psycopg.Error as exc:
            raise LedgerError(f"reading the ledger at {self.url} failed: {exc}") from exc

    async def walk_chain(self) -> None:
        await self._guard.walk_to_end(self)

    async def loop_latest(
        self, loop: str, since: datetime | None = None, limit: int = 100
    ) -> list[LoopRow]:
        # The loop index (landed_loop_of(body), settled_at, task_id), read backwards.
        query = sql.SQL(
            "SELECT sequence, task_id, body, body_sha256 FROM {t} AS r"
            " WHERE {s}.landed_loop_of(body) = %s AND settled_at > %s"
            " AND sequence = (SELECT sequence FROM {t} WHERE task_id = r.task_id"
            " ORDER BY attempt DESC, sequence DESC LIMIT 1)"
            " ORDER BY settled_at DESC, task_id DESC LIMIT %s"
        ).format(t=self._table, s=sql.Identifier(self._schema))
        after = since if since is not None else datetime.min.replace(tzinfo=UTC)
        if after.tzinfo is None:
            after = after.replace(tzinfo=UTC)
        limit = max(1, min(limit, MAX_LOOP_ROWS))
        try:
            async with self._pool.connection() as conn:
                cur = await conn.execute(query, (loop, after, limit))
                found = [
                    (int(seq), str(task), str(body), str(sha))
                    for seq, task, body, sha in await cur.fetchall()
                ]
        except psycopg.Error as exc:
            raise LedgerError(f"reading the ledger at {self.url} failed: {exc}") from exc
        return await loop_rows(self, self._guard, loop, found)

    async def loop_after(
        self, loop: str, after: int, since: datetime | None = None, limit: int = 100
    ) -> list[LoopRow]:
        found = await pg_loop_after(self._pool, self._schema, loop, after, since, limit)
        return await loop_rows(self, self._guard, loop, found)

    async def count(self) -> int:
        try:
            async with self._pool.connection() as conn:
                cur = await conn.execute(sql.SQL("SELECT count(*) FROM {t}").format(t=self._table))
                row = await cur.fetchone()
        except psycopg.Error as exc:
            raise LedgerError(f"reading the ledger at {self.url} failed: {exc}") from exc
        return int(row[0]) if row else 0

    async def append_event(self, event: LedgerEvent) -> bool:
        wrote = self._signer.wrote if self._signer is not None else None
        return await pg_append_event(self._pool, self._schema, event, wrote)

    async def events(self, loop: str | None = None, limit: int = 100) -> list[LedgerEvent]:
        return await pg_events(self._pool, self._schema, loop, limit)

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
            await self._pool.close()

    async def __aenter__(self) -> PostgresLedger:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
