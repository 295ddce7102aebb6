"""The PostgreSQL ledger on the machine's server: trigger, INSERT-only role, idempotent appends."""

from __future__ import annotations

import asyncio
import hashlib
import json
import secrets
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import psycopg
import pytest
from helpers.ledger_claims import (
    check_claims,
    check_concurrent_claims,
    check_opposite_orders_do_not_deadlock,
)
from psycopg import sql

from landed.ledger.base import (
    LedgerConflict,
    LedgerError,
    LedgerEvent,
    LedgerNotFound,
    canonical_json,
)
from landed.ledger.factory import open_ledger
from landed.ledger.postgres.schema import SCHEMA_VERSION
from landed.ledger.postgres.url import redact, split_url
from landed.receipts.model import LandedExtension, Receipt


@dataclass(frozen=True)
class Pg:
    dsn: str
    schema: str
    role: str
    login: str

    @property
    def owner_url(self) -> str:
        return f"{self.dsn}?schema={self.schema}&writer_role={self.role}"

    @property
    def writer_url(self) -> str:
        # The runner's own login, granted the INSERT-only role (trust auth on loopback).
        user_dsn = self.dsn.replace("postgres@", f"{self.login}@", 1)
        return f"{user_dsn}?schema={self.schema}&writer_role={self.role}"


@pytest.fixture
def pg(postgres_dsn: str) -> Iterator[Pg]:
    """A schema and roles of this test's own, dropped afterwards (roles are cluster-wide)."""
    tag = uuid.uuid4().hex[:10]
    env = Pg(postgres_dsn, f"ledger_t_{tag}", f"landed_writer_t_{tag}", f"runner_t_{tag}")
    yield env
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(env.schema)))
        for role in (env.login, env.role):
            conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(role)))


def receipt(task_id: str, attempt: int = 1, verdict: str = "verified") -> Receipt:
    return Receipt(
        task_id=task_id,
        owner="agent-a",
        claimed_status="done",
        verdict=verdict,
        settled_at=datetime(2026, 11, 7, 1, 0, attempt, tzinfo=UTC),
        landed=LandedExtension(attempt=attempt),
    )


async def owner_conn(pg: Pg) -> psycopg.AsyncConnection[tuple[object, ...]]:
    return await psycopg.AsyncConnection.connect(pg.dsn, autocommit=True)


@pytest.fixture
async def seeded(pg: Pg) -> AsyncIterator[Pg]:
    async with await open_ledger(pg.owner_url) as ledger:
        await ledger.append(receipt("a"))
    yield pg


async def test_append_is_idempotent_and_a_changed_attempt_conflicts(pg: Pg) -> None:
    async with await open_ledger(pg.owner_url) as ledger:
        assert await ledger.append(receipt("a")) is True
        assert await ledger.append(receipt("a")) is False
        with pytest.raises(LedgerConflict, match="task 'a' attempt 1"):
            await ledger.append(receipt("a", verdict="failed"))
        assert await ledger.append(receipt("a", attempt=2, verdict="failed")) is True
        assert [r.verdict for r in await ledger.get("a")] == ["verified", "failed"]
        assert await ledger.append_many([receipt("a"), receipt("b"), receipt("b")]) == [
            False,
            True,
            False,
        ]
        assert await ledger.count() == 3


async def test_owner_update_delete_truncate_are_rejected_by_the_trigger(seeded: Pg) -> None:
    table = sql.Identifier(seeded.schema, "landed_receipts")
    async with await owner_conn(seeded) as conn:
        for statement, op in [
            ("UPDATE {} SET verdict = 'failed'", "UPDATE"),
            ("DELETE FROM {}", "DELETE"),
            ("TRUNCATE {}", "TRUNCATE"),
        ]:
            with pytest.raises(psycopg.errors.RaiseException, match=f"append-only: {op}"):
                await conn.execute(sql.SQL(statement).format(table))
    async with await open_ledger(seeded.owner_url) as ledger:
        assert [r.verdict for r in await ledger.board()] == ["verified"]


