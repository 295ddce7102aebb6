"""Loops from agent code and the CLI: a Temporal Schedule per loop whose action is a LoopRun,
and the loop's Tripwire started with it (GOV-9)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from temporalio.client import (
    Client,
    Schedule,
    ScheduleActionStartWorkflow,
    ScheduleAlreadyRunningError,
    ScheduleIntervalSpec,
    ScheduleOverlapPolicy,
    SchedulePolicy,
    ScheduleSpec,
    ScheduleState,
    WorkflowExecutionStatus,
)
from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

from landed.loops.spec import LoopSpec, schedule_id, tripwire_id
from landed.loops.tripwire import TripwireInput, TripwireState
from landed.task.names import (
    LOOP_RUN_WORKFLOW,
    REPAIR_DONE_SIGNAL,
    STATE_QUERY,
    STOP_SIGNAL,
    TRIPWIRE_WORKFLOW,
)

__all__ = [
    "LoopExists",
    "UnknownLoop",
    "create_loop",
    "loop_state",
    "loop_states",
    "repair_done",
    "start_tripwire",
]


class LoopExists(ValueError):
    """A loop of this name is declared already."""


class UnknownLoop(LookupError):
    """No loop of this name is declared (no Schedule, no running tripwire)."""


def _exists(name: str) -> LoopExists:
    return LoopExists(
        f"loop {name!r} is declared already; change it with `landed loop delete {name}` and "
        "create it again, or give the new loop another name"
    )


def _unknown(name: str) -> UnknownLoop:
    return UnknownLoop(
        f"no loop named {name!r} is running (no tripwire-{name}); declare it first with "
        f"`landed loop create {name} --every 15m --task template.json`, or see `landed loops`"
    )


async def start_tripwire(temporal: Client, task_queue: str, spec: LoopSpec) -> None:
    """Start the loop's tripwire with its declaration. A tripwire that a loop's ad-hoc tasks
    started (default rules) gives way to the declared one; a declared one is a duplicate."""
    inp = TripwireInput(loop=spec.name, spec=spec)
    try:
        await temporal.start_workflow(
            TRIPWIRE_WORKFLOW,
            inp,
            id=tripwire_id(spec.name),
            task_queue=task_queue,
            id_conflict_policy=WorkflowIDConflictPolicy.FAIL,
            id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
        )
        return
    except WorkflowAlreadyStartedError:
        state = await loop_state(temporal, spec.name)
        if state.declared:
            raise _exists(spec.name) from None
    # The ad-hoc tripwire is replaced: the declared one catches up from the ledger.
    await temporal.start_workflow(
        TRIPWIRE_WORKFLOW,
        inp,
        id=tripwire_id(spec.name),
        task_queue=task_queue,
        id_conflict_policy=WorkflowIDConflictPolicy.TERMINATE_EXISTING,
    )


async def create_loop(
    temporal: Client,
    task_queue: str,
    spec: LoopSpec,
    *,
    schedule: bool = True,
    paused: bool = False,
) -> None:
    """Declare a loop: its Schedule (unless ``schedule`` is False: its tasks are started by
    agents with ``loop`` set) and its tripwire. LoopExists when it is declared already."""
    if schedule:
        action = ScheduleActionStartWorkflow(
            LOOP_RUN_WORKFLOW,
            spec,
            # Temporal appends the scheduled time to this id: one LoopRun per scheduled time.
            id=f"looprun-{spec.name}",
            task_queue=task_queue,
        )
        try:
            await temporal.create_schedule(
                schedule_id(spec.name),
                Schedule(
                    action=action,
                    spec=ScheduleSpec(intervals=[ScheduleIntervalSpec(every=spec.every)]),
                    # Runs missed while the server was down are caught up (a day at most). A
                    # run waits for its task (LoopRun), so one due while a task still runs
                    # waits its turn; more due meanwhile fold into that one, which reads the
                    # state as it is then.
                    policy=SchedulePolicy(
                        overlap=ScheduleOverlapPolicy.BUFFER_ONE,
                        catchup_window=timedelta(days=1),
                    ),
                    state=ScheduleState(note=f"landed loop {spec.name}", paused=paused),
                ),
                memo={"landed_loop": spec.model_dump(mode="json")},
            )
        except ScheduleAlreadyRunningError:
            raise _exists(spec.name) from None
    await start_tripwire(temporal, task_queue, spec)


async def loop_state(temporal: Client, name: str) -> TripwireState:
    """The loop's tripwire state (its query); UnknownLoop when no tripwire runs for it."""
    handle = temporal.get_workflow_handle(tripwire_id(name))
    try:
        desc = await handle.describe()
        if desc.status != WorkflowExecutionStatus.RUNNING:
            raise _unknown(name)
        state: TripwireState = await handle.query(STATE_QUERY, result_type=TripwireState)
    except RPCError as exc:
        if exc.status == RPCStatusCode.NOT_FOUND:
            raise _unknown(name) from None
        raise
    return state


