"""LandedPreflight: asks the running actor and verifier, before a task starts, whether they
can run and check it (``landed.task.checkable``). Nothing is acted, read or settled here."""

from __future__ import annotations

import asyncio
from datetime import timedelta

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
        silent_role,
    )
    from landed.task.steps import ActorAnswers, RunnerAnswers, VerifierAnswers

from landed.workflows.errors import cause

__all__ = ["LandedPreflight"]

# Asking is side-effect free: a lost answer is asked again, inside the caller's short wait.
_ASK_RETRY = RetryPolicy(initial_interval=timedelta(milliseconds=200), maximum_attempts=3)


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
            workflow.execute_activity_method(
                ActorAnswers.act_known,
                ActKnownInput(act=inp.act),
                task_queue=queues.actor,
                schedule_to_close_timeout=wait,
                retry_policy=_ASK_RETRY,
            ),
            workflow.execute_activity_method(
                VerifierAnswers.check_config,
                inp.config,
                task_queue=queues.verifier,
                schedule_to_close_timeout=wait,
                retry_policy=_ASK_RETRY,
            ),
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
