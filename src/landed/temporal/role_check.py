"""Before a task starts, ask the running roles whether they can run and check it: no act
without a check that can run. The rule is ``landed.task.checkable``; the asking is the
runner's LandedPreflight workflow, which asks the actor and the verifier on their queues."""

from __future__ import annotations

import asyncio
import time
import uuid
from datetime import timedelta

from temporalio.client import Client as TemporalClient
from temporalio.client import WorkflowFailureError

from landed.task.checkable import (
    PREFLIGHT_WORKFLOW,
    PreflightInput,
    PreflightOutput,
    cache_key,
    refusal_text,
    silent_role,
    to_check,
)
from landed.task.spec import TaskSpec

__all__ = ["ROLE_WAIT_S", "RoleCheck", "TaskRefused"]

#: How long each role has to answer; past it the role is named as not running. Generous: a
#: role that is up but slow (a loaded machine, a server catching up) must not turn a start away;
#: an absent role costs the caller this long once, and is then named.
ROLE_WAIT_S = 30.0
#: How long a positive answer is reused for the same act and probes (a role redeployed in
#: between is still caught inside the workflow, before any act).
_KEEP_S = 10.0


class TaskRefused(ValueError):
    """The task was not started: a role cannot run or check it, or did not answer. The
    message names each problem and its fix."""


class RoleCheck:
    """One client's asking, with its short-lived cache of positive answers."""

    def __init__(self, temporal: TemporalClient, task_queue: str, wait_s: float = ROLE_WAIT_S):
        self._temporal, self._queue, self._wait_s = temporal, task_queue, wait_s
        self._passed: dict[str, float] = {}
        # One ask per key at a time: tasks started together share it, not one workflow each.
        self._asking: dict[str, asyncio.Future[PreflightOutput]] = {}

    async def check(self, spec: TaskSpec) -> None:
        """Return when every role answered that it can run and check ``spec``; TaskRefused
        (with the fix) otherwise."""
        inp = to_check(spec).model_copy(update={"timeout_s": self._wait_s})
        key = cache_key(inp)
        now = time.monotonic()
        if self._passed.get(key, 0.0) > now:
            return
        out = await self._shared(key, inp)
        if out.problems or out.silent:
            raise TaskRefused(refusal_text(spec.task_id, out.problems, out.silent))
        if len(self._passed) > 1000:
            self._passed = {k: t for k, t in self._passed.items() if t > now}
        self._passed[key] = now + _KEEP_S

    async def _shared(self, key: str, inp: PreflightInput) -> PreflightOutput:
        asking = self._asking.get(key)
        if asking is None:
            asking = asyncio.ensure_future(self._ask(inp))
            self._asking[key] = asking
            asking.add_done_callback(lambda _: self._asking.pop(key, None))
        # A caller that gives up does not cancel the others' ask.
        return await asyncio.shield(asking)

    async def _ask(self, inp: PreflightInput) -> PreflightOutput:
        try:
            out: PreflightOutput = await self._temporal.execute_workflow(
                PREFLIGHT_WORKFLOW,
                inp,
                id=f"landed-preflight-{uuid.uuid4().hex}",
                task_queue=self._queue,
                result_type=PreflightOutput,
                execution_timeout=timedelta(seconds=self._wait_s * 2 + 2),
            )
        except WorkflowFailureError as exc:
            why = f"{type(exc.cause or exc).__name__}: {exc.cause or exc}"
            return PreflightOutput(silent=[silent_role("runner", self._queue, self._wait_s, why)])
        return out
