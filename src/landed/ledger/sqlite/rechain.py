"""The SQLite ledger's v2 upgrade (schema 10): every stored row of every chain linked again with
v2 links (landed.ledger.links), and the marker head that says which positions it re-chained."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime

from landed.ledger.chain import ChainHead, SignedHead
from landed.ledger.links import CHAINS, MIGRATION_V2_KEY_ID, link_v2
from landed.ledger.sqlite.chain import HEAD_COLUMNS, PAGE_SQL, TABLES, tail
from landed.ledger.vouch import HeadDetail

__all__ = ["rechain_v2", "rechained"]

_BACKFILL_PAGE = 5000


def _no_update(chain: str) -> str:
    what = {"receipts": "the landed ledger is", "claims": "landed claims are"}.get(
        chain, "landed events are"
    )
    return (
        f"CREATE TRIGGER {TABLES[chain][0]}_no_update BEFORE UPDATE ON {TABLES[chain][0]}"
        f" BEGIN SELECT RAISE(ABORT, '{what} append-only: UPDATE is not allowed'); END"
    )


def rechain_v2(conn: sqlite3.Connection) -> None:
    """Link every stored row of every chain with v2 links, and leave a marker head saying so:
    `landed ledger verify` and `landed ledger init` report the re-chained positions."""
    migrated: dict[str, int] = {}
    for chain in CHAINS:
        table, _ = TABLES[chain]
        conn.execute(f"DROP TRIGGER IF EXISTS {table}_no_update")
        head, after = ChainHead(), 0
        while True:
            page = conn.execute(PAGE_SQL[chain], (after, _BACKFILL_PAGE)).fetchall()
            links = []
            for row in page:
                pos = head.pos + 1
                head = ChainHead(pos, int(row[0]), link_v2(chain, pos, row[6:], head.link))
                links.append((pos, head.link, head.sequence))
            conn.executemany(
                f"UPDATE {table} SET chain_pos = ?, chain_link = ? WHERE {TABLES[chain][1]} = ?",
                links,
            )
            if len(page) < _BACKFILL_PAGE:
                break
            after = int(page[-1][0])
        conn.execute(_no_update(chain))
        migrated[chain] = head.pos
    if any(migrated.values()):
        tails = {c: tail(conn, c) for c in CHAINS}
        detail = HeadDetail(
            chains={c: (tails[c].pos, tails[c].link) for c in CHAINS if c != "receipts"},
            migrated=migrated,
        )
        at = datetime.now(UTC).isoformat(timespec="microseconds")
        r = tails["receipts"]
        conn.execute(
            f"INSERT INTO landed_chain_heads ({HEAD_COLUMNS}) VALUES (?, ?, ?, ?, ?, '', ?)",
            (r.pos, r.sequence, r.link, MIGRATION_V2_KEY_ID, at, detail.encode()),
        )


def rechained(conn: sqlite3.Connection) -> dict[str, int]:
    """The positions the v2 upgrade re-chained, per chain (empty: none, or not upgraded)."""
    try:
        row = conn.execute(
            "SELECT detail FROM landed_chain_heads WHERE key_id = ? LIMIT 1",
            (MIGRATION_V2_KEY_ID,),
        ).fetchone()
    except sqlite3.OperationalError:
        return {}
    if row is None:
        return {}
    return HeadDetail.of(SignedHead(0, 0, "", "", "", "", row[0])).migrated
