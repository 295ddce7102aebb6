"""AgentTask: plan, pre-read, act, read back, grade, settle; deterministic orchestration only.

What follows from each step's answer is decided by plain functions in the core:
``landed.task.readings`` (which reading proves which step), ``landed.task.decisions`` (claims,
reconciling after an act error, budgets) and ``landed.receipts.verdict`` (the verdict's rules).
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.common import SearchAttributeKey
from temporalio.exceptions import is_cancelled_exception

with workflow.unsafe.imports_passed_through():
    from landed.governance.gates import Approve, GateView, Reject
    from landed.governance.receipt import fleet_fields
    from landed.governance.time_cap import effective_time_cap, past_time_cap, time_capped
    from landed.probes.contract import Observation
    from landed.receipts.model import Receipt
    from landed.signing import TrustStore
    from landed.task.assemble import assemble_receipt, trust_from_pems, unknown_write_report
    from landed.task.checkable import blocked_report, with_fix_first
    from landed.task.decisions import RunFacts, cancelled_before_act_report, graded_receipt
    from landed.task.durability import pending
    from landed.task.frames import pre_read_count
    from landed.task.messages import (
        ActReport,
        PlanInput,
        Progress,
        ReceiptQuery,
        Routing,
        SettleInput,
        Step,
        VerifyReading,
        pre_read_on,
        pre_reads,
        spec_digest,
    )
    from landed.task.names import AGENT_TASK_WORKFLOW, APPROVE_UPDATE, GATE_QUERY, REJECT_UPDATE
    from landed.task.readings import ReadScope, independent, of_step
    from landed.task.spec import TaskSpec
    from landed.task.steps import RunnerSteps

from landed.workflows.acting import Attempts
from landed.workflows.claims import SETTLE_RETRY, ledger_policy
from landed.workflows.durable import Durable
from landed.workflows.frames import FrameReader
from landed.workflows.gates import Gates
from landed.workflows.reads import VERIFY_RETRY, Reader, chain_run_id
from landed.workflows.state import ActFacts, RunState
from landed.workflows.unchecked import unchecked
from landed.workflows.versions import DURABLE_PATCH, FLEET_GATE_PATCH

__all__ = ["LANDED_OWNER", "LANDED_RUNG", "LANDED_VERDICT", "VERIFY_RETRY", "AgentTask"]

LANDED_VERDICT = SearchAttributeKey.for_keyword("LandedVerdict")
LANDED_OWNER = SearchAttributeKey.for_keyword("LandedOwner")
LANDED_RUNG = SearchAttributeKey.for_keyword("LandedRung")


@workflow.defn(name=AGENT_TASK_WORKFLOW)
class AgentTask:
    """One agent task. The verdict is computed here with the checker's grading code."""

    @workflow.init
    def __init__(self, spec: TaskSpec) -> None:
        self._spec = spec
        self._run = RunState(before=[None] * len(spec.proof_plan))
        self._act = ActFacts()
        self._reader = Reader(spec, self._run, self._scope, self._cancelled)
        self._frames = FrameReader(spec, self._run, self._scope, self._cancelled)
        # Caches of pure functions of the recorded routing and the input.
        self._trust: TrustStore | None = None
        self._spec_sha256 = spec_digest(spec)
        self._attempts = Attempts(
            spec,
            self._run,
            self._act,
            self._reader,
            digest=self._spec_sha256,
            cancelled=self._cancelled,
            independent=self._independent,
        )
        self._durable = Durable(spec, self._run, self._reader, self._hold)
        # Set once the durability reads ran in this run (not while replaying an older one).
        self._durable_on = False
        self._gates = Gates(spec, self._run, self._act, self._cancelled)

    # --- queries -------------------------------------------------------------------------------

    @workflow.query(name="progress")
    def progress(self) -> Progress:
        """Where the task is and the highest rung proven so far.

        Between the act's report and the verdict, rung and proof level are what the grading
        code makes of the report and the artifacts it cites, before any read-back: a report's
        word alone is an assertion (P1, rung planned), a cited commit or log may prove a lower
        rung. Only the verdict, graded with the read-backs, can reach verified.
        """
        final = self._run.final
        graded = self._graded_so_far()
        ext = graded.landed if graded is not None else None
        rung = ext.rung if ext is not None and ext.rung else "planned"
        return Progress(
            task_id=self._spec.task_id,
            step=self._run.step,
            # Waiting at the approval gate is held (GOV-7), until a person decides.
            rung="held" if self._gates.view.waiting else rung,
            act_attempt=self._run.attempt,
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
        run = self._run
        if run.final is not None:
            if run.step == Step.SETTLED:
                return ReceiptQuery(receipt=run.final, settled=True)
            # Graded but not yet in the ledger: not settled, so it carries no settle time.
            unsettled = run.final.model_copy(update={"settled_at": None})
            return ReceiptQuery(receipt=pending(unsettled), settled=False)
        graded = self._graded_so_far()
        if graded is not None:
            update = {"verdict": None, "verdict_by": None, "settled_at": None}
            return ReceiptQuery(receipt=pending(graded.model_copy(update=update)), settled=False)
        report = run.report or ActReport(claimed_status="planned")
        partial = assemble_receipt(
            self._spec, report, list(run.proofs), attempt=max(run.attempt, 1)
        )
        return ReceiptQuery(receipt=pending(partial), settled=False)

    # --- the approval gate (GOV-5): a person decides; landed.governance.gates says who may ----

    @workflow.query(name=GATE_QUERY)
    def gate(self) -> GateView:
        """What the approval gate waits for, since when, and what was decided."""
        return self._gates.view

    @workflow.update(name=APPROVE_UPDATE)
    def approve(self, decision: Approve) -> GateView:
        return self._gates.decide(decision)

    @approve.validator
    def _approve_allowed(self, decision: Approve) -> None:
        self._gates.refuse(decision)

    @workflow.update(name=REJECT_UPDATE)
    def reject(self, decision: Reject) -> GateView:
        return self._gates.decide(decision)

    @reject.validator
    def _reject_allowed(self, decision: Reject) -> None:
        self._gates.refuse(decision)

    def _graded_so_far(self) -> Receipt | None:
        """The final receipt, else the grade of what the act reported (None before it has)."""
        run = self._run
        if run.final is not None:
            return run.final
        if run.report is None or run.routing is None:
            return None
        # Pure: the only state it touches are the caches of the trust store and the spec
        # digest, each a function of the recorded routing and the input.
        return self._grade(self._spec, run.routing, run.report)

    # --- the run -------------------------------------------------------------------------------

    @workflow.run
    async def run(self, spec: TaskSpec) -> Receipt:
        # landed.Client sets owner and rung at start (no extra visibility write); a workflow
        # started another way gets its owner with the verdict.
        owner_set = workflow.info().typed_search_attributes.get(LANDED_OWNER) is not None
        try:
            return await self._run_task(spec, owner_set)
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
        retry, one_try = ledger_policy(spec.time_cap)
        routing: Routing = await workflow.execute_local_activity_method(
            RunnerSteps.plan,
            PlanInput(
                task_id=spec.task_id,
                spec_sha256=self._digest(spec),
                # A run that will not act (cancelled before its plan) claims nothing; its id
                # still tells its own claim (an earlier try of the plan) from another run's.
                run_id=workflow.info().run_id,
                will_act=to_act,
                # The fleet gate sits between this plan and the first act (GOV-4).
                gated=to_act and workflow.patched(FLEET_GATE_PATCH),
                pre_read=spec.pre_read,
                steps=pre_read_count(spec),
                owner=spec.owner,
                loop=spec.loop,
            ),
            # The plan reads the ledger; one that stays down (answering with errors, or not at
            # all) fails the task by its time cap (closed unsettled, nothing acted) instead of
            # holding it at "planned" forever.
            start_to_close_timeout=one_try,
            schedule_to_close_timeout=spec.time_cap,
            retry_policy=retry,
        )
        self._run.routing = routing
        return routing

    async def _run_task(self, spec: TaskSpec, owner_set: bool) -> Receipt:
        started = workflow.now()
        gated = self._gates.kind is not None or spec.contacts is not None
        # A gated task claims its act only after its gates: a claim is "about to act".
        routing = await self._plan(spec, to_act=not gated)
        if routing.settled is not None:
            # Settled by an earlier run of this id that Temporal no longer remembers: the
            # ledger is the record, and submitting the same task again never acts twice.
            return self._finish(routing.settled, spec, owner_set)
        gate_report = await self._gates.approval() or await self._gates.consent_check(routing)
        if gate_report is not None:
            return await self._settle_unacted(spec, routing, gate_report, owner_set)
        # GOV-4: the cap bounds the work, so a task that waited for a person starts it after.
        self._run.cap = effective_time_cap(spec, routing.time_cap)
        deadline = (workflow.now() if gated else started) + self._run.cap
        self._run.deadline = deadline
        self._run.pre_read = pre_read_on(routing, spec.pre_read)
        before = await self._pre_read(spec, routing)
        if unread := unchecked(self._run, self._act):
            return await self._settle_blocked(spec, routing, unread, owner_set)
        report, after = await self._attempts.until_known(spec, routing, before, deadline)
        if unknown := unchecked(self._run, self._act):
            return await self._settle_blocked(spec, routing, unknown, owner_set)
        if self._act.settled_elsewhere is not None:
            # Another run of this id settled it while this one ran up to its act (a reset
            # racing the old run's settle): the ledger's receipt is the answer.
            return self._finish(self._act.settled_elsewhere, spec, owner_set)
        await self._read_back_and_grade(spec, routing, report, after)
        graded = self._run.final
        if graded and past_time_cap(workflow.now(), deadline, self._act.error, graded.verdict):
            self._run.final = time_capped(graded, self._run.cap, self._act.error)
        final = await self._settle(spec, owner_set)
        if self._durable_on:
            actors = [a for a in (report.actor, *self._act.actors) if a]
            await self._durable.schedule_recheck(routing, final, actors)
        return final

    async def _settle_unacted(
        self, spec: TaskSpec, routing: Routing, report: ActReport, owner_set: bool
    ) -> Receipt:
        """Settle a task its gate stopped before any act (held, blocked): nothing was done."""
        self._run.report, self._run.proofs = report, []
        self._run.final = self._grade(spec, routing, report)
        return await self._settle(spec, owner_set)

    async def _settle_blocked(
        self, spec: TaskSpec, routing: Routing, problems: list[str], owner_set: bool
    ) -> Receipt:
        """Settle a task nothing can check, before any act: blocked, the fix first."""
        self._run.report, self._run.proofs = blocked_report(problems), []
        graded = self._grade(spec, routing, self._run.report)
        self._run.final = with_fix_first(graded, problems)
        return await self._settle(spec, owner_set)

    async def _pre_read(self, spec: TaskSpec, routing: Routing) -> list[Observation | None]:
        """Each step's before-state, when this run reads one (else none)."""
        every = list(range(len(spec.proof_plan)))
        before: list[Observation | None] = [None] * len(every)
        self._run.before = before
        # The same test the plan made when it decided whether to claim the first act.
        if pre_reads(routing, spec.pre_read, pre_read_count(spec)):
            self._run.step = Step.PRE_READ
            if every:
                readings = await self._reader.read(routing, "before", every, before, attempt=1)
                # A before-state of anything but this step would let a change look like the act's.
                scope = self._scope(routing)
                before = [
                    of_step(scope, readings[i], None, 1, signed_as="before").observation
                    for i in every
                ]
                self._run.before = before
            self._run.frames_before = await self._frames.read(
                routing, "frame-before", attempt=1, actors=()
            )
        return before

    async def _read_back_and_grade(
        self,
        spec: TaskSpec,
        routing: Routing,
        report: ActReport,
        after: dict[int, VerifyReading] | None = None,
    ) -> None:
        """Read every plan step back (unless a reconciling read already did), hold each reading
        to its step and grade the task."""
        run = self._run
        run.report = report
        attempt = max(run.attempt, 1)  # 0 when the time cap left no act attempt
        started = workflow.now()
        if after is None and spec.proof_plan:
            run.step = Step.VERIFY
            every = list(range(len(spec.proof_plan)))
            after = await self._reader.read(routing, "after", every, run.before, attempt=attempt)
        if spec.proof_plan and after is not None and workflow.patched(DURABLE_PATCH):
            self._durable_on = True
            held = await self._durable.read_back(routing, attempt, after, started)
            run.proofs = [held[i].proof for i in range(len(spec.proof_plan))]
        else:
            # The receipt's proof items: each plan step's read-back, held to its step.
            read = after or {}
            run.proofs = [
                self._independent(read[i], run.before[i], report, routing).proof
                for i in range(len(spec.proof_plan))
            ]
        # What else the act changed: each frame read again (after any confirmation read), as it
        # was read before the act.
        run.frames_after = await self._frames.read(
            routing, "frame-after", attempt=attempt, actors=self._actors(report)
        )
        run.final = self._grade(spec, routing, report)

    async def _settle(self, spec: TaskSpec, owner_set: bool) -> Receipt:
        final = self._run.final
        assert final is not None
        self._run.step = Step.SETTLE
        settled = await workflow.execute_local_activity_method(
            RunnerSteps.settle,
            # The ledger read this asks for happens only after an act error: not on the way of
            # every task.
            SettleInput(
                receipt=final,
                after_unknown_write=self._act.error is not None,
                run_started_at=workflow.info().start_time,
            ),
            start_to_close_timeout=spec.timeouts.settle,
            retry_policy=SETTLE_RETRY,
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
        return self._spec_sha256

    def _cancelled(self, err: BaseException) -> bool:
        """The step was cut short by a cancel of this workflow (and is not its settling)."""
        return (
            not self._run.settling_cancel
            and workflow.cancellation_reason() is not None
            and is_cancelled_exception(err)
        )

    async def _after_cancel(self, spec: TaskSpec, owner_set: bool) -> Receipt:
        """Settle a cancelled task: superseded if the act never started, else read back first."""
        run, act = self._run, self._act
        run.settling_cancel = True
        routing = run.routing
        if routing is None:
            routing = await self._plan(spec, to_act=False)
            if routing.settled is not None:
                return self._finish(routing.settled, spec, owner_set)
        found = routing.claim or routing.other_claim
        if run.attempt == 0 and found is not None and act.lost_run is None:
            # The plan already learned of another run that may have acted: say so, as a run
            # that went on to its act would have.
            self._attempts.judge_claim(found)
            if act.settled_elsewhere is not None:
                return self._finish(act.settled_elsewhere, spec, owner_set)
        if run.final is None and run.attempt == 0 and act.lost_run is None:
            run.report = cancelled_before_act_report()
            run.proofs = []
            run.final = self._grade(spec, routing, run.report)
        elif run.final is None:
            # The act ran (or was running: its cancellation waited for it to finish), and its
            # answer may never have arrived: the verdict rests on the read-back.
            await self._read_back_and_grade(spec, routing, run.report or unknown_write_report())
        return await self._settle(spec, owner_set)

    def _finish(self, final: Receipt, spec: TaskSpec, owner_set: bool) -> Receipt:
        """The settled receipt, made searchable by verdict, owner and rung."""
        self._run.final = final
        # Only a settled verdict is searchable: a list filtered on LandedVerdict=verified must
        # never show a task whose receipt is not in the ledger.
        updates = [
            LANDED_VERDICT.value_set(final.verdict or "unknown"),
            LANDED_RUNG.value_set((final.landed.rung if final.landed else None) or "unknown"),
        ]
        if not owner_set:
            updates.append(LANDED_OWNER.value_set(spec.owner))
        workflow.upsert_search_attributes(updates)
        self._run.step = Step.SETTLED
        return final

    # --- reads ---------------------------------------------------------------------------------

    def _scope(self, routing: Routing) -> ReadScope:
        return ReadScope(
            spec=self._spec,
            runner=routing.runner,
            trusted=self._trusted(routing),
            run_id=chain_run_id(),
            asked_at=self._run.asked_at or workflow.now(),
        )

    def _independent(
        self,
        reading: VerifyReading,
        before: Observation | None,
        report: ActReport | None,
        routing: Routing,
        *,
        signed_as: str | None = None,
    ) -> VerifyReading:
        """The reading held to its step, made by another identity than the act's (DOD-2)."""
        attempt = max(self._run.attempt, 1)
        return independent(
            self._scope(routing),
            reading,
            before,
            self._actors(report),
            attempt,
            signed_as=signed_as,
        )

    def _actors(self, report: ActReport | None) -> list[str]:
        """Every identity that ran (or failed) an act attempt of this run."""
        return [a for a in (report.actor if report else None, *self._act.actors) if a]

    def _hold(self, reading: VerifyReading, routing: Routing) -> VerifyReading:
        """A read-back held to its step, as the receipt's proofs are (``_independent``)."""
        return self._independent(
            reading, self._run.before[reading.index], self._run.report, routing
        )

    def _trusted(self, routing: Routing) -> TrustStore:
        if self._trust is None:
            self._trust = trust_from_pems(routing.trusted_keys)
        return self._trust

    # --- the verdict ---------------------------------------------------------------------------

    def _grade(self, spec: TaskSpec, routing: Routing, report: ActReport) -> Receipt:
        """The receipt graded and held to what the run knows (``graded_receipt``)."""
        facts = RunFacts(
            attempt=self._run.attempt,
            pre_read=self._run.pre_read,
            spec_sha256=self._digest(spec),
            run_id=chain_run_id(),
            runner=routing.runner,
            act_error=self._act.error,
            lost_run=self._act.lost_run is not None,
            unknown_write=self._act.unknown_write,
            # A grading that runs again (after a stalled runner) may see a cancel the first did
            # not; the settle step then keeps the first, which the ledger already holds.
            cancelled=workflow.cancellation_reason() is not None,
            frames_before=tuple(self._run.frames_before),
            frames_after=tuple(self._run.frames_after),
            unconfirmed=self._durable.unconfirmed,
            durability=self._durable.record,
            fleet=self._fleet_fields(routing, report),
        )
        trusted = self._trusted(routing)
        graded = graded_receipt(
            spec, report, self._run.proofs, facts, settled_at=workflow.now(), trusted=trusted
        )
        return self._gates.stamp(graded)

    def _fleet_fields(self, routing: Routing, report: ActReport) -> dict[str, object]:
        """The blocker, harness rotation, paused wait and cost by phase (GOV-4/8/10, DOD-9)."""
        dispatch = self._attempts.dispatch
        pool = dispatch.pool
        return fleet_fields(
            report,
            harness=pool.record() if pool is not None else None,
            spend=self._run.verify_spend,
            usd_per_second=routing.verify_usd_per_second,
            paused=dispatch.gate.paused,
        )
