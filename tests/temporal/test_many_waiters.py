"""Thousands of agents waiting on their tasks from one process: Temporal's per-namespace limit
on long polls turns some of them away, and each waits on instead of failing."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

from helpers.roles import rows_roles
from helpers.sor import make_rows_db, rows_task
from helpers.wait import until

WAITERS = 2_000
# The dev server's limit shows once the SDK's own retries of a turned-away poll run out:
# measured here 14-19 s after the waiters start, so they wait longer than that.
PAST_THE_SDK_RETRIES_S = 25


async def test_two_thousand_waiters_in_one_process_all_get_the_receipt(
    temporal_dev: str, tmp_path: Path
) -> None:
    db = make_rows_db(tmp_path / "rows.db")
    gate = tmp_path / "go"
    task = rows_task(
        f"waited-on-{uuid.uuid4().hex[:8]}",
        db,
        expect=1,
        batch="w",
        write=1,
        wait_for_file=str(gate),
    )
    task["timeouts"] = {"act_heartbeat": 5}
    async with rows_roles(temporal_dev, tmp_path, db) as roles:
        handle = await roles.client.start(task)
        waiters = [asyncio.ensure_future(handle.result()) for _ in range(WAITERS)]
        await asyncio.sleep(PAST_THE_SDK_RETRIES_S)
        failed = [w for w in waiters if w.done() and w.exception() is not None]
        assert not failed, f"{len(failed)} waiters failed, e.g. {failed[0].exception()!r}"
        gate.touch()
        receipts = await asyncio.wait_for(asyncio.gather(*waiters), 120)
        await until("the task settled", lambda: all(w.done() for w in waiters))
    assert len(receipts) == WAITERS
    assert {r.verdict for r in receipts} == {"verified"}
