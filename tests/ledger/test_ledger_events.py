"""Ledger events (a tripwire's trips) on both backends: keyed, append-only like receipts, read
newest first and bounded, off the hash chain (`landed ledger verify` is unchanged by them), and
added to a ledger of the schema before them by the upgrade path."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
import pytest
from helpers.chain import PG_UNDO_V2, Owner, pg_ledger, seed, sqlite_at_schema, verify
from psycopg import sql

from landed.ledger.events import MAX_EVENTS, EventConflict, LedgerEvent
from landed.ledger.factory import open_ledger
from landed.ledger.sqlite.schema import SCHEMA_VERSION
from landed.signing import KeyPair

AT = datetime(2026, 12, 2, 17, 0, tzinfo=UTC)


def event(n: int, loop: str = "feed", rule: str = "3 not-done in a row") -> LedgerEvent:
    body = {"number": n, "rule": rule, "receipts": [f"{loop}@{n}#1"], "repair_task_id": None}
    return LedgerEvent(key=f"trip:{loop}:{n}", kind="tripwire.trip", loop=loop, at=AT, body=body)


def owner_sql(owner: Owner, statement: str) -> None:
    """Plain SQL on the events table as the table's owner ({e} names it)."""
    if owner.path is not None:
        with sqlite3.connect(owner.path, isolation_level=None) as db:
            db.execute(statement.format(e="landed_events"))
        db.close()
        return
    assert owner.dsn is not None and owner.schema is not None
    with psycopg.connect(owner.dsn, autocommit=True) as conn:
        table = sql.Identifier(owner.schema, "landed_events").as_string(conn)
        conn.execute(statement.format(e=table).encode())


def refused(owner: Owner) -> Any:
    return sqlite3.IntegrityError if owner.path is not None else psycopg.errors.RaiseException


async def test_an_event_is_stored_once_per_key_and_never_replaced(owner: Owner) -> None:
    async with await open_ledger(owner.url) as ledger:
        assert await ledger.append_event(event(1)) is True
        assert await ledger.append_event(event(1)) is False  # a retried write
        with pytest.raises(EventConflict, match="new event under a new key"):
            await ledger.append_event(event(1, rule="something else"))
        assert await ledger.append_event(event(2)) is True
        assert await ledger.append_event(event(1, loop="other")) is True
        mine = await ledger.events("feed")
        assert [(e.key, e.body["rule"]) for e in mine] == [
            ("trip:feed:2", "3 not-done in a row"),
            ("trip:feed:1", "3 not-done in a row"),
        ]
        assert mine[0].at == AT and mine[0].sequence is not None
        assert len(await ledger.events()) == 3
        assert [e.key for e in await ledger.events(limit=1)] == ["trip:other:1"]
        with pytest.raises(Exception, match=f"limit from 1 to {MAX_EVENTS}"):
            await ledger.events(limit=MAX_EVENTS + 1)


async def test_update_and_delete_of_an_event_are_refused(owner: Owner) -> None:
    async with await open_ledger(owner.url) as ledger:
        await ledger.append_event(event(1))
    for statement, op in [("UPDATE {e} SET kind = 'x'", "UPDATE"), ("DELETE FROM {e}", "DELETE")]:
        with pytest.raises(refused(owner), match=f"append-only: {op}"):
            owner_sql(owner, statement)
    if owner.path is not None:  # a REPLACE of the stored key must not swap the row
        owner_sql(
            owner,
            "REPLACE INTO {e} (event_key, kind, loop, at, body)"
            " VALUES ('trip:feed:1', 'forged', 'feed', 'x', '{{}}')",
        )
    else:
        with pytest.raises(psycopg.errors.RaiseException, match="append-only: TRUNCATE"):
            owner_sql(owner, "TRUNCATE {e}")
    async with await open_ledger(owner.url) as ledger:
        (stored,) = await ledger.events("feed")
        assert stored.kind == "tripwire.trip" and stored.body["number"] == 1


async def test_events_are_off_the_chain_and_verify_is_unchanged(owner: Owner) -> None:
    key = KeyPair.generate()
    await seed(owner.url, key, n=3)
    before = await verify(owner.url, key)
    async with await open_ledger(owner.url) as ledger:
        for n in range(1, 4):
            await ledger.append_event(event(n))
        assert await ledger.count() == 3  # events are not receipts
    after = await verify(owner.url, key)
    assert not after.tampered, after.findings
    assert (after.rows, after.last_signed_pos) == (before.rows, before.last_signed_pos) == (3, 3)


async def test_a_schema_7_sqlite_ledger_gains_events_on_upgrade(tmp_path: Path) -> None:
    path = tmp_path / "v7.db"
    sqlite_at_schema(path, 7)
    url = f"sqlite:///{path}"
    async with await open_ledger(url, create=False) as reader:
        assert await reader.events("feed") == []  # a reader never migrates: no events yet
    async with await open_ledger(url) as ledger:
        assert await ledger.append_event(event(1)) is True
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT max(version) FROM landed_schema_version").fetchone() == (
            SCHEMA_VERSION,
        )
    db.close()


async def test_a_schema_4_postgres_ledger_gains_events_on_upgrade(postgres_dsn: str) -> None:
    with pg_ledger(postgres_dsn) as owner:
        async with await open_ledger(owner.url):
            pass
        assert owner.schema is not None
        names = {"s": sql.Identifier(owner.schema)}
        with psycopg.connect(postgres_dsn, autocommit=True) as conn:
            for statement in (
                *PG_UNDO_V2,
                "ALTER TABLE {s}.landed_claims DROP COLUMN owner, DROP COLUMN loop",  # schema 6
                "DELETE FROM {s}.landed_schema_version WHERE version = 6",
                "DROP TABLE {s}.landed_events",
                "DELETE FROM {s}.landed_schema_version WHERE version = 5",
            ):
                conn.execute(sql.SQL(statement).format(**names))
        async with await open_ledger(owner.url, create=False) as reader:
            assert await reader.events() == []
        async with await open_ledger(owner.url) as ledger:
            assert await ledger.append_event(event(1)) is True
            assert [e.key for e in await ledger.events("feed")] == ["trip:feed:1"]
