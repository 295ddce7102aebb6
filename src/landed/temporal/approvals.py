"""A person's side of the approval gate (GOV-5): approve or reject a waiting task, and list
what waits (``landed held``).

A decision is a Workflow Update signed with the approver's Ed25519 key over the task id, the
run the task started as, its spec digest, the decision, its time and note: the task's validator
refuses it (unsigned, an untrusted key, signed for another task or run, owner, actor, not
waiting, already decided) before anything is recorded, and the refusal comes back here as
``ApprovalRefused`` with the task's own words.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from temporalio.client import Client as TemporalClient
from temporalio.client import (
    WorkflowExecutionStatus,
    WorkflowHandle,
    WorkflowUpdateFailedError,
    WorkflowUpdateRPCTimeoutOrCancelledError,
)
from temporalio.common import SearchAttributeKey
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.service import RPCError, RPCStatusCode

from landed.governance.approval import sign_decision
from landed.governance.gates import Approve, GateView, Reject
from landed.signing import KeyPair, SigningError
from landed.task.messages import spec_digest
from landed.task.names import AGENT_TASK_WORKFLOW, APPROVE_UPDATE, REJECT_UPDATE
from landed.task.spec import TaskSpec

__all__ = [
    "APPROVER_KEY_ENV",
    "GATE_MEMO",
    "ApprovalRefused",
    "HeldTask",
    "approver_key",
    "decide",
    "list_held",
]

#: Where ``landed approve`` and ``handle.approve()`` find the approver's key when none is given.
APPROVER_KEY_ENV = "LANDED_APPROVER_KEY"

#: The memo key the workflow sets while it waits (workflows/gates.py).
GATE_MEMO = "landed.gate"
_OWNER = SearchAttributeKey.for_keyword("LandedOwner")
#: How long a decision waits for a runner to take it.
DECIDE_TIMEOUT = timedelta(seconds=30)
#: The most tasks one listing reads (a bounded read).
HELD_LIMIT = 500


class ApprovalRefused(RuntimeError):
    """A decision the task did not take: the message says why and what to do instead."""


class HeldTask(BaseModel):
    """One task waiting at its approval gate."""

    task_id: str
    owner: str | None = None
    kind: str | None = None
    since: datetime | None = None
    deadline: datetime | None = None
    age_s: float | None = None
    approvers: str = ""


def approver_key(key: KeyPair | Path | str | None) -> KeyPair:
    """The approver's key: the one given, else the file LANDED_APPROVER_KEY names."""
    if isinstance(key, KeyPair):
        return key
    where = key if key is not None else os.environ.get(APPROVER_KEY_ENV)
    if not where:
        raise ApprovalRefused(
            "no approver key: a decision counts only when signed with an approver's key; pass "
            f"--key APPROVER.key (or key= in Python, or set {APPROVER_KEY_ENV}); make one with "
            "`landed keys new --role approver --name NAME` and have the runner trust its .pub"
        )
    try:
        return KeyPair.load(where)
    except SigningError as exc:
        raise ApprovalRefused(f"the approver key cannot be used: {exc}") from exc


async def _started(handle: WorkflowHandle[Any, Any], run_id: str) -> tuple[str, str]:
    """The spec digest and the run the task started as, from its first history event: what a
    signed decision is bound to."""
    async for event in handle.fetch_history_events():
        attrs = event.workflow_execution_started_event_attributes
        try:
            (spec,) = pydantic_data_converter.payload_converter.from_payloads(
                list(attrs.input.payloads), [TaskSpec]
            )
        except (ValueError, TypeError, RuntimeError) as exc:
            raise ApprovalRefused(
                f"workflow {handle.id!r} was not started with a landed task ({exc}); only a "
                "landed task can be approved"
            ) from exc
        return spec_digest(spec), attrs.original_execution_run_id or run_id
    raise ApprovalRefused(f"task {handle.id!r} has no history to sign a decision for")


async def decide(
    handle: WorkflowHandle[Any, Any],
    decision: Approve | Reject,
    *,
    key: KeyPair | Path | str | None = None,
    timeout: timedelta | None = None,
) -> GateView:
    """Sign ``decision`` with the approver's ``key`` and send it to the task; its validator
    may refuse it (ApprovalRefused)."""
    task_id = handle.id
    try:
        desc = await handle.describe()
    except RPCError as err:
        if err.status == RPCStatusCode.NOT_FOUND:
            raise ApprovalRefused(
                f"no task {task_id!r} is known to Temporal; check the id (`landed held` lists "
                "the tasks waiting for approval)"
            ) from err
        raise
    if desc.status != WorkflowExecutionStatus.RUNNING:
        state = desc.status.name if desc.status is not None else "UNKNOWN"
        raise ApprovalRefused(
            f"task {task_id!r} is no longer running ({state}): it has settled, and no decision "
            f"can change a settled receipt; see `landed status {task_id}`"
        )
    signer = approver_key(key)
    digest, run_id = await _started(handle, desc.run_id)
    approve = isinstance(decision, Approve)
    signed = sign_decision(
        signer,
        task_id=task_id,
        run_id=run_id,
        spec_sha256=digest,
        decision="approve" if approve else "reject",
        by=decision.by.strip(),
        at=datetime.now(UTC),
        note=decision.note if isinstance(decision, Approve) else decision.reason,
    )
    decision = decision.model_copy(update={"signed": signed})
    name = APPROVE_UPDATE if isinstance(decision, Approve) else REJECT_UPDATE
    wait = timeout or DECIDE_TIMEOUT
    try:
        view: GateView = await handle.execute_update(
            name, decision, result_type=GateView, rpc_timeout=wait
        )
    except WorkflowUpdateFailedError as err:
        cause = err.cause
        message = getattr(cause, "message", None) or str(cause or err)
        raise ApprovalRefused(f"task {task_id!r} refused the decision: {message}") from err
    except WorkflowUpdateRPCTimeoutOrCancelledError as err:
        raise ApprovalRefused(
            f"no runner took the decision on task {task_id!r} within {wait.total_seconds():g} "
            f"s; check that `landed worker runner` is up on task queue {desc.task_queue!r}, "
            "then decide again (nothing was recorded)"
        ) from err
    except RPCError as err:
        if err.status == RPCStatusCode.NOT_FOUND:
            raise ApprovalRefused(
                f"task {task_id!r} settled before the decision reached it; see "
                f"`landed status {task_id}`"
            ) from err
        raise
    return view


async def list_held(client: TemporalClient, *, limit: int = HELD_LIMIT) -> list[HeldTask]:
    """The running tasks that wait at their approval gate, oldest first."""
    query = (
        f'WorkflowType = "{AGENT_TASK_WORKFLOW}" AND ExecutionStatus = "Running" '
        'AND LandedRung = "held"'
    )
    now = datetime.now(UTC)
    found: list[HeldTask] = []
    async for wf in client.list_workflows(query, limit=limit):
        memo = await wf.memo()
        view = GateView.model_validate(memo.get(GATE_MEMO) or {})
        found.append(
            HeldTask(
                task_id=wf.id,
                owner=wf.typed_search_attributes.get(_OWNER),
                kind=view.kind,
                since=view.since,
                deadline=view.deadline,
                age_s=round((now - view.since).total_seconds(), 1) if view.since else None,
                approvers=view.approvers,
            )
        )
    found.sort(key=lambda t: -(t.age_s or 0.0))
    return found
