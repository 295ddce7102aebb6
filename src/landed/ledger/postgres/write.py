"""What the PostgreSQL ledger writes, each in one transaction under its chain's lock: a batch of
receipts (through the shared append path, landed.ledger.append), a signed head, a claim."""

from __future__ import annotations

import asyncio
import functools
import random
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import psycopg
from psycopg import sql
from psycopg_pool import AsyncConnectionPool

from landed.ledger.append import Batch
from landed.ledger.base import LedgerError, LedgerRow
from landed.ledger.chain import HeadSigner
from landed.ledger.links import link_v2, pg_time
from landed.ledger.postgres.chain import (
    lock_chain,
    read_head,
    read_tail,
    sequence_name,
    sign_heads,
)

__all__ = ["PgWriter", "row_refused"]

_COLUMNS = 11
_DEADLOCK_TRIES = 10
#: A stored receipt's row (sequence, body, hash) and another run's claim row.
Claimed = tuple[tuple[Any, ...] | None, tuple[Any, ...] | None]


@functools.lru_cache(maxsize=64)
def _values(n: int) -> str:
    # Native $n placeholders (a raw cursor): psycopg does not re-parse a query per batch size.
    return ", ".join(
        "(" + ", ".join(f"${i * _COLUMNS + c + 1}" for c in range(_COLUMNS)) + ")" for i in range(n)
    )


def row_refused(exc: BaseException) -> bool:
    """An error about one row's values, not about the server (see GroupCommit)."""
    return isinstance(
        exc,
        # ProgramLimitExceeded: a key too large for the unique index's btree entry.
        (psycopg.DataError, psycopg.IntegrityError, psycopg.errors.ProgramLimitExceeded),
    )


class PgWriter:
    """The writes of one PostgresLedger (its pool, schema and head signer)."""

    def __init__(self, pool: AsyncConnectionPool, schema: str, signer: HeadSigner | None) -> None:
        self._pool = pool
        self._schema = schema
        self._signer = signer
        self._table = sql.Identifier(schema, "landed_receipts")
        self._sequence: str | None = None

    async def flush(self, rows: Sequence[LedgerRow]) -> list[bool | str]:
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
        signer = self._signer
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
            batch = Batch(rows, stored, signer)
            if batch.new:
                await self._insert(conn, batch)
                batch.inserted()
            if signer is not None and batch.sign_due:
                batch.signing(await sign_heads(conn, self._schema, signer, locked=True))
        return batch.committed()

    async def _insert(self, conn: psycopg.AsyncConnection[Any], batch: Batch) -> None:
        head = await read_head(conn, self._schema)
        # The sequence is drawn first, so the link binds it; under the lock, so sequence order
        # stays chain order. One multi-row INSERT: one round trip for the whole batch.
        cur = await conn.execute(
            "SELECT nextval(%s::regclass) FROM generate_series(1, %s)",
            (self._sequence or await self._load_sequence(conn), len(batch.new)),
        )
        batch.link(head, sorted(int(n) for (n,) in await cur.fetchall()), pg_time)
        params: list[Any] = []
        for r, sequence, pos, link, _ in batch.linked:
            values = (r.task_id, r.attempt, r.verdict, r.owner, r.settled_at, r.sha256)
            params.extend((*values, r.body.decode(), r.stage, sequence, pos, link))
        insert = sql.SQL(
            "INSERT INTO {t} (task_id, attempt, verdict, owner, settled_at, body_sha256, body,"
            " stage, sequence, chain_pos, chain_link) OVERRIDING SYSTEM VALUE VALUES {values}"
        ).format(t=self._table, values=sql.SQL(_values(len(batch.linked))))
        async with psycopg.AsyncRawCursor(conn) as raw:
            await raw.execute(insert, params)

    async def _load_sequence(self, conn: psycopg.AsyncConnection[Any]) -> str:
        self._sequence = await sequence_name(conn, self._schema)
        return self._sequence

    async def sign(self, url: str) -> None:
        signer = self._signer
        if signer is None or signer.unsigned <= 0:
            return
        try:
            async with self._pool.connection() as conn, conn.transaction():
                signed = await sign_heads(conn, self._schema, signer)
        except psycopg.Error as exc:
            raise LedgerError(f"signing the chain head at {url} failed: {exc}") from exc
        if signed is None:
            signer.refused()
        else:
            signer.committed()

    async def claim(
        self, latest: sql.Composed, fields: tuple[Any, ...], record: bool, url: str
    ) -> Claimed:
        """The receipt check and the claim in one transaction. ``fields``: task id, run id,
        attempt, spec hash, owner, loop."""
        task_id, run_id = fields[0], fields[1]
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
                cur = await conn.execute(latest, (task_id,))
                stored = await cur.fetchone()
                row = None
                if stored is None:
                    if record:
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
                f"claiming task {task_id!r} in the ledger at {url} failed: {exc}"
            ) from exc
        return stored, row

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
