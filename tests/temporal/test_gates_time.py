"""The approval gate's deadline on Temporal's time-skipping server: an approval nobody gives
settles held by its deadline (GOV-7), hours of it skipped.

The time cap (GOV-4) is tested on the dev server with a 3-second cap (test_approval.py): the
time-skipping server does not move its clock through an activity's timeout (an act in flight,
or a read no verifier takes); waiting for such a task's result there ends in an HTTP/2 error."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from helpers.roles import run_roles
from helpers.sor import act_runs, make_rows_db, row_count, rows_task
from temporalio.client import WorkflowHistory
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Replayer

from landed.receipts.model import Receipt
from landed.temporal.approvals import ApprovalRefused
from landed.temporal.plugin import landed_plugin

pytestmark = pytest.mark.timeout(180)


def _roles(env: WorkflowEnvironment, tmp_path: Path, db: Path, **runner: Any) -> Any:
    return run_roles(
        env.client.service_client.config.target_host,
        tmp_path,
        credentials={"rows-db": f"sqlite:///{db}"},
        sources={"rows-db": {"url": f"sqlite:///{db}"}},
        acts=("helpers.acts", "helpers.gate_acts"),
        runner=runner or None,
    )


async def _result(env: WorkflowEnvironment, task_id: str, skip: timedelta) -> Receipt:
    """The task's receipt once ``skip`` has passed on the server's clock. The test server's
    result long-poll expires on that clock, so a single wait across hours returns without the
    close event: the time is skipped first (env.sleep), then the result is awaited."""
    await env.sleep(skip + timedelta(seconds=1))
    handle = env.client.get_workflow_handle(task_id, result_type=Receipt)
    got = await handle.result()
    return got if isinstance(got, Receipt) else Receipt.model_validate(got)


async def _replay(env: WorkflowEnvironment, task_id: str) -> None:
    from landed.workflows.agent_task import AgentTask

    history: WorkflowHistory = await env.client.get_workflow_handle(task_id).fetch_history()
    await Replayer(workflows=[AgentTask], plugins=[landed_plugin()]).replay_workflow(history)


async def test_an_approval_nobody_gives_settles_held_by_its_deadline(
    temporal_time_skipping: WorkflowEnvironment, tmp_path: Path
) -> None:
    """Six hours pass without a decision: the task settles held (not failed), nothing acted,
    and an approval that comes after the deadline is refused."""
    env = temporal_time_skipping
    db = make_rows_db(tmp_path / "rows.db")
    task = {**rows_task("gate-late", db, expect=1, batch="gl", write=1), "irreversible": "publish"}
    task["approval_timeout"] = "PT6H"
    async with _roles(env, tmp_path, db) as roles:
        handle = await roles.client.start(task)
        raw = await _result(env, handle.task_id, timedelta(hours=6))
        with pytest.raises(ApprovalRefused, match="no longer running"):
            await handle.approve("nia")
        await _replay(env, "gate-late")
    receipt = raw
    assert receipt.verdict == "held", receipt
    assert "waited 6:00:00" in (receipt.report or "")
    assert act_runs(db, "gate-late") == [] and row_count(db, "gl") == 0
    gate = receipt.landed.model_dump()["approval"] if receipt.landed else {}
    assert gate["decision"] == "timed-out", gate
