"""Before a task starts, ask the running roles whether they can run and check it: no act
without a check that can run. The rule is ``landed.task.checkable``; the asking is the
runner's LandedPreflight workflow, which asks the actor and the verifier. Each role answers on its
role check queue (``landed.task.checkable.check_queue``), served by a worker of its own slots, so
a role busy with tasks still answers at once."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable
from datetime import timedelta

from temporalio.client import Client as TemporalClient
from temporalio.client import WorkflowFailureError

from landed.task.checkable import (
    PREFLIGHT_WORKFLOW,
    PreflightInput,
    PreflightOutput,
    cache_key,
    check_queue,
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
#: Past this much of its life a positive answer is asked again in the background while it is
#: still used: under steady load the starts then never wait for the ask.
_REFRESH_AFTER_S = _KEEP_S / 2


class TaskRefused(ValueError):
    """The task was not started: a role cannot run or check it, or did not answer. The
    message names each problem and its fix."""


class RoleCheck:
    """One client's asking, with its short-lived cache of positive answers."""

    def __init__(
        self,
        temporal: TemporalClient,
        task_queue: str,
        wait_s: float = ROLE_WAIT_S,
        clock: Callable[[], float] = time.monotonic,
    ):
        self._temporal, self._queue, self._wait_s = temporal, task_queue, wait_s
        self._clock = clock
        self._passed: dict[str, float] = {}
        # One ask per key at a time: tasks started together share it, not one workflow each.
        self._asking: dict[str, asyncio.Future[PreflightOutput]] = {}

    async def check(self, spec: TaskSpec) -> None:
        """Return when every role answered that it can run and check ``spec``; TaskRefused
        (with the fix) otherwise."""
        inp = to_check(spec).model_copy(update={"timeout_s": self._wait_s})
        key = cache_key(inp)
        until = self._passed.get(key, 0.0)
        left = until - self._clock()
        if left > 0:
            if left < _KEEP_S - _REFRESH_AFTER_S and key not in self._asking:
                self._shared(key, inp).add_done_callback(lambda f: self._refreshed(key, f))
            return
        out = await asyncio.shield(self._shared(key, inp))
        if out.problems or out.silent:
            raise TaskRefused(refusal_text(spec.task_id, out.problems, out.silent))
        self._keep(key)

    def _keep(self, key: str) -> None:
        now = self._clock()
        if len(self._passed) > 1000:
            self._passed = {k: t for k, t in self._passed.items() if t > now}
        self._passed[key] = now + _KEEP_S

    def _refreshed(self, key: str, asked: asyncio.Future[PreflightOutput]) -> None:
        """A background ask's answer: a positive one is kept anew; any other drops the kept
        one, so the next start asks (and hears the refusal) itself."""
        out = None if asked.cancelled() or asked.exception() else asked.result()
        if out is not None and not (out.problems or out.silent):
            self._keep(key)
        else:
            self._passed.pop(key, None)

    def _shared(self, key: str, inp: PreflightInput) -> asyncio.Future[PreflightOutput]:
        """The ask in flight for ``key``, started if none is; callers shield it, so one that
        gives up does not cancel the others' ask."""
        asking = self._asking.get(key)
        if asking is None:
            asking = asyncio.ensure_future(self._ask(inp))
            self._asking[key] = asking
            asking.add_done_callback(lambda _: self._asking.pop(key, None))
        return asking

    async def _ask(self, inp: PreflightInput) -> PreflightOutput:
        try:
            out: PreflightOutput = await self._temporal.execute_workflow(
                PREFLIGHT_WORKFLOW,
                inp,
                id=f"landed-preflight-{uuid.uuid4().hex}",
                task_queue=check_queue(self._queue),
                result_type=PreflightOutput,
                execution_timeout=timedelta(seconds=self._wait_s * 2 + 2),
            )
        except WorkflowFailureError as exc:
            why = f"{type(exc.cause or exc).__name__}: {exc.cause or exc}"
            return PreflightOutput(silent=[silent_role("runner", self._queue, self._wait_s, why)])
        return out
