"""The fleet ledger: PostgreSQL, append-only by trigger, written through an INSERT-only role."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import random
import re
from collections.abc import AsyncGenerator, Iterable, Sequence
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
from landed.ledger.pg_chain import (
    chain_heads,
    insert_head,
    iter_chain,
    lock_chain,
    read_head,
    sequence_name,
)
from landed.ledger.pg_schema import SCHEMA_VERSION, migrate, schema_version
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
            if signer is not None:
                signer.appended(len(new))
                if signer.due():
                    signed = signer.sign(head)
                    await insert_head(conn, self._schema, signed)
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
            head = head.next(sequence, r.sha256)
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

    async def iter_chain(self) -> AsyncGenerator[list[ChainRow], None]:
        try:
            async with self._pool.connection() as conn:
                await conn.set_autocommit(False)
                try:
                    async with contextlib.aclosing(iter_chain(conn, self._schema)) as pages:
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
                await lock_chain(conn, self._schema)
                head = await read_head(conn, self._schema)
                if head.pos:
                    await insert_head(conn, self._schema, signer.sign(head))
        except psycopg.Error as exc:
            raise LedgerError(f"signing the chain head at {self.url} failed: {exc}") from exc
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
        try:
            async with self._pool.connection() as conn:
                cur = await conn.execute(query, params)
                rows = await cur.fetchall()
        except psycopg.Error as exc:
            raise LedgerError(f"reading the ledger at {self.url} failed: {exc}") from exc
        return [parse_body(body, int(sequence), sha) for sequence, body, sha in rows]

    async def get(self, task_id: str) -> list[Receipt]:
        return await self._select(
            sql.SQL(
                "SELECT sequence, body, body_sha256 FROM {t} WHERE task_id = %s"
                " ORDER BY attempt, sequence"
            ).format(t=self._table),
            task_id,
        )

    async def latest(self, task_id: str) -> Receipt | None:
        found = await self._select(self._latest_sql, task_id)
        return found[0] if found else None

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
                if stored is not None:
                    return parse_body(stored[1], int(stored[0]), stored[2]), None
                if record:
                    await conn.execute(
                        sql.SQL(
                            "INSERT INTO {c} (task_id, run_id, attempt, spec_sha256, owner, loop)"
                            " VALUES (%s, %s, %s, %s, %s, %s)"
                            " ON CONFLICT (task_id, run_id, attempt) DO NOTHING"
                        ).format(c=claims),
                        (task_id, run_id, attempt, spec_sha256, owner, loop),
                    )
                cur = await conn.execute(
                    sql.SQL(
                        "SELECT run_id, attempt, spec_sha256, claimed_at FROM {c}"
                        " WHERE task_id = %s AND run_id <> %s ORDER BY claimed_at, run_id LIMIT 1"
                    ).format(c=claims),
                    (task_id, run_id),
                )
                row = await cur.fetchone()
        except psycopg.Error as exc:
            raise LedgerError(
                f"claiming task {task_id!r} in the ledger at {self.url} failed: {exc}"
            ) from exc
        if row is None:
            return None, None
        return None, Claim(task_id, str(row[0]), int(row[1]), str(row[2]), row[3])

    async def board(self) -> list[Receipt]:
        return await self._select(
            sql.SQL(
                # Code point order, as SQLite's: the database's own collation would order
                # (and page) the same board differently from one server locale to the next.
                'SELECT DISTINCT ON (task_id COLLATE "C") sequence, body, body_sha256 FROM {t}'
                ' ORDER BY task_id COLLATE "C", attempt DESC, sequence DESC'
            ).format(t=self._table)
        )

    async def iter_receipts(self) -> AsyncGenerator[Receipt, None]:
        # A server-side cursor in one REPEATABLE READ snapshot: sequence numbers may commit out
        # of order under concurrent writers, so paging by sequence could skip a receipt.
        try:
            async with self._pool.connection() as conn:
                await conn.set_autocommit(False)
                try:
                    await conn.set_isolation_level(psycopg.IsolationLevel.REPEATABLE_READ)
                    async with conn.transaction(), conn.cursor(name="landed_export") as cur:
                        cur.itersize = _PAGE
                        await cur.execute(
                            sql.SQL(
                                "SELECT sequence, body, body_sha256 FROM {t} ORDER BY sequence"
                            ).format(t=self._table)
                        )
                        async for sequence, body, sha in cur:
                            yield parse_body(body, int(sequence), sha)
                finally:
                    await conn.set_isolation_level(None)
                    await conn.set_autocommit(True)
        except psycopg.Error as exc:
            raise LedgerError(f"reading the ledger at {self.url} failed: {exc}") from exc

    async def count(self) -> int:
        try:
            async with self._pool.connection() as conn:
                cur = await conn.execute(sql.SQL("SELECT count(*) FROM {t}").format(t=self._table))
                row = await cur.fetchone()
        except psycopg.Error as exc:
            raise LedgerError(f"reading the ledger at {self.url} failed: {exc}") from exc
        return int(row[0]) if row else 0

    async def append_event(self, event: LedgerEvent) -> bool:
        return await pg_append_event(self._pool, self._schema, event)

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
