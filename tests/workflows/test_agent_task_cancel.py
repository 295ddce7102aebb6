"""A cancelled AgentTask: before, during or after its act, it reads back and settles one
receipt, and never mistakes its own claim for a lost run's."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from helpers.agent_task import agent_roles, at_step
from helpers.relay import relayed
from helpers.replay import record_history
from helpers.sor import Site, act_runs, make_rows_db, row_count, rows_task
from helpers.wait import until
from temporalio import activity
from temporalio.worker import ActivityInboundInterceptor, ExecuteActivityInput, Interceptor

import landed
from landed.ledger.base import canonical_json
from landed.ledger.factory import open_ledger
from landed.task.messages import spec_digest
from landed.task.names import PLAN_ACTIVITY


async def test_a_task_cancelled_mid_act_reads_back_and_settles_once(
    temporal_dev: str, tmp_path: Path, db: Path, site: Site
) -> None:
    """Cancelled while its act runs: the act is not run again, the workflow waits for the
    actor to stop (its thread finishes the write), reads back and settles one receipt."""
    gate = tmp_path / "go"
    task = rows_task("cancel-act", db, expect=2, batch="ca", write=2, wait_for_file=str(gate))
    task["timeouts"] = {"act_heartbeat": 2.0}  # the cancel reaches the actor within ~2 s
    async with agent_roles(temporal_dev, tmp_path, db, site) as roles:
        handle = await roles.client.start(task)
        # The actor has started the act (it logs itself, then waits).
        await until("the actor starting the act", lambda: act_runs(db, "cancel-act"), timeout=20)
        await roles.temporal.get_workflow_handle("cancel-act").cancel()
        await asyncio.sleep(3.0)
        gate.touch()  # the cancelled act's thread still writes: the read-back must see it
        receipt = await handle.result()
        async with await roles.ledger() as ledger:
            stored = await ledger.get("cancel-act")
        status = await roles.client.status("cancel-act")
        history = await roles.temporal.get_workflow_handle("cancel-act").fetch_history()
    record_history("cancel", history)  # replayed with the committed ones below
    assert act_runs(db, "cancel-act") == [(1, "cancel-act")]
    assert row_count(db, "ca") == 2
    assert receipt.verdict == "verified", receipt.landed
    assert receipt.landed is not None
    assert any("cancelled while it ran" in f for f in receipt.landed.findings)
    assert [canonical_json(r) for r in stored] == [canonical_json(receipt)]
    assert status.settled and status.execution == "COMPLETED"


async def test_a_task_cancelled_in_its_pre_read_still_learns_of_a_lost_runs_act(
    temporal_dev: str, tmp_path: Path, db: Path
) -> None:
    """The ledger holds another run's claim on this task id (a run that was about to act and
    closed unsettled, then forgotten by Temporal). This run is cancelled in its pre-read, before
    its own claim step: its receipt says the other run may have acted (DOD-10), not that
    nothing was done, and its read-back cannot make it verified."""
    make_rows_db(db)
    task = rows_task("cancel-lost", db, expect=1, batch="cl", write=1)
    async with relayed(temporal_dev, tmp_path, db, "slow-before") as roles:
        async with await open_ledger(roles.ledger_url) as ledger:  # what the lost run left
            digest = spec_digest(landed.TaskSpec.model_validate(task))
            await ledger.claim("cancel-lost", "lost-run", 1, digest)
        handle = await roles.client.start(task)
        await at_step(handle, "pre-read")
        await roles.temporal.get_workflow_handle("cancel-lost").cancel()
        receipt = await asyncio.wait_for(handle.result(), 60)
        async with await roles.ledger() as ledger:
            stored = await ledger.get("cancel-lost")
    assert act_runs(db, "cancel-lost") == []
    assert receipt.claimed_status != "superseded", receipt
    assert receipt.verdict == "planned" and receipt.landed is not None
    findings = " ".join(receipt.landed.findings)
    assert "run lost-run of this task id was about to act" in findings, findings
    assert [canonical_json(r) for r in stored] == [canonical_json(receipt)]


async def test_a_task_cancelled_before_its_act_settles_superseded(
    temporal_dev: str, tmp_path: Path, db: Path
) -> None:
    """Cancelled during its pre-read: the act never runs, and the task still settles, as
    superseded (replaced before it ran), with nothing claimed done."""
    make_rows_db(db)
    async with relayed(temporal_dev, tmp_path, db, "slow-before") as roles:
        handle = await roles.client.start(
            rows_task("cancel-early", db, expect=2, batch="ce", write=2)
        )
        await at_step(handle, "pre-read")
        await roles.temporal.get_workflow_handle("cancel-early").cancel()
        receipt = await handle.result()
        async with await roles.ledger() as ledger:
            stored = await ledger.get("cancel-early")
        status = await roles.client.status("cancel-early")
    assert act_runs(db, "cancel-early") == []
    assert receipt.claimed_status == "superseded"
    assert receipt.verdict not in ("verified", "reconciled")
    assert receipt.landed is not None
    assert any("cancelled while it ran" in f for f in receipt.landed.findings)
    assert status.settled and status.execution == "COMPLETED"
    assert [canonical_json(r) for r in stored] == [canonical_json(receipt)]


class _PlanReportedLate(Interceptor):
    """The runner reports its plan 20 s after the plan's ledger transaction committed."""

    def __init__(self) -> None:
        self.committed = asyncio.Event()

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        outer = self

        class _Late(ActivityInboundInterceptor):
            async def execute_activity(self, input: ExecuteActivityInput) -> Any:
                result = await super().execute_activity(input)
                if activity.info().activity_type == PLAN_ACTIVITY and not outer.committed.is_set():
                    outer.committed.set()
                    await asyncio.sleep(20)
                return result

        return _Late(next)


async def test_a_run_cancelled_while_its_plan_claims_does_not_take_its_claim_for_anothers(
    temporal_dev: str, tmp_path: Path, db: Path, site: Site
) -> None:
    """The plan recorded this run's claim; the cancel arrives while the plan is still in
    flight. The cancel's read-only plan must not report this run's own claim as a lost run's."""
    make_rows_db(db)
    late = _PlanReportedLate()
    task = rows_task("cancel-plan", db, expect=1, batch="cp", write=1)
    task["pre_read"] = False
    async with agent_roles(
        temporal_dev, tmp_path, db, site, interceptors=(late,), task_may_skip_pre_read=True
    ) as roles:
        handle = await roles.client.start(task)
        await asyncio.wait_for(late.committed.wait(), 20)
        await asyncio.sleep(9)  # past the workflow task's heartbeat: the plan is still in flight
        await roles.temporal.get_workflow_handle("cancel-plan").cancel()
        receipt = await asyncio.wait_for(handle.result(), 60)
    assert act_runs(db, "cancel-plan") == []
    assert receipt.landed is not None
    assert not any("closed without settling" in f for f in receipt.landed.findings), receipt.landed
