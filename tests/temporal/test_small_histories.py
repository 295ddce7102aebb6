"""The small workflows' histories, from one real stack: a task (its preflight), a receipt
looked up through the runner, a fleet paused and resumed, a loop's Schedule fired once (its run
and its tripwire). Each replays in the strict sandbox; with LANDED_RECORD_HISTORIES=1 each is
kept under histories/small/, where tests/workflows/test_versions replays it on every later
change of the code."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import pytest
from helpers.histories import HISTORIES, all_workflows, keep
from helpers.roles import Roles, rows_roles
from helpers.sor import make_rows_db, rows_task
from helpers.wait import until
from temporalio.client import Client, WorkflowHistory
from temporalio.service import RPCError
from temporalio.worker import Replayer

from landed.loops.spec import LoopSpec, schedule_id
from landed.task.checkable import check_queue
from landed.temporal.fleet import flip
from landed.temporal.loops import delete_loop
from landed.temporal.plugin import landed_plugin, strict_workflow_runner

SMALL = HISTORIES / "small"


async def _exercise(roles: Roles, db: Path, tag: str) -> None:
    """Run each small workflow once on the roles' queues."""
    await roles.client.run(rows_task(f"hist-{tag}", db, expect=1, batch=f"h-{tag}", write=1))
    # An id Temporal does not know is looked up in the runner's ledger (LandedReceiptLookup).
    with pytest.raises(RPCError):
        await roles.client.receipt(f"never-{tag}")
    fleet = f"landed-fleet-{tag}"
    for paused in (True, False):
        done = await flip(
            roles.temporal,
            paused=paused,
            by="test",
            fleet_id=fleet,
            runner_queue=roles.queues["runner"],
        )
        assert done.confirmed
    template = rows_task("x", db, expect=1, batch=f"loop-{tag}", write=1)
    del template["task_id"]
    loop = f"hist-loop-{tag}"
    await roles.client.create_loop(
        LoopSpec.model_validate({"name": loop, "every": "PT1H", "task": template}), paused=True
    )
    await roles.temporal.get_schedule_handle(schedule_id(loop)).trigger()
    await until(
        "the loop's run settled", lambda: _closed(roles.temporal, "LandedLoopRun"), timeout=60
    )
    await delete_loop(roles.temporal, loop)


async def _closed(temporal: Client, workflow_type: str) -> bool:
    query = f'WorkflowType = "{workflow_type}" AND ExecutionStatus != "Running"'
    async for _ in temporal.list_workflows(query, limit=1):
        return True
    return False


async def _histories(temporal: Client, queue: str) -> dict[str, WorkflowHistory]:
    """One history of each workflow type that ran on ``queue`` or its role check queue (the
    first seen)."""
    found: dict[str, WorkflowHistory] = {}
    where = f'TaskQueue = "{queue}" OR TaskQueue = "{check_queue(queue)}"'
    async for wf in temporal.list_workflows(where):
        if wf.workflow_type not in found:
            handle = temporal.get_workflow_handle(wf.id, run_id=wf.run_id)
            found[wf.workflow_type] = await handle.fetch_history()
    return found


@pytest.mark.slow
@pytest.mark.timeout(240)
async def test_small_workflows_replay(temporal_dev: str, tmp_path: Path) -> None:
    db = make_rows_db(tmp_path / "rows.db")
    tag = uuid.uuid4().hex[:8]
    async with rows_roles(temporal_dev, tmp_path, db) as roles:
        await _exercise(roles, db, tag)
        await asyncio.sleep(1)  # the visibility store lists what just closed
        histories = await _histories(roles.temporal, roles.queues["runner"])
    expected = {
        "AgentTask",
        "LandedFleet",
        "LandedLoopRun",
        "LandedPreflight",
        "LandedReceiptLookup",
        "LandedTripwire",
    }
    assert expected <= set(histories), sorted(histories)
    replayer = Replayer(
        workflows=all_workflows(),
        plugins=[landed_plugin()],
        workflow_runner=strict_workflow_runner(),
    )
    for name, history in sorted(histories.items()):
        result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
        assert result.replay_failure is None, (name, result.replay_failure)
        if name != "AgentTask":  # AgentTask's histories are kept by its own tests
            keep(history, SMALL / f"{name}.json")
