"""Reading plan steps on the verifier: one read per request, probe-errors read again, bounded."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from landed.probes.contract import Observation
    from landed.task.checkable import refused_step
    from landed.task.decisions import past_cap, read_budget, verify_failed
    from landed.task.messages import (
        ReadPhase,
        Routing,
        VerifyInput,
        VerifyOutput,
        VerifyReading,
    )
    from landed.task.readings import ReadScope, answers_request, still_to_read, unobserved
    from landed.task.spec import TaskSpec
    from landed.task.steps import Verify

from landed.workflows.errors import cause, no_verifier_answered
from landed.workflows.state import RunState

__all__ = ["VERIFY_RETRY", "Reader", "chain_run_id"]

# A read is side-effect free, so a lost verifier (crash, timeout) is simply asked again.
VERIFY_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=10),
    maximum_attempts=5,
)


def chain_run_id() -> str:
    """The run id readings are requested and signed under: the run the workflow started as.

    A reset starts a new run that replays the old run's history up to the reset point; its
    readings were signed for the run that asked for them, and judged again under the new
    run's id they would read as "carried over from another run", so the replay would take
    another branch than the history did. Temporal keeps this id across resets (and it is the
    run id itself otherwise). Claims use the run's own id: a reset run is another run there.
    """
    info = workflow.info()
    return info.original_execution_run_id or info.run_id


class Reader:
    """The workflow's reads: ``cancelled(err)`` says an error is this workflow's cancel, which
    ends the read instead of counting as a verifier that could not be reached."""

    def __init__(
        self,
        spec: TaskSpec,
        run: RunState,
        scope: Callable[[Routing], ReadScope],
        cancelled: Callable[[BaseException], bool],
    ) -> None:
        self._spec, self._run, self._scope, self._cancelled = spec, run, scope, cancelled

    async def read(
        self,
        routing: Routing,
        phase: ReadPhase,
        indexes: list[int],
        before: list[Observation | None],
        *,
        attempt: int,
    ) -> dict[int, VerifyReading]:
        """Read plan steps on the verifier; only probe-error re-reads, with backoff, bounded."""
        retry = self._spec.retry
        got: dict[int, VerifyReading] = {}
        todo = list(indexes)
        wait = retry.verify_backoff
        for read in range(1, retry.verify_attempts + 1):
            if read > 1:
                if past_cap(self._run.deadline, workflow.now(), wait):
                    break  # no time left to wait and read again (GOV-4): not observed
                await workflow.sleep(wait)
                wait = wait * 2
            answered = await self._ask(routing, phase, todo, before, attempt, read)
            if isinstance(answered, str):
                for i in todo:
                    got[i] = unobserved(self._scope(routing), i, answered)
                break
            got.update(answered)
            todo = still_to_read(todo, got)
            if not todo:
                break
        for i in todo:
            got.setdefault(i, unobserved(self._scope(routing), i, "verifier returned no reading"))
        return got

    async def _ask(
        self,
        routing: Routing,
        phase: ReadPhase,
        todo: list[int],
        before: list[Observation | None],
        attempt: int,
        read: int,
    ) -> dict[int, VerifyReading] | str:
        """One read of steps ``todo``: the readings that answer it, or why nothing was observed
        (the verifier could not be reached or crashed every time)."""
        spec = self._spec
        # A fresh id per read, signed into each reading: a reading made earlier (a "nothing
        # there" taken before the act, say) or for someone else's request answers nothing.
        request = str(workflow.uuid4())
        # When this read was asked: a workflow task already recorded once the read is answered,
        # so a reading the runner marks not observed carries the same time if the task that
        # grades it runs again (after a stalled runner) and settles the same.
        self._run.asked_at = workflow.now()
        try:
            out = await workflow.execute_activity_method(
                Verify.verify,
                VerifyInput(
                    task_id=spec.task_id,
                    attempt=attempt,
                    phase=phase,
                    contracts=[spec.proof_plan[i] for i in todo],
                    indexes=todo,
                    before=[before[i] for i in todo],
                    read=read,
                    run_id=chain_run_id(),
                    request=request,
                    steps=len(spec.proof_plan),
                    meaning=spec.meaning,
                ),
                task_queue=routing.verifier_task_queue,
                # A verifier nobody runs must not hold the task forever: the read waits for one
                # until the time cap (GOV-4), plus one read's time so an act that ran into the
                # cap can still be reconciled; then it is not observed.
                schedule_to_close_timeout=read_budget(
                    self._run.deadline, workflow.now(), spec.timeouts.verify
                ),
                start_to_close_timeout=spec.timeouts.verify,
                heartbeat_timeout=spec.timeouts.verify_heartbeat,
                retry_policy=VERIFY_RETRY,
            )
        except ActivityError as err:
            if self._cancelled(err):
                raise
            return verify_failed(
                cause(err),
                no_verifier_answered=no_verifier_answered(err),
                queue=routing.verifier_task_queue,
            )
        self._run.verify_spend.add(out)  # the verify phase's cost (GOV-8)
        answers = self._answers(routing, out, todo, request)
        if phase in ("before", "frame-before"):
            # A pre-read the verifier's configuration refuses: nothing can check this task.
            self._run.refused += [
                refused_step(phase, i, r.observation.message)
                for i, r in sorted(answers.items())
                if r.refused
            ]
        return answers

    def _answers(
        self, routing: Routing, out: VerifyOutput, todo: list[int], request: str
    ) -> dict[int, VerifyReading]:
        """The readings of steps ``todo``, each not observed unless it answers ``request``."""
        answers: dict[int, VerifyReading] = {}
        for reading in out.readings:
            if reading.index in todo:
                why = answers_request(reading, request)
                answers[reading.index] = (
                    reading if why is None else unobserved(self._scope(routing), reading.index, why)
                )
        return answers
