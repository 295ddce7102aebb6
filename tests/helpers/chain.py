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
from landed.ledger.chain import HeadSigner, link
from landed.ledger.factory import open_ledger
from landed.ledger.sqlite_schema import MIGRATIONS
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

    def relink_from(self, sequence: int) -> None:
        """What an owner without the runner's key can do: recompute every link from a row on."""
        prev = self.row(sequence - 1)[1] if sequence > 1 else "0" * 64
        for seq in [s for s in self.sequences() if s >= sequence]:
            pos, _, sha, _ = self.row(seq)
            prev = link(int(pos), seq, str(sha), prev)
            self.run("UPDATE {t} SET chain_link = %s WHERE sequence = %s", prev, seq)


def body_of(text: str) -> tuple[str, str]:
    return text, hashlib.sha256(text.encode()).hexdigest()


async def seed(url: str, key: KeyPair, n: int = 6, every: int = 3) -> None:
    """``n`` receipts appended by a runner signing the head every ``every`` appends."""
    async with await open_ledger(url, signer=HeadSigner(key, every=every)) as ledger:
        for i in range(n):
            await ledger.append(receipt(f"chain-{i}"))


async def verify(url: str, key: KeyPair | None, max_unsigned: int | None = None) -> ChainReport:
    async with await open_ledger(url, create=False) as ledger:
        trust = {key.key_id: key.public_key} if key is not None else None
        return await audit(ledger, trust, max_unsigned)


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
