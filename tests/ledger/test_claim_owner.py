"""A claim names its task's owner and loop (schema 9 on SQLite, 6 on PostgreSQL), so the
exporter counts a task still acting under them; a ledger of the schema before is still read
(never migrated by the exporter), and its claims gain the columns on upgrade."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
from helpers.chain import PG_UNDO_V2, pg_ledger, sqlite_at_schema
from psycopg import sql

from landed.ledger.factory import open_ledger, open_scan
from landed.ledger.scan import START

LATER = datetime.now(UTC) + timedelta(days=1)


async def _scanned(url: str) -> list[tuple[str | None, str | None]]:
    scan = open_scan(url)
    try:
        return [(owner, loop) for _, owner, loop, _ in await scan.claims(START, LATER, 100)]
    finally:
        await scan.close()


async def test_a_claim_names_its_owner_and_loop_on_sqlite_and_after_an_upgrade(
    tmp_path: Path,
) -> None:
    path = tmp_path / "v8.db"
    sqlite_at_schema(path, 8)
    with sqlite3.connect(path) as db:
        db.execute(
            "INSERT INTO landed_claims (task_id, run_id, attempt, spec_sha256, claimed_at)"
            " VALUES ('old', 'run-0', 1, 'd', '2026-12-01T00:00:00+00:00')"
        )
    db.close()
    url = f"sqlite:///{path}"
    assert await _scanned(url) == [(None, None)]  # read at schema 8: neither, never an error
    async with await open_ledger(url) as ledger:  # a runner upgrades it
        await ledger.claim("new", "run-1", 1, "d", owner="erin", loop="hourly")
    assert await _scanned(url) == [(None, None), ("erin", "hourly")]


async def test_a_claim_names_its_owner_and_loop_on_postgres_and_after_an_upgrade(
    postgres_dsn: str,
) -> None:
    with pg_ledger(postgres_dsn) as owner:
        async with await open_ledger(owner.url) as ledger:
            await ledger.claim("new", "run-1", 1, "d", owner="erin", loop="hourly")
        assert await _scanned(owner.url) == [("erin", "hourly")]
        assert owner.schema is not None
        names = {"s": sql.Identifier(owner.schema)}
        with psycopg.connect(postgres_dsn, autocommit=True) as conn:
            for statement in (
                *PG_UNDO_V2,
                "ALTER TABLE {s}.landed_claims DROP COLUMN owner",
                "ALTER TABLE {s}.landed_claims DROP COLUMN loop",
                "DELETE FROM {s}.landed_schema_version WHERE version = 6",
            ):
                conn.execute(sql.SQL(statement).format(**names))
        assert await _scanned(owner.url) == [(None, None)]  # the schema before: still read
        async with await open_ledger(owner.url) as ledger:
            await ledger.claim("next", "run-2", 1, "d", owner="frank", loop=None)
        assert await _scanned(owner.url) == [(None, None), ("frank", None)]
