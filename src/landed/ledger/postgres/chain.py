"""The PostgreSQL ledger's chains: their locks, tails, signed heads and the walk's pages."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from typing import Any, cast

import psycopg
from psycopg import sql

from landed.ledger.base import LedgerError
from landed.ledger.chain import MAX_HEADS, ChainHead, ChainRow, HeadSigner, SignedHead
from landed.ledger.links import CHAINS
from landed.ledger.postgres.pages import ORDER, PAGE_SQL, TABLES
from landed.ledger.postgres.schema import CHAIN_V2_STEP, schema_version
from landed.ledger.vouch import MAX_BETWEEN, RECENT_HEADS, Between, plan_head, signer_base

__all__ = [
    "PAGE_SQL",
    "chain_heads",
    "insert_head",
    "iter_chain",
    "lock_chain",
    "read_head",
    "read_tail",
    "require_chain",
    "sequence_name",
    "sign_heads",
]

_PAGE = 5000
_HEAD_COLUMNS = "chain_pos, sequence, chain_link, key_id, signed_at, signature, detail"


def _table(schema: str, chain: str) -> sql.Identifier:
    return sql.Identifier(schema, TABLES[chain])


async def lock_chain(
    conn: psycopg.AsyncConnection[Any], schema: str, chain: str = "receipts"
) -> None:
    """Take one chain's lock until the transaction ends. Every landed writer reads the chain's
    tail and links onto it under this lock, so concurrent appends (this pool's, other
    runners') join the chain one at a time. Bounded: a session that never lets go of it fails
    the append (the settle is retried) instead of holding every runner."""
    await conn.execute("SET LOCAL lock_timeout = '10s'")
    name = f"landed-chain:{schema}" + ("" if chain == "receipts" else f":{chain}")
    await conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (name,))


async def read_tail(conn: psycopg.AsyncConnection[Any], schema: str, chain: str) -> ChainHead:
    """A chain's last row (order of position: appends link on under the chain's lock)."""
    order = "sequence" if chain != "claims" else "chain_pos"
    nulls = "" if chain != "claims" else " NULLS LAST"
    cur = await conn.execute(
        sql.SQL(
            "SELECT chain_pos, " + ("sequence" if chain != "claims" else "0") + ", chain_link"
            f" FROM {{}} ORDER BY {order} DESC{nulls} LIMIT 1"
        ).format(_table(schema, chain))
    )
    row = await cur.fetchone()
    if row is None:
        return ChainHead()
    if row[0] is None or row[2] is None:
        raise LedgerError(
            f"the ledger's last {chain} row has no chain link: it was inserted by something "
            "other than landed; run `landed ledger verify` and inspect it"
        )
    return ChainHead(int(row[0]), int(row[1]), str(row[2]))


async def read_head(conn: psycopg.AsyncConnection[Any], schema: str) -> ChainHead:
    return await read_tail(conn, schema, "receipts")


async def sequence_name(conn: psycopg.AsyncConnection[Any], schema: str) -> str:
    cur = await conn.execute(
        "SELECT pg_get_serial_sequence(format('%%I.landed_receipts', %s::text), 'sequence')",
        (schema,),
    )
    row = await cur.fetchone()
    if row is None or row[0] is None:
        raise LedgerError(f"the ledger in schema {schema!r} has no sequence for its receipts")
    return str(row[0])


async def insert_head(conn: psycopg.AsyncConnection[Any], schema: str, head: SignedHead) -> None:
    await conn.execute(
        sql.SQL(
            f"INSERT INTO {{}} ({_HEAD_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s)"
            " ON CONFLICT DO NOTHING"
        ).format(sql.Identifier(schema, "landed_chain_heads")),
        head.values(),
    )


async def _heads(
    conn: psycopg.AsyncConnection[Any], schema: str, order: str, limit: int
) -> list[SignedHead]:
    cur = await conn.execute(
        sql.SQL(f"SELECT {_HEAD_COLUMNS} FROM {{}} ORDER BY {order} LIMIT %s").format(
            sql.Identifier(schema, "landed_chain_heads")
        ),
        (limit,),
    )
    return [SignedHead(int(p), int(s), *r) for p, s, *r in await cur.fetchall()]


async def sign_heads(
    conn: psycopg.AsyncConnection[Any], schema: str, signer: HeadSigner, locked: bool = False
) -> SignedHead | None:
    """Inside the caller's transaction: store the head the signer may sign, if any. Takes every
    chain's lock (receipts first: the order every writer takes them in)."""
    for chain in CHAINS[0 if not locked else 1 :]:
        await lock_chain(conn, schema, chain)
    tails = {c: await read_tail(conn, schema, c) for c in CHAINS}
    if signer.base is None:
        recent = await _heads(conn, schema, _RECENT, RECENT_HEADS)
        signer.base = signer_base(signer, recent, tails)
    rows: dict[str, list[tuple[int, str]]] = {}
    strangers = False
    for chain in CHAINS:
        base = signer.base.get(chain, 0)
        # The newest rows by sequence (its index; claims: by their position's index): positions
        # past the base are among the last (tail - base) of them, plus any inserted beside them.
        want = min(max(tails[chain].pos - base, 0) + 100, MAX_BETWEEN)
        order = "sequence" if chain != "claims" else "chain_pos"
        cur = await conn.execute(
            sql.SQL(
                f"SELECT chain_pos, chain_link FROM {{}} ORDER BY {order} DESC NULLS LAST LIMIT %s"
            ).format(_table(schema, chain)),
            (want,),
        )
        found = await cur.fetchall()
        rows[chain] = sorted((int(p), str(lk)) for p, lk in found if p is not None and p > base)
        mine = signer.own.get(chain, {})
        strangers = strangers or any(mine.get(p) != lk for p, lk in rows[chain])
    heads = await _heads(conn, schema, _RECENT, RECENT_HEADS) if strangers else []
    head = plan_head(signer, Between(tails, rows, heads))
    if head is not None:
        await insert_head(conn, schema, head)
    return head


