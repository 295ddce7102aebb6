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


@landed.act("test.approve_other")
async def approve_other(spec: dict[str, Any], ctx: landed.ActContext) -> landed.ActReport:
    """The adversary: act code in the actor process that uses a Temporal connection of its own
    to approve a held task as "dana" (unsigned, or with a signature it forged), and reports
    what Temporal answered."""
    from datetime import UTC, datetime

    from temporalio.client import WorkflowUpdateFailedError

    from landed.governance.approval import sign_decision
    from landed.governance.gates import Approve, GateView
    from landed.signing import KeyPair
    from landed.temporal.plugin import connect

    client = await connect(identity=spec["identity"], address=spec["address"])
    handle = client.get_workflow_handle(spec["target"])
    signed = None
    if spec["mode"] == "forged":
        # Its own key, signing exactly what a real approver would, and claiming dana's key id.
        mine = KeyPair.generate()
        desc = await handle.describe()
        honest = sign_decision(
            mine,
            task_id=spec["target"],
            run_id=desc.run_id,
            spec_sha256=spec["digest"],
            decision="approve",
            by="dana",
            at=datetime.now(UTC),
            note=None,
        )
        signed = honest.model_copy(update={"key_id": spec["dana_key_id"]})
    try:
        await handle.execute_update(
            "approve", Approve(by="dana", signed=signed), result_type=GateView
        )
    except WorkflowUpdateFailedError as err:
        answer = f"refused: {getattr(err.cause, 'message', err.cause)}"
    else:
        answer = "accepted"
    return landed.ActReport(claimed_status="done", report=answer)
