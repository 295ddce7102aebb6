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

from landed.governance.fleet_read import read_switch
from landed.task.gate_messages import FleetGateAnswer, FleetGateInput, HarnessFailure
from landed.task.names import FLEET_GATE_ACTIVITY, FLEET_HARNESS_SIGNAL, FLEET_WORKFLOW

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
        cooling = read.harnesses.cool_until if read.harnesses is not None else {}
        return FleetGateAnswer(
            may_act=read.running,
            fleet_id=self.fleet_id,
            switch=read.switch,
            unreadable=unreadable,
            cooling=cooling,
        )

    async def report(self, failure: HarnessFailure, runner_queue: str) -> None:
        """Tell the control workflow of a harness release (signal-with-start: a fleet never
        flipped has no workflow yet). The fleet counts each key once, so a retry may re-send."""
        await self._client.start_workflow(
            FLEET_WORKFLOW,
            id=self.fleet_id,
            task_queue=runner_queue,
            start_signal=FLEET_HARNESS_SIGNAL,
            start_signal_args=[failure],
        )


class FleetActivities:
    """The gate, with the runner's own Temporal client."""

    def __init__(self, client: Client, fleet_id: str) -> None:
        self._reader = SwitchReader(client, fleet_id)

    @activity.defn(name=FLEET_GATE_ACTIVITY)
    async def gate(self, inp: FleetGateInput) -> FleetGateAnswer:
        """May the task act now? Waits up to ``inp.wait_s`` for a paused switch to resume."""
        until = time.monotonic() + inp.wait_s
        # Releases first: the read below starts after them, so it waits until the fleet has
        # applied them (a pending signal reads as not running) and answers their cool-downs.
        for failure in inp.failures:
            await self._reader.report(failure, activity.info().task_queue)
        while True:
            answer = await self._reader.fresh()
            if answer.may_act or time.monotonic() >= until:
                return answer
            activity.heartbeat()
            await asyncio.sleep(READ_EVERY_S)
