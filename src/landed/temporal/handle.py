"""A started task as agent code holds it: ``TaskHandle`` (its receipt, its progress, the approval
gate) and ``TaskStatus`` (where it stands)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field
from temporalio.client import WorkflowFailureError, WorkflowHandle
from temporalio.exceptions import ApplicationError

# Governance gates: a person's decision at the approval gate.
from landed.governance.gates import Approve, GateView, Reject
from landed.receipts.model import Receipt
from landed.signing import KeyPair
from landed.task.messages import Progress
from landed.temporal.approvals import decide
from landed.temporal.client_errors import TaskIdReused, TaskNotSettled, not_settled
from landed.temporal.waits import wait_result

__all__ = ["TaskHandle", "TaskStatus"]


class TaskStatus(BaseModel):
    """Where a task stands: Temporal's execution status and landed's step, rung and verdict."""

    task_id: str
    execution: str = Field(
        description="RUNNING, COMPLETED, FAILED, TIMED_OUT, ..., or FORGOTTEN: Temporal no "
        "longer holds the run (its retention) and the receipt comes from the runner's ledger"
    )
    step: str
    rung: str
    verdict: str | None = None
    settled: bool = False


class TaskHandle:
    """A started (or already existing) task."""

    def __init__(
        self, handle: WorkflowHandle[Any, Receipt], warnings: list[str], existing: bool
    ) -> None:
        self._handle = handle
        self.task_id = handle.id
        self.warnings = warnings
        #: True when this task id was already submitted: nothing new was started.
        self.existing = existing

    @property
    def run_id(self) -> str | None:
        """The workflow run this handle follows (None when not known)."""
        return self._handle.result_run_id or self._handle.run_id

    @property
    def workflow(self) -> WorkflowHandle[Any, Receipt]:
        """The task's Temporal workflow handle (its history, its run)."""
        return self._handle

    async def result(self) -> Receipt:
        """Wait for the settled receipt; TaskIdReused when the runner found the id settled in
        its ledger for another task."""
        try:
            return await wait_result(self._handle)
        except WorkflowFailureError as err:
            cause: BaseException | None = err.cause
            while cause is not None:
                if isinstance(cause, ApplicationError) and cause.type == "TaskIdReused":
                    raise TaskIdReused(cause.message) from err
                cause = cause.__cause__ or getattr(cause, "cause", None)
            raise TaskNotSettled(not_settled(self.task_id, f"with {err.cause or err}")) from err

    async def progress(self) -> Progress:
        answer: Progress = await self._handle.query("progress", result_type=Progress)
        return answer

    # --- the approval gate (GOV-5; landed.temporal.approvals) ---------------------------------

    async def approve(
        self, by: str, note: str | None = None, *, key: KeyPair | Path | str | None = None
    ) -> GateView:
        """Approve the task waiting at its gate, as the person ``by``, signed with ``by``'s
        approver key (a KeyPair or its .key file; default: LANDED_APPROVER_KEY); ApprovalRefused
        when the task refuses (unsigned, a key the runner does not trust for it, an owner, not
        waiting, already decided, unknown or settled)."""
        return await decide(self._handle, Approve(by=by, note=note), key=key)

    async def reject(
        self, by: str, reason: str, *, key: KeyPair | Path | str | None = None
    ) -> GateView:
        """Reject the task waiting at its gate, signed as an approval is: it settles held,
        nothing done."""
        return await decide(self._handle, Reject(by=by, reason=reason), key=key)
