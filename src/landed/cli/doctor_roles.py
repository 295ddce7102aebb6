"""``landed doctor``'s role checks: each role's task queue has a poller seen recently (Temporal's
DescribeTaskQueue), and the acts the actor has registered, as the pre-start role check learns
them (the runner's LandedPreflight workflow asks the actor; nothing is acted, read or
settled). The preflight's start time, stamped by Temporal, is also the clock check's reading of
the Temporal server's clock."""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from datetime import UTC, timedelta
from typing import TYPE_CHECKING, Any

from landed.cli.doctor_check import Check, bounded, first_line
from landed.cli.doctor_clock import Offset, offset_between
from landed.task.checkable import (
    PREFLIGHT_WORKFLOW,
    ConfigInput,
    PreflightInput,
    PreflightOutput,
    check_queue,
)

if TYPE_CHECKING:
    from temporalio.client import Client, WorkflowHandle

__all__ = ["POLLED_WITHIN_S", "acts_check", "polling_checks", "role_checks", "role_queues"]

#: A poller last seen longer ago than this is gone: a live worker polls again at least every
#: long-poll interval (about a minute); Temporal keeps a gone one listed for minutes.
POLLED_WITHIN_S = 120.0
#: The queue types each role polls: the runner runs workflows and its own activities.
_TYPES = {"actor": ("activity",), "verifier": ("activity",), "runner": ("workflow", "activity")}


_ROLES = ("actor", "verifier", "runner")


def role_queues() -> dict[str, str]:
    """Each role's task queue as its own settings read it (LANDED_<ROLE>_TASK_QUEUE; the
    defaults are `landed dev`'s)."""
    from landed.temporal.settings import ActorSettings, RunnerSettings, VerifierSettings

    roles = (ActorSettings(), VerifierSettings(), RunnerSettings())
    return {s.role: s.task_queue for s in roles}


async def _pollers(client: Client, queue: str, kind: str, timeout: float) -> list[str]:
    """The identities that polled ``queue`` for ``kind`` tasks within POLLED_WITHIN_S."""
    from temporalio.api.enums.v1 import TaskQueueType
    from temporalio.api.taskqueue.v1 import TaskQueue
    from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest

    types = {
        "workflow": TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
        "activity": TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY,
    }
    request = DescribeTaskQueueRequest(
        namespace=client.namespace, task_queue=TaskQueue(name=queue), task_queue_type=types[kind]
    )
    described = await client.workflow_service.describe_task_queue(
        request, timeout=timedelta(seconds=timeout)
    )
    now = time.time()
    return sorted(
        {
            p.identity
            for p in described.pollers
            if now - p.last_access_time.ToDatetime(UTC).timestamp() <= POLLED_WITHIN_S
        }
    )


async def _polling(client: Client, role: str, queue: str, timeout: float) -> Check:
    name = f"{role} polling"
    try:
        seen = {k: await _pollers(client, queue, k, timeout) for k in _TYPES[role]}
    except Exception as exc:
        first = first_line(exc)
        return Check.problem(name, f"task queue {queue!r} not described: {first}", _start(role))
    idle = [k for k, ids in seen.items() if not ids]
    if idle:
        detail = (
            f"no worker polled task queue {queue!r} for {' or '.join(idle)} tasks in the last "
            f"{POLLED_WITHIN_S:g}s: tasks would wait there"
        )
        return Check.problem(name, detail, _start(role))
    who = sorted({i for ids in seen.values() for i in ids})
    return Check.passed(name, f"task queue {queue!r} polled by {', '.join(who)}")


def _start(role: str) -> str:
    variable = f"LANDED_{role.upper()}_TASK_QUEUE"
    return f"start `landed worker {role}` (or `landed dev`); or set {variable} to its queue"


async def polling_checks(client: Client, queues: dict[str, str], timeout: float) -> list[Check]:
    """One check per role: a worker polled its queue recently."""
    found = await asyncio.gather(*(_polling(client, r, q, timeout) for r, q in queues.items()))
    return list(found)


async def acts_check(
    client: Client, runner_queue: str, runner_polls: bool, timeout: float
) -> tuple[Check, Offset | None]:
    """The acts the actor has registered, by the runner's preflight (with an act name no one
    registers), and the Temporal server's clock from the preflight's start time."""
    name = "acts"
    wait = min(timeout, 60.0)
    before = time.time()
    try:
        handle = await bounded(
            client.start_workflow(
                PREFLIGHT_WORKFLOW,
                PreflightInput(act="", config=ConfigInput(), timeout_s=wait),
                id=f"landed-doctor-{uuid.uuid4().hex}",
                # Where clients ask: a runner busy with tasks answers there at once.
                task_queue=check_queue(runner_queue),
                execution_timeout=timedelta(seconds=wait * 2 + 2),
                result_type=PreflightOutput,
            ),
            timeout,
            "Temporal",
        )
        after = time.time()
        started = (await bounded(handle.describe(), timeout, "Temporal")).start_time
    except Exception as exc:
        first = first_line(exc)
        return Check.problem(name, f"not asked: {first}", "fix the problems above first"), None
    clock = offset_between(started.timestamp(), before, after, "Temporal")
    if not runner_polls:
        with contextlib.suppress(Exception):
            await handle.terminate(reason="landed doctor: no runner polls its queue")
        return Check.problem(name, "not asked: no runner to ask", _start("runner")), clock
    return await _acts(handle, wait), clock


async def _acts(handle: WorkflowHandle[Any, PreflightOutput], wait: float) -> Check:
    name = "acts"
    try:
        out = await bounded(handle.result(), wait * 2 + 5, "the runner's preflight")
    except Exception as exc:
        first = first_line(exc)
        return Check.problem(name, f"the runner did not answer: {first}", _start("runner"))
    if out.acts is None:
        silent = "; ".join(out.silent)
        return Check.problem(name, f"the actor did not answer: {silent}", _start("actor"))
    if not out.acts:
        return Check.problem(
            name,
            "the actor has no act registered: every task would be refused",
            "list the modules that hold your @landed.act functions in LANDED_ACTOR_ACTS",
        )
    return Check.passed(name, f"{len(out.acts)} registered: {', '.join(out.acts)}")


def _unchecked(why: str, fix: str) -> list[Check]:
    names = [*(f"{r} polling" for r in _ROLES), "acts"]
    return [Check.problem(n, f"not checked: {why}", fix) for n in names]


async def role_checks(client: Client | None, timeout: float) -> tuple[list[Check], Offset | None]:
    """Each role polling, the actor's acts, and the Temporal server's clock offset (None when
    Temporal did not answer or refused the preflight)."""
    from pydantic import ValidationError

    from landed.probes.settings import settings_problems

    if client is None:
        return _unchecked("Temporal did not answer", "fix the `temporal` check first"), None
    try:
        queues = role_queues()
    except ValidationError as exc:
        return _unchecked(settings_problems(exc), "fix the setting named above"), None
    polling = await polling_checks(client, queues, timeout)
    runner_polls = all(c.ok for c in polling if c.name == "runner polling")
    acts, clock = await acts_check(client, queues["runner"], runner_polls, timeout)
    return [*polling, acts], clock