async def loop_states(temporal: Client, limit: int = 1000) -> list[TripwireState]:
    """Every running tripwire's state, by loop name (at most ``limit``)."""
    names: list[str] = []
    query = f"WorkflowType = '{TRIPWIRE_WORKFLOW}' AND ExecutionStatus = 'Running'"
    async for wf in temporal.list_workflows(query, limit=limit):
        names.append(wf.id.removeprefix("tripwire-"))
    out = []
    for name in sorted(set(names)):
        try:
            out.append(await loop_state(temporal, name))
        except UnknownLoop:
            continue  # stopped between the list and the query
    return out


async def repair_done(temporal: Client, name: str, person: str) -> TripwireState:
    """A person says the held loop is repaired: its repair task reads it back."""
    state = await loop_state(temporal, name)
    await temporal.get_workflow_handle(tripwire_id(name)).signal(REPAIR_DONE_SIGNAL, person)
    return state


async def delete_loop(temporal: Client, name: str) -> dict[str, Any]:
    """Delete the loop's Schedule and stop its tripwire (the ledger keeps every receipt)."""
    found = {"schedule": False, "tripwire": False}
    try:
        await temporal.get_schedule_handle(schedule_id(name)).delete()
        found["schedule"] = True
    except RPCError as exc:
        if exc.status != RPCStatusCode.NOT_FOUND:
            raise
    try:
        await loop_state(temporal, name)
        await temporal.get_workflow_handle(tripwire_id(name)).signal(STOP_SIGNAL)
        found["tripwire"] = True
    except UnknownLoop:
        pass
    if not any(found.values()):
        raise _unknown(name)
    return found


async def schedule_action(temporal: Client, name: str, action: str) -> dict[str, Any]:
    """Pause or resume the loop's Schedule."""
    handle = temporal.get_schedule_handle(schedule_id(name))
    try:
        if action == "pause":
            await handle.pause(note="landed loop pause")
        else:
            await handle.unpause(note="landed loop resume")
    except RPCError as exc:
        if exc.status == RPCStatusCode.NOT_FOUND:
            raise _unknown(name) from None
        raise
    return {"loop": name, action: True}


async def describe_loop(temporal: Client, name: str) -> dict[str, Any]:
    """The loop's Schedule (cadence, paused, recent and next runs) and tripwire state."""
    out: dict[str, Any] = {"loop": name}
    try:
        desc = await temporal.get_schedule_handle(schedule_id(name)).describe()
        out["paused"] = desc.schedule.state.paused
        out["recent_runs"] = [a.scheduled_at.isoformat() for a in desc.info.recent_actions]
        out["next_runs"] = [t.isoformat() for t in desc.info.next_action_times[:3]]
    except RPCError as exc:
        if exc.status == RPCStatusCode.UNIMPLEMENTED:
            # A server without Schedules (the time-skipping test server): said, not hidden.
            out["schedule_error"] = f"this Temporal server cannot describe schedules: {exc}"
        elif exc.status != RPCStatusCode.NOT_FOUND:
            raise
    try:
        out["tripwire"] = (await loop_state(temporal, name)).model_dump(mode="json")
    except UnknownLoop:
        if "paused" not in out:  # neither a Schedule nor a tripwire
            raise
    return out
