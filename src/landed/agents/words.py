"""What a model reads back from landed: every answer starts with DONE or NOT DONE and the
receipt's one sentence of why, then the details (pure code)."""

from __future__ import annotations

import json
from collections.abc import Sequence

from landed.probes.verdict import Verdict, outcome_line, report_lines
from landed.receipts.model import Receipt
from landed.temporal.approvals import HeldTask
from landed.temporal.handle import TaskStatus

__all__ = [
    "held_text",
    "probe_text",
    "receipt_text",
    "request_text",
    "status_text",
    "unsettled_text",
    "verdict_line",
]


def verdict_line(receipt: Receipt) -> str:
    """``DONE: why`` or ``NOT DONE: why``: the first line of every answer about a receipt."""
    return f"{'DONE' if receipt.done else 'NOT DONE'}: {receipt.why}"


def _rung(receipt: Receipt) -> str:
    return (receipt.landed.rung if receipt.landed else None) or "unknown"


def receipt_text(receipt: Receipt, *, with_json: bool = False) -> str:
    """The verdict line, then the task, verdict and rung; with ``with_json`` the receipt too."""
    lines = [
        verdict_line(receipt),
        f"task: {receipt.task_id}",
        f"verdict: {receipt.verdict or '-'}",
        f"rung: {_rung(receipt)}",
    ]
    if with_json:
        lines.append("receipt: " + json.dumps(receipt.model_dump(mode="json"), sort_keys=True))
    return "\n".join(lines)


def status_text(status: TaskStatus) -> str:
    """Where a task that has not settled stands: NOT DONE (yet), and its step."""
    why = f"the task has not settled yet (step {status.step}, {status.execution})."
    if status.step == "closed":  # failed, terminated, timed out: it never will
        why = _ended(status.execution)
    return "\n".join(
        [
            f"NOT DONE: {why}",
            f"task: {status.task_id}",
            f"step: {status.step}",
            f"verdict: {status.verdict or '-'}",
            f"rung: {status.rung}",
        ]
    )


def unsettled_text(task_id: str, how: str) -> str:
    """A task that ended without a settled receipt (terminated, timed out, failed)."""
    return "\n".join([f"NOT DONE: {_ended(f'({how})')}", f"task: {task_id}"])


def _ended(how: str) -> str:
    return (
        f"the task ended {how} without a settled receipt; to run it again, submit it under a "
        "new task_id."
    )


def held_text(held: Sequence[HeldTask]) -> str:
    """The tasks waiting at their approval gate, one line each."""
    if not held:
        return "NOT DONE: nothing waits for approval.\nheld: 0"
    lines = [f"NOT DONE: {len(held)} task(s) wait for a person's approval.", f"held: {len(held)}"]
    for t in held:
        age = f"{t.age_s:.0f} s" if t.age_s is not None else "?"
        lines.append(
            f"- {t.task_id}: act {t.kind or '?'}, owner {t.owner or '?'}, waiting {age}, "
            f"who may approve: {t.approvers or '?'}"
        )
    return "\n".join(lines)


def request_text(task: HeldTask, reason: str) -> str:
    """The request for a person's approval: who may approve, and the command they run."""
    return "\n".join(
        [
            f"NOT DONE: task {task.task_id} waits for a person's approval; an agent cannot "
            "approve it.",
            f"who may approve: {task.approvers or 'the approvers the runner trusts'}",
            f"reason given: {reason or '-'}",
            f"to approve, that person runs: landed approve {task.task_id} --by NAME "
            "--key APPROVER.key",
        ]
    )


def probe_text(verdict: Verdict) -> str:
    """One probe read now (the ``verify`` tool): DONE when what it returned is the claim, NOT
    DONE otherwise, with the outcome as ``landed verify`` words it; then the claim and what
    the probe returned, as ``landed verify`` prints it."""
    first = f"{'DONE' if verdict.landed else 'NOT DONE'}: {outcome_line(verdict)}"
    return "\n".join([first, f"claim: {verdict.action}", *report_lines(verdict)])
