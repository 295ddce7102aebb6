"""Indexed reads on SQLite and PostgreSQL: a loop's newest settlements (a tripwire's catch-up
and silence read) and the board in pages; each still reports a row the chain no longer proves
as untrusted, and the index they read is what the query plan uses."""

from __future__ import annotations

import contextlib
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from helpers.chain import PG_UNDO_LOOP_INDEX, Owner, body_of, pg_ledger, sqlite_at_schema

from landed.ledger.factory import open_ledger
from landed.ledger.sqlite.schema import LOOP_OF
from landed.receipts.model import LandedExtension, Receipt

T0 = datetime(2026, 11, 7, 1, 0, tzinfo=UTC)


def loop_receipt(
    task_id: str, loop: str | None, minute: int, attempt: int = 1, verdict: str = "verified"
) -> Receipt:
    return Receipt(
        task_id=task_id,
        owner="agent-a",
        claimed_status="done",
        verdict=verdict,
        settled_at=T0 + timedelta(minutes=minute),
        landed=LandedExtension(attempt=attempt, loop=loop),
    )


async def seed_loops(url: str) -> None:
    """Tasks of loops a and b, one ad-hoc task, and a task of a settled again in attempt 2."""
    rows = [loop_receipt(f"a-{i}", "a", i) for i in range(5)]
    rows += [loop_receipt(f"b-{i}", "b", i) for i in range(3)]
    rows += [loop_receipt("adhoc", None, 9), loop_receipt("a-1", "a", 20, attempt=2)]
    async with await open_ledger(url) as ledger:
        await ledger.append_many(rows)


async def test_a_loop_read_returns_its_latest_rows_newest_first(owner: Owner) -> None:
    await seed_loops(owner.url)
    async with await open_ledger(owner.url) as ledger:
        rows = await ledger.loop_latest("a")
        assert [(r.task_id, r.trusted) for r in rows] == [
            ("a-1", True),
            ("a-4", True),
            ("a-3", True),
            ("a-2", True),
            ("a-0", True),
        ]
        latest = rows[0].receipt
        assert latest is not None and latest.landed is not None and latest.landed.attempt == 2
        newest = await ledger.loop_latest("a", limit=2)
        assert [r.task_id for r in newest] == ["a-1", "a-4"]
        since = await ledger.loop_latest("a", since=T0 + timedelta(minutes=2, seconds=30))
        assert [r.task_id for r in since] == ["a-1", "a-4", "a-3"]
        assert [r.task_id for r in await ledger.loop_latest("b")] == ["b-2", "b-1", "b-0"]
        assert await ledger.loop_latest("nobody") == []


async def test_a_loop_read_agrees_with_the_board_filtered_by_loop(owner: Owner) -> None:
    await seed_loops(owner.url)
    async with await open_ledger(owner.url) as ledger:
        board = [
            r
            for r in await ledger.board()
            if r.landed is not None and r.landed.loop == "a" and r.settled_at is not None
        ]
        board.sort(key=lambda r: (r.settled_at, r.task_id), reverse=True)
        read = [r.receipt for r in await ledger.loop_latest("a", limit=1000)]
        assert read == board


async def test_a_loop_read_reports_a_row_past_a_chain_break_as_untrusted(owner: Owner) -> None:
    await seed_loops(owner.url)
    owner.drop_triggers()
    # The loop's oldest row loses its link: it and every row after it are past the break.
    first = int(owner.run("SELECT min(sequence) FROM {t}")[0][0])
    owner.run("UPDATE {t} SET chain_link = %s WHERE sequence = %s", "0" * 64, first)
    async with await open_ledger(owner.url, create=False) as ledger:
        rows = await ledger.loop_latest("a")
    assert rows and not any(r.trusted for r in rows)


