"""The approval gate's decisions (GOV-5, GOV-7), as plain functions of data.

A task whose act cannot be undone waits for a person before its pre-read and act. Who may
decide, whether a decision is accepted, what the task settles as when nobody decides or a
person rejects, and what the receipt records of it are decided here; the workflow
(``landed.workflows.gates``) only waits and records.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from landed.governance.approval import SignedDecision, same_name
from landed.governance.approvers import is_actor, may_approve
from landed.receipts.model import Approval, Receipt
from landed.task.messages import ActReport
from landed.task.spec import TaskSpec

__all__ = [
    "ApprovalDecision",
    "Approve",
    "GateView",
    "Reject",
    "approvers_text",
    "gate_kind",
    "held_report",
    "refusal",
    "rejected_report",
    "with_gate",
]


class Approve(BaseModel):
    """The ``approve`` Update's argument: who approves, and why, signed with the approver's key
    (``signed``; an unsigned decision is refused)."""

    model_config = ConfigDict(extra="forbid")
    by: str = Field(min_length=1, max_length=200)
    note: str | None = Field(default=None, max_length=2000)
    signed: SignedDecision | None = None


class Reject(BaseModel):
    """The ``reject`` Update's argument: who rejects, and why (a reason is required), signed
    as an approval is: a forged rejection would stop someone else's task in a person's name."""

    model_config = ConfigDict(extra="forbid")
    by: str = Field(min_length=1, max_length=200)
    reason: str = Field(min_length=1, max_length=2000)
    signed: SignedDecision | None = None


class ApprovalDecision(BaseModel):
    """What a person decided at the gate; it goes into the receipt (``landed.approval``)."""

    decision: Literal["approved", "rejected", "timed-out"]
    by: str | None = None
    note: str | None = None
    at: datetime
    signed: SignedDecision | None = Field(
        default=None, description="The decision as the approver's key signed it."
    )


class GateView(BaseModel):
    """The ``gate`` query's answer, and the memo ``landed held`` lists."""

    kind: str | None = Field(default=None, description="What waits: send, publish, ... or None.")
    waiting: bool = False
    since: datetime | None = None
    deadline: datetime | None = None
    approvers: str = ""
    decision: ApprovalDecision | None = None


def gate_kind(spec: TaskSpec) -> str | None:
    """What the task's approval gate guards (None: the task has no gate).

    ``irreversible`` names it; a task that only sets ``approval.required`` is gated as
    "approval". A submitted ``approval.approved_by`` never opens or skips the gate: only a
    decision made at the gate counts (nothing the agent sends can remove a hold)."""
    if spec.irreversible is not None:
        return spec.irreversible
    return "approval" if spec.approval.required else None


def refusal(
    spec: TaskSpec,
    by: str,
    *,
    waiting: bool,
    decided: ApprovalDecision | None,
    actors: list[str],
    groups: dict[str, list[str]] | None = None,
) -> str | None:
    """Why a decision by ``by`` is refused (None: it is accepted). Each reason names the fix.
    ``actors``: the actor role's configured identities and those seen acting; ``groups``: the
    runner's approver groups, which ``approval.approver`` may name. The signature is checked
    apart (``landed.governance.approvers.signed_refusal``)."""
    if decided is not None:
        return (
            f"task {spec.task_id!r} was already {decided.decision} by "
            f"{decided.by or 'its deadline'}; a decision is made once"
        )
    if not waiting:
        return (
            f"task {spec.task_id!r} is not waiting for approval (it has no approval gate, or "
            "has not reached it); see `landed held` for the tasks that wait"
        )
    who = by.strip()
    if not who:
        return "the approver's name is empty; give --by NAME"
    if same_name(who, spec.owner):
        return (
            f"{who!r} owns task {spec.task_id!r}; an owner cannot approve its own task: ask "
            "another person (GOV-5)"
        )
    if is_actor(who, actors):
        return f"{who!r} is the identity that acts for task {spec.task_id!r}; ask a person"
    named = spec.approval.approver
    if not may_approve(who, named, groups or {}):
        return f"task {spec.task_id!r} names {named!r} as its approver, not {who!r}"
    return None


def approvers_text(spec: TaskSpec) -> str:
    """Who may approve, as ``landed held`` shows it."""
    if spec.approval.approver:
        return spec.approval.approver
    return f"anyone but the owner {spec.owner!r} and the actor"


def held_report(kind: str, waited: timedelta) -> ActReport:
    """The report of a task nobody decided on: held at its gate, nothing done (GOV-7)."""
    return ActReport(
        claimed_status="held",
        report=f"held: the {kind} act waited {waited} for a person's approval and nobody "
        "decided; nothing was done. Submit it again to ask again.",
    )


def rejected_report(by: str, reason: str) -> ActReport:
    """The report of a task a person rejected: held at its gate, nothing done.

    Held, not blocked: a rejection is the gate working (counted in the hold rate), not an
    outside condition someone could clear for this same task."""
    return ActReport(
        claimed_status="held",
        report=f"held: rejected by {by}: {reason}; nothing was done.",
    )


def with_gate(receipt: Receipt, kind: str, decision: ApprovalDecision | None) -> Receipt:
    """The receipt with what the gate decided: the DoD ``approval`` block from the decision
    alone (never from the submitted spec), and ``landed.approval`` with who, when and why."""
    approved = decision is not None and decision.decision == "approved"
    approval = Approval(
        required=True,
        approved_by=decision.by if approved and decision is not None else None,
        approved_at=decision.at if approved and decision is not None else None,
    )
    record: dict[str, Any] = {"kind": kind, "decision": None}
    if decision is not None:
        record.update(decision.model_dump(mode="json"))
    landed = receipt.landed
    if landed is not None:
        landed = landed.model_copy(update={"approval": record})
    return receipt.model_copy(update={"approval": approval, "landed": landed})
