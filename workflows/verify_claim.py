"""VerifyClaim: a claim from an agent that acted outside Temporal, read back and settled.

No act: plan (the runner's routing, the ledger's receipt if this task attempt is settled
already, and the operator's contract for the claim's outcome class), read that contract's plan
back through the verifier with AgentTask's own reader and durability reads, grade, settle
through the same settle step. A plan the claim brought itself is never read as proof. What
follows from each answer is decided in ``landed.task.claim_grade`` and the grading core.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.exceptions import is_cancelled_exception

with workflow.unsafe.imports_passed_through():
    from landed.receipts.model import Receipt, attempt_of
    from landed.signing import TrustStore
    from landed.task.assemble import trust_from_pems
    from landed.task.claim_contracts import ResolvedClaim
    from landed.task.claim_grade import (
        claim_outcome,
        claim_report,
        claim_spec,
        evidence_receipt,
        no_read_back_reason,
    )
    from landed.task.claims_in import VerifyClaimInput
    from landed.task.decisions import RunFacts, graded_receipt
    from landed.task.messages import PlanInput, Routing, SettleInput, VerifyReading
    from landed.task.names import VERIFY_CLAIM_WORKFLOW
    from landed.task.readings import ReadScope, independent
    from landed.task.spec import TaskSpec
    from landed.task.steps import RunnerSteps

from landed.workflows.agent_task import LANDED_OWNER, LANDED_RUNG, LANDED_VERDICT
from landed.workflows.claims import SETTLE_RETRY, ledger_policy
from landed.workflows.durable import Durable
from landed.workflows.reads import Reader, chain_run_id
from landed.workflows.state import RunState
from landed.workflows.versions import SELF_PLAN_PATCH

__all__ = ["SELF_PLAN_PATCH", "VerifyClaim"]


@workflow.defn(name=VERIFY_CLAIM_WORKFLOW)
class VerifyClaim:
    """One claim: read back what it says landed, settle the verdict the reading proves."""

    @workflow.init
    def __init__(self, inp: VerifyClaimInput) -> None:
        self._inp = inp
        self._spec = claim_spec(inp)
        self._report = claim_report(inp)
        self._trust: TrustStore | None = None  # a pure function of the recorded routing
        self._bind(self._spec)

    def _bind(self, spec: TaskSpec) -> None:
        """Read by ``spec``'s plan: the operator's, once the runner resolved it."""
        self._spec = spec
        self._run = RunState(before=[None] * len(spec.proof_plan), pre_read=False)
        self._reader = Reader(spec, self._run, self._scope, _cancelled)
        self._durable = Durable(spec, self._run, self._reader, self._hold)

    @workflow.run
    async def run(self, inp: VerifyClaimInput) -> Receipt:
        spec = self._spec
        self._run.deadline = workflow.now() + spec.time_cap
        routing = await self._plan()
        settled = routing.settled
        if settled is not None and attempt_of(settled) >= inp.attempt:
            # The ledger already holds this attempt (a stream replayed after Temporal forgot
            # the first run): the ledger is the record, and nothing is read twice.
            return self._finish(settled)
        why = self._judged_by(routing)
        self._run.routing = routing
        if why is not None:
            final = evidence_receipt(
                inp,
                why=why,
                runner=routing.runner,
                run_id=chain_run_id(),
                trusted=self._trusted(routing),
                settled_at=workflow.now(),
            )
        else:
            final = await self._read_back(routing)
        out = await workflow.execute_local_activity_method(
            RunnerSteps.settle,
            SettleInput(receipt=final),
            start_to_close_timeout=spec.timeouts.settle,
            retry_policy=SETTLE_RETRY,
        )
        return self._finish(out.stored or final)

    async def _plan(self) -> Routing:
        retry, one_try = ledger_policy(timedelta(minutes=5))
        routing: Routing = await workflow.execute_local_activity_method(
            RunnerSteps.plan,
            # will_act False: a claim never acts, so the plan records no claim in the ledger.
            PlanInput(
                task_id=self._spec.task_id,
                spec_sha256=self._inp.digest,
                run_id=workflow.info().run_id,
                will_act=False,
                pre_read=False,
                steps=0,
                claim_outcome=claim_outcome(self._inp),
            ),
            start_to_close_timeout=one_try,
            schedule_to_close_timeout=timedelta(minutes=5),
            retry_policy=retry,
        )
        return routing

    def _judged_by(self, routing: Routing) -> str | None:
        """Bind the plan the claim is read back by; why there is none, if so."""
        inp = self._inp
        resolved = routing.claim_contract
        if inp.can_read_back and resolved is not None:
            if resolved.refused is not None:
                return resolved.refused
            self._bind(claim_spec(inp, resolved))
            return None
        why = no_read_back_reason(inp)
        legacy = inp.outcome_class is None and inp.kind != "unknown" and bool(inp.proof_plan)
        if legacy and not workflow.patched(SELF_PLAN_PATCH):
            # A history from before: its claim's own plan was read back, and replays so.
            self._bind(claim_spec(inp, ResolvedClaim(proof_plan=inp.proof_plan)))
            return None
        return why or "the runner resolved no contract for it"

    async def _read_back(self, routing: Routing) -> Receipt:
        spec, attempt = self._spec, self._inp.attempt
        steps = list(range(len(spec.proof_plan)))
        started = workflow.now()
        first = await self._reader.read(routing, "after", steps, self._run.before, attempt=attempt)
        held = await self._durable.read_back(routing, attempt, first, started)
        proofs = [held[i].proof for i in steps]
        facts = RunFacts(
            attempt=attempt,
            pre_read=False,
            spec_sha256=self._inp.digest,
            run_id=chain_run_id(),
            runner=routing.runner,
            unconfirmed=self._durable.unconfirmed,
            durability=self._durable.record,
        )
        trusted = self._trusted(routing)
        graded = graded_receipt(
            spec, self._report, proofs, facts, settled_at=workflow.now(), trusted=trusted
        )
        assert graded.landed is not None
        judged = routing.claim_contract
        ext = graded.landed.model_copy(
            update={
                "claim_kind": self._inp.kind,
                # What the claim was judged by: the operator's class, its values, the file.
                **(
                    {
                        "outcome_class": self._inp.outcome_class,
                        "params": dict(self._inp.params),
                        "claim_contracts_sha256": judged.contracts_sha256,
                    }
                    if judged is not None
                    else {}
                ),
            }
        )
        return graded.model_copy(update={"landed": ext})

    def _finish(self, final: Receipt) -> Receipt:
        workflow.upsert_search_attributes(
            [
                LANDED_VERDICT.value_set(final.verdict or "unknown"),
                LANDED_RUNG.value_set((final.landed.rung if final.landed else None) or "unknown"),
                LANDED_OWNER.value_set(self._spec.owner),
            ]
        )
        return final

    def _scope(self, routing: Routing) -> ReadScope:
        return ReadScope(
            spec=self._spec,
            runner=routing.runner,
            trusted=self._trusted(routing),
            run_id=chain_run_id(),
            asked_at=self._run.asked_at or workflow.now(),
        )

    def _trusted(self, routing: Routing) -> TrustStore:
        if self._trust is None:
            self._trust = trust_from_pems(routing.trusted_keys)
        return self._trust

    def _hold(self, reading: VerifyReading, routing: Routing) -> VerifyReading:
        """A reading counts only if made by another identity than the claiming agent's."""
        actors = [self._report.actor] if self._report.actor else []
        return independent(self._scope(routing), reading, None, actors, self._inp.attempt)


def _cancelled(err: BaseException) -> bool:
    """A read cut short by a cancel of this claim ends it (nothing was acted, nothing lost)."""
    return workflow.cancellation_reason() is not None and is_cancelled_exception(err)