async def test_a_loop_read_reports_an_edited_body_as_untrusted(owner: Owner) -> None:
    await seed_loops(owner.url)
    owner.drop_triggers()
    (seq,) = owner.run("SELECT sequence FROM {t} WHERE task_id = 'a-3'")[0]
    body = str(owner.run("SELECT body FROM {t} WHERE sequence = %s", seq)[0][0])
    edited = body.replace("verified", "failed")
    owner.run("UPDATE {t} SET body = %s WHERE sequence = %s", edited, seq)
    async with await open_ledger(owner.url, create=False) as ledger:
        rows = {r.task_id: r for r in await ledger.loop_latest("a")}
    assert not rows["a-3"].trusted and rows["a-3"].receipt is None
    # Rows before the break still hold; every row from it on is past it.
    assert rows["a-2"].trusted and not rows["a-4"].trusted


async def test_a_row_whose_body_is_not_json_is_stored_and_read_as_untrusted(
    owner: Owner,
) -> None:
    """The loop index names no loop for a body that is not JSON: the row is not refused by its
    index (it is reported by every read, as before), and a loop read does not see it."""
    await seed_loops(owner.url)
    owner.drop_triggers()
    text, sha = body_of("not json")
    owner.run("UPDATE {t} SET body = %s, body_sha256 = %s WHERE task_id = 'b-0'", text, sha)
    async with await open_ledger(owner.url, create=False) as ledger:
        assert [r.task_id for r in await ledger.loop_latest("b")] == ["b-2", "b-1"]


async def test_the_board_in_pages_is_the_board(owner: Owner) -> None:
    await seed_loops(owner.url)
    async with await open_ledger(owner.url) as ledger:
        await ledger.append_many([loop_receipt(f"p-{i:04d}", "p", i % 50) for i in range(1234)])
        paged = [row async for row in ledger.iter_board_rows()]
        assert paged == await ledger.board_rows()
        assert len(paged) == 1234 + 9


def test_the_sqlite_loop_read_uses_the_loop_index(tmp_path: Path) -> None:
    from landed.ledger.sqlite.queries import LOOP_LATEST

    path = tmp_path / "plan.db"
    sqlite_at_schema(path, 11)
    with contextlib.closing(sqlite3.connect(path)) as db:
        plan = db.execute(f"EXPLAIN QUERY PLAN {LOOP_LATEST}", ("a", "", 100)).fetchall()
    shown = " | ".join(str(row[-1]) for row in plan)
    assert "landed_receipts_loop" in shown, shown
    assert "TEMP B-TREE" not in shown.split("CORRELATED")[0], shown
    assert LOOP_OF in " ".join(m for m in LOOP_LATEST.split("WHERE")[1:2])


async def test_a_schema_10_sqlite_ledger_gets_the_loop_index_on_upgrade(tmp_path: Path) -> None:
    path = tmp_path / "v10.db"
    async with await open_ledger(f"sqlite:///{path}") as ledger:
        await ledger.append(loop_receipt("old-0", "a", 1))
    with contextlib.closing(sqlite3.connect(path)) as db, db:
        db.execute("DROP INDEX landed_receipts_loop")
        db.execute("DELETE FROM landed_schema_version WHERE version = 11")
    async with await open_ledger(f"sqlite:///{path}", create=False) as ledger:
        # Read-only: an older schema reads the same (without the index).
        assert [r.task_id for r in await ledger.loop_latest("a")] == ["old-0"]
    async with await open_ledger(f"sqlite:///{path}") as ledger:
        await ledger.append(loop_receipt("new-0", "a", 2))
        assert [r.task_id for r in await ledger.loop_latest("a")] == ["new-0", "old-0"]
        assert all(r.trusted for r in await ledger.loop_latest("a"))
    with contextlib.closing(sqlite3.connect(path)) as db:
        names = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='index'")}
        versions = [r[0] for r in db.execute("SELECT version FROM landed_schema_version")]
    assert "landed_receipts_loop" in names and max(versions) == 11


