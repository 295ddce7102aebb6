"""The governance gates' messages between the workflow and its activities (GOV-4, GOV-6,
GOV-10): the consent read's input and answer, and the fleet gate's, with the switch it read and
the harness releases reported to the fleet.

They travel through Temporal (``landed.task.steps`` declares the activities that take them), so
they belong to the wire contract; the decisions taken on them are ``landed.governance``'s.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import BaseModel, Field

from landed.task.gate_spec import Contacts

__all__ = [
    "DEFAULT_FLEET_ID",
    "ConsentInput",
    "ConsentOutput",
    "FleetGateAnswer",
    "FleetGateInput",
    "FleetSwitch",
    "HarnessFailure",
]

#: The fleet's control workflow's id when the deployment names none (one per namespace).
DEFAULT_FLEET_ID = "landed-fleet"


# --- consent and do-not-contact (GOV-6) ----------------------------------------------------------
class ConsentInput(BaseModel):
    task_id: str
    contacts: Contacts


class ConsentOutput(BaseModel):
    """The verifier's answer: allowed, or the exact condition that refuses contact."""

    allowed: bool
    condition: str = ""
    checked_by: str = ""


# --- the fleet gate (GOV-4, GOV-10) --------------------------------------------------------------
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


class HarnessFailure(BaseModel):
    """A release reported to the fleet's control workflow; ``key`` makes a re-sent report
    (a retried gate step) count once."""

    queue: Annotated[str, Field(min_length=1, max_length=400)]
    at: datetime
    key: Annotated[str, Field(min_length=1, max_length=400)]
    error: Annotated[str, Field(max_length=500)] = ""


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