async def test_the_writer_role_can_insert_and_read_but_never_change(seeded: Pg) -> None:
    async with await owner_conn(seeded) as conn:
        await conn.execute(
            sql.SQL("CREATE ROLE {} LOGIN IN ROLE {}").format(
                sql.Identifier(seeded.login), sql.Identifier(seeded.role)
            )
        )
    # The runner opens the ledger as its login: no migration needed, appends work.
    async with await open_ledger(seeded.writer_url) as ledger:
        assert await ledger.append(receipt("b")) is True
        assert {r.task_id for r in await ledger.board()} == {"a", "b"}
    table = sql.Identifier(seeded.schema, "landed_receipts")
    writer_dsn, _, _ = split_url(seeded.writer_url)
    async with await psycopg.AsyncConnection.connect(writer_dsn, autocommit=True) as conn:
        for statement in [
            "UPDATE {} SET verdict = 'failed'",
            "DELETE FROM {}",
            "TRUNCATE {}",
            "ALTER TABLE {} DISABLE TRIGGER USER",
            "DROP TABLE {}",
        ]:
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                await conn.execute(sql.SQL(statement).format(table))
    async with await open_ledger(seeded.owner_url) as ledger:
        assert await ledger.count() == 2


async def test_a_row_appended_with_a_stale_hash_is_named_never_shown(seeded: Pg) -> None:
    """A writer that is not landed can append (INSERT is what the writer role may do); a row
    whose body does not match its body_sha256 is then a LedgerError naming it on every read."""
    body = canonical_json(receipt("forged")).decode()
    table = sql.Identifier(seeded.schema, "landed_receipts")
    async with await owner_conn(seeded) as conn:
        await conn.execute(
            sql.SQL(
                "INSERT INTO {} (task_id, attempt, verdict, body_sha256, body)"
                " VALUES ('forged', 1, 'verified', %s, %s)"
            ).format(table),
            (hashlib.sha256(b"a stale body").hexdigest(), body),
        )
    async with await open_ledger(seeded.owner_url) as ledger:
        with pytest.raises(LedgerError, match=r"row \d+ of the ledger .* does not match its body"):
            await ledger.board()
        with pytest.raises(LedgerError, match="does not match its body"):
            _ = [r async for r in ledger.iter_receipts()]
        with pytest.raises(LedgerError, match="does not match its body"):
            await ledger.latest("forged")
        assert [r.task_id for r in await ledger.get("a")] == ["a"]


async def test_claims_name_the_first_other_run_and_never_change(seeded: Pg) -> None:
    async with await owner_conn(seeded) as conn:
        await conn.execute(
            sql.SQL("CREATE ROLE {} LOGIN IN ROLE {}").format(
                sql.Identifier(seeded.login), sql.Identifier(seeded.role)
            )
        )
    async with await open_ledger(seeded.writer_url) as ledger:  # the runner's own login
        await check_claims(ledger, receipt("u"))
    table = sql.Identifier(seeded.schema, "landed_claims")
    writer_dsn, _, _ = split_url(seeded.writer_url)
    async with await psycopg.AsyncConnection.connect(writer_dsn, autocommit=True) as conn:
        for statement in ["UPDATE {} SET run_id = 'x'", "DELETE FROM {}", "TRUNCATE {}"]:
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                await conn.execute(sql.SQL(statement).format(table))
    # Even the owner, who holds every privilege on it: the triggers refuse each change.
    for statement in ["UPDATE {} SET run_id = 'x'", "DELETE FROM {}", "TRUNCATE {}"]:
        async with await owner_conn(seeded) as conn:
            with pytest.raises(psycopg.errors.RaiseException, match="append-only"):
                await conn.execute(sql.SQL(statement).format(table))
    async with await open_ledger(seeded.writer_url) as ledger:  # the first claim is unchanged
        _, first = await ledger.claim("t", "run-x", 1, "d1", record=False)
        assert first is not None and (first.run_id, first.attempt) == ("run-1", 1)


