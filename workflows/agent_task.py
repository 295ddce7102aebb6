"""AgentTask: plan, pre-read, act, read back, grade, settle; deterministic orchestration only."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy, SearchAttributeKey
from temporalio.exceptions import (
    ActivityError,
    ApplicationError,
    TimeoutType,
    is_cancelled_exception,
)
from temporalio.exceptions import TimeoutError as TemporalTimeout

with workflow.unsafe.imports_passed_through():
    from landed.probes.contract import Observation, Outcome, probe_digest
    from landed.probes.expect import Judgement, judge_with_before, label_for
    from landed.receipts.grading import grade
    from landed.receipts.ladder import Status
    from landed.receipts.model import LandedExtension, ProofItem, Receipt
    from landed.signing import TrustStore, check_reading
    from landed.task.assemble import (
        assemble_receipt,
        proof_item,
        trust_from_pems,
        unknown_write_report,
    )
    from landed.task.messages import (
        ActInput,
        ActReport,
        ClaimInput,
        ClaimOutput,
        PlanInput,
        Progress,
        ReceiptQuery,
        Routing,
        SettleInput,
        SettleOutput,
        Step,
        VerifyInput,
        VerifyOutput,
        VerifyReading,
        pre_read_on,
        pre_reads,
        spec_digest,
    )
    from landed.task.names import (
        ACT_ACTIVITY,
        AGENT_TASK_WORKFLOW,
        CLAIM_ACTIVITY,
        CLAIM_OF_ANOTHER_RUN,
        PLAN_ACTIVITY,
        SETTLE_ACTIVITY,
        VERIFY_ACTIVITY,
    )
    from landed.task.spec import TaskSpec

__all__ = ["LANDED_OWNER", "LANDED_RUNG", "LANDED_VERDICT", "VERIFY_RETRY", "AgentTask"]

LANDED_VERDICT = SearchAttributeKey.for_keyword("LandedVerdict")
LANDED_OWNER = SearchAttributeKey.for_keyword("LandedOwner")
LANDED_RUNG = SearchAttributeKey.for_keyword("LandedRung")

# The act runs once per attempt: Temporal must never re-run it behind the workflow's back,
# because a retry without a read-back first is exactly the duplicate DOD-10 forbids.
_ACT_ONCE = RetryPolicy(maximum_attempts=1)
# A run reset from another claims again when it schedules the act holding the other's claim.
# The marker records a decision taken at run time (this workflow task decided to claim again),
# which a replay of the reset run cannot take again from the run id (see _claim_holds).
_CLAIM_AGAIN_AFTER_RESET = "landed-claim-again-after-reset"
# A read is side-effect free, so a lost verifier (crash, timeout) is simply asked again.
VERIFY_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=10),
    maximum_attempts=5,
)
# The ledger append is idempotent on (task_id, attempt); keep trying until it is written,
# except when the same attempt is already stored with other content (retry can't fix that).
_SETTLE_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    maximum_interval=timedelta(seconds=30),
    non_retryable_error_types=("LedgerConflict",),
)
_LOCAL = timedelta(seconds=30)
# Reading the routing and the ledger: a task id reused for other work cannot succeed later.
_PLAN_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    maximum_interval=timedelta(seconds=30),
    non_retryable_error_types=("TaskIdReused",),
)


def _ledger_tries(budget: timedelta) -> tuple[RetryPolicy, timedelta]:
    """The plan's retry policy and the time one try may take, so that all tries together, and
    the waits between them, end within ``budget``.

    Measured on sdk-python 1.35: a local activity's schedule_to_close does not bound its
    retries (one that kept raising was still retrying long after it), and a try that hangs is
    cut at schedule_to_close but often retried with a fresh window. So the bound is counted
    here: the waits get half the budget (as many tries as the backoff fits in it), and the
    tries share the other half. Counted from the policy alone, so replay computes the same.
    """
    policy = _PLAN_RETRY
    assert policy.maximum_interval is not None
    tries, waited, wait = 1, timedelta(0), policy.initial_interval
    while waited + wait <= budget / 2:
        waited += wait
        tries += 1
        wait = min(wait * policy.backoff_coefficient, policy.maximum_interval)
    one_try = max(min(_LOCAL, budget / (2 * tries)), timedelta(milliseconds=500))
    return dataclasses.replace(policy, maximum_attempts=tries), one_try


def _chain_run_id() -> str:
    """The run id readings are requested and signed under: the run the workflow started as.

    A reset starts a new run that replays the old run's history up to the reset point; its
    readings were signed for the run that asked for them, and judged again under the new
    run's id they would read as "carried over from another run", so the replay would take
    another branch than the history did. Temporal keeps this id across resets (and it is the
    run id itself otherwise). Claims use the run's own id: a reset run is another run there.
    """
    info = workflow.info()
    return info.original_execution_run_id or info.run_id


def _cause(err: BaseException) -> str:
    inner = err.cause if isinstance(err, ActivityError) and err.cause is not None else err
    return f"{type(inner).__name__}: {inner}"


def _claim_holds(out: ClaimOutput, attempt: int) -> bool:
    """The first claim answer a run holds for act attempt ``attempt`` counts for this run:
    recorded for it (or by a runner that did not say for whom), or recorded for the run this
    one was reset from, in a part of the history that went on to act on it.

    A reset keeps the history up to the workflow task it restarts. Where that history acts on
    the old run's claim, replay must do as the old run did; where this run schedules the act
    itself (the claim's marker sat in an earlier workflow task than the act), it must claim
    again as itself (and that second answer is its own: callers do not ask again). A patch
    marker per attempt records which: patched() is False only while replaying a workflow task
    that did not record it (one of the old run's).

    The run id is compared only when the decision is made for the first time; replayed, the
    recorded marker alone decides. A replay may not see this run's id (Temporal's Replayer
    takes a reset run's id from its first event, which is the old run's), and a decision taken
    from it there would replay another branch than the run took.

    One case the marker cannot tell: Temporal may complete the claim's workflow task before the
    workflow answered it (seen under load), so the claim's marker sits in one workflow task and
    the act in the next, while replay hands the claim back inside the first. A reset to the
    act's task then replays the old run's claim, finds no marker saying otherwise and schedules
    the act anew. The act carries the run its claim was recorded for (``claimed_for``), and the
    actor runs it only for that run: the reset run's act is refused before it runs, and the
    task settles as one whose other run may have acted (``_act_until_known``).
    """
    if out.claimed_for is None:
        return True
    # Attempt 1 keeps the id runs recorded before attempts had their own.
    patch = _CLAIM_AGAIN_AFTER_RESET if attempt == 1 else f"{_CLAIM_AGAIN_AFTER_RESET}-{attempt}"
    if workflow.unsafe.is_replaying_history_events():
        return not workflow.patched(patch)
    if out.claimed_for == workflow.info().run_id:
        return True
    return not workflow.patched(patch)


def _is_type(err: BaseException, error_type: str) -> bool:
    """The error, or the one an ActivityError wraps, is an ApplicationError of that type."""
    inner = err.cause if isinstance(err, ActivityError) else err
    return isinstance(inner, ApplicationError) and inner.type == error_type


def _refused_for(err: ActivityError) -> str | None:
    """The run whose claim the actor saw on the act it refused (actors before it said so: None).

    It is the claim this run sent, unless something between the workflow and the actor changed
    the act's input; the actor's word is what it refused, so that is the run named.
    """
    inner = err.cause
    return _first_text(inner.details if isinstance(inner, ApplicationError) else ())


def _beat_identity(cause: BaseException | None) -> str | None:
    """The actor named in the last heartbeat of an act attempt that timed out, if it beat."""
    return _first_text(cause.last_heartbeat_details if isinstance(cause, TemporalTimeout) else ())


def _first_text(details: Sequence[Any]) -> str | None:
    """The first of an error's details when it is a non-empty string (a run or actor name)."""
    first = details[0] if details else None
    return first if isinstance(first, str) and first else None


def _signed_key_id(proof: ProofItem) -> str | None:
    """The key id a proof claims to be signed with, if it names one.

    A reply can carry any shape here: a malformed signature is the grade's to refuse, never an
    exception that fails the workflow task on every retry.
    """
    signature = (proof.landed or {}).get("signature")
    key_id = signature.get("key_id") if isinstance(signature, dict) else None
    return None if key_id is None else str(key_id)


@workflow.defn(name=AGENT_TASK_WORKFLOW)
class AgentTask:
    """One agent task. The verdict is computed here with the checker's grading code."""

    @workflow.init
    def __init__(self, spec: TaskSpec) -> None:
        self._spec = spec
        self._step = Step.PLANNED
        self._attempt = 0
        self._report: ActReport | None = None
        self._proofs: list[ProofItem] = []
        self._final: Receipt | None = None
        self._act_error: str | None = None
        # Identities that failed an act attempt: an act that errored leaves no report naming
        # its actor, and a reading made under one of them is still the actor grading itself.
        self._actors: list[str] = []
        self._unknown_write: str | None = None
        self._pre_read = True
        self._deadline: datetime | None = None
        self._trust: TrustStore | None = None
        self._routing: Routing | None = None
        self._before: list[Observation | None] = [None] * len(spec.proof_plan)
        self._settling_cancel = False
        self._spec_sha256: str | None = None
        self._asked_at: datetime | None = None
        # Another run of this id was about to act and never settled (see _claim).
        self._lost_run: str | None = None
        self._settled_elsewhere: Receipt | None = None
        # The run whose ledger claim the act attempt about to start runs under.
        self._claimed_for: str | None = None

    # --- queries -------------------------------------------------------------------------------

    @workflow.query(name="progress")
    def progress(self) -> Progress:
        """Where the task is and the highest rung proven so far.

        Between the act's report and the verdict, rung and proof level are what the grading
        code makes of the report and the artifacts it cites, before any read-back: a report's
        word alone is an assertion (P1, rung planned), a cited commit or log may prove a lower
        rung. Only the verdict, graded with the read-backs, can reach verified.
        """
        final = self._final
        graded = self._graded_so_far()
        ext = graded.landed if graded is not None else None
        return Progress(
            task_id=self._spec.task_id,
            step=self._step,
            rung=(ext.rung if ext is not None and ext.rung else "planned"),
            act_attempt=self._attempt,
            verdict=final.verdict if final is not None else None,
            proof_level=str(getattr(ext, "proof_level", "") or "") or None,
        )

    @workflow.query(name="receipt")
    def receipt(self) -> ReceiptQuery:
        """The receipt so far: the final one once graded, else what is known now.

        Once the act has reported, what is known is graded as ``progress`` grades it (rung and
        proof level of the report and its cited artifacts), with no verdict: only the grading
        after the read-back gives one.
        """
        if self._final is not None:
            if self._step == Step.SETTLED:
                return ReceiptQuery(receipt=self._final, settled=True)
            # Graded but not yet in the ledger: not settled, so it carries no settle time.
            return ReceiptQuery(
                receipt=self._final.model_copy(update={"settled_at": None}), settled=False
            )
        graded = self._graded_so_far()
        if graded is not None:
            return ReceiptQuery(
                receipt=graded.model_copy(
                    update={"verdict": None, "verdict_by": None, "settled_at": None}
                ),
                settled=False,
            )
        report = self._report or ActReport(claimed_status="planned")
        partial = assemble_receipt(
            self._spec, report, list(self._proofs), attempt=max(self._attempt, 1)
        )
        return ReceiptQuery(receipt=partial, settled=False)

    def _graded_so_far(self) -> Receipt | None:
        """The final receipt, else the grade of what the act reported (None before it has)."""
        if self._final is not None:
            return self._final
        if self._report is None or self._routing is None:
            return None
        # Pure: the only state it touches are the caches of the trust store and the spec
        # digest, each a function of the recorded routing and the input.
        return self._grade(self._spec, self._routing, self._report)

    # --- the run -------------------------------------------------------------------------------

    @workflow.run
    async def run(self, spec: TaskSpec) -> Receipt:
        # landed.Client sets owner and rung at start (no extra visibility write); a workflow
        # started another way gets its owner with the verdict.
        owner_set = workflow.info().typed_search_attributes.get(LANDED_OWNER) is not None
        try:
            return await self._run(spec, owner_set)
        except BaseException as err:
            # Only a cancel requested of this workflow takes the path below: not an activity
            # that cancelled itself, nor an eviction before any cancel (one after a cancel gets
            # here too, and is stopped by the SDK at the first command it tries).
            if workflow.cancellation_reason() is None or not is_cancelled_exception(err):
                raise
        # A cancel is a request to stop acting, not to forget: no act starts after it, what the
        # act may have written is read back, and the task settles like any other.
        return await self._after_cancel(spec, owner_set)

    async def _plan(self, spec: TaskSpec, *, to_act: bool = True) -> Routing:
        retry, one_try = _ledger_tries(spec.time_cap)
        routing = await workflow.execute_local_activity(
            PLAN_ACTIVITY,
            PlanInput(
                task_id=spec.task_id,
                spec_sha256=self._digest(spec),
                # A run that will not act (cancelled before its plan) claims nothing; its id
                # still tells its own claim (an earlier try of the plan) from another run's.
                run_id=workflow.info().run_id,
                will_act=to_act,
                pre_read=spec.pre_read,
                steps=len(spec.proof_plan),
            ),
            result_type=Routing,
            # The plan reads the ledger; one that stays down (answering with errors, or not at
            # all) fails the task by its time cap (closed unsettled, nothing acted) instead of
            # holding it at "planned" forever.
            start_to_close_timeout=one_try,
            schedule_to_close_timeout=spec.time_cap,
            retry_policy=retry,
        )
        self._routing = routing
        return routing

    async def _run(self, spec: TaskSpec, owner_set: bool) -> Receipt:
        deadline = workflow.now() + spec.time_cap
        self._deadline = deadline
        routing = await self._plan(spec)
        if routing.settled is not None:
            # Settled by an earlier run of this id that Temporal no longer remembers: the
            # ledger is the record, and submitting the same task again never acts twice.
            return self._finish(routing.settled, spec, owner_set)
        every = list(range(len(spec.proof_plan)))
        before: list[Observation | None] = [None] * len(every)
        self._before = before
        self._pre_read = pre_read_on(routing, spec.pre_read)
        # The same test the plan made when it decided whether to claim the first act.
        if pre_reads(routing, spec.pre_read, len(every)):
            self._step = Step.PRE_READ
            readings = await self._read(routing, "before", every, before, attempt=1)
            # A before-state of anything but this step would let a change look like the act's.
            before = [
                self._of_step(readings[i], None, routing, 1, signed_as="before").observation
                for i in every
            ]
            self._before = before

        report, after = await self._act_until_known(spec, routing, before, deadline)
        if self._settled_elsewhere is not None:
            # Another run of this id settled it while this one ran up to its act (a reset
            # racing the old run's settle): the ledger's receipt is the answer.
            return self._finish(self._settled_elsewhere, spec, owner_set)
        await self._read_back_and_grade(spec, routing, report, after)
        return await self._settle(spec, owner_set)

    async def _read_back_and_grade(
        self,
        spec: TaskSpec,
        routing: Routing,
        report: ActReport,
        after: dict[int, VerifyReading] | None = None,
    ) -> None:
        """Read every plan step back (unless a reconciling read already did), hold each reading
        to its step and grade the task."""
        self._report = report
        if after is None and spec.proof_plan:
            self._step = Step.VERIFY
            every = list(range(len(spec.proof_plan)))
            attempt = max(self._attempt, 1)  # 0 when the time cap left no act attempt
            after = await self._read(routing, "after", every, self._before, attempt=attempt)
        self._prove(after or {}, report, routing)
        self._final = self._grade(spec, routing, report)

    async def _settle(self, spec: TaskSpec, owner_set: bool) -> Receipt:
        final = self._final
        assert final is not None
        self._step = Step.SETTLE
        settled = await workflow.execute_local_activity(
            SETTLE_ACTIVITY,
            # The ledger read this asks for happens only after an act error: not on the way of
            # every task.
            SettleInput(receipt=final, after_unknown_write=self._act_error is not None),
            result_type=SettleOutput,
            start_to_close_timeout=spec.timeouts.settle,
            retry_policy=_SETTLE_RETRY,
        )
        if settled.stored is not None:
            # The ledger already holds a receipt of this task for this attempt: graded by an
            # earlier try of this step (a runner cut off after appending), or settled first by
            # another run of the task (a lost run whose settle committed late). It is the record.
            final = settled.stored
        elif settled.settled_at is not None and settled.settled_at != final.settled_at:
            # A runner from before `stored` existed: the same receipt, stored at another time.
            final = final.model_copy(update={"settled_at": settled.settled_at})
        return self._finish(final, spec, owner_set)

    def _digest(self, spec: TaskSpec) -> str:
        if self._spec_sha256 is None:
            self._spec_sha256 = spec_digest(spec)
        return self._spec_sha256

    def _cancelled(self, err: BaseException) -> bool:
        """The step was cut short by a cancel of this workflow (and is not its settling)."""
        return (
            not self._settling_cancel
            and workflow.cancellation_reason() is not None
            and is_cancelled_exception(err)
        )

    async def _after_cancel(self, spec: TaskSpec, owner_set: bool) -> Receipt:
        """Settle a cancelled task: superseded if the act never started, else read back first."""
        self._settling_cancel = True
        routing = self._routing
        if routing is None:
            routing = await self._plan(spec, to_act=False)
            if routing.settled is not None:
                return self._finish(routing.settled, spec, owner_set)
        found = routing.claim or routing.other_claim
        if found is not None and not _claim_holds(found, 1):
            # The plan's claim was recorded for the run this one was reset from: that run was
            # about to act, and this one cannot tell whether it did.
            found = ClaimOutput(other_run=found.claimed_for)
        if self._attempt == 0 and found is not None and self._lost_run is None:
            # The plan already learned of another run that may have acted: say so, as a run
            # that went on to its act would have.
            self._judge_claim(found)
            if self._settled_elsewhere is not None:
                return self._finish(self._settled_elsewhere, spec, owner_set)
        if self._final is None and self._attempt == 0 and self._lost_run is None:
            self._report = ActReport(
                claimed_status="superseded",
                report="The task was cancelled before its act ran; nothing was done.",
            )
            self._proofs = []
            self._final = self._grade(spec, routing, self._report)
        elif self._final is None:
            # The act ran (or was running: its cancellation waited for it to finish), and its
            # answer may never have arrived: the verdict rests on the read-back.
            await self._read_back_and_grade(spec, routing, self._report or unknown_write_report())
        return await self._settle(spec, owner_set)

    def _finish(self, final: Receipt, spec: TaskSpec, owner_set: bool) -> Receipt:
        """The settled receipt, made searchable by verdict, owner and rung."""
        self._final = final
        # Only a settled verdict is searchable: a list filtered on LandedVerdict=verified must
        # never show a task whose receipt is not in the ledger.
        updates = [
            LANDED_VERDICT.value_set(final.verdict or "unknown"),
            LANDED_RUNG.value_set((final.landed.rung if final.landed else None) or "unknown"),
        ]
        if not owner_set:
            updates.append(LANDED_OWNER.value_set(spec.owner))
        workflow.upsert_search_attributes(updates)
        self._step = Step.SETTLED
        return final

    async def _act_until_known(
        self,
        spec: TaskSpec,
        routing: Routing,
        before: list[Observation | None],
        deadline: datetime,
    ) -> tuple[ActReport, dict[int, VerifyReading] | None]:
        """Run the act; after an error or timeout, read back before anything else (DOD-10).

        Returns the report and, when a reconciling read already happened, its readings.
        """
        every = list(range(len(spec.proof_plan)))
        last: dict[int, VerifyReading] | None = None
        error = ""
        for attempt in range(1, spec.retry.act_attempts + 1):
            if workflow.cancellation_reason() is not None:
                self._act_error = self._act_error or (error or None)
                raise asyncio.CancelledError  # no act starts after a cancel
            self._step = Step.ACT
            remaining = self._remaining(deadline)
            if remaining is None:
                error = f"time cap {spec.time_cap} reached before attempt {attempt}"
                break
            try:
                may_act = await self._may_act(spec, routing, attempt, remaining)
            # A local activity that gave up surfaces as its own error, not as an ActivityError
            # (sdk-python 1.35), so both are caught; a reused id still fails the task.
            except (ActivityError, ApplicationError, TemporalTimeout) as err:
                if self._cancelled(err) or _is_type(err, "TaskIdReused"):
                    raise
                # The ledger could not record the claim: no act without one. What an earlier
                # attempt wrote is read back and settled like any other end of the attempts.
                error = (
                    f"the act's claim could not be recorded before attempt {attempt}: {_cause(err)}"
                )
                break
            if not may_act:
                # Another run got this far and never settled, or settled it: do not act.
                return unknown_write_report(), None
            remaining = self._remaining(deadline)  # the claim step took some of it
            if remaining is None:
                error = f"time cap {spec.time_cap} reached before attempt {attempt}"
                break
            # Only an attempt that starts is one: the receipt's attempt is the act's last run.
            self._attempt = attempt
            try:
                report = await workflow.execute_activity(
                    ACT_ACTIVITY,
                    ActInput(
                        task_id=spec.task_id,
                        attempt=attempt,
                        idempotency_key=spec.idempotency_key or spec.task_id,
                        act=spec.act,
                        # The actor runs the act only for the run that holds this claim.
                        claimed_for=self._claimed_for,
                    ),
                    result_type=ActReport,
                    task_queue=routing.actor_task_queue,
                    schedule_to_close_timeout=remaining,
                    heartbeat_timeout=spec.timeouts.act_heartbeat,
                    retry_policy=_ACT_ONCE,
                    # On a cancel, wait until the actor has stopped (a sync act's thread is
                    # finished) before reading back: no write may land after the read.
                    cancellation_type=workflow.ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
                )
                return report, None
            except ActivityError as err:
                if self._cancelled(err):
                    raise
                if _is_type(err, CLAIM_OF_ANOTHER_RUN) and self._claimed_for is not None:
                    # This run holds, from history it replayed, the claim of the run it was
                    # reset from, and Temporal could not replay the act: the claim and the act
                    # sat in different workflow tasks and the reset kept only the claim's. The
                    # actor ran nothing (so no attempt started); the other run was about to act
                    # and may have.
                    self._attempt = attempt - 1
                    self._judge_claim(ClaimOutput(other_run=_refused_for(err) or self._claimed_for))
                    return unknown_write_report(), None
                error = _cause(err)
                actor = err.identity or _beat_identity(err.cause)
                if actor and actor not in self._actors:
                    self._actors.append(actor)
                cause = err.cause
                if (
                    isinstance(cause, ApplicationError)
                    and cause.non_retryable
                    and cause.type != "BadActReport"
                ):
                    # The act refused before doing anything (an unknown act): re-running cannot
                    # help. The read-back below still settles what is there. A malformed report
                    # comes after the act ran, so it is an unknown write like any error (DOD-10).
                    self._act_error = error
                    return ActReport(claimed_status="failed", report=error), None
            if not every:
                # No read-back declared: whether the write landed cannot be known, so running
                # the act again could duplicate it. Settle as failed instead (DOD-10).
                break
            # The write is unknown: read back before deciding (DOD-10).
            self._step = Step.RECONCILE
            try:
                last = await self._read(routing, "after", every, before, attempt=attempt)
            except BaseException:
                self._act_error = error  # cancelled mid-read: the receipt still names the error
                raise
            # Whether the act runs again rests on this read: it must be another identity's too.
            last = {
                i: self._independent(last[i], before[i], None, routing, signed_as="after")
                for i in every
            }
            if every and all(last[i].observation.outcome == Outcome.PASS for i in every):
                # It landed: settle it; never run the act again.
                self._act_error = error
                return unknown_write_report(), last
            unseen = [i for i in every if last[i].observation.outcome == Outcome.PROBE_ERROR]
            if unseen:
                # The read-back saw nothing (after its bounded re-reads): "not observed" is not
                # "not landed", so running the act again could write a second copy (DOD-10).
                steps = ", ".join(f"#{i + 1} {spec.proof_plan[i].action!r}" for i in unseen)
                self._unknown_write = (
                    f"the act ended with an error and the read-back could not observe plan "
                    f"step {steps}; whether the write landed is unknown, so the act was not run "
                    f"again: a person must reconcile it against the system of record"
                )
                self._act_error = error
                return ActReport(
                    claimed_status="failed",
                    report=f"act did not complete: {error}; the outcome is unknown",
                ), last
            changed = [i for i in every if not self._nothing_landed(last[i], before[i])]
            if changed:
                # A step passed, or reads other than the act found it (part of a count, more
                # than asked, a changed page): running the act again could write twice (DOD-10).
                steps = ", ".join(
                    f"#{i + 1} {spec.proof_plan[i].action!r} ({last[i].observation.outcome})"
                    for i in changed
                )
                self._unknown_write = (
                    f"the act ended with an error and the read-back shows the system of record "
                    f"changed, or cannot show it did not (plan step {steps}); the act was not "
                    f"run again, so nothing is written twice: a person must reconcile it"
                )
                self._act_error = error
                return ActReport(
                    claimed_status="failed",
                    report=f"act did not complete: {error}; part of the outcome may have landed",
                ), last
            # Nothing landed: the next attempt carries the same idempotency key.
        self._act_error = error
        return ActReport(claimed_status="failed", report=f"act did not complete: {error}"), last

    async def _may_act(
        self, spec: TaskSpec, routing: Routing, attempt: int, remaining: timedelta
    ) -> bool:
        """Record in the ledger that this run is about to run act attempt ``attempt``; False
        when it must not: another run of this task id got as far and never settled (its act
        may have run, and Temporal, having forgotten that run, cannot say), or settled it.

        The plan claimed the first attempt when nothing ran between them (one workflow task);
        otherwise a claim step runs now, in the workflow task that schedules the act, so a
        reset that schedules the act again claims again.
        """
        planned = routing.claim if attempt == 1 else None
        self._claimed_for = None
        if planned is not None and _claim_holds(planned, attempt):
            self._claimed_for = planned.claimed_for
            return self._judge_claim(planned)
        out = await self._claim(spec, attempt, remaining)
        if planned is None and not _claim_holds(out, attempt):
            # The answer was recorded by the run this one was reset from (a reset keeps the
            # history up to the workflow task it restarts, and the claim's marker can sit in an
            # earlier one than the act's): it claims nothing for this run, so claim again.
            out = await self._claim(spec, attempt, remaining)
        self._claimed_for = out.claimed_for
        return self._judge_claim(out)

    async def _claim(self, spec: TaskSpec, attempt: int, remaining: timedelta) -> ClaimOutput:
        retry, one_try = _ledger_tries(remaining)
        out: ClaimOutput = await workflow.execute_local_activity(
            CLAIM_ACTIVITY,
            ClaimInput(
                task_id=spec.task_id,
                run_id=workflow.info().run_id,
                attempt=attempt,
                spec_sha256=self._digest(spec),
            ),
            result_type=ClaimOutput,
            # A ledger that stays down ends the attempts by the time cap (read back and
            # settled like any other end); either way no act starts unclaimed.
            start_to_close_timeout=one_try,
            schedule_to_close_timeout=remaining,
            retry_policy=retry,
        )
        return out

    def _judge_claim(self, out: ClaimOutput) -> bool:
        if out.settled is not None:
            self._settled_elsewhere = out.settled
            return False
        if out.other_run is None:
            return True
        when = out.other_at.isoformat() if out.other_at else "an unknown time"
        self._lost_run = out.other_run
        self._act_error = (
            f"run {out.other_run} of this task id was about to act at {when} and closed without "
            "settling; its act may have run"
        )
        self._unknown_write = (
            f"run {out.other_run} of this task id was about to act at {when} and closed without "
            "settling (terminated, failed or reset); its act may have run, so this run did not "
            "run it again, and with no before-state from before that act the read-back cannot "
            "show the act made what it finds: not verified, a person must reconcile it"
        )
        return False

    @staticmethod
    def _nothing_landed(reading: VerifyReading, before: Observation | None) -> bool:
        """The reading shows the system of record as the act found it: worth another attempt.

        With a pre-read, the value and the raw evidence must both be the pre-read's, and one of
        them must be there to compare; without one, only a probe that found nothing at all."""
        obs = reading.observation
        if obs.outcome in (Outcome.PASS, Outcome.PROBE_ERROR):
            return False
        if before is None or before.outcome == Outcome.PROBE_ERROR:
            return obs.outcome == Outcome.EMPTY
        if obs.value is None and obs.evidence is None:
            return False  # nothing to compare: whether anything changed is unknown
        same_value = type(obs.value) is type(before.value) and obs.value == before.value
        now, then = obs.evidence, before.evidence
        same_evidence = (now is None and then is None) or (
            now is not None and then is not None and now.sha256 == then.sha256
        )
        return same_value and same_evidence

    async def _read(
        self,
        routing: Routing,
        phase: str,
        indexes: list[int],
        before: list[Observation | None],
        *,
        attempt: int,
    ) -> dict[int, VerifyReading]:
        """Read plan steps on the verifier; only probe-error re-reads, with backoff, bounded."""
        spec = self._spec
        got: dict[int, VerifyReading] = {}
        todo = list(indexes)
        wait = spec.retry.verify_backoff
        for read in range(1, spec.retry.verify_attempts + 1):
            if read > 1:
                if self._past_cap(wait):
                    break  # no time left to wait and read again (GOV-4): not observed
                await workflow.sleep(wait)
                wait = wait * 2
            # A fresh id per read, signed into each reading: a reading made earlier (a "nothing
            # there" taken before the act, say) or for someone else's request answers nothing.
            request = str(workflow.uuid4())
            # When this read was asked: a workflow task already recorded once the read is
            # answered, so a reading the runner marks not observed carries the same time if the
            # task that grades it runs again (after a stalled runner) and settles the same.
            self._asked_at = workflow.now()
            try:
                out = await workflow.execute_activity(
                    VERIFY_ACTIVITY,
                    VerifyInput(
                        task_id=spec.task_id,
                        attempt=attempt,
                        phase="before" if phase == "before" else "after",
                        contracts=[spec.proof_plan[i] for i in todo],
                        indexes=todo,
                        before=[before[i] for i in todo],
                        read=read,
                        run_id=_chain_run_id(),
                        request=request,
                        steps=len(spec.proof_plan),
                    ),
                    result_type=VerifyOutput,
                    task_queue=routing.verifier_task_queue,
                    # A verifier nobody runs must not hold the task forever: the read waits
                    # for one until the time cap (GOV-4), plus one read's time so an act that
                    # ran into the cap can still be reconciled; then it is not observed.
                    schedule_to_close_timeout=self._read_budget(),
                    start_to_close_timeout=spec.timeouts.verify,
                    heartbeat_timeout=spec.timeouts.verify_heartbeat,
                    retry_policy=VERIFY_RETRY,
                )
            except ActivityError as err:
                if self._cancelled(err):
                    raise
                # The verifier could not be reached or crashed every time: nothing was observed.
                why = f"verify failed: {_cause(err)}"
                if isinstance(err.cause, TemporalTimeout) and err.cause.type in (
                    TimeoutType.SCHEDULE_TO_START,
                    TimeoutType.SCHEDULE_TO_CLOSE,
                ):
                    why += (
                        f"; no verifier answered on task queue {routing.verifier_task_queue!r} "
                        "before the read's deadline: check that `landed worker verifier` runs, "
                        "polls that queue, and finishes a read within timeouts.verify"
                    )
                for i in todo:
                    got[i] = self._unobserved(i, routing, why, attempt)
                break
            for reading in out.readings:
                if reading.index not in todo:
                    continue
                ext = reading.proof.landed or {}
                if "signature" in ext and ext.get("request") != request:
                    why = (
                        "the verifier signed no request id (it is older than the runner: "
                        "upgrade verifiers before runners)"
                        if not ext.get("request")
                        else "the reading answers another read than the one asked for"
                    )
                    reading = self._unobserved(reading.index, routing, why, attempt)
                got[reading.index] = reading
            # Only a probe-error is read again; a refusal (the verifier's configuration does
            # not allow the probe) stays what it is however often it is asked.
            todo = [
                i
                for i in todo
                if i not in got
                or (got[i].observation.outcome == Outcome.PROBE_ERROR and not got[i].refused)
            ]
            if not todo:
                break
        for i in todo:
            got.setdefault(i, self._unobserved(i, routing, "verifier returned no reading", attempt))
        return got

    def _prove(self, after: dict[int, VerifyReading], report: ActReport, routing: Routing) -> None:
        """The receipt's proof items: each plan step's read-back, held to its step."""
        self._proofs = [
            self._independent(after[i], self._before[i], report, routing).proof
            for i in range(len(self._spec.proof_plan))
        ]

    def _independent(
        self,
        reading: VerifyReading,
        before: Observation | None,
        report: ActReport | None,
        routing: Routing,
        *,
        signed_as: str | None = None,
    ) -> VerifyReading:
        """A reading counts only if another identity made it (DOD-2) of this plan step: its
        probe, its expectation and, after a pre-read, against the before-state this task read.

        The verifier signs what it was asked and what it saw; whoever can answer on its queue
        could ask it something else (an easier expectation, no before-state) and hand back a
        genuine signature. So the workflow holds each reading to the step it asked for."""
        attempt = max(self._attempt, 1)
        actors = [a for a in (report.actor if report else None, *self._actors) if a]
        if reading.proof.checked_by in actors:
            why = (
                f"read by the actor's identity {reading.proof.checked_by}; the actor can't grade "
                "itself"
            )
            return self._unobserved(reading.index, routing, why, attempt)
        return self._of_step(reading, before, routing, attempt, signed_as=signed_as)

    def _of_step(
        self,
        reading: VerifyReading,
        before: Observation | None,
        routing: Routing,
        attempt: int,
        *,
        signed_as: str | None = None,
    ) -> VerifyReading:
        """The reading if it is of its plan step (and its before-state); else not observed.

        ``signed_as`` names the phase a reading must carry a trusted verifier's signature for
        before it may decide anything here: a pre-read sets the before-state every later
        judgement compares with, and a reconciling read decides whether the act runs again.
        The final read-back is held to its signature by the grade instead; every check here
        reads the observation the verifier signed, never a copy beside it."""
        obs = reading.observation
        if obs.outcome == Outcome.PROBE_ERROR:
            # Nothing was observed: it cannot count either way, as long as its proof says so
            # too. A relay could set a probe-error observation beside a signed pass of something
            # easier, and the proof, not the observation, goes into the receipt.
            signed = (reading.proof.landed or {}).get("observation")
            said = (reading.proof.result or "").strip().lower()
            if said == Outcome.PROBE_ERROR.value and (
                signed is None or signed == obs.model_dump(mode="json")
            ):
                return reading
            why = (
                f"the reading of plan step #{reading.index + 1} says nothing was observed, but its "
                f"proof says {said or 'nothing'}"
            )
            return self._unobserved(reading.index, routing, why, attempt)
        contract = self._spec.proof_plan[reading.index]
        step = f"plan step #{reading.index + 1}"
        signed = (reading.proof.landed or {}).get("observation")
        # The copy checked below must be what the signature covers, or a relay could show this
        # step's probe and expectation beside a proof of something easier.
        unlike_signed = signed != obs.model_dump(mode="json")
        if signed_as is not None:
            problem = check_reading(
                reading.proof,
                self._trusted(routing),
                task_id=self._spec.task_id,
                attempt=attempt,
                phase=signed_as,
                run_id=_chain_run_id(),
            )
            if problem is None and unlike_signed:
                problem = "the reading differs from the observation the verifier signed"
            if problem is not None:
                why = f"the {signed_as} reading of {step} is not a trusted verifier's: {problem}"
                return self._unobserved(reading.index, routing, why, attempt)
        elif signed is not None and unlike_signed:
            why = f"the reading of {step} differs from the observation the verifier signed"
            return self._unobserved(reading.index, routing, why, attempt)
        if obs.probe_sha256 != probe_digest(contract.probe) or obs.kind != contract.probe.kind:
            why = f"the reading is not of {step}'s probe (another probe was run)"
            return self._unobserved(reading.index, routing, why, attempt)
        if obs.expectation != label_for(contract.probe, contract.expect):
            why = f"the reading was judged under {obs.expectation!r}, not {step}'s expectation"
            return self._unobserved(reading.index, routing, why, attempt)
        if before is not None and obs.before_value != before.value:
            why = f"the reading was not judged against {step}'s before-state from the pre-read"
            return self._unobserved(reading.index, routing, why, attempt)
        if before is not None:
            # The signature covers the before value but not the before outcome the verifier was
            # handed; judging again against this task's own pre-read shows a swapped outcome
            # (a state that already held passed off as changed).
            held = judge_with_before(contract.expect, Judgement(obs.outcome, "", obs.value), before)
            if held.outcome != obs.outcome:
                why = (
                    f"the reading of {step} ({obs.outcome}) does not follow from its before-state "
                    f"from the pre-read, which makes it {held.outcome}: the verifier was handed "
                    "another before-state"
                )
                return self._unobserved(reading.index, routing, why, attempt)
        return reading

    def _unobserved(self, index: int, routing: Routing, why: str, attempt: int) -> VerifyReading:
        contract = self._spec.proof_plan[index]
        obs = Observation(
            outcome=Outcome.PROBE_ERROR,
            expectation=label_for(contract.probe, contract.expect),
            kind=contract.probe.kind,
            observer=routing.runner,
            observed_at=self._asked_at or workflow.now(),
            duration_ms=0.0,
            message=why,
        )
        return VerifyReading(
            index=index, observation=obs, proof=proof_item(contract, obs, checked_by=routing.runner)
        )

    def _trusted(self, routing: Routing) -> TrustStore:
        if self._trust is None:
            self._trust = trust_from_pems(routing.trusted_keys)
        return self._trust

    def _read_budget(self) -> timedelta:
        """How long a read may wait for a verifier: until the time cap plus one read's time,
        counted once for the task, not once per read (a pre-read that used it all leaves the
        read-back a second). A timeout is no command of its own: replay compares none."""
        verify = self._spec.timeouts.verify
        if self._deadline is None:
            return verify
        return max(self._deadline - workflow.now() + verify, timedelta(seconds=1))

    def _past_cap(self, wait: timedelta) -> bool:
        """Waiting ``wait`` and reading again would end past the time cap."""
        return self._deadline is not None and workflow.now() + wait >= self._deadline

    @staticmethod
    def _remaining(deadline: datetime) -> timedelta | None:
        left = deadline - workflow.now()
        return left if left > timedelta(seconds=1) else None

    def _grade(self, spec: TaskSpec, routing: Routing, report: ActReport) -> Receipt:
        key_ids = sorted({k for p in self._proofs if (k := _signed_key_id(p)) is not None})
        draft = assemble_receipt(
            spec,
            report,
            list(self._proofs),
            attempt=max(self._attempt, 1),
            key_id=key_ids[0] if len(key_ids) == 1 else None,
            settled_at=workflow.now(),
            extra={
                "pre_read": self._pre_read,
                "spec_sha256": self._digest(spec),
                "act_error": self._act_error,
                "run_id": _chain_run_id(),
            },
        )
        result = grade(draft, signature_ok=self._trusted(routing).signature_ok)
        findings = [f"{f.rule}: {f.message}" for f in result.findings]
        status, meets_bar = result.proven_status, result.meets_bar
        # grade() credits the strongest read-back; a task's plan is done only when every step
        # it declared reads back as pass, so any other step caps the verdict below verified.
        failed = [
            (i, p.result)
            for i, p in enumerate(self._proofs)
            if p.result != Outcome.PASS.value and i < len(spec.proof_plan)
        ]
        if failed and (status.is_done or status.rank > Status.EXECUTED.rank):
            status = Status.EXECUTED
            meets_bar = meets_bar and not result.claims_done
        for i, outcome in failed:
            findings.append(
                f"DOD-5: plan step #{i + 1} ({spec.proof_plan[i].action!r}) read back "
                f"{outcome}, so the task is not verified whatever the other steps show"
            )
        if self._lost_run is not None and status.rank > Status.PLANNED.rank:
            # What the read-back finds may be that run's act or may have been there before
            # it: like a vacuous read-back, it proves nothing this task did.
            status = Status.PLANNED
        if self._unknown_write is not None:
            findings.append(f"DOD-10: {self._unknown_write}")
        # A grading that runs again (after a stalled runner) may see a cancel the first did
        # not; the settle step then keeps the first, which the ledger already holds.
        if workflow.cancellation_reason() is not None:
            findings.append(
                "the task was cancelled while it ran: no act started after the cancel, and the "
                "verdict rests on what was read back"
            )
        ext = LandedExtension.model_validate(
            {
                **(draft.landed.model_dump() if draft.landed else {}),
                "rung": status.value,
                "proof_level": result.proof_level.label,
                "meets_bar": meets_bar,
                "findings": findings,
            }
        )
        return draft.model_copy(
            update={
                "verdict": status.value,
                "verdict_by": routing.runner,
                "landed": ext,
            }
        )