_RECENT = "chain_pos DESC, signed_at DESC"


async def require_chain(conn: psycopg.AsyncConnection[Any], schema: str) -> None:
    """Refuse a chain read on a ledger before the chain's v2 links (LedgerError names the fix)."""
    await _require_chain(conn, schema)


async def _require_chain(conn: psycopg.AsyncConnection[Any], schema: str) -> None:
    version = await schema_version(conn, schema)
    if version < CHAIN_V2_STEP:
        raise LedgerError(
            f"the ledger in schema {schema!r} is at schema version {version}, before the hash "
            f"chain's v2 links (version {CHAIN_V2_STEP}): run `landed ledger init --ledger URL` "
            "as the database owner to upgrade it (the rows stored so far are re-chained then, "
            "and verify says so)"
        )


async def chain_heads(conn: psycopg.AsyncConnection[Any], schema: str) -> list[SignedHead]:
    await _require_chain(conn, schema)
    heads = await _heads(conn, schema, "chain_pos, signed_at", MAX_HEADS + 1)
    if len(heads) > MAX_HEADS:
        raise LedgerError(f"the ledger holds more than {MAX_HEADS:,} signed chain heads")
    return heads


async def iter_chain(
    conn: psycopg.AsyncConnection[Any], schema: str, chain: str = "receipts", after: int = 0
) -> AsyncGenerator[list[ChainRow], None]:
    """A chain's rows in append order past ``after``, a page at a time, from one REPEATABLE
    READ snapshot (a connection the caller has taken out of autocommit)."""
    await conn.set_isolation_level(psycopg.IsolationLevel.REPEATABLE_READ)
    order = ORDER[chain]
    # Claims are ordered by position, and a row without one (0) is read by a walk from the start.
    start = after if after > 0 or chain != "claims" else -1
    async with conn.transaction(), conn.cursor(name="landed_chain") as cur:
        await _require_chain(conn, schema)
        await cur.execute(
            sql.SQL(PAGE_SQL[chain] + f" FROM {{}} WHERE {order} > %s ORDER BY {order}").format(
                _table(schema, chain)
            ),
            (start,),
        )
        pending = asyncio.ensure_future(cur.fetchmany(_PAGE))
        try:
            while page := await pending:
                # Ask for the next page before walking this one: the server reads and hashes
                # it meanwhile.
                pending = asyncio.ensure_future(cur.fetchmany(_PAGE))
                await asyncio.sleep(0)
                yield cast(list[ChainRow], page)
        finally:
            if not pending.done():
                await asyncio.gather(pending, return_exceptions=True)