@pytest.mark.slow
async def test_a_schema_7_postgres_ledger_gets_the_loop_index_on_upgrade(
    postgres_dsn: str,
) -> None:
    import psycopg
    from psycopg import sql

    with pg_ledger(postgres_dsn) as pg:
        async with await open_ledger(pg.url) as ledger:
            await ledger.append(loop_receipt("old-0", "a", 1))
        names = {"s": sql.Identifier(str(pg.schema))}
        with psycopg.connect(postgres_dsn, autocommit=True) as conn:
            for statement in PG_UNDO_LOOP_INDEX:
                conn.execute(sql.SQL(statement).format(**names))
        async with await open_ledger(pg.url) as ledger:
            await ledger.append(loop_receipt("new-0", "a", 2))
            rows = await ledger.loop_latest("a")
        assert [(r.task_id, r.trusted) for r in rows] == [("new-0", True), ("old-0", True)]
        with psycopg.connect(postgres_dsn, autocommit=True) as conn:
            found = conn.execute(
                "SELECT indexname FROM pg_indexes WHERE schemaname = %s", (pg.schema,)
            ).fetchall()
            versions = conn.execute(
                sql.SQL("SELECT max(version) FROM {s}.landed_schema_version").format(**names)
            ).fetchone()
        assert ("landed_receipts_loop",) in found and versions == (8,)


async def test_the_catch_up_reads_the_loop_oldest_first_and_leaves_out_untrusted_rows(
    owner: Owner,
) -> None:
    from landed.activities.loops import LoopActivities
    from landed.loops.tripwire import CatchUp

    await seed_loops(owner.url)
    async with await open_ledger(owner.url) as ledger:
        notes = await LoopActivities(ledger).catch_up(CatchUp(loop="a", limit=3))
    assert [(n.task_id, n.attempt) for n in notes] == [("a-3", 1), ("a-4", 1), ("a-1", 2)]
    owner.drop_triggers()
    (seq,) = owner.run("SELECT sequence FROM {t} WHERE task_id = 'a-4'")[0]
    owner.run("UPDATE {t} SET verdict = 'failed' WHERE sequence = %s", seq)
    async with await open_ledger(owner.url) as ledger:
        notes = await LoopActivities(ledger).catch_up(CatchUp(loop="a"))
    # a-4's row and every row after it are past the break: none reaches the tripwire.
    assert [n.task_id for n in notes] == ["a-0", "a-2", "a-3"]


async def test_a_read_walks_the_chain_a_budget_at_a_time_and_its_retry_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from landed.ledger import trusted
    from landed.ledger.sqlite import ledger as sqlite

    monkeypatch.setattr(sqlite, "_CHAIN_PAGE", 5)
    monkeypatch.setattr(trusted, "WALK_BUDGET", 10)
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    async with await open_ledger(url) as ledger:
        await ledger.append_many([loop_receipt(f"t-{i:02d}", "a", i) for i in range(30)])
    async with await open_ledger(url, create=False) as ledger:
        behind = 0
        while True:
            try:
                found = await ledger.latest("t-29")
                break
            except trusted.ChainWalkBehind as exc:
                behind += 1
                assert exc.walked == 10 * behind
        assert behind == 2 and found is not None and found.task_id == "t-29"
    async with await open_ledger(url, create=False) as ledger:
        for _ in range(2):  # each try walks one budget on from where the last stopped
            with pytest.raises(trusted.ChainWalkBehind):
                await ledger.loop_latest("a")
        rows = await ledger.loop_latest("a")
        assert len(rows) == 30 and all(r.trusted for r in rows)
    async with await open_ledger(url, create=False) as ledger:
        await ledger.walk_chain()  # what a runner does at start: every read then finds it warm
        assert all(r.trusted for r in await ledger.loop_latest("a"))
        assert await ledger.latest("t-00") is not None


