"""The fleet's kill switch (GOV-4): the control workflow, and the gate each act waits at.

``LandedFleet`` (one per namespace, a fixed id) holds the switch: a signal flips it (accepted
by Temporal even while no runner is up), a query reads it, and it continues as new so its
history stays short. Before every act dispatch the task asks the runner's gate step, which
reads the switch (the workflow's memo; a flip Temporal accepted but no runner applied yet
reads as not running); a paused
task waits there, durably, and never acts until the switch reads running again.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from landed.governance.fleet import (
        FleetFlip,
        apply_flip,
        blocked_by_switch,
        pause_wait,
    )
    from landed.governance.fleet_read import HARNESS_MEMO, SWITCH_MEMO
    from landed.governance.harness import HarnessHealth, fleet_failed
    from landed.task.decisions import past_cap
    from landed.task.gate_messages import (
        FleetGateAnswer,
        FleetGateInput,
        FleetSwitch,
        HarnessFailure,
    )
    from landed.task.messages import ActReport
    from landed.task.names import (
        FLEET_FLIP_SIGNAL,
        FLEET_HARNESS_SIGNAL,
        FLEET_SWITCH_QUERY,
        FLEET_WORKFLOW,
    )
    from landed.task.steps import FleetGateStep

from landed.workflows.errors import cause
from landed.workflows.versions import FLEET_GATE_PATCH

__all__ = ["FLEET_GATE_PATCH", "Fleet", "FleetGate"]

# Flips one run of the control workflow takes before it continues as new.
_FLIPS_PER_RUN = 500
# The gate step waits for a resume itself; a lost runner is noticed by its heartbeat.
_GATE_WAIT_S = 30.0
_GATE_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1), maximum_interval=timedelta(seconds=5)
)


@workflow.defn(name=FLEET_WORKFLOW)
class Fleet:
    """The switch. Started by the first flip (signal-with-start); never ends by itself."""

    @workflow.init
    def __init__(
        self, switch: FleetSwitch | None = None, harnesses: HarnessHealth | None = None
    ) -> None:
        self._switch = switch or FleetSwitch()
        self._harnesses = harnesses or HarnessHealth()
        self._flips_this_run = 0

    @workflow.signal(name=FLEET_FLIP_SIGNAL)
    def flip(self, flip: FleetFlip) -> None:
        self._switch = apply_flip(self._switch, flip, workflow.now())
        self._flips_this_run += 1
        # The gates read the memo (Temporal answers that alone), not a query.
        workflow.upsert_memo({SWITCH_MEMO: self._switch})

    @workflow.signal(name=FLEET_HARNESS_SIGNAL)
    def harness_failed(self, failure: HarnessFailure) -> None:
        """A task's harness was unavailable: counted fleet-wide (GOV-10), so a harness that
        keeps failing is skipped by every task's next dispatch, not learned task by task."""
        self._harnesses = fleet_failed(self._harnesses, failure)
        self._flips_this_run += 1
        workflow.upsert_memo({HARNESS_MEMO: self._harnesses})

    @workflow.query(name=FLEET_SWITCH_QUERY)
    def switch(self) -> FleetSwitch:
        return self._switch

    @workflow.run
    async def run(
        self, switch: FleetSwitch | None = None, harnesses: HarnessHealth | None = None
    ) -> None:
        await workflow.wait_condition(
            lambda: (
                self._flips_this_run >= _FLIPS_PER_RUN
                or workflow.info().is_continue_as_new_suggested()
            )
        )
        await workflow.wait_condition(workflow.all_handlers_finished)
        workflow.continue_as_new(
            args=[self._switch, self._harnesses],
            memo={SWITCH_MEMO: self._switch, HARNESS_MEMO: self._harnesses},
        )


class FleetGate:
    """The wait before an act: until the switch reads running, or the time cap passes."""

    def __init__(self, task_id: str) -> None:
        self._task_id = task_id
        #: The last answer that kept the task from acting (None: it never waited).
        self.paused: FleetGateAnswer | None = None
        #: The fleet's cool-downs as the last answer that let the task act read them (GOV-10).
        self.cooling: dict[str, datetime] = {}

    async def until_running(
        self, deadline: datetime | None, failures: list[HarnessFailure] | None = None
    ) -> ActReport | None:
        """None when the act may be dispatched now; else the blocked report to settle with
        (the time cap passed while the fleet was paused or its switch unreadable).
        ``failures``: harness releases the fleet is told of (each ask carries them; the
        fleet counts each key once)."""
        if not workflow.patched(FLEET_GATE_PATCH):
            return None
        began = workflow.now()
        while True:
            answer = await self._ask(deadline, failures or [])
            if answer.may_act:
                self.cooling = answer.cooling
                return None
            self.paused = answer
            wait = pause_wait(workflow.now() - began)
            if past_cap(deadline, workflow.now(), wait):
                return blocked_by_switch(answer)
            await workflow.sleep(wait)

    async def _ask(
        self, deadline: datetime | None, failures: list[HarnessFailure]
    ) -> FleetGateAnswer:
        left = (deadline - workflow.now()) if deadline is not None else timedelta(hours=1)
        wait_s = max(min(_GATE_WAIT_S, left.total_seconds() - 2), 0.0)
        try:
            answer: FleetGateAnswer = await workflow.execute_activity_method(
                FleetGateStep.gate,
                FleetGateInput(task_id=self._task_id, wait_s=wait_s, failures=failures),
                # The runner's own queue: the gate is the runner's step.
                task_queue=workflow.info().task_queue,
                start_to_close_timeout=timedelta(seconds=wait_s + 15),
                schedule_to_close_timeout=max(left, timedelta(seconds=1)),
                heartbeat_timeout=timedelta(seconds=10),
                retry_policy=_GATE_RETRY,
            )
        except ActivityError as err:
            if workflow.cancellation_reason() is not None:
                raise
            # No answer is no permission (fail closed): the task waits and asks again.
            return FleetGateAnswer(may_act=False, unreadable=cause(err))
        return answer
