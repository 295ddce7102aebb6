"""An operator resets an AgentTask (`temporal workflow reset`): the new run replays what it
kept, ends with the ledger's receipt when the task settled, and never acts twice."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from helpers.agent_task import agent_roles, held_in_act
from helpers.histories import HISTORIES
from helpers.replay import (
    TIMER_HISTORIES,
    WithOutbound,
    on_local_activity,
    record_history,
    replays_as_recorded,
)
from helpers.roles import Roles
from helpers.sor import Site, act_runs, make_rows_db, row_count, rows_task
from helpers.wait import until
from temporalio import workflow
from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.enums.v1 import EventType
from temporalio.api.workflowservice.v1 import ResetWorkflowExecutionRequest
from temporalio.client import WorkflowHistory
from temporalio.worker import (
    Interceptor,
    StartActivityInput,
    StartLocalActivityInput,
    WorkflowOutboundInterceptor,
)
from temporalio.workflow import ActivityHandle

import landed
from landed.ledger.base import canonical_json
from landed.task.messages import ActInput
from landed.task.names import ACT_ACTIVITY, CLAIM_ACTIVITY


async def _reset_to_last_workflow_task(roles: Roles, wid: str) -> str:
    """What `temporal workflow reset --type LastWorkflowTask` does; the new run's id."""
    handle = roles.temporal.get_workflow_handle(wid)
    history = await handle.fetch_history()
    last = [
        e.event_id
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED
    ][-1]
    desc = await handle.describe()
    reset = await roles.temporal.workflow_service.reset_workflow_execution(
        ResetWorkflowExecutionRequest(
            namespace=roles.temporal.namespace,
            workflow_execution=WorkflowExecution(workflow_id=wid, run_id=desc.run_id),
            reason="an operator reset it to its last workflow task",
            workflow_task_finish_event_id=last,
            request_id=str(uuid.uuid4()),
        )
    )
    return reset.run_id


async def _result_of_run(roles: Roles, wid: str, run_id: str) -> landed.Receipt:
    """The receipt one run of the task ends with, within 60 s (a stuck run fails the test)."""
    handle = roles.temporal.get_workflow_handle(wid, run_id=run_id, result_type=landed.Receipt)
    return await asyncio.wait_for(handle.result(), 60)


async def test_a_run_reset_after_it_settled_ends_with_the_ledgers_receipt(
    temporal_dev: str, tmp_path: Path, db: Path, site: Site
) -> None:
    async with agent_roles(temporal_dev, tmp_path, db, site) as roles:
        first = await roles.client.run(rows_task("reset-done", db, expect=1, batch="rd", write=1))
        new_run = await _reset_to_last_workflow_task(roles, "reset-done")
        again = await _result_of_run(roles, "reset-done", new_run)
        status = await roles.client.status("reset-done")
        async with await roles.ledger() as ledger:
            stored = await ledger.get("reset-done")
    assert act_runs(db, "reset-done") == [(1, "reset-done")]
    assert first.verdict == "verified" and status.settled and status.verdict == "verified"
    assert [canonical_json(r) for r in stored] == [canonical_json(first)] == [canonical_json(again)]


async def test_a_run_reset_after_a_retried_act_replays_its_reads_and_settles(
    temporal_dev: str, tmp_path: Path, db: Path, site: Site
) -> None:
    """Reset to the workflow task after the second act attempt: the new run replays the
    reconciling read signed for the run that asked for it, takes the branch the history took,
    and settles (it does not stick on a workflow task that fails again and again)."""
    async with agent_roles(temporal_dev, tmp_path, db, site) as roles:
        task = rows_task("reset-retry", db, expect=1, batch="rr", write=1)
        task["act"]["input"].update({"fail_attempts": 1, "fail": "before"})
        task["retry"] = {"act_attempts": 2, "verify_backoff": 0.2}
        first = await roles.client.run(task)
        new_run = await _reset_to_last_workflow_task(roles, "reset-retry")
        again = await _result_of_run(roles, "reset-retry", new_run)
    assert act_runs(db, "reset-retry") == [(1, "reset-retry"), (2, "reset-retry")]
    assert first.verdict == "verified" and first.landed is not None and first.landed.attempt == 2
    assert canonical_json(again) == canonical_json(first)


