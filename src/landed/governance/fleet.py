"""The fleet's kill switch as data (GOV-4): its state, a flip, what a paused task decides.

The switch lives in one small control workflow per namespace (``landed.workflows.fleet``);
every act is dispatched only after the runner has read it as running. What follows from a
reading is decided here, with no Temporal, so it has unit tests of its own.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from pydantic import BaseModel, ConfigDict, Field

from landed.task.gate_messages import FleetGateAnswer, FleetSwitch
from landed.task.messages import ActReport

__all__ = [
    "FleetFlip",
    "apply_flip",
    "blocked_by_switch",
    "pause_wait",
]


class FleetFlip(BaseModel):
    """One flip of the switch, as the operator asked for it."""

    model_config = ConfigDict(extra="forbid")

    paused: bool
    by: str = Field(min_length=1, max_length=200)
    reason: str = Field(default="", max_length=2000)
    at: datetime = Field(description="When the operator flipped it (the client's clock).")


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
