"""A ledger's table owner tampering with it, the same way on SQLite and PostgreSQL, for the chain
tests: the owner drops the append-only trigger, then deletes, inserts, edits, swaps or relinks
rows by plain SQL, as anyone with the file or the owner login could."""

from __future__ import annotations

import hashlib
import sqlite3
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from landed.ledger.audit import ChainReport, audit
from landed.ledger.base import canonical_json
from landed.ledger.chain import HeadSigner
from landed.ledger.factory import open_ledger
from landed.ledger.links import PG_TIME_SQL, link_v2
from landed.ledger.sqlite.schema import MIGRATIONS
from landed.receipts.model import LandedExtension, Receipt
from landed.signing import KeyPair


def receipt(task_id: str, verdict: str = "verified") -> Receipt:
    return Receipt(
        task_id=task_id,
        owner="agent-a",
        claimed_status="done",
        verdict=verdict,
        settled_at=datetime(2026, 11, 7, 1, 0, tzinfo=UTC),
        landed=LandedExtension(attempt=1),
    )


@dataclass
class Owner:
    """The ledger's table owner: runs SQL with ``{t}`` for the receipts table and ``%s``
    placeholders on either backend."""

    url: str
    path: Path | None = None
    dsn: str | None = None
    schema: str | None = None

    def run(self, statement: str, *params: Any) -> list[tuple[Any, ...]]:
        if self.path is not None:
            with sqlite3.connect(self.path, isolation_level=None) as db:
                cur = db.execute(statement.format(t="landed_receipts").replace("%s", "?"), params)
                rows = cur.fetchall()
            db.close()
            return rows
        assert self.dsn is not None and self.schema is not None
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            table = sql.Identifier(self.schema, "landed_receipts").as_string(conn)
            cur = conn.execute(statement.format(t=table).encode(), params)
            return cur.fetchall() if cur.description else []

    def drop_triggers(self) -> None:
        if self.path is not None:
            self.run("DROP TRIGGER landed_receipts_no_update")
            self.run("DROP TRIGGER landed_receipts_no_delete")
        else:
            self.run("DROP TRIGGER landed_receipts_append_only ON {t}")

    def row(self, sequence: int) -> tuple[Any, ...]:
        """(chain_pos, chain_link, body_sha256, body) of one row."""
        return self.run(
            "SELECT chain_pos, chain_link, body_sha256, body FROM {t} WHERE sequence = %s",
            sequence,
        )[0]

    def sequences(self) -> list[int]:
        return [int(r[0]) for r in self.run("SELECT sequence FROM {t} ORDER BY sequence")]

    def fields(self, sequence: int) -> tuple[Any, ...]:
        """The columns a receipt's v2 link covers, as the backend stores them."""
        settled = "settled_at" if self.path is not None else PG_TIME_SQL.format("settled_at")
        return self.run(
            "SELECT sequence, task_id, attempt, stage, verdict, owner, "
            + settled
            + ", body_sha256 FROM {t} WHERE sequence = %s",
            sequence,
        )[0]

    def link(self, pos: int, sequence: int, prev: str) -> str:
        """The link a forger who knows the chain computes for row ``sequence`` at ``pos``."""
        return link_v2("receipts", pos, self.fields(sequence), prev)

    def relink_from(self, sequence: int) -> None:
        """What an owner without the runner's key can do: recompute every link from a row on."""
        prev = self.row(sequence - 1)[1] if sequence > 1 else "0" * 64
        for seq in [s for s in self.sequences() if s >= sequence]:
            pos = int(self.row(seq)[0])
            prev = self.link(pos, seq, prev)
            self.run("UPDATE {t} SET chain_link = %s WHERE sequence = %s", prev, seq)


#: Statements that take a PostgreSQL ledger back from schema 8 (the loop index) to schema 7.
PG_UNDO_LOOP_INDEX = (
    "DROP INDEX {s}.landed_receipts_loop",
    "DROP FUNCTION {s}.landed_loop_of(text)",
    "DELETE FROM {s}.landed_schema_version WHERE version = 8",
)

