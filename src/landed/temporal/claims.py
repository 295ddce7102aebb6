"""Starting a VerifyClaim from a client: one workflow per task attempt, never a second one."""

from __future__ import annotations

from typing import Any, NamedTuple

from temporalio.client import Client as TemporalClient
from temporalio.client import WorkflowHandle
from temporalio.common import SearchAttributeKey as _Key
from temporalio.common import (
    SearchAttributePair,
    TypedSearchAttributes,
    WorkflowIDConflictPolicy,
    WorkflowIDReusePolicy,
)
from temporalio.exceptions import WorkflowAlreadyStartedError

from landed.receipts.model import Receipt
from landed.task.claim_grade import claim_spec
from landed.task.claims_in import VerifyClaimInput, claim_workflow_id
from landed.task.names import VERIFY_CLAIM_WORKFLOW
from landed.temporal.waits import wait_result

__all__ = ["ClaimStarted", "other_claim", "start_claim", "wait_result"]

_OWNER = _Key.for_keyword("LandedOwner")
_RUNG = _Key.for_keyword("LandedRung")


class ClaimStarted(NamedTuple):
    """The claim's workflow, and whether it was started before (by this stream or another)."""

    workflow_id: str
    handle: WorkflowHandle[Any, Receipt]
    existing: bool


async def start_claim(
    temporal: TemporalClient, inp: VerifyClaimInput, *, task_queue: str
) -> ClaimStarted:
    """Start the claim's VerifyClaim, durably (the server has recorded it once this returns).

    Its id is the task id and attempt, so a replayed stream attaches instead of verifying
    again: a run that is running or completed is never started twice (FAIL on a running one,
    ALLOW_DUPLICATE_FAILED_ONLY on a closed one: only a run that failed or was terminated, and
    so settled nothing the workflow returned, may run again; the ledger's (task_id, attempt,
    stage) row guards that rerun in turn).
    """
    wid = claim_workflow_id(inp.task_id, inp.attempt)
    try:
        handle: WorkflowHandle[Any, Receipt] = await temporal.start_workflow(
            VERIFY_CLAIM_WORKFLOW,
            inp,
            id=wid,
            task_queue=task_queue,
            result_type=Receipt,
            id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE_FAILED_ONLY,
            id_conflict_policy=WorkflowIDConflictPolicy.FAIL,
            search_attributes=TypedSearchAttributes(
                [
                    SearchAttributePair(_OWNER, claim_spec(inp).owner),
                    SearchAttributePair(_RUNG, "planned"),
                ]
            ),
        )
    except WorkflowAlreadyStartedError:
        return ClaimStarted(wid, temporal.get_workflow_handle(wid, result_type=Receipt), True)
    return ClaimStarted(wid, handle, False)


def other_claim(inp: VerifyClaimInput, receipt: Receipt) -> str | None:
    """Why the settled receipt of this task attempt is not this claim's, or None: another line
    claimed the same task id and attempt for other work (another outcome or plan)."""
    stored = getattr(receipt.landed, "spec_sha256", None) if receipt.landed else None
    if stored == inp.digest:
        return None
    return (
        f"task {inp.task_id!r} attempt {inp.attempt} was already settled for another claim "
        f"(its digest {stored or 'none'}, this one {inp.digest}); give this claim its own "
        "task_id or attempt"
    )