async def test_a_runner_on_a_ledger_older_than_its_code_is_told_to_upgrade_it(
    seeded: Pg,
) -> None:
    async with await owner_conn(seeded) as conn:
        # The first schema, as landed released it: no claims, no chain, version 1.
        for table in ("landed_claims", "landed_chain_heads", "landed_events"):
            await conn.execute(
                sql.SQL("DROP TABLE {}").format(sql.Identifier(seeded.schema, table))
            )
        await conn.execute(
            sql.SQL("ALTER TABLE {} DROP COLUMN chain_pos, DROP COLUMN chain_link").format(
                sql.Identifier(seeded.schema, "landed_receipts")
            )
        )
        await conn.execute(
            sql.SQL("DELETE FROM {} WHERE version >= 2").format(
                sql.Identifier(seeded.schema, "landed_schema_version")
            )
        )
        # ... nor the stage in the receipts' key (schema 3).
        receipts = sql.Identifier(seeded.schema, "landed_receipts")
        await conn.execute(sql.SQL("ALTER TABLE {} DROP COLUMN stage").format(receipts))
        await conn.execute(sql.SQL("ALTER TABLE {} ADD UNIQUE (task_id, attempt)").format(receipts))
        await conn.execute(
            sql.SQL("CREATE ROLE {} LOGIN IN ROLE {}").format(
                sql.Identifier(seeded.login), sql.Identifier(seeded.role)
            )
        )
    needs = f"schema version 1 and this landed needs {SCHEMA_VERSION}"
    with pytest.raises(LedgerError, match=needs) as err:
        await open_ledger(seeded.writer_url)
    assert "landed ledger init --ledger URL" in str(err.value)
    # Reading needs no upgrade: the board and export of an older ledger still work.
    async with await open_ledger(seeded.writer_url, create=False) as ledger:
        assert [r.task_id for r in await ledger.board()] == ["a"]
    async with await open_ledger(seeded.owner_url) as ledger:  # the owner upgrades it
        assert await ledger.count() == 1
    async with await open_ledger(seeded.writer_url) as ledger:
        assert await ledger.claim("a2", "run-1", 1, "d") == (None, None)
        # The INSERT-only role records events too (schema 5).
        at = datetime(2026, 12, 2, tzinfo=UTC)
        assert await ledger.append_event(LedgerEvent(key="k", kind="test", at=at)) is True
    # A ledger newer than the code: a writer refuses it (it would skip the newer records).
    async with await owner_conn(seeded) as conn:
        await conn.execute(
            sql.SQL("INSERT INTO {} (version) VALUES (99)").format(
                sql.Identifier(seeded.schema, "landed_schema_version")
            )
        )
    with pytest.raises(LedgerError, match="schema version 99, newer than"):
        await open_ledger(seeded.writer_url)
    async with await open_ledger(seeded.writer_url, create=False) as ledger:
        assert await ledger.count() == 1


async def test_the_writer_cannot_create_a_ledger_and_is_told_how(pg: Pg) -> None:
    async with await owner_conn(pg) as conn:
        await conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(pg.login)))
    with pytest.raises(LedgerError, match="open it once as the database owner"):
        await open_ledger(pg.writer_url)


async def test_concurrent_appends_of_one_attempt_store_one_row(pg: Pg) -> None:
    # Separate ledgers are separate pools and connections: PostgreSQL arbitrates the race.
    ledgers = await asyncio.gather(*(open_ledger(pg.owner_url) for _ in range(4)))
    try:
        results = await asyncio.gather(*(lg.append(receipt("same")) for lg in ledgers * 5))
    finally:
        await asyncio.gather(*(lg.close() for lg in ledgers))
    assert sorted(results) == [False] * 19 + [True]
    async with await owner_conn(pg) as conn:
        cur = await conn.execute(
            sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(pg.schema, "landed_receipts"))
        )
        assert await cur.fetchone() == (1,)


async def test_concurrent_settles_of_distinct_tasks_all_land(pg: Pg) -> None:
    async with await open_ledger(pg.owner_url) as ledger:
        results = await asyncio.gather(*(ledger.append(receipt(f"t{i}")) for i in range(300)))
        assert results == [True] * 300
        assert await ledger.count() == 300


async def test_migration_is_versioned_idempotent_and_safe_to_race(pg: Pg) -> None:
    ledgers = await asyncio.gather(*(open_ledger(pg.owner_url) for _ in range(3)))
    await asyncio.gather(*(lg.close() for lg in ledgers))
    async with await open_ledger(pg.owner_url) as ledger:
        await ledger.append(receipt("a"))
    async with await owner_conn(pg) as conn:
        cur = await conn.execute(
            sql.SQL("SELECT version FROM {}").format(
                sql.Identifier(pg.schema, "landed_schema_version")
            )
        )
        assert await cur.fetchall() == [(v,) for v in range(1, SCHEMA_VERSION + 1)]


