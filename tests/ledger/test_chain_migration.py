"""A ledger from before the hash chain: upgrading it links the rows it holds, in sequence order,
and says so; a reader of a ledger not yet upgraded is told how."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import psycopg
import pytest
from helpers.chain import PG_UNDO_LOOP_INDEX, pg_ledger, receipt, seed, sqlite_at_schema, verify
from psycopg import sql

from landed.cli.ledger_trust import rechained_note
from landed.ledger.base import LedgerError, canonical_json
from landed.ledger.factory import open_ledger
from landed.signing import KeyPair


def _old_rows(n: int) -> list[tuple[str, str, str]]:
    bodies = [canonical_json(receipt(f"old-{i}")).decode() for i in range(n)]
    return [(f"old-{i}", hashlib.sha256(b.encode()).hexdigest(), b) for i, b in enumerate(bodies)]


async def test_a_schema_5_sqlite_ledger_is_chained_on_upgrade(tmp_path: Path) -> None:
    path, key = tmp_path / "v5.db", KeyPair.generate()
    sqlite_at_schema(path, 5)
    with sqlite3.connect(path) as db:
        db.executemany(
            "INSERT INTO landed_receipts (task_id, attempt, body_sha256, body) VALUES (?, 1, ?, ?)",
            _old_rows(3),
        )
    db.close()
    url = f"sqlite:///{path}"
    with pytest.raises(LedgerError, match=r"before the hash chain.*landed ledger init"):
        await verify(url, key)
    await seed(url, key, n=3)  # a runner of this landed upgrades it, then appends and signs
    report = await verify(url, key)
    assert not report.tampered, report.findings
    assert (report.rows, report.migrated_upto, report.last_signed_pos) == (6, 3, 6)
    assert report.rechained == {"receipts": 3, "claims": 0, "events": 0}
    db = sqlite3.connect(path)
    with pytest.raises(sqlite3.IntegrityError, match="append-only: UPDATE"):
        db.execute("UPDATE landed_receipts SET verdict = 'failed'")
    db.close()


@pytest.mark.slow
async def test_a_schema_3_postgres_ledger_is_chained_on_upgrade(postgres_dsn: str) -> None:
    key = KeyPair.generate()
    with pg_ledger(postgres_dsn) as owner:
        async with await open_ledger(owner.url):
            pass
        assert owner.schema is not None
        names = {"s": sql.Identifier(owner.schema)}
        with psycopg.connect(postgres_dsn, autocommit=True) as conn:
            # The ledger as schema 3 left it: no chain columns, no heads, rows appended.
            for statement in (
                *PG_UNDO_LOOP_INDEX,
                "ALTER TABLE {s}.landed_claims DROP COLUMN chain_pos, DROP COLUMN chain_link",
                "DELETE FROM {s}.landed_schema_version WHERE version = 7",  # links v2
                "ALTER TABLE {s}.landed_claims DROP COLUMN owner, DROP COLUMN loop",  # schema 6
                "DELETE FROM {s}.landed_schema_version WHERE version = 6",
                "DROP TABLE {s}.landed_events",  # schema 5 (events), made again on upgrade
                "DELETE FROM {s}.landed_schema_version WHERE version = 5",
                "DROP TABLE {s}.landed_chain_heads",
                "ALTER TABLE {s}.landed_receipts DROP COLUMN chain_pos, DROP COLUMN chain_link",
                "DELETE FROM {s}.landed_schema_version WHERE version = 4",
            ):
                conn.execute(sql.SQL(statement).format(**names))
            conn.cursor().executemany(
                sql.SQL(
                    "INSERT INTO {s}.landed_receipts (task_id, attempt, body_sha256, body)"
                    " VALUES (%s, 1, %s, %s)"
                ).format(**names),
                _old_rows(3),
            )
        with pytest.raises(LedgerError, match=r"before the hash chain.*landed ledger init"):
            await verify(owner.url, key)
        await seed(owner.url, key, n=3)
        report = await verify(owner.url, key)
        assert not report.tampered, report.findings
        assert (report.rows, report.migrated_upto, report.last_signed_pos) == (6, 3, 6)
        assert report.rechained == {"receipts": 3, "claims": 0, "events": 0}
        with (
            psycopg.connect(postgres_dsn, autocommit=True) as conn,
            pytest.raises(psycopg.errors.RaiseException, match="append-only: UPDATE"),
        ):
            conn.execute(
                sql.SQL("UPDATE {s}.landed_receipts SET verdict = 'failed'").format(**names)
            )


async def test_a_schema_9_sqlite_ledger_is_re_chained_with_v2_links_and_says_so(
    tmp_path: Path,
) -> None:
    path, key = tmp_path / "v9.db", KeyPair.generate()
    sqlite_at_schema(path, 9)
    with sqlite3.connect(path) as db:
        db.executemany(
            "INSERT INTO landed_receipts (task_id, attempt, body_sha256, body) VALUES (?, 1, ?, ?)",
            _old_rows(3),
        )
        db.execute(
            "INSERT INTO landed_claims (task_id, run_id, attempt, spec_sha256, claimed_at)"
            " VALUES ('old-0', 'run-0', 1, 'd', '2026-12-01T00:00:00+00:00')"
        )
        db.execute(
            "INSERT INTO landed_events (event_key, kind, at, body)"
            " VALUES ('k', 'trip', '2026-12-01T00:00:00+00:00', '{}')"
        )
    db.close()
    url = f"sqlite:///{path}"
    with pytest.raises(LedgerError, match=r"before the hash chain.*landed ledger init"):
        await verify(url, key)
    async with await open_ledger(url) as ledger:  # what `landed ledger init` does
        note = await rechained_note(ledger)
    assert note.startswith("migration-v2: receipts 1-3, claims 1-1, events 1-1 re-chained")
    await seed(url, key, n=2)
    report = await verify(url, key, max_unsigned=0, foreign_after=0)
    assert not report.tampered, report.all_findings()
    assert report.rechained == {"receipts": 3, "claims": 1, "events": 1}
    # The re-chained rows are covered from the upgrade on: an edit of one is reported.
    db = sqlite3.connect(path)
    db.execute("DROP TRIGGER landed_claims_no_update")
    db.execute("UPDATE landed_claims SET attempt = 2")
    db.commit()
    db.close()
    found = [(f.kind, f.chain) for f in (await verify(url, key)).all_findings()]
    assert found == [("link_broken", "claims")]
