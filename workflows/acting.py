"""The act's attempts: claim each, run it once, and after an error read back before anything
else (DOD-10). Orchestration only: what an answer means is decided in ``landed.task.decisions``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import datetime, timedelta

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from landed.probes.contract import Observation
    from landed.task.assemble import unknown_write_report
    from landed.task.checkable import UNKNOWN_ACT
    from landed.task.decisions import judge_claim, reconcile, remaining
    from landed.task.messages import (
        ActInput,
        ActReport,
        ClaimOutput,
        Routing,
        Step,
        VerifyReading,
    )
    from landed.task.names import APPROVAL_REQUIRED, CLAIM_OF_ANOTHER_RUN
    from landed.task.spec import TaskSpec

from landed.workflows.claims import claim
from landed.workflows.errors import LOCAL_GAVE_UP, beat_identity, cause, is_type, refused_for
from landed.workflows.harness import Dispatch
from landed.workflows.reads import Reader
from landed.workflows.state import ActFacts, RunState
from landed.workflows.versions import RELEASE_READS_BACK, UNKNOWN_ACT_PATCH

__all__ = ["Attempts"]

#: Holds a reading to its step, made by another identity than the act's (DOD-2).
Independent = Callable[..., VerifyReading]


class Attempts:
    """The act's attempts of one run; what they learn goes into ``act`` for the verdict."""

    def __init__(
        self,
        spec: TaskSpec,
        run: RunState,
        act: ActFacts,
        reader: Reader,
        *,
        digest: str,
        cancelled: Callable[[BaseException], bool],
        independent: Independent,
    ) -> None:
        self._spec, self._run, self._act, self._reader = spec, run, act, reader
        self._digest, self._cancelled, self._independent = digest, cancelled, independent
        # The fleet gate and the harness pool every act dispatch goes through.
        self.dispatch = Dispatch(spec, run)
        # The readings of a read-back after a release that found a write (settled by them).
        self._release_reads: dict[int, VerifyReading] | None = None

    async def until_known(
        self,
        spec: TaskSpec,
        routing: Routing,
        before: list[Observation | None],
        deadline: datetime,
    ) -> tuple[ActReport, dict[int, VerifyReading] | None]:
        """Run the act; after an error or timeout, read back before anything else (DOD-10).

        Returns the report and, when a reconciling read already happened, its readings.
        """
        last: dict[int, VerifyReading] | None = None
        error = ""
        for attempt in range(1, spec.retry.act_attempts + 1):
            if workflow.cancellation_reason() is not None:
                self._act.error = self._act.error or (error or None)
                raise asyncio.CancelledError  # no act starts after a cancel
            self._run.step = Step.ACT
            began = await self._begin_attempt(spec, routing, attempt, deadline)
            if isinstance(began, ActReport):
                return began, None  # another run got this far, or settled it: do not act
            if isinstance(began, str):
                error = began  # no attempt can start: what earlier ones wrote is read back
                break
            answer = await self._attempt_act(spec, routing, attempt, began, before)
            if isinstance(answer, ActReport):
                return answer, self._release_reads
            error = answer
            if not spec.proof_plan:
                # No read-back declared: whether the write landed cannot be known, so running
                # the act again could duplicate it. Settle as failed instead (DOD-10).
                break
            report, last = await self._reconcile(routing, before, attempt, error)
            if report is not None:
                return report, last
            # Nothing landed: the next attempt carries the same idempotency key.
        self._act.error = error
        return ActReport(claimed_status="failed", report=f"act did not complete: {error}"), last

    async def _begin_attempt(
        self, spec: TaskSpec, routing: Routing, attempt: int, deadline: datetime
    ) -> timedelta | ActReport | str:
        """Claim act attempt ``attempt``: the time it may take; else the report to settle with
        when it must not act, or why no attempt can start (the time cap, the ledger)."""
        cap_reached = f"time cap {self._run.cap or spec.time_cap} reached before attempt {attempt}"
        # The fleet's switch first (GOV-4): a paused task claims nothing and waits here, so its
        # claim and its act stay in one workflow task once it may act.
        blocked = await self.dispatch.gate.until_running(deadline)
        if blocked is not None:
            return blocked
        left = remaining(deadline, workflow.now())
        if left is None:
            return cap_reached
        try:
            may_act = await self._may_act(spec, routing, attempt, left)
        # A claim that gave up (any of its errors); a reused id still fails the task.
        except LOCAL_GAVE_UP as err:
            if self._cancelled(err) or is_type(err, "TaskIdReused"):
                raise
            # The ledger could not record the claim: no act without one. What an earlier
            # attempt wrote is read back and settled like any other end of the attempts.
            return f"the act's claim could not be recorded before attempt {attempt}: {cause(err)}"
        if not may_act:
            return unknown_write_report()
        # The claim step took some of the time.
        return remaining(deadline, workflow.now()) or cap_reached

    async def _attempt_act(
        self,
        spec: TaskSpec,
        routing: Routing,
        attempt: int,
        left: timedelta,
        before: list[Observation | None],
    ) -> ActReport | str:
        """Run act attempt ``attempt``: its report, or the error it ended with (the write is
        unknown then, and is read back before anything else). It waits at the fleet gate and
        goes to a healthy harness first (``landed.workflows.harness``)."""

        def started() -> None:
            # Only an attempt that starts is one: the receipt's attempt is the act's last run.
            self._run.attempt = attempt

        async def read_back(error: str) -> ActReport | None:
            """After a release, before another harness acts: what an act error gets."""
            if not spec.proof_plan:
                return None  # nothing to read: the harness's own word is all there is
            # A run that released before this read was added replays as it ran (unversioned
            # workers; a pinned deployment keeps it on its own build anyway).
            if not workflow.patched(RELEASE_READS_BACK):
                return None
            report, held = await self._reconcile(routing, before, attempt, error)
            self._run.step = Step.ACT
            if report is not None:
                self._release_reads = held
            return report

        inp = ActInput(
            task_id=spec.task_id,
            attempt=attempt,
            idempotency_key=spec.idempotency_key or spec.task_id,
            act=spec.act,
            # The actor runs the act only for the run that holds this claim.
            claimed_for=self._act.claimed_for,
            owner=spec.owner,
            approved_by=self._run.approved_by,
        )
        answer = await self.dispatch.act(routing, inp, started, read_back)
        if isinstance(answer, ActivityError):
            if self._cancelled(answer):
                raise answer
            return self._act_failed(answer, attempt)
        return answer

    def _act_failed(self, err: ActivityError, attempt: int) -> ActReport | str:
        """What an act attempt's error means: a report to settle with, or the error to read back
        after."""
        if is_type(err, CLAIM_OF_ANOTHER_RUN) and self._act.claimed_for is not None:
            # This run holds, from history it replayed, the claim of the run it was reset from,
            # and Temporal could not replay the act: the claim and the act sat in different
            # workflow tasks and the reset kept only the claim's. The actor ran nothing (so no
            # attempt started); the other run was about to act and may have.
            self._run.attempt = attempt - 1
            self.judge_claim(ClaimOutput(other_run=refused_for(err) or self._act.claimed_for))
            return unknown_write_report()
        inner = err.cause
        if is_type(err, UNKNOWN_ACT) and attempt == 1 and workflow.patched(UNKNOWN_ACT_PATCH):
            # The actor refused before running anything: no attempt started, nothing to read
            # back, and nothing can run this act (landed.task.checkable): blocked.
            self._run.attempt = 0
            said = inner.message if isinstance(inner, ApplicationError) else cause(err)
            self._act.unknown_act = said
            return ActReport(claimed_status="blocked", report=said)
        error = cause(err)
        actor = err.identity or beat_identity(err.cause)
        if actor and actor not in self._act.actors:
            self._act.actors.append(actor)
        if (
            isinstance(inner, ApplicationError)
            and inner.non_retryable
            and inner.type != "BadActReport"
        ):
            # The act refused before doing anything (an unknown act): re-running cannot help.
            # The read-back after it still settles what is there. A malformed report comes
            # after the act ran, so it is an unknown write like any error (DOD-10).
            self._act.error = error
            # An act registered irreversible refused to run unapproved: held, nothing sent.
            held = is_type(err, APPROVAL_REQUIRED)
            return ActReport(claimed_status="held" if held else "failed", report=error)
        return error

    async def _reconcile(
        self, routing: Routing, before: list[Observation | None], attempt: int, error: str
    ) -> tuple[ActReport | None, dict[int, VerifyReading]]:
        """Read back after an act error (DOD-10): the report to settle with, or None when
        nothing landed and the act may run again; and the readings."""
        self._run.step = Step.RECONCILE
        every = list(range(len(self._spec.proof_plan)))
        try:
            got = await self._reader.read(routing, "after", every, before, attempt=attempt)
        except BaseException:
            self._act.error = error  # cancelled mid-read: the receipt still names the error
            raise
        # Whether the act runs again rests on this read: it must be another identity's too.
        held = {
            i: self._independent(got[i], before[i], None, routing, signed_as="after") for i in every
        }
        decided = reconcile(self._spec, held, before, error)
        if decided.report is not None:
            self._act.error = error
            self._act.unknown_write = decided.unknown_write or self._act.unknown_write
        return decided.report, held

    async def _may_act(
        self, spec: TaskSpec, routing: Routing, attempt: int, left: timedelta
    ) -> bool:
        """Record in the ledger that this run is about to run act attempt ``attempt``; False
        when it must not: another run of this task id got as far and never settled (its act
        may have run, and Temporal, having forgotten that run, cannot say), or settled it.

        The plan claimed the first attempt when nothing ran between them (one workflow task:
        histories from before the fleet gate); otherwise a claim step runs now, in the workflow
        task that schedules the act. An answer held from the run this one was reset from
        (``landed.workflows.claims``) goes to the act as it is: the actor refuses it.
        """
        planned = routing.claim if attempt == 1 else None
        out = planned if planned is not None else await claim(spec, self._digest, attempt, left)
        self._act.claimed_for = out.claimed_for
        return self.judge_claim(out)

    def judge_claim(self, out: ClaimOutput) -> bool:
        """Whether the run may act on this claim answer, keeping what it says for the verdict."""
        decided = judge_claim(out)
        if decided.settled is not None:
            self._act.settled_elsewhere = decided.settled
        if decided.lost_run is not None:
            self._act.lost_run = decided.lost_run
            self._act.error = decided.act_error
            self._act.unknown_write = decided.unknown_write
        return decided.may_act
