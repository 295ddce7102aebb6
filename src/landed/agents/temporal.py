"""landed from inside an agent's own Temporal workflow: ``run_task_as_child`` starts the task
as landed's ``AgentTask``, a child of the calling workflow on the runner's task queue, and
returns its settled receipt; ``ChildActions`` does the same for a model's intended action and
answers in the framework tools' words. The child is started as ``landed.Client`` starts a task
(the same id, id-reuse policy and search attributes, ``landed.task.start``). Workflow code:
deterministic, no I/O; it imports no agent framework."""

from __future__ import annotations

from typing import Any

from temporalio import workflow
from temporalio.exceptions import (
    ApplicationError,
    ChildWorkflowError,
    WorkflowAlreadyStartedError,
)

from landed.agents import words
from landed.agents.intent import IntentError, intent_task
from landed.agents.service import AgentToolError
from landed.receipts.model import Receipt
from landed.task.claim_contracts import ClaimContracts
from landed.task.names import AGENT_TASK_WORKFLOW
from landed.task.spec import TaskSpec
from landed.task.start import TASK_ID_REUSE, start_search_attributes
from landed.task.validate import check_spec

__all__ = ["TASK_ID_TAKEN", "TASK_REFUSED", "ChildActions", "run_task_as_child"]

#: The error type when the task id already ran, or runs: one task id never acts twice.
TASK_ID_TAKEN = "LandedTaskIdTaken"
#: The error type of a task that is not valid (nothing was started).
TASK_REFUSED = "LandedTaskRefused"


async def run_task_as_child(spec: TaskSpec, *, runner_task_queue: str) -> Receipt:
    """Run ``spec`` as a child ``AgentTask`` on ``runner_task_queue`` (the runner's queue,
    ``LANDED_TASK_QUEUE``) and wait for its settled receipt: ``receipt.done``, ``receipt.why``.

    Call it from workflow code only. Raises ``ApplicationError`` (non-retryable) of type
    TASK_REFUSED for a task that is not valid, and of type TASK_ID_TAKEN when the task id
    already ran, or runs (one task id never acts twice: give a new task its own id, or read
    that task's receipt with ``landed.Client``); a replay of this workflow's own start is not
    a second start, Temporal reattaches it. Raises
    ``ChildWorkflowError`` when the task ended without a settled receipt (terminated, timed
    out)."""
    if not runner_task_queue.strip():
        raise _refused(
            TASK_REFUSED,
            "name the runner's task queue (runner_task_queue, LANDED_TASK_QUEUE of the runner)",
        )
    try:
        task = check_spec(spec).spec
    except ValueError as exc:  # TaskSpecError: each bad field and why
        raise _refused(TASK_REFUSED, f"the task was not started: {exc}") from None
    try:
        receipt: Receipt = await workflow.execute_child_workflow(
            AGENT_TASK_WORKFLOW,
            task,
            id=task.task_id,
            task_queue=runner_task_queue,
            result_type=Receipt,
            id_reuse_policy=TASK_ID_REUSE,
            search_attributes=start_search_attributes(task),
            # A task mid-act is never cut short from outside: the parent closing or being
            # cancelled leaves it to act, read back and settle its receipt in the ledger.
            parent_close_policy=workflow.ParentClosePolicy.ABANDON,
            cancellation_type=workflow.ChildWorkflowCancellationType.ABANDON,
        )
    except WorkflowAlreadyStartedError:
        raise _refused(
            TASK_ID_TAKEN,
            f"task id {task.task_id!r} already ran, or runs (started by a client, another "
            "workflow or an earlier call); a task id never acts twice: give the new task its "
            "own task_id, or read that task's receipt with landed.Client.receipt",
        ) from None
    return receipt


def _refused(kind: str, message: str) -> ApplicationError:
    return ApplicationError(message, type=kind, non_retryable=True)


class ChildActions:
    """The framework tools' action run from workflow code: the model's intended action as a
    task owned by ``owner``, run as a child on ``runner_task_queue``, answered with the
    receipt's words (DONE / NOT DONE and why). ``contracts`` and ``own_plans`` as in
    ``landed.agents.service.LandedTools``."""

    def __init__(
        self,
        runner_task_queue: str,
        *,
        owner: str = "agent",
        contracts: ClaimContracts | None = None,
        own_plans: bool = True,
    ) -> None:
        if not runner_task_queue.strip():
            raise ValueError(
                "name the runner's task queue (runner_task_queue: the runner's "
                "LANDED_TASK_QUEUE, landed-runner unless set)"
            )
        self.runner_task_queue = runner_task_queue
        self.owner = owner
        self.contracts = contracts
        self.own_plans = own_plans

    async def act(self, intent: dict[str, Any]) -> str:
        """The verdict text; AgentToolError naming the fix when nothing was started."""
        if not workflow.in_workflow():
            raise AgentToolError(
                "this tool starts landed's task as a child workflow, so it runs in workflow "
                "code only; outside a workflow, use the client's tool (landed_tool(client))"
            )
        try:
            spec = intent_task(
                intent,
                owner=self.owner,
                contracts=self.contracts,
                own_plans=self.own_plans,
                # A new task's id from the workflow's own random source: the same on replay.
                id_token=workflow.uuid4().hex,
            )
        except IntentError as exc:
            raise AgentToolError(f"the action was not started: {exc}") from None
        try:
            receipt = await run_task_as_child(spec, runner_task_queue=self.runner_task_queue)
        except ApplicationError as exc:
            raise AgentToolError(exc.message) from None
        except ChildWorkflowError as exc:
            return words.unsettled_text(spec.task_id, str(exc.cause or exc))
        return words.receipt_text(receipt)
