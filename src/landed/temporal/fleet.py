"""The fleet's switch from the operator's side (GOV-4): pause, resume, status.

A flip is a signal-with-start of the control workflow (``LandedFleet``): Temporal accepts it
even while no runner is up, and every runner reads it before its next act. ``flip`` then waits
(bounded) until the switch is read back as flipped, so a returned pause is one every gate sees.
"""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime

from pydantic import BaseModel
from temporalio.client import Client

from landed.governance.fleet import FleetFlip
from landed.governance.fleet_read import SwitchRead, read_switch
from landed.task.gate_messages import DEFAULT_FLEET_ID, FleetSwitch
from landed.task.names import FLEET_FLIP_SIGNAL, FLEET_WORKFLOW

__all__ = ["FlipResult", "SwitchRead", "flip", "read_switch"]


class FlipResult(BaseModel):
    """A flip Temporal accepted; ``confirmed``: a runner has read it back as flipped."""

    fleet_id: str
    flip: FleetFlip
    confirmed: bool
    switch: FleetSwitch | None = None
    note: str = ""


async def flip(
    client: Client,
    *,
    paused: bool,
    by: str,
    reason: str = "",
    fleet_id: str = DEFAULT_FLEET_ID,
    runner_queue: str,
    confirm_within: float = 5.0,
) -> FlipResult:
    """Flip the switch and wait up to ``confirm_within`` seconds to read it back flipped."""
    order = FleetFlip(paused=paused, by=by, reason=reason, at=datetime.now(UTC))
    await client.start_workflow(
        FLEET_WORKFLOW,
        id=fleet_id,
        task_queue=runner_queue,
        start_signal=FLEET_FLIP_SIGNAL,
        start_signal_args=[order],
    )
    until = time.monotonic() + confirm_within
    last: SwitchRead | None = None
    while True:
        last = await read_switch(client, fleet_id)
        sw = last.switch
        applied = sw is not None and sw.at == order.at and sw.by == by and sw.paused == paused
        if applied and not last.pending:
            return FlipResult(fleet_id=fleet_id, flip=order, confirmed=True, switch=sw)
        if time.monotonic() >= until:
            break
        await asyncio.sleep(0.1)
    note = (
        "Temporal accepted the flip, but no runner read it back in time"
        + (f" ({last.error})" if last.error else "")
        + ": it applies when a runner polls the runner queue; no act is dispatched before then, "
        "since every act waits for a runner's gate."
    )
    return FlipResult(fleet_id=fleet_id, flip=order, confirmed=False, switch=last.switch, note=note)


def _line(err: BaseException) -> str:
    return " ".join(f"{type(err).__name__}: {err}".split())[:300]
