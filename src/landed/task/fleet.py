"""The fleet's kill switch as data (GOV-4): its state, a flip, what a paused task decides.

The switch lives in one small control workflow per namespace (``landed.workflows.fleet``);
every act is dispatched only after the runner has read it as running. What follows from a
reading is decided here, with no Temporal, so it has unit tests of its own.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from pydantic import BaseModel, ConfigDict, Field

from landed.task.harness import HarnessFailure
from landed.task.messages import ActReport

__all__ = [
    "DEFAULT_FLEET_ID",
    "FleetFlip",
    "FleetGateAnswer",
    "FleetGateInput",
    "FleetSwitch",
    "apply_flip",
    "blocked_by_switch",
    "pause_wait",
]

#: The control workflow's id when the deployment names none (one per namespace).
DEFAULT_FLEET_ID = "landed-fleet"


class FleetFlip(BaseModel):
    """One flip of the switch, as the operator asked for it."""

    model_config = ConfigDict(extra="forbid")

    paused: bool
    by: str = Field(min_length=1, max_length=200)
    reason: str = Field(default="", max_length=2000)
    at: datetime = Field(description="When the operator flipped it (the client's clock).")


class FleetSwitch(BaseModel):
    """The switch as the control workflow holds it; never flipped: running."""

    paused: bool = False
    by: str | None = None
    reason: str = ""
    at: datetime | None = Field(default=None, description="When it was flipped (the operator).")
    applied_at: datetime | None = Field(
        default=None, description="When the control workflow recorded the flip."
    )
    flips: int = Field(default=0, description="Flips since the control workflow was created.")


def apply_flip(switch: FleetSwitch, flip: FleetFlip, now: datetime) -> FleetSwitch:
    """The switch after ``flip``; every flip is recorded, a repeated one too (who and when)."""
    return FleetSwitch(
        paused=flip.paused,
        by=flip.by,
        reason=flip.reason,
        at=flip.at,
        applied_at=now,
        flips=switch.flips + 1,
    )


class FleetGateInput(BaseModel):
    """What the gate step is asked before an act is dispatched."""

    task_id: str
    wait_s: float = Field(
        default=30.0,
        ge=0,
        description="How long the step itself waits for a paused switch to be resumed before it "
        "answers (the workflow asks again): a resume lets the task act within a fraction of a "
        "second instead of at its next timer.",
    )
    # Fleet-wide harness cool-down (GOV-10): releases the fleet has not heard of yet.
    failures: list[HarnessFailure] = Field(default_factory=list, max_length=50)


class FleetGateAnswer(BaseModel):
    """The gate's answer: act, or not, and why."""

    may_act: bool
    fleet_id: str = DEFAULT_FLEET_ID
    switch: FleetSwitch | None = None
    unreadable: str | None = Field(
        default=None,
        description="The switch could not be read: the task does not act (fail closed).",
    )
    # Fleet-wide harness cool-down (GOV-10): harnesses out of every pool, and until when.
    cooling: dict[str, datetime] = Field(default_factory=dict)


def pause_wait(waited: timedelta) -> timedelta:
    """The durable wait between two gate steps of a paused task. Each gate step already waits
    for the resume itself (FleetGateInput.wait_s); this wait bounds the history a long pause
    writes, and grows the longer the pause lasts."""
    if waited < timedelta(minutes=10):
        return timedelta(seconds=1)
    if waited < timedelta(hours=1):
        return timedelta(seconds=30)
    return timedelta(minutes=5)


def blocked_by_switch(answer: FleetGateAnswer) -> ActReport:
    """The report of a task whose time cap ran out while the fleet was paused (or its switch
    unreadable): blocked (DOD-9), naming the condition and who can clear it; nothing acted."""
    switch, fleet_id = answer.switch, answer.fleet_id
    if answer.unreadable is not None:
        condition = (
            f"the fleet switch ({fleet_id}) could not be read before the act, so the act was not "
            f"dispatched (fail closed): {answer.unreadable}"
        )
        clear_by = "the operator of the runner: make the control workflow readable again"
    else:
        by = switch.by if switch is not None and switch.by else "an operator"
        at = switch.at.isoformat() if switch is not None and switch.at else "an unknown time"
        reason = f": {switch.reason}" if switch is not None and switch.reason else ""
        condition = f"the fleet ({fleet_id}) was paused by {by} at {at}{reason}"
        clear_by = f"{by}, or any operator, with `landed resume`; then submit the task again"
    return ActReport(
        claimed_status="blocked",
        report=f"Not acted: {condition}. The time cap ran out while the act waited.",
        blocked_on=condition,
        clear_by=clear_by,
    )
