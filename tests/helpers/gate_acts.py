"""Acts for the governance gates' tests: an act registered as irreversible, and one that
contacts a person (each logs its run in act_log, so a test can tell it never ran)."""

from __future__ import annotations

import asyncio
import sqlite3
from typing import Any

import landed


def _log(ctx: landed.ActContext, what: str) -> None:
    db = ctx.credential("rows-db").removeprefix("sqlite:///")
    with sqlite3.connect(db, timeout=30) as conn:
        conn.execute(
            "insert into act_log (task, attempt, key) values (?, ?, ?)",
            [ctx.task_id, ctx.attempt, what],
        )
        conn.execute(
            "insert into rows (batch, seq, key) values (?, 0, ?)", [ctx.task_id, ctx.task_id]
        )


@landed.act("test.send_irreversible", irreversible="send")
def send_irreversible(spec: dict[str, Any], ctx: landed.ActContext) -> landed.ActReport:
    """Sends one message (a row of batch = task id): registered irreversible."""
    _log(ctx, "sent")
    return landed.ActReport(claimed_status="done", report="Sent the message.")


@landed.act("test.write_then_hang")
async def write_then_hang(spec: dict[str, Any], ctx: landed.ActContext) -> landed.ActReport:
    """Writes one row of batch = task id, then never returns (cancelled with its activity)."""
    _log(ctx, "wrote")
    await asyncio.sleep(3600)
    return landed.ActReport(claimed_status="done", report="unreachable")