@pytest.mark.parametrize("pre_read", [True, False])
async def test_a_reset_that_schedules_the_act_again_does_not_act_twice(
    temporal_dev: str, tmp_path: Path, db: Path, site: Site, pre_read: bool
) -> None:
    """An operator resets a task to its last workflow task while the act runs: the new run
    schedules the act again, and its claim finds the old run's, so it does not act."""
    gate = tmp_path / "go"
    wid = f"reset-mid-{pre_read}-{uuid.uuid4().hex[:6]}"
    async with agent_roles(temporal_dev, tmp_path, db, site, task_may_skip_pre_read=True) as roles:
        await held_in_act(roles, db, gate, wid, wid, pre_read=pre_read)
        await until("the actor starting the act", lambda: act_runs(db, wid), timeout=30)
        reset_run = await _reset_to_last_workflow_task(roles, wid)
        gate.touch()  # the old run's act finishes its write
        receipt = await _result_of_run(roles, wid, reset_run)
    assert act_runs(db, wid) == [(1, wid)]
    assert row_count(db, wid) == 1
    assert receipt.verdict == "planned" and receipt.landed is not None
    assert any("closed without settling" in f for f in receipt.landed.findings)


@pytest.mark.slow  # two sandboxes replay a recorded history
async def test_the_recorded_reset_whose_claim_and_act_fell_apart_replays_refused() -> None:
    """The race as it ran (recorded under load): the old run's claim marker sat in its first
    workflow task and its act in the second; the reset to the second kept the claim, the reset
    run scheduled the act on it, the actor refused it, and the run read back and settled. The
    committed history replays in both sandboxes: a change to the commands on that path (a claim
    step where the history scheduled the act, another step after the refusal) fails here; what
    the refusal grades to is tested live above."""
    path = HISTORIES / "agent_task_reset_split_refused.json"
    history = WorkflowHistory.from_json("reset-mid-False", json.loads(path.read_text()))
    kinds = [e.event_type for e in history.events]
    marker = kinds.index(EventType.EVENT_TYPE_MARKER_RECORDED)
    act = kinds.index(EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED)
    assert EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED in kinds[marker:act]  # the reset
    refused = next(
        e.activity_task_failed_event_attributes.failure
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED
    )
    assert refused.application_failure_info.type == "ClaimOfAnotherRun"
    await replays_as_recorded([history])


def _act_under_claim_of(run: str) -> Interceptor:
    """Schedules every act as a run reset from ``run`` does when it replays that run's claim
    and Temporal cannot replay the act (the claim's marker and the act sat in different
    workflow tasks, and the reset kept only the first): under ``run``'s claim."""

    class _Outbound(WorkflowOutboundInterceptor):
        def start_activity(self, input: StartActivityInput) -> ActivityHandle[Any]:
            act = input.args[0] if input.activity == ACT_ACTIVITY else None
            if isinstance(act, ActInput):
                input.args = [act.model_copy(update={"claimed_for": run})]
            return super().start_activity(input)

    return WithOutbound(_Outbound)


@pytest.mark.parametrize("pre_read", [True, False])
async def test_an_act_under_the_claim_of_the_run_reset_from_runs_nothing(
    temporal_dev: str, tmp_path: Path, db: Path, site: Site, pre_read: bool
) -> None:
    """DOD-10 across a reset: the act a reset run schedules on the claim it replayed from the
    old run is refused by the actor before it runs; the task reads back and settles as one
    whose other run may have acted (not verified, the run named), never acting twice."""
    task = rows_task(f"claim-of-old-{pre_read}", db, expect=1, batch=f"co{pre_read}", write=1)
    task["pre_read"] = pre_read
    async with agent_roles(
        temporal_dev,
        tmp_path,
        db,
        site,
        interceptors=(_act_under_claim_of("run-reset-from"),),
        task_may_skip_pre_read=True,
    ) as roles:
        receipt = await roles.client.run(task)
        async with await roles.ledger() as ledger:
            stored = await ledger.get(task["task_id"])
    assert act_runs(db, task["task_id"]) == []
    assert row_count(db, f"co{pre_read}") == 0
    assert receipt.verdict == "planned" and receipt.landed is not None
    # The finding names the run whose claim the act carried, not this run or another.
    named = [f for f in receipt.landed.findings if "closed without settling" in f]
    assert named and all("run run-reset-from of this task id" in f for f in named)
    assert [canonical_json(r) for r in stored] == [canonical_json(receipt)]


