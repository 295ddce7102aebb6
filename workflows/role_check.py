"""LandedPreflight: asks the running actor and verifier, before a task starts, whether they
can run and check it (``landed.task.checkable``), on their role check queues, where no running
act or read holds an answer back. Nothing is acted, read or settled here."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from landed.task.checkable import (
        PREFLIGHT_WORKFLOW,
        ActKnownInput,
        ActKnownOutput,
        PreflightInput,
        PreflightOutput,
        RoleQueues,
        check_queue,
        silent_role,
    )
    from landed.task.steps import ActorAnswers, RunnerAnswers, VerifierAnswers

from temporalio.exceptions import TimeoutError as ActivityTimeout
from temporalio.exceptions import TimeoutType

from landed.workflows.errors import cause

__all__ = ["LandedPreflight"]

# Asking is side-effect free: a lost answer is asked again, inside the caller's short wait.
_ASK_RETRY = RetryPolicy(initial_interval=timedelta(milliseconds=200), maximum_attempts=3)
#: How long an ask waits on a role's check queue to be picked up before it is asked on the
#: role's task queue instead: a role of an earlier release polls no check queue (the roles
#: need not be upgraded together). An idle check queue hands an ask over at once.
_PICKUP = timedelta(seconds=5)


async def _ask(step: Callable[[Any, Any], Any], arg: Any, queue: str, wait: timedelta) -> Any:
    """The role's answer from its check queue, else (nobody picked it up) from its task queue,
    within ``wait`` in all."""
    started = workflow.now()
    try:
        return await workflow.execute_activity_method(
            step,
            arg,
            task_queue=check_queue(queue),
            schedule_to_close_timeout=wait,
            schedule_to_start_timeout=min(_PICKUP, wait / 2),
            retry_policy=_ASK_RETRY,
        )
    except ActivityError as exc:
        late = exc.cause
        if not (isinstance(late, ActivityTimeout) and late.type == TimeoutType.SCHEDULE_TO_START):
            raise
    left = max(wait - (workflow.now() - started), timedelta(seconds=1))
    return await workflow.execute_activity_method(
        step, arg, task_queue=queue, schedule_to_close_timeout=left, retry_policy=_ASK_RETRY
    )


@workflow.defn(name=PREFLIGHT_WORKFLOW)
class LandedPreflight:
    """The runner knows where its actor and verifier listen; each answers for itself."""

    @workflow.run
    async def run(self, inp: PreflightInput) -> PreflightOutput:
        queues: RoleQueues = await workflow.execute_local_activity_method(
            RunnerAnswers.queues,
            start_to_close_timeout=timedelta(seconds=5),
        )
        wait = timedelta(seconds=inp.timeout_s)
        asked = await asyncio.gather(
            _ask(ActorAnswers.act_known, ActKnownInput(act=inp.act), queues.actor, wait),
            _ask(VerifierAnswers.check_config, inp.config, queues.verifier, wait),
            return_exceptions=True,
        )
        out = PreflightOutput(queues=queues)
        for role, queue, answer in zip(
            ("actor", "verifier"), (queues.actor, queues.verifier), asked, strict=True
        ):
            if isinstance(answer, ActivityError):
                out.silent.append(silent_role(role, queue, inp.timeout_s, cause(answer)))
            elif isinstance(answer, BaseException):
                raise answer
            elif isinstance(answer, ActKnownOutput):
                out.problems.extend([answer.problem] if answer.problem else [])
                out.acts = answer.registered
            else:
                out.problems.extend(answer.problems)
        return out