async def test_board_latest_and_streaming_export(pg: Pg) -> None:
    async with await open_ledger(pg.owner_url) as ledger:
        await ledger.append(receipt("b", attempt=2))
        await ledger.append(receipt("b", attempt=1, verdict="failed"))
        ids = [f"t{i:04d}" for i in range(1100)][::-1]
        await ledger.append_many(receipt(t) for t in ids)
        assert [r.task_id async for r in ledger.iter_receipts()] == ["b", "b", *ids]
        board = await ledger.board()
        assert len(board) == 1101 and board[0].task_id == "b" and board[0].verdict == "verified"
        latest = await ledger.latest("b")
        assert latest is not None and latest.landed is not None and latest.landed.attempt == 2


async def test_board_is_in_code_point_order_whatever_the_database_collation(pg: Pg) -> None:
    ids = ["b", "B", "a", "_z", "Z", "é", "e"]
    async with await open_ledger(pg.owner_url) as ledger:
        await ledger.append_many(receipt(t) for t in ids)
    # A database created under a language collation (en_US, say), as many servers are.
    async with await owner_conn(pg) as conn:
        await conn.execute(
            sql.SQL('ALTER TABLE {} ALTER COLUMN task_id TYPE text COLLATE "en-US-x-icu"').format(
                sql.Identifier(pg.schema, "landed_receipts")
            )
        )
        cur = await conn.execute(
            sql.SQL("SELECT task_id FROM {} ORDER BY task_id").format(
                sql.Identifier(pg.schema, "landed_receipts")
            )
        )
        assert [r[0] for r in await cur.fetchall()] != sorted(ids)  # the collation does differ
    async with await open_ledger(pg.owner_url, create=False) as ledger:
        # The order SQLite's board gives: Python's, by code point.
        assert [r.task_id for r in await ledger.board()] == sorted(ids)


async def test_read_only_open_of_an_empty_schema_is_not_found(pg: Pg) -> None:
    with pytest.raises(LedgerNotFound, match="no landed ledger in schema"):
        await open_ledger(pg.owner_url, create=False)


async def test_bad_schema_name_and_unreachable_server_are_clear_errors(pg: Pg) -> None:
    with pytest.raises(LedgerError, match="not a plain SQL name"):
        await open_ledger(f"{pg.dsn}?schema=x;drop")
    with pytest.raises(LedgerError, match="cannot connect to the PostgreSQL ledger"):
        await open_ledger("postgresql://postgres@127.0.0.1:1/none?connect_timeout=1")


@pytest.mark.slow
def test_ledger_init_creates_the_ledger_the_board_then_reads(pg: Pg, tmp_path: Path) -> None:
    """`landed ledger init`, run as the owner, migrates an empty schema (table, trigger, the
    INSERT-only role); the board then shows an empty ledger instead of "no ledger"."""
    exe = Path(sys.executable).with_name("landed")

    def landed(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(exe), *args], cwd=tmp_path, capture_output=True, text=True, timeout=60
        )

    before = landed("board", "--ledger", pg.owner_url)
    assert before.returncode == 3 and "landed ledger init" in before.stderr, before.stderr
    done = landed("ledger", "init", "--ledger", pg.owner_url, "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"ledger": pg.owner_url}
    board = landed("board", "--ledger", pg.owner_url, "--json")
    assert board.returncode == 0 and json.loads(board.stdout)["count"] == 0, board.stderr
    again = landed("ledger", "init", "--ledger", pg.owner_url)  # kept as is
    assert again.returncode == 0 and "ledger ready" in again.stdout, again.stderr


async def test_a_login_without_the_writer_role_is_told_to_grant_it(seeded: Pg) -> None:
    async with await owner_conn(seeded) as conn:
        await conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(seeded.login)))
    for create in (True, False):
        with pytest.raises(LedgerError, match=f"GRANT {seeded.role} TO <this login>"):
            await open_ledger(seeded.writer_url, create=create)


