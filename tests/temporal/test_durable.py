"""Verdicts that hold, on the real dev server: the confirmation read, late landing, the recheck
that appends a reversal, and their histories replayed."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from helpers.histories import HISTORIES as ALL_HISTORIES
from helpers.histories import keep
from helpers.roles import rows_roles
from helpers.sor import make_rows_db, row_count, rows_task
from helpers.wait import until
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer

from landed.ledger.base import Ledger
from landed.receipts.model import Receipt
from landed.task.durability import recheck_workflow_id
from landed.task.messages import ReceiptQuery
from landed.temporal.plugin import landed_plugin
from landed.workflows.agent_task import AgentTask
from landed.workflows.recheck import Recheck


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return make_rows_db(tmp_path / "rows.db")


def _durability(receipt: Receipt) -> dict[str, Any]:
    assert receipt.landed is not None
    record = getattr(receipt.landed, "durability", None)
    assert isinstance(record, dict), receipt.landed
    return record


def _lifecycle(receipt: Receipt) -> str | None:
    return getattr(receipt.landed, "lifecycle", None) if receipt.landed else None


HISTORIES = ALL_HISTORIES / "durable"


def _record(name: str, history: WorkflowHistory) -> None:
    """Kept as a committed fixture with LANDED_RECORD_HISTORIES=1 (helpers.histories.keep): a
    later change to these reads must still replay it."""
    keep(history, HISTORIES / f"{name}.json")


async def test_recorded_durability_histories_replay() -> None:
    """The committed histories (a confirmation read that found the rows gone, a late landing
    read again in its window, a recheck that appended a reversal) replay as recorded."""
    paths = sorted(HISTORIES.glob("*.json"))
    assert len(paths) == 3, paths
    await _replay([WorkflowHistory.from_json(p.stem, json.loads(p.read_text())) for p in paths])


async def _replay(histories: list[WorkflowHistory]) -> None:
    replayer = Replayer(workflows=[AgentTask, Recheck], plugins=[landed_plugin()])
    for history in histories:
        result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
        assert result.replay_failure is None, (history.workflow_id, result.replay_failure)


async def test_rows_undone_right_after_the_act_are_not_done(
    temporal_dev: str, tmp_path: Path, db: Path
) -> None:
    """The act inserts 45 rows and a thread of its own deletes them soon after it returns: the
    first read-back passes, the confirmation read after the quiet interval finds none: not
    done. A task whose rows stay is verified, confirmed by the same second read."""
    # Wider margins than the 0.3 s seen in the field, so a loaded machine cannot make the first
    # read late enough to find the rows already gone: undone 1.5 s after the act, read again 3 s
    # after the read-back that passed.
    undone = {
        **rows_task("dur-undone", db, expect=45, batch="du", write=45, undo_after_s=1.5),
        "durability": {"confirm_after": "PT3S"},
    }
    kept = rows_task("dur-kept", db, expect=45, batch="dk", write=45)
    async with rows_roles(temporal_dev, tmp_path, db) as roles:
        receipt, control = await asyncio.gather(roles.client.run(undone), roles.client.run(kept))
        histories = [
            await roles.temporal.get_workflow_handle(t).fetch_history()
            for t in ("dur-undone", "dur-kept")
        ]
    assert row_count(db, "du") == 0
    assert receipt.verdict != "verified"
    assert receipt.landed is not None and any(
        f.startswith("unconfirmed: plan step #1") for f in getattr(receipt.landed, "findings", [])
    )
    assert _durability(receipt)["confirmed"] is False
    assert _lifecycle(receipt) == "verified"
    assert control.verdict == "verified" and _durability(control)["confirmed"] is True
    assert _durability(control)["confirm_after_s"] == 1.0
    _record("undone", histories[0])
    await _replay(histories)


async def test_a_late_landing_settles_verified_within_its_window_and_empty_without_one(
    temporal_dev: str, tmp_path: Path, db: Path
) -> None:
    """45 rows become visible 2 s after the act returns. With a settle window of 6 s the
    read-back is read again until they are there (and the verdict says how long it waited);
    without one, the first reading settles: empty."""
    late = rows_task("dur-late", db, expect=45, batch="dl", write=45, land_after_s=2)
    late["proof_plan"][0]["settle_window"] = 6
    early = rows_task("dur-early", db, expect=45, batch="de", write=45, land_after_s=2)
    async with rows_roles(temporal_dev, tmp_path, db) as roles:
        handle = await roles.client.start(late)
        # Not settled for at least the 2 s the rows take to land: its receipt is pending.
        query = roles.temporal.get_workflow_handle("dur-late")
        pending = await query.query("receipt", result_type=ReceiptQuery)
        assert not pending.settled and _lifecycle(pending.receipt) == "pending"
        windowed, unwindowed = await asyncio.gather(handle.result(), roles.client.run(early))
        history = await roles.temporal.get_workflow_handle("dur-late").fetch_history()
    assert windowed.verdict == "verified", windowed.landed
    assert 1.5 <= _durability(windowed)["settle_waited_s"] < 6
    assert _durability(windowed)["confirmed"] is True
    assert unwindowed.verdict != "verified"
    assert [p.result for p in unwindowed.proof if p.kind == "record"] == ["empty"]
    assert _durability(unwindowed)["settle_waited_s"] == 0
    _record("late", history)
    await _replay([history])


async def _stages(ledger: Ledger, task_id: str) -> list[tuple[str | None, str | None]]:
    return [(r.verdict, _lifecycle(r)) for r in await ledger.get(task_id)]


async def test_a_reversal_after_settling_is_appended_by_the_recheck(
    temporal_dev: str, tmp_path: Path, db: Path
) -> None:
    """Two tasks settle verified with a recheck 2 s later. One's rows are deleted after it
    settled: its recheck appends a `reversed` row beside the settled one. The other's hold:
    its recheck appends `confirmed`."""
    gone = rows_task("dur-gone", db, expect=3, batch="dg", write=3)
    held = rows_task("dur-held", db, expect=3, batch="dh", write=3)
    for task in (gone, held):
        task["durability"] = {"recheck_after": 2}
    async with rows_roles(temporal_dev, tmp_path, db) as roles:
        first = await roles.client.run(gone)
        with sqlite3.connect(db) as conn:  # as soon as it settled: well before its horizon
            conn.execute("delete from rows where batch = 'dg'")
        second = await roles.client.run(held)
        assert (first.verdict, second.verdict) == ("verified", "verified")
        ledger = await roles.ledger()
        try:
            for task_id, stage in (("dur-gone", "reversed"), ("dur-held", "confirmed")):
                rows = await until(
                    f"{task_id}'s recheck row",
                    lambda t=task_id: _two(ledger, t),
                    timeout=60,
                )
                assert rows[0] == ("verified", "verified")
                assert rows[1][1] == stage
            reversal = await ledger.latest("dur-gone")
            assert reversal is not None and reversal.verdict == "reversed"
            assert [p.result for p in reversal.proof if p.kind == "record"] == ["empty"]
        finally:
            await ledger.close()
        histories = [
            await roles.temporal.get_workflow_handle(recheck_workflow_id(t)).fetch_history()
            for t in ("dur-gone", "dur-held")
        ]
    _record("recheck_reversed", histories[0])
    await _replay(histories)


async def _two(ledger: Ledger, task_id: str) -> list[tuple[str | None, str | None]] | None:
    rows = await _stages(ledger, task_id)
    return rows if len(rows) >= 2 else None
