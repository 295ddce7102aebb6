"""The SQLite ledger's chains: each chain's tail, the walk's pages, and signing a v2 head."""

from __future__ import annotations

import sqlite3
from typing import Any

from landed.ledger.base import LedgerError
from landed.ledger.chain import MAX_HEADS, ChainHead, HeadSigner, SignedHead
from landed.ledger.links import CHAINS
from landed.ledger.vouch import MAX_BETWEEN, RECENT_HEADS, Between, plan_head, signer_base

__all__ = [
    "HEAD_COLUMNS",
    "INSERT_HEAD",
    "PAGE_SQL",
    "TABLES",
    "all_heads",
    "chain_head",
    "sign_sync",
    "tail",
]

#: Each chain's table and the column that orders it as appended.
TABLES = {
    "receipts": ("landed_receipts", "sequence"),
    "claims": ("landed_claims", "rowid"),
    "events": ("landed_events", "sequence"),
}
HEAD_COLUMNS = "chain_pos, sequence, chain_link, key_id, signed_at, signature, detail"
INSERT_HEAD = f"""INSERT INTO landed_chain_heads ({HEAD_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)
    ON CONFLICT DO NOTHING"""
_SHA = "landed_sha256(CAST(body AS BLOB))"
#: The walk's page of a chain: order, pos, link, stored body hash, body hash now, appended at,
#: then the link's fields (links.FIELDS) as stored.
PAGE_SQL = {
    "receipts": "SELECT sequence, chain_pos, chain_link, body_sha256, " + _SHA + ", appended_at,"
    " sequence, task_id, attempt, stage, verdict, owner, settled_at, body_sha256"
    " FROM landed_receipts WHERE sequence > ? ORDER BY sequence LIMIT ?",
    "claims": "SELECT rowid, chain_pos, chain_link, '', '', claimed_at, task_id, run_id,"
    " attempt, spec_sha256, claimed_at, owner, loop FROM landed_claims"
    " WHERE rowid > ? ORDER BY rowid LIMIT ?",
    "events": "SELECT sequence, chain_pos, chain_link, '', '', appended_at, event_key, kind, loop,"
    " at, " + _SHA + " FROM landed_events WHERE sequence > ? ORDER BY sequence LIMIT ?",
}


def tail(conn: sqlite3.Connection, chain: str) -> ChainHead:
    """The last row of ``chain`` (order of append is order of the column: one writer at a time)."""
    table, order = TABLES[chain]
    row = conn.execute(
        f"SELECT chain_pos, {order}, chain_link FROM {table} ORDER BY {order} DESC LIMIT 1"
    ).fetchone()
    if row is None:
        return ChainHead()
    if not isinstance(row[0], int) or not isinstance(row[2], str):
        raise LedgerError(
            f"the ledger's last {chain} row ({order} {row[1]}) has no chain link: it was "
            "inserted by something other than landed; run `landed ledger verify` and inspect it"
        )
    return ChainHead(int(row[0]), int(row[1]), str(row[2]))


_HEAD = "SELECT chain_pos, sequence, chain_link FROM landed_receipts ORDER BY sequence DESC LIMIT 1"


def chain_head(conn: sqlite3.Connection) -> ChainHead:
    """The last row's place in the chain; an empty ledger starts from the genesis link.

    Sequence order is append order: every append links on under the file's write lock.
    """
    row = conn.execute(_HEAD).fetchone()
    if row is None:
        return ChainHead()
    if row[0] is None or row[2] is None:
        raise LedgerError(
            f"the ledger's last row (sequence {row[1]}) has no chain link: it was inserted by "
            "something other than landed; run `landed ledger verify` and inspect it"
        )
    return ChainHead(int(row[0]), int(row[1]), str(row[2]))


def heads_rows(conn: sqlite3.Connection, newest: int) -> list[SignedHead]:
    rows = conn.execute(
        f"SELECT {HEAD_COLUMNS} FROM landed_chain_heads ORDER BY rowid DESC LIMIT ?", (newest,)
    ).fetchall()
    return [_head(r) for r in rows]


def all_heads(conn: sqlite3.Connection) -> list[SignedHead]:
    rows = conn.execute(
        f"SELECT {HEAD_COLUMNS} FROM landed_chain_heads ORDER BY chain_pos, rowid LIMIT ?",
        (MAX_HEADS + 1,),
    ).fetchall()
    return [_head(r) for r in rows]


def _head(r: Any) -> SignedHead:
    return SignedHead(int(r[0]), int(r[1]), str(r[2]), str(r[3]), str(r[4]), str(r[5]), r[6])


def sign_sync(conn: sqlite3.Connection, signer: HeadSigner) -> SignedHead | None:
    """Inside the caller's write transaction: store the head the signer may sign, if any."""
    tails = {c: tail(conn, c) for c in CHAINS}
    if signer.base is None:
        signer.base = signer_base(signer, heads_rows(conn, RECENT_HEADS), tails)
    rows: dict[str, list[tuple[int, str]]] = {}
    strangers = False
    for chain in CHAINS:
        table, order = TABLES[chain]
        base = signer.base.get(chain, 0)
        # The newest rows by the order they were appended in (its index): positions past the
        # base are among the last (tail - base) of them, plus any inserted beside them.
        want = min(max(tails[chain].pos - base, 0) + 100, MAX_BETWEEN)
        found = conn.execute(
            f"SELECT chain_pos, chain_link FROM {table} ORDER BY {order} DESC LIMIT ?", (want,)
        ).fetchall()
        rows[chain] = sorted((p, str(lk)) for p, lk in found if isinstance(p, int) and p > base)
        mine = signer.own.get(chain, {})
        strangers = strangers or any(mine.get(p) != lk for p, lk in rows[chain])
    heads = heads_rows(conn, RECENT_HEADS) if strangers else []
    head = plan_head(signer, Between(tails, rows, heads))
    if head is not None:
        conn.execute(INSERT_HEAD, head.values())
    return head
