"""The task verdict's rules beyond one receipt's grade: what a run knows and a receipt can't show.

``grade`` (``landed.receipts.grading``) reads one receipt; the workflow then holds the grade to
what only the run knows: the plan it declared, a run of the same task id that may have acted,
an act whose write is unknown, a cancel. Each rule here is a plain function of data, so the
workflow calls it and unit tests check it without Temporal.

None of these rules applies to a bare receipt in ``landed check``: a receipt does not carry its
plan (only the verifier's signed readings name their step and the plan's length, and a step
the runner marked not observed names neither), nor whether another run acted, nor a cancel.
The checker's counterpart for a signed plan is ``_missing_steps`` in ``landed.receipts.findings``:
a signed plan with a step that did not pass or is missing proves no more than an artifact.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from landed.receipts.ladder import Status

__all__ = [
    "CANCEL_FINDING",
    "FrameCheck",
    "PlanStep",
    "TaskVerdict",
    "frame_findings",
    "hold_to_confirmation",
    "hold_to_frames",
    "hold_to_plan",
    "hold_to_run",
    "unknown_write_finding",
]

#: The finding of a task cancelled while it ran: the verdict rests on the read-back.
CANCEL_FINDING = (
    "the task was cancelled while it ran: no act started after the cancel, and the verdict rests "
    "on what was read back"
)


class PlanStep(NamedTuple):
    """One declared plan step as it read back: its action and its read-back's result."""

    action: str
    result: str | None


class TaskVerdict(NamedTuple):
    """The verdict's rung, whether the claim meets its bar, and the findings in receipt form."""

    status: Status
    meets_bar: bool
    findings: tuple[str, ...]


class FrameCheck(NamedTuple):
    """One declared frame (what the act must leave alone) and why it did not hold (None: it
    read the same before and after the act, passing its expectation both times)."""

    action: str
    problem: str | None


def _capped(verdict: TaskVerdict, claims_done: bool, findings: tuple[str, ...]) -> TaskVerdict:
    """The verdict at executed at most (not done), with ``findings`` added."""
    status, meets_bar = verdict.status, verdict.meets_bar
    if status.is_done or status.rank > Status.EXECUTED.rank:
        status = Status.EXECUTED
        meets_bar = meets_bar and not claims_done
    return TaskVerdict(status, meets_bar, verdict.findings + findings)


def hold_to_frames(
    verdict: TaskVerdict, claims_done: bool, frames: Sequence[FrameCheck]
) -> TaskVerdict:
    """Every declared frame must read the same before and after the act.

    The plan's read-backs show what the act did; a frame shows what else it did. A frame that
    changed, or that could not be read either time, caps the verdict at executed (not done)
    with a finding naming the frame, whatever the plan's steps show. Not applied by ``landed
    check``: a receipt does not carry its frames' two readings.
    """
    findings = frame_findings(frames)
    return _capped(verdict, claims_done, findings) if findings else verdict


def frame_findings(frames: Sequence[FrameCheck]) -> tuple[str, ...]:
    """The FRAME finding of each frame that did not hold, in receipt form (frame numbers are
    the frame's place in ``frames``)."""
    return tuple(
        f"FRAME: frame #{i + 1} ({frame.action!r}) must be left as it was, but {frame.problem}; "
        "the task is not done"
        for i, frame in enumerate(frames)
        if frame.problem is not None
    )


def hold_to_plan(verdict: TaskVerdict, claims_done: bool, steps: Sequence[PlanStep]) -> TaskVerdict:
    """Every declared plan step must read back pass (DOD-5).

    ``grade`` credits the strongest read-back; a task's plan is done only when every step it
    declared reads back as pass, so any other step caps the verdict at executed, and each such
    step gets a finding. Not applied by ``landed check``: see the module docstring.
    """
    failed = [(i, step) for i, step in enumerate(steps) if step.result != "pass"]
    if not failed:
        return verdict
    findings = tuple(
        f"DOD-5: plan step #{i + 1} ({step.action!r}) read back {step.result}, so the task is "
        "not verified whatever the other steps show"
        for i, step in failed
    )
    return _capped(verdict, claims_done, findings)


def hold_to_run(
    verdict: TaskVerdict, *, lost_run: bool, unknown_write: str | None, cancelled: bool
) -> TaskVerdict:
    """What the run knows about its act holds the verdict down and is said in its findings.

    A lost run (another run of the task id was about to act and never settled) caps the
    verdict at planned: what the read-back finds may be that run's act or may have been there
    before it, so like a vacuous read-back it proves nothing this task did. An unknown write
    adds its DOD-10 finding; a cancel adds ``CANCEL_FINDING``. Not applied by ``landed
    check``: a receipt records none of these facts (see the module docstring).
    """
    status, findings = verdict.status, verdict.findings
    if lost_run and status.rank > Status.PLANNED.rank:
        status = Status.PLANNED
    if unknown_write is not None:
        findings += (unknown_write_finding(unknown_write),)
    if cancelled:
        findings += (CANCEL_FINDING,)
    return TaskVerdict(status, verdict.meets_bar, findings)


def unknown_write_finding(why: str) -> str:
    """The DOD-10 finding of an act whose write is unknown, in receipt form."""
    return f"DOD-10: {why}"


def hold_to_confirmation(verdict: TaskVerdict, unconfirmed: Sequence[str]) -> TaskVerdict:
    """A read-back that passed and then read otherwise on its confirmation read is not done:
    the outcome was undone (rolled back, reverted, cancelled) or never settled. Caps a done
    verdict at executed, as a step that did not pass does, and says which step changed."""
    if not unconfirmed:
        return verdict
    status, meets_bar = verdict.status, verdict.meets_bar
    if status.is_done or status.rank > Status.EXECUTED.rank:
        status, meets_bar = Status.EXECUTED, False
    return TaskVerdict(status, meets_bar, verdict.findings + tuple(unconfirmed))
