"""A loop's settlements as a stream (Ledger.loop_after) on SQLite and PostgreSQL: the settle
rows after a cursor in commit order, a row settled earlier but committed later still past the
cursor, a row the chain no longer proves reported untrusted, and the read's plan on the loop
index; the tripwire's read_after activity on top of it."""

from __future__ import annotations

import contextlib
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

from helpers.chain import Owner, sqlite_at_schema

from landed.activities.loops import LoopActivities
from landed.ledger.factory import open_ledger
from landed.loops.stream import StreamRead
from landed.receipts.model import LandedExtension, Receipt

T0 = datetime(2026, 11, 7, 1, 0, tzinfo=UTC)


def loop_receipt(
    task_id: str, loop: str, minute: int, attempt: int = 1, verdict: str = "verified"
) -> Receipt:
    return Receipt(
        task_id=task_id,
        owner="agent-a",
        claimed_status="done",
        verdict=verdict,
        settled_at=T0 + timedelta(minutes=minute),
        landed=LandedExtension(attempt=attempt, loop=loop),
    )


async def test_a_loop_read_after_a_cursor_returns_its_settle_rows_in_commit_order(
    owner: Owner,
) -> None:
    async with await open_ledger(owner.url) as ledger:
        await ledger.append_many([loop_receipt(f"a-{i}", "a", i) for i in range(4)])
        await ledger.append(loop_receipt("b-0", "b", 1))
        # Settled before a-3 but committed after it (a settle that was retried): still new.
        await ledger.append(loop_receipt("late", "a", 0))
        await ledger.append(loop_receipt("a-1", "a", 9, attempt=2))
        # A recheck's lifecycle row is no settlement of the loop.
        confirmed = loop_receipt("a-0", "a", 30).model_copy(
            update={"landed": LandedExtension(attempt=1, loop="a", lifecycle="confirmed")}
        )
        await ledger.append(confirmed)
        rows = await ledger.loop_after("a", 0)
        keys = [
            (r.task_id, r.receipt.landed.attempt) for r in rows if r.receipt and r.receipt.landed
        ]
        assert keys == [("a-0", 1), ("a-1", 1), ("a-2", 1), ("a-3", 1), ("late", 1), ("a-1", 2)]
        assert all(r.trusted for r in rows)
        sequences = [r.sequence for r in rows]
        assert sequences == sorted(sequences)
        cursor = sequences[3]  # the reader took a-3 in
        after = await ledger.loop_after("a", cursor, since=T0 - timedelta(minutes=15))
        assert [r.task_id for r in after] == ["late", "a-1"]
        assert [r.task_id for r in await ledger.loop_after("a", cursor, limit=1)] == ["late"]
        # The floor on settled_at bounds the scan: a row settled before it is not read.
        assert [r.task_id for r in await ledger.loop_after("a", cursor, since=T0)] == ["a-1"]
        assert await ledger.loop_after("a", sequences[-1]) == []
        assert await ledger.loop_after("nobody", 0) == []


async def test_a_loop_read_after_a_cursor_reports_an_edited_row_as_untrusted(
    owner: Owner,
) -> None:
    async with await open_ledger(owner.url) as ledger:
        await ledger.append_many([loop_receipt(f"a-{i}", "a", i) for i in range(3)])
    owner.drop_triggers()
    (seq,) = owner.run("SELECT sequence FROM {t} WHERE task_id = 'a-1'")[0]
    owner.run("UPDATE {t} SET verdict = 'failed' WHERE sequence = %s", seq)
    async with await open_ledger(owner.url, create=False) as ledger:
        rows = await ledger.loop_after("a", 0)
        assert [(r.task_id, r.trusted) for r in rows] == [
            ("a-0", True),
            ("a-1", False),
            ("a-2", False),
        ]
        page = await LoopActivities(ledger).read_after(StreamRead(loop="a", after=0))
    # Left out of the stream, and the cursor moves past them: never taken as settlements.
    assert [n.task_id for n in page.notes] == ["a-0"]
    assert page.last == max(r.sequence for r in rows) and not page.full


async def test_the_read_after_activity_pages_the_stream_with_each_rows_sequence(
    owner: Owner,
) -> None:
    async with await open_ledger(owner.url) as ledger:
        rows = [loop_receipt(f"a-{i}", "a", i, verdict="failed") for i in range(5)]
        await ledger.append_many(rows)
        loops = LoopActivities(ledger)
        first = await loops.read_after(StreamRead(loop="a", after=0, limit=3))
        assert first.full and [n.task_id for n in first.notes] == ["a-0", "a-1", "a-2"]
        assert [n.sequence for n in first.notes][-1] == first.last
        assert first.last is not None
        rest = await loops.read_after(StreamRead(loop="a", after=first.last, limit=3))
    assert not rest.full and [n.task_id for n in rest.notes] == ["a-3", "a-4"]
    assert all(n.verdict == "failed" and n.settled_at is not None for n in rest.notes)


def test_the_sqlite_stream_read_uses_the_loop_index(tmp_path: Path) -> None:
    from landed.ledger.sqlite.queries import LOOP_AFTER

    path = tmp_path / "plan.db"
    sqlite_at_schema(path, 11)
    with contextlib.closing(sqlite3.connect(path)) as db:
        plan = db.execute(f"EXPLAIN QUERY PLAN {LOOP_AFTER}", ("a", "", 0, 100)).fetchall()
    shown = " | ".join(str(row[-1]) for row in plan)
    assert "USING INDEX landed_receipts_loop" in shown, shown
    assert "SCAN landed_receipts" not in shown.replace("USING INDEX", ""), shown