#: Statements that take a PostgreSQL ledger back from schema 8 to schema 6 (before links v2).
PG_UNDO_V2 = (
    *PG_UNDO_LOOP_INDEX,
    "ALTER TABLE {s}.landed_claims DROP COLUMN chain_pos, DROP COLUMN chain_link",
    "ALTER TABLE {s}.landed_events DROP COLUMN chain_pos, DROP COLUMN chain_link",
    "ALTER TABLE {s}.landed_chain_heads DROP COLUMN detail",
    "ALTER TABLE {s}.landed_chain_heads DROP CONSTRAINT landed_chain_heads_pkey",
    "ALTER TABLE {s}.landed_chain_heads ADD PRIMARY KEY (key_id, chain_pos)",
    "DELETE FROM {s}.landed_schema_version WHERE version = 7",
)


def forge(owner: Owner, task_id: str) -> int:
    """A forger who knows the chain: one plain INSERT (no trigger dropped, nothing updated) of a
    receipt whose v2 link is computed correctly onto the last row. Returns its sequence."""
    pos, _, last = owner.run(
        "SELECT chain_pos, sequence, chain_link FROM {t} ORDER BY sequence DESC LIMIT 1"
    )[0]
    if owner.path is not None:
        seq = int(owner.run("SELECT max(sequence) FROM {t}")[0][0]) + 1
    else:
        seq = int(
            owner.run("SELECT nextval(pg_get_serial_sequence(%s, 'sequence'))", _t(owner))[0][0]
        )
    text, sha = body_of(canonical_json(receipt(task_id)).decode())
    fields = (seq, task_id, 1, "settle", "verified", "mallory", None, sha)
    forged = link_v2("receipts", int(pos) + 1, fields, str(last))
    overriding = " OVERRIDING SYSTEM VALUE" if owner.dsn else ""
    owner.run(
        "INSERT INTO {t} (sequence, task_id, attempt, stage, verdict, owner, body_sha256, body,"
        " chain_pos, chain_link)" + overriding + " VALUES (%s, %s, 1, 'settle', 'verified',"
        " 'mallory', %s, %s, %s, %s)",
        seq,
        task_id,
        sha,
        text,
        int(pos) + 1,
        forged,
    )
    return seq


def _t(owner: Owner) -> str:
    return f"{owner.schema}.landed_receipts"


def body_of(text: str) -> tuple[str, str]:
    return text, hashlib.sha256(text.encode()).hexdigest()


async def seed(url: str, key: KeyPair, n: int = 6, every: int = 3) -> None:
    """``n`` receipts appended by a runner signing the head every ``every`` appends."""
    async with await open_ledger(url, signer=HeadSigner(key, every=every)) as ledger:
        for i in range(n):
            await ledger.append(receipt(f"chain-{i}"))


async def verify(
    url: str,
    key: KeyPair | None,
    max_unsigned: int | None = None,
    foreign_after: float | None = None,
) -> ChainReport:
    async with await open_ledger(url, create=False) as ledger:
        trust = {key.key_id: key.public_key} if key is not None else None
        return await audit(ledger, trust, max_unsigned, foreign_after)


@contextmanager
def pg_ledger(dsn: str) -> Iterator[Owner]:
    """A ledger in a schema (and writer role) of its own on the test server, dropped after."""
    tag = uuid.uuid4().hex[:10]
    schema, role = f"chain_t_{tag}", f"landed_writer_c_{tag}"
    owner = Owner(f"{dsn}?schema={schema}&writer_role={role}", dsn=dsn, schema=schema)
    try:
        yield owner
    finally:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))
            conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(role)))


def sqlite_at_schema(path: Path, version: int) -> None:
    """Write a SQLite ledger file as landed left it at schema ``version`` (steps 1..version)."""
    db = sqlite3.connect(path)
    with db:
        db.execute("CREATE TABLE landed_schema_version (version INTEGER PRIMARY KEY)")
        for step in range(1, version + 1):
            for statement in MIGRATIONS[step]:
                db.execute(statement)
            db.execute("INSERT INTO landed_schema_version VALUES (?)", (step,))
    db.close()