async def test_a_budgeted_walk_still_refuses_a_row_past_a_break(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from landed.ledger import trusted
    from landed.ledger.base import UntrustedRow
    from landed.ledger.sqlite import ledger as sqlite

    monkeypatch.setattr(sqlite, "_CHAIN_PAGE", 5)
    monkeypatch.setattr(trusted, "WALK_BUDGET", 10)
    path = tmp_path / "ledger.db"
    owner = Owner(f"sqlite:///{path}", path=path)
    async with await open_ledger(owner.url) as ledger:
        await ledger.append_many([loop_receipt(f"t-{i:02d}", "a", i) for i in range(30)])
    owner.drop_triggers()
    owner.run("UPDATE {t} SET verdict = 'failed' WHERE task_id = 't-03'")
    async with await open_ledger(owner.url, create=False) as ledger:
        await ledger.walk_chain()
        assert await ledger.latest("t-02") is not None
        with pytest.raises(UntrustedRow):
            await ledger.latest("t-29")


async def test_the_board_where_is_the_board_filtered(owner: Owner) -> None:
    await seed_loops(owner.url)
    async with await open_ledger(owner.url) as ledger:
        board = await ledger.board_rows()
        since = T0 + timedelta(minutes=2, seconds=30)

        def keep(r: Receipt, loop: str | None, since_: datetime | None) -> bool:
            ext_loop = r.landed.loop if r.landed is not None else None
            settled = r.settled_at
            return (loop is None or ext_loop == loop) and (
                since_ is None or (settled is not None and settled > since_)
            )

        for loop, since_ in (("a", None), ("b", None), (None, since), ("a", since)):
            where = await ledger.board_where(loop=loop, since=since_)
            assert where == [(s, r) for s, r in board if keep(r, loop, since_)], (loop, since_)
        assert await ledger.board_where(owner="agent-a") == board
        assert await ledger.board_where(owner="nobody") == []


async def test_a_rows_own_links_are_checked_by_its_window(owner: Owner) -> None:
    from landed.ledger.reads import links_hold

    await seed_loops(owner.url)
    seqs = owner.sequences()
    async with await open_ledger(owner.url) as ledger:
        for seq in (seqs[0], seqs[4], seqs[-1]):
            assert links_hold(await ledger.chain_window(seq), seq), seq
    owner.drop_triggers()
    owner.run("UPDATE {t} SET verdict = 'failed' WHERE sequence = %s", seqs[4])
    async with await open_ledger(owner.url, create=False) as ledger:
        # The edited row's link no longer follows from its columns; the rows before it hold.
        assert not links_hold(await ledger.chain_window(seqs[4]), seqs[4])
        assert links_hold(await ledger.chain_window(seqs[2]), seqs[2])
    # A forger relinks the edited row alone onto the row before it ...
    pos, prev = int(owner.row(seqs[4])[0]), str(owner.row(seqs[3])[1])
    forged = owner.link(pos, seqs[4], prev)
    owner.run("UPDATE {t} SET chain_link = %s WHERE sequence = %s", forged, seqs[4])
    async with await open_ledger(owner.url, create=False) as ledger:
        # ... but the next row no longer links onto it: the edited row is still refused.
        assert not links_hold(await ledger.chain_window(seqs[4]), seqs[4])


@pytest.mark.parametrize(
    ("owner", "loop", "since", "index"),
    [
        (None, "a", None, "landed_receipts_loop"),
        ("o", None, None, "landed_receipts_owner"),
        (None, None, T0, "landed_receipts_settled_at"),
    ],
)
def test_each_sqlite_board_filter_reads_its_index(
    tmp_path: Path, owner: str | None, loop: str | None, since: datetime | None, index: str
) -> None:
    from landed.ledger.sqlite.queries import where_sql

    path = tmp_path / "plan.db"
    sqlite_at_schema(path, 11)
    query, params = where_sql(owner, loop, since)
    with contextlib.closing(sqlite3.connect(path)) as db:
        plan = [str(r[-1]) for r in db.execute(f"EXPLAIN QUERY PLAN {query}", params)]
    assert f"USING INDEX {index}" in plan[0], plan
