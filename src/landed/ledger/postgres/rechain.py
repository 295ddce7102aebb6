"""The PostgreSQL ledger's upgrade to v2 links: every stored row of every chain re-chained."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import psycopg
from psycopg import sql

from landed.ledger.chain import ChainHead, SignedHead
from landed.ledger.links import CHAINS, MIGRATION_V2_KEY_ID, link_v2
from landed.ledger.postgres.pages import PAGE_SQL, TABLES
from landed.ledger.vouch import HeadDetail

__all__ = ["rechain_v2"]

_PAGE = 5000
#: Each chain's order before it had positions, and the key an update finds its row by.
_ORDER = {
    "receipts": ("sequence", ("sequence",)),
    "claims": ("claimed_at, task_id, run_id, attempt", ("task_id", "run_id", "attempt")),
    "events": ("sequence", ("sequence",)),
}
_TRIGGER = {
    "receipts": "landed_receipts_append_only",
    "claims": "landed_claims_append_only",
    "events": "landed_events_append_only",
}
_TYPES = {"sequence": "bigint", "task_id": "text", "run_id": "text", "attempt": "int"}


async def rechain_v2(conn: psycopg.AsyncConnection[Any], schema: str) -> None:
    """Inside the migration's transaction: link every row with v2 links, in append order, and
    leave a marker head naming the re-chained positions (verify and init report them)."""
    migrated: dict[str, int] = {}
    tails: dict[str, ChainHead] = {}
    for chain in CHAINS:
        table = sql.Identifier(schema, TABLES[chain])
        await conn.execute(
            sql.SQL("ALTER TABLE {} DISABLE TRIGGER {}").format(
                table, sql.Identifier(_TRIGGER[chain])
            )
        )
        tails[chain] = await _rechain(conn, chain, table)
        migrated[chain] = tails[chain].pos
        await conn.execute(
            sql.SQL("ALTER TABLE {} ENABLE TRIGGER {}").format(
                table, sql.Identifier(_TRIGGER[chain])
            )
        )
    if not any(migrated.values()):
        return
    detail = HeadDetail(
        chains={c: (tails[c].pos, tails[c].link) for c in CHAINS if c != "receipts"},
        migrated=migrated,
    )
    r = tails["receipts"]
    at = datetime.now(UTC).isoformat(timespec="microseconds")
    marker = SignedHead(r.pos, r.sequence, r.link, MIGRATION_V2_KEY_ID, at, "", detail.encode())
    await conn.execute(
        sql.SQL(
            "INSERT INTO {} (chain_pos, sequence, chain_link, key_id, signed_at, signature, detail)"
            " VALUES (%s, %s, %s, %s, %s, %s, %s)"
        ).format(sql.Identifier(schema, "landed_chain_heads")),
        marker.values(),
    )


async def _rechain(
    conn: psycopg.AsyncConnection[Any], chain: str, table: sql.Identifier
) -> ChainHead:
    order, keys = _ORDER[chain]
    head = ChainHead()
    query = sql.SQL(PAGE_SQL[chain] + ", " + ", ".join(keys) + f" FROM {{}} ORDER BY {order}")
    async with conn.cursor(name=f"landed_rechain_{chain}") as cur:
        await cur.execute(query.format(table))
        while page := await cur.fetchmany(_PAGE):
            cols: list[list[Any]] = [[] for _ in keys]
            poss, links = [], []
            for row in page:
                pos = head.pos + 1
                fields = row[6 : len(row) - len(keys)]
                head = ChainHead(pos, int(row[0]), link_v2(chain, pos, fields, head.link))
                poss.append(pos)
                links.append(head.link)
                for i, value in enumerate(row[len(row) - len(keys) :]):
                    cols[i].append(value)
            await _update(conn, table, keys, cols, poss, links)
    return head


async def _update(
    conn: psycopg.AsyncConnection[Any],
    table: sql.Identifier,
    keys: tuple[str, ...],
    cols: list[list[Any]],
    poss: list[int],
    links: list[str],
) -> None:
    arrays = ", ".join(f"%s::{_TYPES[k]}[]" for k in keys)
    names = ", ".join(keys)
    match = " AND ".join(f"t.{k} = u.{k}" for k in keys)
    await conn.execute(
        sql.SQL(
            f"UPDATE {{}} AS t SET chain_pos = u.pos, chain_link = u.link FROM unnest("
            f"{arrays}, %s::bigint[], %s::text[]) AS u({names}, pos, link) WHERE {match}"
        ).format(table),
        (*cols, poss, links),
    )
