"""Dispatching an act attempt (GOV-4, GOV-10): after the fleet's gate, to a healthy harness.

Each dispatch waits at the fleet gate (no act while the fleet is paused): the first before
its claim, a dispatch again after a release right before it. An attempt
whose harness is unavailable (the act raised ``HarnessUnavailable``: expired auth, a usage
limit, an outage) is released: not done, not failed, and not an act attempt of its own. It is
read back first, as after any act error: a release whose write shows settles by that read and
never acts again. Otherwise, after a backoff, it goes to the next healthy actor queue of the
pool (``landed.governance.harness``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from landed.governance.harness import (
        HARNESS_UNAVAILABLE,
        HarnessPool,
        HarnessRelease,
        pool_queues,
        release_backoff,
    )
    from landed.task.decisions import past_cap, remaining
    from landed.task.gate_messages import HarnessFailure
    from landed.task.messages import ActInput, ActReport, Routing
    from landed.task.spec import TaskSpec
    from landed.task.steps import Act

from landed.workflows.errors import beat_identity, cause, is_type
from landed.workflows.fleet import FleetGate
from landed.workflows.state import RunState

__all__ = ["Dispatch"]

# The act runs once per dispatch: a retry behind the workflow's back is the duplicate DOD-10
# forbids (see landed.workflows.acting).
_ACT_ONCE = RetryPolicy(maximum_attempts=1)


class Dispatch:
    """The gate and the harness pool of one task run."""

    def __init__(self, spec: TaskSpec, run: RunState) -> None:
        self._spec, self._run = spec, run
        self.gate = FleetGate(spec.task_id)
        self.pool: HarnessPool | None = None
        # Releases not yet confirmed heard by the fleet (GOV-10: the cool-down is fleet-wide).
        self._unheard: list[HarnessFailure] = []

    def _pool(self, routing: Routing) -> HarnessPool:
        if self.pool is None:
            self.pool = HarnessPool(pool_queues(routing.actor_task_queue, routing.actor_pool))
        return self.pool

    async def act(
        self,
        routing: Routing,
        inp: ActInput,
        started: Callable[[], None],
        read_back: Callable[[str], Awaitable[ActReport | None]],
    ) -> ActReport | ActivityError | str:
        """The act's report; or a report to settle with when it must not run (blocked) or when
        ``read_back`` after a release found a write; or the act's error (an unknown write) for
        the caller; or why no time was left to start it."""
        pool = self._pool(routing)
        deadline = self._run.deadline
        while True:
            if pool.releases:
                # A dispatch again after a release waits at the switch too (the first one
                # waited before its claim: landed.workflows.acting).
                blocked = await self.gate.until_running(deadline, self._unheard)
                if blocked is not None:
                    return blocked
                self._unheard = []
            # Harnesses the fleet took out (other tasks' failures too) are skipped unattempted;
            # the task's own count stays the fallback (landed.governance.harness).
            pool.heard(self.gate.cooling)
            choice = pool.choose(workflow.now())
            if choice.queue is None:
                return pool.none_healthy(choice.cooling, "each one failed too often in a row")
            left = remaining(deadline, workflow.now()) if deadline is not None else None
            if left is None:
                if pool.releases:
                    return pool.none_healthy({}, "the time cap ran out while it was released")
                return f"time cap {self._spec.time_cap} reached before attempt {inp.attempt}"
            started()
            try:
                report: ActReport = await self._execute(inp, choice.queue, left)
            except ActivityError as err:
                if not is_type(err, HARNESS_UNAVAILABLE) or workflow.cancellation_reason():
                    return err
                release = HarnessRelease(
                    queue=choice.queue,
                    actor=err.identity or beat_identity(err.cause),
                    error=cause(err)[:500],
                    at=workflow.now(),
                )
                pool.failed(release)
                self._unheard.append(self._report(release, len(pool.releases)))
                # "Nothing was written" is the harness's word: read back before another harness
                # runs the act, which could write a second copy (DOD-10).
                landed = await read_back(release.error)
                if landed is not None:
                    return landed
                wait = release_backoff(len(pool.releases))
                if past_cap(deadline, workflow.now(), wait):
                    return pool.none_healthy({}, "the time cap ran out while it was released")
                await workflow.sleep(wait)
                continue
            pool.worked(choice.queue)
            return report

    def _report(self, release: HarnessRelease, n: int) -> HarnessFailure:
        """The release as the fleet hears it; its key makes a re-sent report count once."""
        info = workflow.info()
        return HarnessFailure(
            queue=release.queue,
            at=release.at,
            key=f"{info.run_id}/{n}",
            error=release.error,
        )

    async def _execute(self, inp: ActInput, queue: str, left: timedelta) -> ActReport:
        report: ActReport = await workflow.execute_activity_method(
            Act.act,
            inp,
            task_queue=queue,
            schedule_to_close_timeout=left,
            heartbeat_timeout=self._spec.timeouts.act_heartbeat,
            retry_policy=_ACT_ONCE,
            # On a cancel, wait until the actor has stopped (a sync act's thread is finished)
            # before reading back: no write may land after the read.
            cancellation_type=workflow.ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
        )
        return report