def test_secrets_in_the_url_never_show_and_the_rest_is_passed_on_unchanged() -> None:
    url = (
        "postgresql://u:pw1@db/x?schema=s&options=-c%20statement_timeout%3D5000"
        "&password=hunter2&sslpassword=k3y"
    )
    shown = redact(url)
    assert "pw1" not in shown and "hunter2" not in shown and "k3y" not in shown, shown
    dsn, schema, role = split_url(url)
    assert schema == "s" and role == "landed_writer"
    assert "options=-c%20statement_timeout%3D5000" in dsn, dsn  # %20 stays, never +
    with pytest.raises(LedgerError, match="cannot be parsed"):
        split_url("postgresql://postgres@[::1/test")


@pytest.mark.parametrize(
    "bad",
    [
        receipt("nul").model_copy(update={"owner": "agent\x00x"}),
        # A key larger than the unique index's btree entry can hold (ProgramLimitExceeded).
        receipt(secrets.token_urlsafe(4000)),
    ],
    ids=["nul", "huge-key"],
)
async def test_one_receipt_the_server_refuses_does_not_fail_the_others_in_its_batch(
    pg: Pg, bad: Receipt
) -> None:
    async with await open_ledger(pg.owner_url) as ledger:
        results = await asyncio.gather(
            ledger.append(receipt("good")), ledger.append(bad), return_exceptions=True
        )
        assert results[0] is True, results
        assert isinstance(results[1], LedgerError), results
        assert [r.task_id for r in await ledger.board()] == ["good"]


@pytest.mark.slow
async def test_two_connections_claiming_one_task_at_once_see_each_other(pg: Pg) -> None:
    async with await open_ledger(pg.owner_url) as one, await open_ledger(pg.owner_url) as other:
        await check_concurrent_claims(one, other)


@pytest.mark.slow
async def test_two_writers_appending_in_opposite_orders_both_succeed(pg: Pg) -> None:
    async with await open_ledger(pg.owner_url) as one, await open_ledger(pg.owner_url) as other:
        await check_opposite_orders_do_not_deadlock(one, other)


@pytest.mark.slow
async def test_a_claim_blocked_by_a_lock_nobody_releases_fails_instead_of_waiting(pg: Pg) -> None:
    """Any client of the database can take advisory locks (a probe's query, say) and keep them
    for its session: the claim gives up after its lock timeout with a clear error."""
    async with await open_ledger(pg.owner_url) as ledger:
        async with await owner_conn(pg) as holder:
            key = f"landed-claim:{pg.schema}:held"
            await holder.execute("SELECT pg_advisory_lock(hashtextextended(%s, 0))", (key,))
            began = time.monotonic()
            with pytest.raises(LedgerError, match="lock timeout"):
                await ledger.claim("held", "run-1", 1, "d")
            assert time.monotonic() - began < 20
        assert await ledger.claim("held", "run-1", 1, "d") == (None, None)  # released with it


async def test_chain_windows_and_board_bodies_read_as_their_one_row_forms(pg: Pg) -> None:
    """chain_windows (one round trip) reads what chain_window reads for each row, and
    iter_board_bodies the bodies of iter_board_rows, hash-checked, a page at a time."""
    async with await open_ledger(pg.owner_url) as ledger:
        await ledger.append_many(receipt(f"w{i:04d}") for i in range(1203))
        await ledger.append(receipt("w0001", attempt=2))
        rows = [(seq, r) async for seq, r in ledger.iter_board_rows()]
        pages = [page async for page in ledger.iter_board_bodies()]
        assert [len(p) for p in pages] == [500, 500, 203]
        assert [(seq, body) for p in pages for seq, body in p] == [
            (seq, canonical_json(r)) for seq, r in rows
        ]
        chosen = [1, 2, rows[700][0], 1204]
        windows = await ledger.chain_windows(chosen)
        assert windows == {seq: await ledger.chain_window(seq) for seq in chosen}
        assert await ledger.chain_windows([]) == {}


async def test_the_ledgers_connections_run_without_jit(pg: Pg) -> None:
    """JIT would compile each short indexed read on a large ledger (tens of milliseconds for a
    read of one): the ledger's pool turns it off on every connection."""
    async with await open_ledger(pg.owner_url) as ledger:
        pool = ledger._pool  # type: ignore[attr-defined]
        async with pool.connection() as conn:
            cur = await conn.execute("SHOW jit")
            assert await cur.fetchone() == ("off",)
