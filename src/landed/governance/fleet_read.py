"""Reading the fleet's switch from Temporal, for the runner's gate and for ``landed status``.

The control workflow writes the switch into its memo with every flip, so a read is one
``describe`` answered by Temporal alone: no runner has to replay anything, and a thousand
waiting gates cost no workflow tasks. A flip Temporal accepted but no runner has applied yet
(the runner was down) shows as a pending workflow task: the switch is then unknown and reads
as not running (fail closed) until it is applied.
"""

from __future__ import annotations

from pydantic import BaseModel
from temporalio.api.enums.v1 import WorkflowExecutionStatus
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from landed.governance.harness import HarnessHealth
from landed.task.gate_messages import FleetSwitch

__all__ = ["HARNESS_MEMO", "SWITCH_MEMO", "SwitchRead", "read_switch"]

#: The memo key the control workflow keeps the switch under.
SWITCH_MEMO = "landed-switch"
#: The memo key of the fleet's harness health (cool-downs, GOV-10).
HARNESS_MEMO = "landed-harnesses"
_RUNNING = WorkflowExecutionStatus.WORKFLOW_EXECUTION_STATUS_RUNNING


class SwitchRead(BaseModel):
    """The switch as read now. ``exists`` False: never flipped (running). ``pending``: a flip
    Temporal accepted is not applied yet. ``error``: nothing could be read."""

    fleet_id: str
    switch: FleetSwitch | None = None
    exists: bool = True
    pending: bool = False
    error: str | None = None
    #: The fleet's harness health (None: no harness failure reported yet).
    harnesses: HarnessHealth | None = None

    @property
    def running(self) -> bool:
        """Known to be running: read, applied, not paused."""
        return (
            self.error is None
            and not self.pending
            and self.switch is not None
            and not self.switch.paused
        )


async def read_switch(client: Client, fleet_id: str) -> SwitchRead:
    try:
        desc = await client.get_workflow_handle(fleet_id).describe()
    except RPCError as err:
        if err.status == RPCStatusCode.NOT_FOUND:
            # Never flipped in this namespace: a known state (running), not an unread one.
            return SwitchRead(fleet_id=fleet_id, switch=FleetSwitch(), exists=False)
        return SwitchRead(fleet_id=fleet_id, error=_line(err))
    except Exception as err:  # Temporal unreachable, a refused call
        return SwitchRead(fleet_id=fleet_id, error=_line(err))
    raw = desc.raw_description
    try:
        switch = await desc.memo_value(SWITCH_MEMO, None, type_hint=FleetSwitch)
        harnesses = await desc.memo_value(HARNESS_MEMO, None, type_hint=HarnessHealth)
    except Exception as err:  # a memo this release cannot read
        return SwitchRead(fleet_id=fleet_id, error=_line(err))
    # Flips are accepted as signals; one not yet applied leaves a workflow task pending.
    pending = raw.HasField("pending_workflow_task") or (
        raw.workflow_execution_info.status != _RUNNING
    )
    return SwitchRead(
        fleet_id=fleet_id, switch=switch or FleetSwitch(), pending=pending, harnesses=harnesses
    )


def _line(err: BaseException) -> str:
    return " ".join(f"{type(err).__name__}: {err}".split())[:300]