def _claim_then_timer(step: str) -> Interceptor:
    """A workflow task boundary between the step that claims the first act (the plan, or the
    claim step after a pre-read) and the act: a short timer once it has answered. Its recorded
    claim then sits in an earlier workflow task than the act, as it does when Temporal completes
    that workflow task early (seen with a progress query arriving while the plan ran)."""

    def hook(
        input: StartLocalActivityInput,
        start: Callable[[StartLocalActivityInput], ActivityHandle[Any]],
    ) -> ActivityHandle[Any]:
        handle = start(input)
        if input.activity != step:
            return handle

        async def then_a_timer() -> Any:
            answer = await handle
            await workflow.sleep(timedelta(milliseconds=10))
            return answer

        return asyncio.ensure_future(then_a_timer())  # type: ignore[return-value]

    return on_local_activity(hook)


def _refusals(history: WorkflowHistory) -> list[str]:
    """The run each act refusal of ``history`` names: the actor's word that the act was
    scheduled under another run's claim and ran nothing."""
    return [
        e.activity_task_failed_event_attributes.failure.message
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED
        and e.activity_task_failed_event_attributes.failure.application_failure_info.type
        == "ClaimOfAnotherRun"
    ]


def _claim_and_act_apart(history: WorkflowHistory) -> int:
    """How many workflow tasks completed between the last claim before the act and the act."""
    kinds = [e.event_type for e in history.events]
    act = len(kinds) - 1 - kinds[::-1].index(EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED)
    marker = max(i for i in range(act) if kinds[i] == EventType.EVENT_TYPE_MARKER_RECORDED)
    return kinds[marker:act].count(EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED)


async def _split_and_reset(
    roles: Roles, db: Path, gate: Path, wid: str, until_acted: int
) -> tuple[str, str, landed.Receipt, WorkflowHistory]:
    """Wait for the act's ``until_acted``-th run, check its claim and act sit in different
    workflow tasks, reset to the last one, let the old act finish: the old run's id, the reset
    run's, the reset run's receipt and history."""
    await until(
        f"the actor starting act attempt {until_acted}",
        lambda: len(act_runs(db, wid)) == until_acted,
        timeout=45,
    )
    handle = roles.temporal.get_workflow_handle(wid)
    assert _claim_and_act_apart(await handle.fetch_history()) >= 1  # the setup holds
    old_run = (await handle.describe()).run_id
    reset_run = await _reset_to_last_workflow_task(roles, wid)
    gate.touch()  # the old run's act finishes its write
    receipt = await _result_of_run(roles, wid, reset_run)
    history = await roles.temporal.get_workflow_handle(wid, run_id=reset_run).fetch_history()
    return old_run, reset_run, receipt, history


def _settled_naming(receipt: landed.Receipt, run: str) -> None:
    """Not done: the receipt says run ``run`` was about to act and may have."""
    assert receipt.verdict == "planned" and receipt.landed is not None
    named = [f for f in receipt.landed.findings if "closed without settling" in f]
    assert named and all(f"run {run} of this task id" in f for f in named), named


@pytest.mark.parametrize("pre_read", [True, False])
async def test_a_reset_keeping_the_claim_but_not_the_act_acts_on_nothing(
    temporal_dev: str, tmp_path: Path, db: Path, site: Site, pre_read: bool
) -> None:
    """The first act was claimed in an earlier workflow task than the one that scheduled it; an
    operator resets to that later one while the act runs. The new run holds the old run's claim
    from history and schedules the act under it, as recorded; the actor refuses it before
    anything runs, and the task settles naming the old run. No patch marker decides this."""
    gate = tmp_path / "go"
    # Its own id each run: a rerun on the same server must not meet the first try's task.
    wid = f"reset-split-{pre_read}-{uuid.uuid4().hex[:6]}"
    async with agent_roles(
        temporal_dev,
        tmp_path,
        db,
        site,
        interceptors=(_claim_then_timer(CLAIM_ACTIVITY),),
        task_may_skip_pre_read=True,
    ) as roles:
        await held_in_act(roles, db, gate, wid, wid, pre_read=pre_read)
        old_run, reset_run, receipt, history = await _split_and_reset(roles, db, gate, wid, 1)
    assert act_runs(db, wid) == [(1, wid)]
    assert row_count(db, wid) == 1
    _settled_naming(receipt, old_run)
    refused = _refusals(history)
    assert len(refused) == 1 and f"ledger claim of run {old_run}" in refused[0]
    assert f"not of run {reset_run}" in refused[0]
    name = f"reset_split_{'pre_read' if pre_read else 'lean'}"
    record_history(name, history, TIMER_HISTORIES)
    committed = WorkflowHistory.from_json(
        name, json.loads((TIMER_HISTORIES / f"agent_task_{name}.json").read_text())
    )
    assert len(_refusals(committed)) == 1
    await replays_as_recorded([history, committed], _claim_then_timer(CLAIM_ACTIVITY))


