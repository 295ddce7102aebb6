"""The runner's gate step (GOV-4): reads the fleet switch before an act is dispatched.

A paused switch holds the step (heartbeating) until it reads running again or the step's own
wait ends, so a resume lets waiting tasks act within a read interval. Every waiting step of
this runner shares one read in flight (a describe, answered by Temporal alone): a thousand
paused tasks cost one read per interval.
"""

from __future__ import annotations

import asyncio
import time

from temporalio import activity
from temporalio.client import Client

from landed.task.fleet import FleetGateAnswer, FleetGateInput
from landed.task.fleet_read import read_switch
from landed.task.names import FLEET_GATE_ACTIVITY

__all__ = ["FleetActivities", "SwitchReader"]

#: How often a waiting gate reads the switch again.
READ_EVERY_S = 0.25


class SwitchReader:
    """Reads the switch; a caller gets a read that started after it asked (never an older
    one, which could predate a pause), shared with every caller waiting at the same time."""

    def __init__(self, client: Client, fleet_id: str) -> None:
        self._client, self.fleet_id = client, fleet_id
        self._task: asyncio.Task[FleetGateAnswer] | None = None
        self._started = 0.0

    async def fresh(self) -> FleetGateAnswer:
        asked = time.monotonic()
        while True:
            task = self._task
            if task is not None and self._started >= asked:
                return await asyncio.shield(task)
            if task is None or task.done():
                self._started = time.monotonic()
                self._task = asyncio.ensure_future(self._read())
                continue
            await asyncio.wait([task])  # an older read: wait for it to end, then read anew

    async def _read(self) -> FleetGateAnswer:
        read = await read_switch(self._client, self.fleet_id)
        unreadable = read.error
        if unreadable is None and read.pending:
            unreadable = "a flip of the switch is not applied yet (no runner has run it)"
        return FleetGateAnswer(
            may_act=read.running, fleet_id=self.fleet_id, switch=read.switch, unreadable=unreadable
        )


class FleetActivities:
    """The gate, with the runner's own Temporal client."""

    def __init__(self, client: Client, fleet_id: str) -> None:
        self._reader = SwitchReader(client, fleet_id)

    @activity.defn(name=FLEET_GATE_ACTIVITY)
    async def gate(self, inp: FleetGateInput) -> FleetGateAnswer:
        """May the task act now? Waits up to ``inp.wait_s`` for a paused switch to resume."""
        until = time.monotonic() + inp.wait_s
        while True:
            answer = await self._reader.fresh()
            if answer.may_act or time.monotonic() >= until:
                return answer
            activity.heartbeat()
            await asyncio.sleep(READ_EVERY_S)
