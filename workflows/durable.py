"""The read-back made durable: late steps read again within their settle window, a passing
read-back confirmed by a second read after a quiet interval, and the recheck scheduled.

Orchestration only: which steps to read again, how long to wait and what a change means are
``landed.task.durability``'s plain functions.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

from temporalio import workflow
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.workflow import ParentClosePolicy

with workflow.unsafe.imports_passed_through():
    from landed.receipts.model import Receipt
    from landed.task.decisions import past_cap
    from landed.task.durability import (
        RecheckInput,
        all_pass,
        confirm_wait,
        landing_wait,
        not_landed_yet,
        recheck_workflow_id,
        unconfirmed_findings,
    )
    from landed.task.messages import Routing, VerifyReading
    from landed.task.names import RECHECK_WORKFLOW
    from landed.task.spec import TaskSpec

from landed.workflows.reads import Reader
from landed.workflows.state import RunState
from landed.workflows.versions import DURABLE_PATCH

__all__ = ["DURABLE_PATCH", "Durable", "Held"]


# The first wait before reading a late step again, when the task's verify_backoff is shorter:
# a zero backoff would read as fast as the verifier answers for the whole window.
_LEAST_BACKOFF = timedelta(milliseconds=100)

#: A reading held to its plan step (``AgentTask._independent`` with the run's routing).
Held = Callable[[VerifyReading, Routing], VerifyReading]


class Durable:
    """What the read-back adds before the task may settle as done, and the recheck after."""

    def __init__(self, spec: TaskSpec, run: RunState, reader: Reader, hold: Held) -> None:
        self._spec, self._run, self._reader, self._hold = spec, run, reader, hold
        self.unconfirmed: tuple[str, ...] = ()
        self.record: dict[str, object] | None = None

    async def read_back(
        self,
        routing: Routing,
        attempt: int,
        first: dict[int, VerifyReading],
        started: datetime,
    ) -> dict[int, VerifyReading]:
        """The readings the task settles on, held to their steps: late steps read again
        within their window, then every step read again after the quiet interval if all
        passed. ``started``: when the act returned (settle windows count from it)."""
        steps = len(self._spec.proof_plan)
        held = {i: self._hold(first[i], routing) for i in range(steps)}
        held, waited = await self._until_landed(routing, attempt, held, started)
        record: dict[str, object] = {"settle_waited_s": waited.total_seconds()}
        if routing.confirm_reads and all_pass(held, steps):
            held = await self._confirm(routing, attempt, held, record)
        self.record = record
        return held

    async def _until_landed(
        self,
        routing: Routing,
        attempt: int,
        held: dict[int, VerifyReading],
        started: datetime,
    ) -> tuple[dict[int, VerifyReading], timedelta]:
        """Read empty and mismatch steps again, with backoff, while their window is open."""
        backoff = max(self._spec.retry.verify_backoff, _LEAST_BACKOFF)
        waited = timedelta(0)
        while True:
            elapsed = workflow.now() - started
            pending = not_landed_yet(self._spec, held, elapsed)
            if not pending:
                return held, waited
            wait = landing_wait(self._spec, pending, elapsed, backoff)
            if past_cap(self._run.deadline, workflow.now(), wait):
                return held, waited  # the time cap comes first (GOV-4): settle as read
            if wait > timedelta(0):
                await workflow.sleep(wait)
            again = await self._reader.read(
                routing, "after", pending, self._run.before, attempt=attempt
            )
            held.update({i: self._hold(again[i], routing) for i in pending})
            waited = workflow.now() - started
            backoff = backoff * 2

    async def _confirm(
        self,
        routing: Routing,
        attempt: int,
        held: dict[int, VerifyReading],
        record: dict[str, object],
    ) -> dict[int, VerifyReading]:
        """Every step read again after the quiet interval; the task settles on this second
        reading, and any step that reads otherwise than the first is unconfirmed."""
        every = sorted(held)
        wait = confirm_wait(self._spec, every)
        record["confirm_after_s"] = wait.total_seconds()
        if past_cap(self._run.deadline, workflow.now(), wait):
            # No time left to confirm under the time cap: a pass that was not confirmed is
            # not done (fail closed).
            self.unconfirmed = (
                "unconfirmed: the time cap left no time for the confirmation read "
                f"({wait.total_seconds():g} s); an outcome not confirmed is not done",
            )
            record["confirmed"] = False
            return held
        if wait > timedelta(0):
            await workflow.sleep(wait)
        again = await self._reader.read(routing, "after", every, self._run.before, attempt=attempt)
        second = {i: self._hold(again[i], routing) for i in every}
        self.unconfirmed = unconfirmed_findings(self._spec, held, second, wait)
        record["confirmed"] = not self.unconfirmed
        return second

    async def schedule_recheck(self, routing: Routing, final: Receipt, actors: list[str]) -> None:
        """Start the task's recheck when it asks for one and settled verified: a workflow of
        its own (abandoned by this one), so the task's result is not held for the horizon."""
        horizon = self._spec.durability.recheck_after
        if horizon is None or final.verdict != "verified":
            return
        try:
            await self._start_recheck(routing, final, actors, horizon)
        except WorkflowAlreadyStartedError:
            # A run reset after its settle starts it again: the one already started stands.
            return

    async def _start_recheck(
        self, routing: Routing, final: Receipt, actors: list[str], horizon: timedelta
    ) -> None:
        await workflow.start_child_workflow(
            RECHECK_WORKFLOW,
            RecheckInput(
                spec=self._spec,
                routing=routing,
                before=list(self._run.before),
                attempt=max(self._run.attempt, 1),
                settled=final,
                actors=actors,
                # What the recheck compares each frame with (an input only: replays as before).
                frames_before=list(self._run.frames_before),
            ),
            id=recheck_workflow_id(self._spec.task_id),
            parent_close_policy=ParentClosePolicy.ABANDON,
            # A recheck that cannot finish (no verifier for days) must not live forever.
            execution_timeout=horizon + self._spec.time_cap,
        )
