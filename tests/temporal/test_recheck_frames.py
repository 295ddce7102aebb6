"""The recheck reads the frames again, on the real dev server: a frame changed after the task
settled verified (another batch deleted before the horizon) is a reversal, not a confirmation."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from helpers.histories import HISTORIES as ALL_HISTORIES
from helpers.histories import keep
from helpers.roles import rows_roles
from helpers.sor import make_rows_db, rows_task
from helpers.wait import until
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer

from landed.ledger.base import Ledger
from landed.receipts.model import Receipt
from landed.task.durability import recheck_workflow_id
from landed.temporal.plugin import landed_plugin
from landed.workflows.agent_task import AgentTask
from landed.workflows.recheck import Recheck

HISTORIES = ALL_HISTORIES / "recheck_frames"


def _record(name: str, history: WorkflowHistory) -> None:
    """Kept as a committed fixture with LANDED_RECORD_HISTORIES=1 (helpers.histories.keep): a
    later change to these reads must still replay it."""
    keep(history, HISTORIES / f"{name}.json")


async def _replay(histories: list[WorkflowHistory]) -> None:
    replayer = Replayer(workflows=[AgentTask, Recheck], plugins=[landed_plugin()])
    for history in histories:
        result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
        assert result.replay_failure is None, (history.workflow_id, result.replay_failure)


async def test_recorded_recheck_histories_replay() -> None:
    """Rechecks of framed tasks recorded before the recheck read frames (one whose frame was
    deleted after it settled, then written `confirmed`; one whose frame held) still replay."""
    paths = sorted(HISTORIES.glob("*.json"))
    assert len(paths) == 2, paths
    await _replay([WorkflowHistory.from_json(p.stem, json.loads(p.read_text())) for p in paths])


def _framed(task_id: str, db: Path) -> dict[str, Any]:
    """3 rows into batch "<task>-new", batch "<task>-keep" (30 rows) declared as a frame, and a
    recheck 2 s after the task settles."""
    task = rows_task(task_id, db, expect=3, batch=f"{task_id}-new", write=3)
    task["frames"] = [
        {
            "action": "batch keep stays as it was",
            "probe": {
                "kind": "record",
                "source": "rows-db",
                "query": "select count(*) from rows where batch = ?",
                "params": [f"{task_id}-keep"],
            },
            "expect": {"type": "count", "value": 30},
        }
    ]
    task["durability"] = {"recheck_after": 2}
    return task


async def _rechecked(ledger: Ledger, task_id: str) -> list[Receipt] | None:
    rows = await ledger.get(task_id)
    return rows if len(rows) >= 2 else None


def _lifecycle(receipt: Receipt) -> str | None:
    return getattr(receipt.landed, "lifecycle", None) if receipt.landed else None


async def test_a_frame_changed_after_settling_is_reversed_by_the_recheck(
    temporal_dev: str, tmp_path: Path
) -> None:
    """Two framed tasks settle verified (their own rows landed, their frames read the same
    before and after the act). One's frame batch is deleted right after it settled, well
    before its horizon: its recheck appends `reversed` with a FRAME finding although its plan
    step still reads pass. The other's frame holds: its recheck appends `confirmed`."""
    db = make_rows_db(tmp_path / "rows.db", preexisting=30, batch="rf-cut-keep")
    make_rows_db(db, preexisting=30, batch="rf-kept-keep")
    async with rows_roles(temporal_dev, tmp_path, db) as roles:
        cut = await roles.client.run(_framed("rf-cut", db))
        with sqlite3.connect(db) as conn:  # as soon as it settled: well before its horizon
            conn.execute("delete from rows where batch = 'rf-cut-keep'")
        kept = await roles.client.run(_framed("rf-kept", db))
        assert (cut.verdict, kept.verdict) == ("verified", "verified"), (cut.landed, kept.landed)
        ledger = await roles.ledger()
        try:
            rows = {
                t: await until(f"{t}'s recheck row", lambda t=t: _rechecked(ledger, t), timeout=60)
                for t in ("rf-cut", "rf-kept")
            }
        finally:
            await ledger.close()
        histories = [
            await roles.temporal.get_workflow_handle(recheck_workflow_id(t)).fetch_history()
            for t in ("rf-cut", "rf-kept")
        ]
    for name, history in zip(("cut", "kept"), histories, strict=True):
        _record(name, history)
        # Each recheck read its plan step, then its frame: two verify activities.
        scheduled = [
            e for e in history.events if e.HasField("activity_task_scheduled_event_attributes")
        ]
        assert len(scheduled) == 2, (name, [e.event_type for e in history.events])
    settled, reversal = rows["rf-cut"][:2]
    assert _lifecycle(settled) == "verified" and settled.verdict == "verified"
    assert _lifecycle(reversal) == "reversed" and reversal.verdict == "reversed"
    assert reversal.landed is not None
    assert reversal.landed.meets_bar is False  # type: ignore[attr-defined]
    # The plan's step still holds: only the frame shows the outcome did not.
    assert [p.result for p in reversal.proof if p.kind == "record"] == ["pass"]
    found = [f for f in reversal.landed.findings if f.startswith("FRAME:")]
    assert len(found) == 1 and "'batch keep stays as it was'" in found[0], found
    assert "changed" in found[0] and "recheck" in found[0], found
    assert reversal.landed.frames == [  # type: ignore[attr-defined]
        {"action": "batch keep stays as it was", "held": False}
    ]
    confirmed = rows["rf-kept"][1]
    assert _lifecycle(confirmed) == "confirmed" and confirmed.verdict == "verified"
    assert confirmed.landed is not None
    assert not [f for f in confirmed.landed.findings if f.startswith("FRAME:")]
    assert confirmed.landed.frames == [  # type: ignore[attr-defined]
        {"action": "batch keep stays as it was", "held": True}
    ]
    await _replay(histories)
