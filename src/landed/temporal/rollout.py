"""Runs LandedRolloutGate on one build of the runner (what the Worker Controller does before a
ramp), and the gated promotion `landed deploy promote --gate` does by hand.

Temporal routes a pinned runner's verify and act steps to the verifier's and the actor's
current versions, never to a build that takes no traffic. So a gated promotion makes the new
actor and verifier current first, runs the gate on the new runner, and on a failure puts them
back and leaves the runner where it was: the runner (which settles every task) never takes a
task from a build whose canary did not settle verified.
"""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta
from typing import Any

from temporalio.client import Client, WorkflowFailureError, WorkflowHandle
from temporalio.common import PinnedVersioningOverride, WorkerDeploymentVersion
from temporalio.service import RPCError, RPCStatusCode

from landed.task.canary import CanaryInput
from landed.task.names import ROLLOUT_GATE_WORKFLOW
from landed.temporal.deployments import promote, require_version
from landed.temporal.versioning import current_build_id

__all__ = ["GateFailed", "gated_promote", "run_gate"]


_START_TRIES = 30


class GateFailed(RuntimeError):
    """The canary did not prove the build; the message says why."""


def _cause(exc: BaseException) -> str:
    while exc.__cause__ is not None:
        exc = exc.__cause__
    return str(exc)


async def run_gate(
    client: Client, deployment: str, build_id: str, task_queue: str, gate: CanaryInput
) -> dict[str, Any]:
    """The gate's report, once the canary settled verified on ``build_id``; else GateFailed."""
    await require_version(client, deployment, build_id)
    workflow_id = f"landed-rollout-gate-{build_id}-{uuid.uuid4().hex[:8]}"
    handle = await _start(client, workflow_id, deployment, build_id, task_queue, gate)
    try:
        out: dict[str, Any] = await handle.result()
    except WorkflowFailureError as exc:
        raise GateFailed(_cause(exc)) from None
    return {**out, "workflow_id": workflow_id}


async def _start(
    client: Client, wid: str, deployment: str, build_id: str, queue: str, gate: CanaryInput
) -> WorkflowHandle[Any, Any]:
    """Start the gate pinned to the build. A version the deployment lists may not be on its
    queue yet (its workers just started polling): asked again for up to 30 s."""
    for attempt in range(_START_TRIES):
        try:
            return await client.start_workflow(
                ROLLOUT_GATE_WORKFLOW,
                gate.model_dump(mode="json", exclude_none=True),
                id=wid,
                task_queue=queue,
                versioning_override=PinnedVersioningOverride(
                    WorkerDeploymentVersion(deployment, build_id)
                ),
                execution_timeout=timedelta(
                    seconds=gate.timeout_s + gate.wait_for_verifier_s + 120
                ),
            )
        except RPCError as exc:
            settling = exc.status == RPCStatusCode.FAILED_PRECONDITION and "not present" in str(exc)
            if not settling or attempt == _START_TRIES - 1:
                raise
            await asyncio.sleep(1.0)
    raise AssertionError("unreachable")


async def gated_promote(
    client: Client,
    names: dict[str, str],
    build_id: str,
    *,
    runner_queue: str,
    gate: CanaryInput,
    identity: str,
) -> dict[str, str | None]:
    """Promote ``build_id`` for every role in ``names`` (the runner among them) only if the gate
    passes on the new runner; returns each role's previous build. On GateFailed nothing stays
    changed."""
    # What each role runs now, read before anything changes: what a failed gate goes back to.
    before = {
        role: current_build_id(await require_version(client, name, build_id))
        for role, name in names.items()
    }
    try:
        for role, name in names.items():
            if role != "runner":
                await promote(client, name, build_id, ramp=None, identity=identity)
        await run_gate(client, names["runner"], build_id, runner_queue, gate)
    except GateFailed:
        for role, previous in before.items():
            if role != "runner" and previous and previous != build_id:
                await promote(client, names[role], previous, ramp=None, identity=identity)
        raise
    await promote(client, names["runner"], build_id, ramp=None, identity=identity)
    return before