async def test_a_reset_keeping_a_second_attempts_claim_but_not_its_act_acts_on_nothing(
    temporal_dev: str, tmp_path: Path, db: Path, site: Site
) -> None:
    """The same for the act's second attempt (the first raised before writing, the read-back
    found nothing, the act runs again): the reset run replays the first attempt as the old run
    ran it, and the actor refuses the second, scheduled under the old run's claim."""
    gate = tmp_path / "go"
    wid = f"reset-split-second-{uuid.uuid4().hex[:6]}"
    task = rows_task(
        wid,
        db,
        expect=1,
        batch=wid,
        write=1,
        fail="before",
        fail_attempts=1,
        wait_for_file=str(gate),
    )
    task["pre_read"] = False
    async with agent_roles(
        temporal_dev,
        tmp_path,
        db,
        site,
        interceptors=(_claim_then_timer(CLAIM_ACTIVITY),),
        task_may_skip_pre_read=True,
    ) as roles:
        await roles.client.start(task)
        old_run, _, receipt, history = await _split_and_reset(roles, db, gate, wid, 2)
    assert act_runs(db, wid) == [(1, wid), (2, wid)]
    assert row_count(db, wid) == 1
    _settled_naming(receipt, old_run)
    (refused,) = _refusals(history)
    assert f"act attempt 2 of task {wid!r}" in refused
    record_history("reset_split_second", history, TIMER_HISTORIES)
    path = TIMER_HISTORIES / "agent_task_reset_split_second.json"
    committed = WorkflowHistory.from_json(wid, json.loads(path.read_text()))
    assert len(_refusals(committed)) == 1
    await replays_as_recorded([history, committed], _claim_then_timer(CLAIM_ACTIVITY))


async def test_a_reset_to_before_a_failed_attempt_does_not_settle_the_task_twice(
    temporal_dev: str, tmp_path: Path, db: Path, site: Site
) -> None:
    """Attempt 1 failed before writing, attempt 2 wrote and settled. An operator resets to the
    workflow task that saw attempt 1 fail: the new run's read-back finds the row attempt 2
    wrote, and ends with attempt 2's receipt instead of settling attempt 1 beside it."""
    make_rows_db(db)
    async with agent_roles(temporal_dev, tmp_path, db, site) as roles:
        task = rows_task("reset-rec", db, expect=1, batch="rr2", write=1)
        task["act"]["input"].update({"fail_attempts": 1, "fail": "before"})
        task["retry"] = {"act_attempts": 2, "verify_backoff": 0.2}
        first = await roles.client.run(task)
        handle = roles.temporal.get_workflow_handle("reset-rec")
        events = (await handle.fetch_history()).events
        failed = next(
            i
            for i, e in enumerate(events)
            if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED
        )
        after_failure = next(
            e.event_id
            for e in events[failed:]
            if e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED
        )
        desc = await handle.describe()
        reset = await roles.temporal.workflow_service.reset_workflow_execution(
            ResetWorkflowExecutionRequest(
                namespace=roles.temporal.namespace,
                workflow_execution=WorkflowExecution(workflow_id="reset-rec", run_id=desc.run_id),
                reason="an operator reset to the task that saw attempt 1 fail",
                workflow_task_finish_event_id=after_failure,
                request_id=str(uuid.uuid4()),
            )
        )
        again = await _result_of_run(roles, "reset-rec", reset.run_id)
        async with await roles.ledger() as ledger:
            stored = await ledger.get("reset-rec")
    assert first.verdict == "verified" and first.landed is not None and first.landed.attempt == 2
    assert [canonical_json(r) for r in stored] == [canonical_json(first)]
    assert canonical_json(again) == canonical_json(first)
    assert act_runs(db, "reset-rec") == [(1, "reset-rec"), (2, "reset-rec")]
